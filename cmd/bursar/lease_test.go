//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
)

// leaseProc is a running `bursar lease`.
type leaseProc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
	code   int
}

func startLease(t *testing.T, env []string, args ...string) *leaseProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"lease"}, args...)...)
	cmd.Env = env
	return startLeaseCmd(t, cmd)
}

// startLeaseCmd starts a prepared `bursar lease` command (see startLease).
func startLeaseCmd(t *testing.T, cmd *exec.Cmd) *leaseProc {
	t.Helper()
	lp := &leaseProc{cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = lp.stderr
	// A command that outlives a failed test keeps the stderr pipe open:
	// Wait must not wait for it for ever.
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Start())
	go func() {
		_ = cmd.Wait()
		lp.code = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			lp.code = 128 + int(ws.Signal())
		}
		close(lp.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-lp.done
	})
	return lp
}

func (lp *leaseProc) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-lp.done:
		return lp.code
	case <-time.After(within):
		t.Fatalf("bursar lease did not exit within %v\n%s", within, lp.stderr)
		return -1
	}
}

func waitFile(t *testing.T, path, want string, lp *leaseProc) string {
	t.Helper()
	var got string
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(path)
		got = string(b)
		return strings.Contains(got, want)
	}, 20*time.Second, 20*time.Millisecond, "%s never contained %q; bursar lease said:\n%s", path, want, lp.stderr)
	return got
}

// leaseEnv is a service with two campaigns on a 16-GPU pool: vip has a
// guarantee of 8 GPUs and may burst to the whole pool, opp is
// opportunistic (preemptible) and may use what vip's unmet guarantee does
// not reserve.
func leaseEnv(t *testing.T) (p *proc, vip *client.Client, oppToken string) {
	t.Helper()
	p = startServe(t, cleanEnv(), "--admin-token-file", tokenFile(t), "--speed", "20", "--pool", "16", "--grace", "20")
	ctx := context.Background()
	admin, err := client.New(p.url, testToken)
	require.NoError(t, err)
	reg, err := admin.Register(ctx, client.CampaignSpec{Name: "vip", Budget: 1e9, Guaranteed: 8, Sustained: 16, BurstCeiling: 16,
		Bucket: 1e7, Class: client.ClassDeadline})
	require.NoError(t, err)
	vip = admin.WithToken(reg.Token)
	reg, err = admin.Register(ctx, client.CampaignSpec{Name: "opp", Budget: 1e9, Guaranteed: 0, Sustained: 16, BurstCeiling: 16,
		Bucket: 1e7, Class: client.ClassOpportunistic})
	require.NoError(t, err)
	return p, vip, reg.Token
}

// TestLeaseGrantNoticeRelease: `bursar lease -- sh -c …` waits (with a
// progress line) while the pool is taken, runs the command with the lease
// in its environment once granted, sends it SIGTERM when the lease is put
// under preemption notice, releases the lease and exits with the command's
// status.
func TestLeaseGrantNoticeRelease(t *testing.T) {
	ctx := context.Background()
	p, vip, oppToken := leaseEnv(t)
	acc, err := vip.Request(ctx, "vip", client.LeaseRequest{GPUs: 16, Duration: 100000})
	require.NoError(t, err)
	g, err := vip.WaitGrant(ctx, "vip", acc.RequestID, 20*time.Millisecond)
	require.NoError(t, err)

	out := filepath.Join(t.TempDir(), "out")
	script := `echo "$BURSAR_LEASE_ID $BURSAR_GPUS $BURSAR_LEASE_EXPIRES $BURSAR_LEASE_CLASS ${BURSAR_TOKEN:-no-token}" > "$OUT"
trap 'echo term >> "$OUT"; exit 3' TERM
while :; do sleep 0.05; done`
	lp := startLease(t, cleanEnv("BURSAR_TOKEN="+oppToken, "OUT="+out),
		"--server", p.url, "--campaign", "opp", "--gpus", "8", "--duration", "100000",
		"--poll", "50ms", "--progress", "100ms", "--", "sh", "-c", script)
	require.Eventually(t, func() bool { return strings.Contains(lp.stderr.String(), "waiting for 8 GPUs") },
		20*time.Second, 20*time.Millisecond, "a progress line while the pool is taken: %s", lp.stderr)

	_, err = vip.ReleaseLease(ctx, "vip", g.Lease)
	require.NoError(t, err)
	got := strings.Fields(waitFile(t, out, "\n", lp))
	require.Len(t, got, 5, "%q", got)
	assert.Equal(t, "1", got[0], "opp's first request is its lease 1, whatever vip filed before it (the broker's id is 2)")
	assert.Equal(t, "8", got[1])
	assert.NotEmpty(t, got[2])
	assert.Equal(t, "opportunistic", got[3])
	assert.Equal(t, "no-token", got[4], "the campaign token is not passed to the command")
	assert.Contains(t, lp.stderr.String(), "granted lease "+got[0])

	// The guaranteed campaign wants its GPUs back: opp's lease goes under
	// notice, the command gets SIGTERM and exits 3, the lease is released.
	acc, err = vip.Request(ctx, "vip", client.LeaseRequest{GPUs: 16, Duration: 100000})
	require.NoError(t, err)
	assert.Equal(t, 3, lp.wait(t, 30*time.Second), "%s", lp.stderr)
	waitFile(t, out, "term", lp)
	assert.Contains(t, lp.stderr.String(), "is being preempted")
	assert.Contains(t, lp.stderr.String(), "released lease "+got[0])
	ls, err := vip.WithToken(oppToken).Leases(ctx, "opp")
	require.NoError(t, err)
	assert.Empty(t, ls.Leases)
	_, err = vip.WaitGrant(ctx, "vip", acc.RequestID, 20*time.Millisecond)
	require.NoError(t, err, "the released GPUs go to the guarantee")
	t.Logf("bursar lease said:\n%s", lp.stderr)
}

