package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// leaseTree is a command whose tree tries to outlive its lease: a child
// in its process group and a grandchild that calls setsid (its parent
// exits at once, so it is an orphan in a session of its own), both
// ignoring SIGTERM. The main shell runs onTerm at SIGTERM. Each of the
// two writes its pid to $OUT.pids; the main shell writes "started" to
// $OUT once both are started.
func leaseTree(onTerm string) string {
	return `trap '` + onTerm + `' TERM
sh -c "$INNER" &
sh -c 'setsid sh -c "$INNER" &'
while [ "$(wc -l < "$OUT.pids" 2>/dev/null)" != 2 ]; do sleep 0.02; done
echo started > "$OUT"
while :; do sleep 0.05 & wait $!; done`
}

const leaseTreeInner = `trap "" TERM; echo $$ >> "$OUT.pids"; while :; do sleep 0.05; done`

// TestLeaseEndsItsWholeTree: nothing of a lease's command runs once the
// wrapper has released the lease and exited — not a member of its group
// that ignores SIGTERM, not a grandchild that left the group with setsid
// (issue 34 §3). The wrapper is their subreaper: it finds them in /proc,
// sends them the notice's SIGTERM and the SIGKILL, and waits for them.
func TestLeaseEndsItsWholeTree(t *testing.T) {
	for _, c := range []struct {
		name, onTerm string
		code         int
		said         string
	}{
		// The main command obeys the notice and exits; what it leaves
		// gets SIGKILL --kill-after later.
		{"the command exits at the notice", "exit 3", 3, "the command ended, but "},
		// Nothing obeys: SIGKILL to all of it at the lease's end.
		{"nothing obeys the notice", "", 128 + 9, "is over (its local deadline): sending SIGKILL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, admin, oppToken := leasePool(t)
			out := filepath.Join(t.TempDir(), "out")
			lp := startLease(t, cleanEnv("BURSAR_TOKEN="+oppToken, "OUT="+out, "INNER="+leaseTreeInner),
				"--server", p.url, "--campaign", "opp", "--gpus", "4", "--duration", "60", "--expiry-notice", "20",
				"--kill-after", "300ms", "--poll", "50ms", "--", "sh", "-c", leaseTree(c.onTerm))
			waitFile(t, out, "started", lp)
			b, err := os.ReadFile(out + ".pids")
			require.NoError(t, err)
			var pids []int
			for _, s := range strings.Fields(string(b)) {
				pid, err := strconv.Atoi(s)
				require.NoError(t, err)
				pids = append(pids, pid)
			}
			require.Len(t, pids, 2)
			sids := map[int]bool{}
			for _, pid := range pids {
				sid, err := unix.Getsid(pid)
				require.NoError(t, err)
				sids[sid] = true
			}
			require.Len(t, sids, 2, "one of the two left the wrapper's session with setsid")

			assert.Equal(t, c.code, lp.wait(t, 30*time.Second), "%s", lp.stderr)
			for _, pid := range pids {
				assert.False(t, alive(pid), "process %d of the command outlived the wrapper (it released the lease)", pid)
			}
			noRequestsOrLeases(t, admin, "opp")
			s := lp.stderr.String()
			assert.Contains(t, s, c.said)
			assert.Regexp(t, `released lease 1|lease 1 was already gone`, s)
			t.Logf("bursar lease said:\n%s", s)
		})
	}
}

// TestLeaseCommandNotFound: a command that cannot be run fails at once
// with 127, before anything is filed: no lease is granted for it.
func TestLeaseCommandNotFound(t *testing.T) {
	p, admin, oppToken := leasePool(t)
	for _, cmd := range []string{"/nonexistent/cmd", "no-such-command-here", "/etc/passwd"} {
		lp := startLease(t, cleanEnv("BURSAR_TOKEN="+oppToken), "--server", p.url, "--campaign", "opp", "--gpus", "4", "--", cmd)
		assert.Equal(t, 127, lp.wait(t, 10*time.Second), "%s", lp.stderr)
		assert.Contains(t, lp.stderr.String(), fmt.Sprintf("cannot run %s", cmd))
		assert.Contains(t, lp.stderr.String(), "nothing was asked for")
		assert.NotContains(t, lp.stderr.String(), "filed")
		assert.NotContains(t, lp.stderr.String(), "granted")
	}
	noRequestsOrLeases(t, admin, "opp")
}

// TestLeaseWatchdogEndsTheWholeTree: when the wrapper itself is killed
// with SIGKILL, its orphans (the setsid'd grandchild included) are
// reparented away from it; the watchdog finds them by the mark in their
// environment and ends them with the group, then releases the lease.
func TestLeaseWatchdogEndsTheWholeTree(t *testing.T) {
	p, admin, oppToken := leasePool(t)
	out := filepath.Join(t.TempDir(), "out")
	lp := startLease(t, cleanEnv("BURSAR_TOKEN="+oppToken, "OUT="+out, "INNER="+leaseTreeInner),
		"--server", p.url, "--campaign", "opp", "--gpus", "4", "--duration", "100000",
		"--kill-after", "300ms", "--", "sh", "-c", leaseTree(""))
	waitFile(t, out, "started", lp)
	b, err := os.ReadFile(out + ".pids")
	require.NoError(t, err)
	require.NoError(t, lp.cmd.Process.Signal(unix.SIGKILL))
	lp.wait(t, 20*time.Second) // and for the watchdog, which holds its stderr
	for _, s := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(s)
		require.NoError(t, err)
		assert.False(t, alive(pid), "process %d of the command outlived the wrapper and its watchdog", pid)
	}
	noRequestsOrLeases(t, admin, "opp")
	assert.Contains(t, lp.stderr.String(), "the wrapper died: released lease")
	t.Logf("bursar lease said:\n%s", lp.stderr)
}
