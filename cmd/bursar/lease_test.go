//go:build unix

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
	lp := &leaseProc{cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = lp.stderr
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
	assert.NotEqual(t, "0", got[0])
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
	_, err = os.Stat(out)
	assert.True(t, os.IsNotExist(err), "the command did not run")
}

func TestLeaseUsageErrors(t *testing.T) {
	_, stderr, code := run(t, cleanEnv("BURSAR_TOKEN=x"), "lease", "--campaign", "c", "--gpus", "1")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "give the command to run after --")
	_, stderr, code = run(t, cleanEnv(), "lease", "--campaign", "c", "--gpus", "1", "--", "true")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "no campaign token")
}