// TestLeaseExpiryForwardAndKill: signals to the wrapper reach the command;
// a command that ignores SIGTERM near the expiry is killed at the expiry,
// and the wrapper exits 128+9.
func TestLeaseExpiryForwardAndKill(t *testing.T) {
	p, _, oppToken := leaseEnv(t)
	out := filepath.Join(t.TempDir(), "out")
	script := `trap 'echo usr1 >> "$OUT"' USR1
trap '' TERM
echo started > "$OUT"
while :; do sleep 0.05; done`
	lp := startLease(t, cleanEnv("BURSAR_TOKEN="+oppToken, "OUT="+out),
		"--server", p.url, "--campaign", "opp", "--gpus", "4", "--duration", "80", "--expiry-notice", "20",
		"--poll", "50ms", "--", "sh", "-c", script)
	waitFile(t, out, "started", lp)
	require.NoError(t, lp.cmd.Process.Signal(syscall.SIGUSR1))
	waitFile(t, out, "usr1", lp)
	assert.Equal(t, 128+9, lp.wait(t, 30*time.Second), "%s", lp.stderr)
	s := lp.stderr.String()
	assert.Contains(t, s, "SIGTERM")
	assert.Contains(t, s, "SIGKILL")
	assert.Less(t, strings.Index(s, "SIGTERM"), strings.Index(s, "SIGKILL"))
	t.Logf("bursar lease said:\n%s", s)
}

// TestLeaseNoGrant: with the pool taken, --wait gives up with 75 and the
// command never runs.
func TestLeaseNoGrant(t *testing.T) {
	ctx := context.Background()
	p, vip, oppToken := leaseEnv(t)
	acc, err := vip.Request(ctx, "vip", client.LeaseRequest{GPUs: 16, Duration: 100000})
	require.NoError(t, err)
	_, err = vip.WaitGrant(ctx, "vip", acc.RequestID, 20*time.Millisecond)
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "out")
	lp := startLease(t, cleanEnv("BURSAR_TOKEN="+oppToken, "OUT="+out),
		"--server", p.url, "--campaign", "opp", "--gpus", "8", "--wait", "700ms", "--poll", "50ms",
		"--", "sh", "-c", `echo ran > "$OUT"`)
	assert.Equal(t, 75, lp.wait(t, 20*time.Second), "%s", lp.stderr)
	assert.Contains(t, lp.stderr.String(), "no grant within --wait")
	assert.Contains(t, lp.stderr.String(), "withdrew request")
	_, err = os.Stat(out)
	assert.True(t, os.IsNotExist(err), "the command did not run")
	ls, err := vip.WithToken(oppToken).Leases(ctx, "opp")
	require.NoError(t, err)
	assert.Empty(t, ls.Pending, "the request was withdrawn")
}

// TestLeaseWatchdogBackstop: a wrapper that is alive but stopped cannot
// keep its deadline; the watchdog sends SIGKILL 2 s after it.
func TestLeaseWatchdogBackstop(t *testing.T) {
	p, _, oppToken := leasePool(t)
	out := filepath.Join(t.TempDir(), "out")
	// 20 broker s at 20 ticks/s: the deadline is 1 s after the grant.
	lp := startLease(t, cleanEnv("BURSAR_TOKEN="+oppToken, "OUT="+out),
		"--server", p.url, "--campaign", "opp", "--gpus", "4", "--duration", "20", "--expiry-notice", "0",
		"--", "sh", "-c", `echo "$$" > "$OUT"; while :; do sleep 0.05; done`)
	pid, err := strconv.Atoi(strings.TrimSpace(waitFile(t, out, "\n", lp)))
	require.NoError(t, err)
	started := time.Now()
	// Stop the wrapper only once it has handed the group and the deadline
	// to its watchdog (it says so): stopped before that, nobody would know
	// the command's deadline.
	require.Eventually(t, func() bool { return strings.Contains(lp.stderr.String(), "command started as process group") },
		10*time.Second, 5*time.Millisecond, "%s", lp.stderr)
	require.NoError(t, lp.cmd.Process.Signal(syscall.SIGSTOP))
	require.Eventually(t, func() bool { return !alive(pid) }, 10*time.Second, 20*time.Millisecond, "the command outlived its deadline")
	ran := time.Since(started)
	require.NoError(t, lp.cmd.Process.Signal(syscall.SIGCONT))
	assert.Equal(t, 128+9, lp.wait(t, 20*time.Second), "%s", lp.stderr)
	assert.Contains(t, lp.stderr.String(), "lease-watchdog: the lease's deadline passed 2s ago")
	assert.Greater(t, ran, 2*time.Second, "killed by the watchdog, not the stopped wrapper")
	assert.Less(t, ran, 4500*time.Millisecond)
	assert.NotContains(t, lp.stderr.String(), "SIGTERM", "--expiry-notice 0: no warning")
	t.Logf("the command ran %v after it started; bursar lease said:\n%s", ran.Round(time.Millisecond), lp.stderr)
}

func TestLeaseUsageErrors(t *testing.T) {
	_, stderr, code := run(t, cleanEnv("BURSAR_TOKEN=x"), "lease", "--campaign", "c", "--gpus", "1")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "give the command to run after --")
	_, stderr, code = run(t, cleanEnv(), "lease", "--campaign", "c", "--gpus", "1", "--", "true")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "no campaign token")
}

// leasePool is a service on a pool of 64 GPUs at 20 ticks a second with
// vip (a guarantee of 16, may burst to the pool) and opp (no guarantee,
// agent-burst, may use the whole pool); it returns the administrator's
// client and opp's token.
func leasePool(t *testing.T) (p *proc, admin *client.Client, oppToken string) {
	t.Helper()
	p = startServe(t, cleanEnv(), "--admin-token-file", tokenFile(t), "--speed", "20", "--pool", "64", "--grace", "20")
	admin, err := client.New(p.url, testToken)
	require.NoError(t, err)
	ctx := context.Background()
	_, err = admin.Register(ctx, client.CampaignSpec{Name: "vip", Budget: 1e9, Guaranteed: 16, Sustained: 64, BurstCeiling: 64,
		Bucket: 1e7, Class: client.ClassDeadline})
	require.NoError(t, err)
	reg, err := admin.Register(ctx, client.CampaignSpec{Name: "opp", Budget: 1e9, Sustained: 64, BurstCeiling: 64,
		Bucket: 1e7, Class: client.ClassAgentBurst})
	require.NoError(t, err)
	return p, admin, reg.Token
}

// hold has campaign name take gpus GPUs and returns the lease id.
func hold(t *testing.T, admin *client.Client, name string, gpus int) int {
	t.Helper()
	ctx := context.Background()
	acc, err := admin.Request(ctx, name, client.LeaseRequest{GPUs: gpus, Duration: 100000})
	require.NoError(t, err)
	g, err := admin.AwaitGrant(ctx, name, acc.RequestID)
	require.NoError(t, err)
	require.Equal(t, gpus, g.Lease.GPUs)
	return g.Lease.ID
}

// noRequestsOrLeases checks that campaign name holds nothing and has
// nothing pending.
func noRequestsOrLeases(t *testing.T, admin *client.Client, name string) {
	t.Helper()
	ls, err := admin.Leases(context.Background(), name)
	require.NoError(t, err)
	assert.Empty(t, ls.Leases, "leases of %s", name)
	assert.Empty(t, ls.Pending, "pending requests of %s", name)
}

// TestLeaseLocalDeadline: with the service killed in the middle of the
// lease, the command still gets SIGTERM at expiry − notice and SIGKILL at
// the expiry, from the wrapper's own wall-clock deadline: it is gone
// within its notice after the expiry (issue 22 §5).
func TestLeaseLocalDeadline(t *testing.T) {
	p, _, oppToken := leasePool(t)
	out := filepath.Join(t.TempDir(), "out")
	// 40 broker s at 20 ticks/s: 2 s; the notice, 10 broker s: 0.5 s.
	script := `trap 'echo term >> "$OUT"' TERM
echo started > "$OUT"
while :; do sleep 0.05; done`
	lp := startLease(t, cleanEnv("BURSAR_TOKEN="+oppToken, "OUT="+out),
		"--server", p.url, "--campaign", "opp", "--gpus", "4", "--duration", "40", "--expiry-notice", "10",
		"--poll", "50ms", "--", "sh", "-c", script)
	waitFile(t, out, "started", lp)
	started := time.Now()
	require.NoError(t, p.cmd.Process.Kill())
	<-p.done
	code := lp.wait(t, 20*time.Second)
	ran := time.Since(started)
	s := lp.stderr.String()
	assert.Equal(t, 128+9, code, "%s", s)
	got := waitFile(t, out, "term", lp)
	assert.Equal(t, "started\nterm\n", got, "SIGTERM before the end")
	// Started after the grant, so the expiry is at most 2 s later; gone
	// within the notice (0.5 s) after it. Not before the notice began.
	assert.Less(t, ran, 2500*time.Millisecond, "%s", s)
	assert.Greater(t, ran, 1200*time.Millisecond, "%s", s)
	assert.Contains(t, s, "the local deadline stands")
	assert.Less(t, strings.Index(s, "SIGTERM"), strings.Index(s, "SIGKILL"))
	t.Logf("command ran %v after it started; bursar lease said:\n%s", ran.Round(time.Millisecond), s)
}

// TestLeaseDeadlineAfterWait: a lease granted after the wrapper waited
// for it (here 2.5 s, the pool held by vip) is counted from its grant,
// not from the long poll that waited for it: with the service gone once
// the command runs, the local deadline gives the command its whole lease
// (40 broker s at 20 ticks/s: 2 s). Counted from the poll's sending, the
// command was killed about as soon as it started.
func TestLeaseDeadlineAfterWait(t *testing.T) {
	p, admin, oppToken := leasePool(t)
	blocker := hold(t, admin, "vip", 64)
	out := filepath.Join(t.TempDir(), "out")
	lp := startLease(t, cleanEnv("BURSAR_TOKEN="+oppToken, "OUT="+out),
		"--server", p.url, "--campaign", "opp", "--gpus", "4", "--duration", "40", "--expiry-notice", "0",
		"--poll", "50ms", "--", "sh", "-c", `echo started > "$OUT"; while :; do sleep 0.05; done`)
	time.Sleep(2500 * time.Millisecond)
	_, err := admin.ReleaseLease(context.Background(), "vip", blocker)
	require.NoError(t, err)
	waitFile(t, out, "started", lp)
	started := time.Now()
	require.NoError(t, p.cmd.Process.Kill())
	<-p.done
	lp.wait(t, 20*time.Second)
	ran := time.Since(started)
	s := lp.stderr.String()
	assert.NotContains(t, s, "after 0 broker s", "granted after a wait")
	assert.Greater(t, ran, 1200*time.Millisecond, "the command had its lease\n%s", s)
	assert.Less(t, ran, 3*time.Second, "%s", s)
}

// TestLeaseKillAfter: when the lease vanishes without notice (released by
// the administrator), or the wrapper gets SIGTERM, a command that ignores
// SIGTERM gets SIGKILL --kill-after later, not at the next poll. The time
// is taken from the release or the signal, which come before the SIGTERM
// (the release by up to a poll of 50 ms): the command ends no sooner than
// --kill-after after it, and not much later.
func TestLeaseKillAfter(t *testing.T) {
	for _, how := range []string{"released", "SIGTERM"} {
		t.Run(how, func(t *testing.T) {
			p, admin, oppToken := leasePool(t)
			out := filepath.Join(t.TempDir(), "out")
			script := `trap 'echo term > "$OUT.term"' TERM
echo started > "$OUT"
while :; do sleep 0.05 & wait $!; done`
			lp := startLease(t, cleanEnv("BURSAR_TOKEN="+oppToken, "OUT="+out),
				"--server", p.url, "--campaign", "opp", "--gpus", "4", "--duration", "100000",
				"--kill-after", "700ms", "--poll", "50ms", "--", "sh", "-c", script)
			waitFile(t, out, "started", lp)
			var start time.Time
			if how == "released" {
				ls, err := admin.Leases(context.Background(), "opp")
				require.NoError(t, err)
				require.Len(t, ls.Leases, 1)
				start = time.Now()
				_, err = admin.ReleaseLease(context.Background(), "opp", ls.Leases[0].ID)
				require.NoError(t, err)
			} else {
				start = time.Now()
				require.NoError(t, lp.cmd.Process.Signal(syscall.SIGTERM))
			}
			assert.Equal(t, 128+9, lp.wait(t, 20*time.Second), "%s", lp.stderr)
			gap := time.Since(start)
			_, err := os.Stat(out + ".term")
			require.NoError(t, err, "the command got SIGTERM first")
			assert.GreaterOrEqual(t, gap, 700*time.Millisecond, "SIGKILL before --kill-after")
			assert.Less(t, gap, 1200*time.Millisecond, "SIGKILL long after --kill-after")
			assert.Contains(t, lp.stderr.String(), "--kill-after 700ms since the SIGTERM: sending SIGKILL")
			t.Logf("%s → exit %v; bursar lease said:\n%s", how, gap.Round(time.Millisecond), lp.stderr)
		})
	}
}

// TestLeaseInterruptWithdraws: SIGINT (or SIGTERM) while waiting withdraws
// the request: nothing is pending, and when the pool frees up nothing is
// granted to the campaign whose wrapper is gone. A wrapper killed with
// SIGKILL while waiting has its request withdrawn by the watchdog.
func TestLeaseInterruptWithdraws(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			p, admin, oppToken := leasePool(t)
			vip := hold(t, admin, "vip", 64)
			out := filepath.Join(t.TempDir(), "out")
			lp := startLease(t, cleanEnv("BURSAR_TOKEN="+oppToken, "OUT="+out),
				"--server", p.url, "--campaign", "opp", "--gpus", "8", "--", "sh", "-c", `echo ran > "$OUT"`)
			require.Eventually(t, func() bool { return strings.Contains(lp.stderr.String(), "filed at") },
				20*time.Second, 20*time.Millisecond, "%s", lp.stderr)
			require.NoError(t, lp.cmd.Process.Signal(sig))
			assert.Equal(t, 128+int(sig), lp.wait(t, 20*time.Second), "%s", lp.stderr)
			if sig == syscall.SIGKILL {
				assert.Contains(t, lp.stderr.String(), "lease-watchdog: the wrapper died: withdrew request")
			} else {
				assert.Contains(t, lp.stderr.String(), "withdrew request")
			}
			noRequestsOrLeases(t, admin, "opp")
			_, err := admin.ReleaseLease(context.Background(), "vip", vip)
			require.NoError(t, err)
			time.Sleep(300 * time.Millisecond) // 6 ticks
			noRequestsOrLeases(t, admin, "opp")
			_, err = os.Stat(out)
			assert.True(t, os.IsNotExist(err), "the command did not run")
			t.Logf("bursar lease said:\n%s", lp.stderr)
		})
	}
}

// TestLeaseWatchdog: SIGKILL of the wrapper does not orphan the command:
// the watchdog sends its process group SIGTERM, then SIGKILL --kill-after
// later (the shell and its child ignore SIGTERM), and releases the lease.
func TestLeaseWatchdog(t *testing.T) {
	p, admin, oppToken := leasePool(t)
	out := filepath.Join(t.TempDir(), "out")
	script := `trap '' TERM
sleep 300 &
echo "$$ $!" > "$OUT"
wait`
	lp := startLease(t, cleanEnv("BURSAR_TOKEN="+oppToken, "OUT="+out),
		"--server", p.url, "--campaign", "opp", "--gpus", "4", "--duration", "100000",
		"--kill-after", "500ms", "--", "sh", "-c", script)
	pids := strings.Fields(waitFile(t, out, "\n", lp))
	require.Len(t, pids, 2)
	require.NoError(t, lp.cmd.Process.Signal(syscall.SIGKILL))
	lp.wait(t, 20*time.Second) // and for the watchdog, which holds its stderr
	for _, s := range pids {
		pid, err := strconv.Atoi(s)
		require.NoError(t, err)
		assert.Eventually(t, func() bool { return !alive(pid) }, 5*time.Second, 20*time.Millisecond, "process %d of the command's group lives on", pid)
	}
	noRequestsOrLeases(t, admin, "opp")
	assert.Contains(t, lp.stderr.String(), "the wrapper died: released lease")
	t.Logf("bursar lease said:\n%s", lp.stderr)
}

// alive says whether process pid exists and is not a zombie (an orphan
// waits for init to reap it).
func alive(pid int) bool {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// pid (comm) state …: the state follows the last ')'.
		i := strings.LastIndexByte(string(b), ')')
		return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
	}
	return syscall.Kill(pid, 0) == nil
}

// TestLeaseMinGPUs: a grant below --min-gpus (default: all asked) is
// released and the wrapper waits for the supply, then runs on a whole
// grant; --min-gpus lower takes the partial grant; --no-wait gives up.
func TestLeaseMinGPUs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		gpus  string // BURSAR_GPUS the command saw; "" it did not run
		freed bool   // vip releases its 32 GPUs while the wrapper waits
	}{
		{"default waits for all", nil, 0, "48", true},
		{"min-gpus 32 runs on 32", []string{"--min-gpus", "32"}, 0, "32", false},
		{"no-wait gives up", []string{"--no-wait"}, 75, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, admin, oppToken := leasePool(t)
			vip := hold(t, admin, "vip", 32)
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"--server", p.url, "--campaign", "opp", "--gpus", "48"}, tc.args...)
			lp := startLease(t, cleanEnv("BURSAR_TOKEN="+oppToken, "OUT="+out),
				append(args, "--", "sh", "-c", `echo "$BURSAR_GPUS" > "$OUT"`)...)
			if tc.freed {
				require.Eventually(t, func() bool { return strings.Contains(lp.stderr.String(), "fewer than --min-gpus 48: released it") },
					20*time.Second, 20*time.Millisecond, "%s", lp.stderr)
				_, err := os.Stat(out)
				require.True(t, os.IsNotExist(err), "the command ran on less")
				_, err = admin.ReleaseLease(context.Background(), "vip", vip)
				require.NoError(t, err)
			}
			assert.Equal(t, tc.code, lp.wait(t, 30*time.Second), "%s", lp.stderr)
			b, _ := os.ReadFile(out)
			assert.Equal(t, tc.gpus, strings.TrimSpace(string(b)), "%s", lp.stderr)
			noRequestsOrLeases(t, admin, "opp")
			t.Logf("bursar lease said:\n%s", lp.stderr)
		})
	}
}

// TestLeaseHelp: --help explains the notice (why --duration 60 gets
// SIGTERM at 30 s), the watchdog, and every flag with its default.
func TestLeaseHelp(t *testing.T) {
	out, _, code := run(t, cleanEnv(), "lease", "--help")
	require.Equal(t, 0, code)
	for _, s := range []string{"So with the defaults '--duration 60' gets", "SIGTERM 30 broker seconds in", "--expiry-notice 0", "lease-watchdog", "PR_SET_PDEATHSIG", "child subreaper",
		"foreground group", "withdraws the request", "--min-gpus", "BURSAR_GPUS", "scancel --signal=TERM --full"} {
		assert.Contains(t, out, s)
	}
	flags := 0
	_, options, _ := strings.Cut(out, "OPTIONS:")
	for l := range strings.SplitSeq(options, "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "--") || strings.HasPrefix(l, "--help") {
			continue
		}
		flags++
		assert.Contains(t, l, "(default: ", "every flag states its default: %s", l)
	}
	assert.Equal(t, 15, flags)
}

func TestLeaseFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--duration", "20"}, "--expiry-notice 30 is not below --duration 20"},
		{[]string{"--min-gpus", "0"}, "--min-gpus must be between 1 and --gpus (4), got 0"},
		{[]string{"--min-gpus", "5"}, "--min-gpus must be between 1 and --gpus (4), got 5"},
		{[]string{"--kill-after", "-1s"}, "--kill-after must not be negative"},
		{[]string{"--gpus", "0"}, "--gpus must be at least 1"},
	} {
		args := append([]string{"lease", "--campaign", "c", "--gpus", "4"}, tc.args...)
		_, stderr, code := run(t, cleanEnv("BURSAR_TOKEN=x"), append(args, "--", "true")...)
		assert.Equal(t, 1, code, "%v", tc.args)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
	}
}
