//go:build unix

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/internal/slurmtoken"
)

// killWait and limitCheck are the one-node cluster's KillWait (Slurm's
// default, scripts/slurm-local.sh sets none) and slurmctld 22.05's
// interval between time-limit checks (fixed, PERIODIC_TIMEOUT); its
// OverTimeLimit is 0.
const (
	killWait   = 30 * time.Second
	limitCheck = 30 * time.Second
)

// TestSlurmGateNoBursarLeft (issue 35 item 1, "No Bursar left"): the
// gate gives a job the lease's whole minutes left as its time limit
// (floor((expiry − now + 5 s) / 60)) and refuses a token with less than a
// minute left before spending it; with every Bursar process gone, a job
// that ignores SIGTERM ends within the documented backstop: its lease's
// expiry + 5 s + Slurm's limit check + OverTimeLimit + KillWait. At the
// parent the limit was rounded up (a 150 s lease's job got 3 minutes,
// and a 20 s lease's job a whole minute, which ran 86 s past its lease
// in issue 35). The notice comes from Slurm too: the wrapper's job, its
// wrapper and watchdog killed, gets SIGTERM in its trap before its limit
// (the wrapper's --signal).
func TestSlurmGateNoBursarLeft(t *testing.T) {
	g := startSlurmGate(t)
	ignores := filepath.Join(g.dir, "ignores.sh")
	require.NoError(t, os.WriteFile(ignores, []byte("#!/bin/bash\ntrap '' TERM\nsleep 600 & wait\nsleep 600\n"), 0o755))

	_, short := g.token(t, 1, 30)
	g.refused(t, "sbatch -n 1 -o /dev/null --comment="+short+" "+ignores, "under the whole minute Slurm's time limits count")
	_, mid := g.token(t, 1, 150)
	out, code := g.sh(t, "sbatch --parsable -n 1 -o /dev/null --comment="+mid+" "+ignores)
	require.Equal(t, 0, code, out)
	midJob := strings.TrimSpace(out)
	out, _ = g.sh(t, "scontrol show job "+midJob)
	assert.Contains(t, out, "TimeLimit=00:02:00", "a 150 s lease's job gets 2 minutes, not 3")
	out, code = g.sh(t, "scancel "+midJob)
	require.Equal(t, 0, code, out)

	_, tok := g.token(t, 1, 60)
	l, err := slurmtoken.Parse(tok)
	require.NoError(t, err)
	out, code = g.sh(t, "sbatch --parsable -n 1 -o /dev/null --comment="+tok+" "+ignores)
	require.Equal(t, 0, code, out)
	job := strings.TrimSpace(out)
	out, _ = g.sh(t, "scontrol show job "+job)
	assert.Contains(t, out, "TimeLimit=00:01:00")
	g.waitJobRunning(t, time.Minute)

	// Beside it, a job the wrapper submitted on a 2-minute lease with a
	// 90 s notice; then its watchdog and the wrapper are killed: the
	// notice comes from Slurm itself (the wrapper's --signal=B:TERM@60:
	// 30 s after its own, Slurm's limit check, so never before it), 30 to
	// 60 s after the start. At the parent it came only with the limit's
	// own SIGTERM, two minutes or more after the start.
	started, warned := filepath.Join(g.dir, "started"), filepath.Join(g.dir, "warned")
	warns := filepath.Join(g.dir, "warns.sh")
	require.NoError(t, os.WriteFile(warns, []byte("#!/bin/bash\ntrap 'date +%s > "+warned+"; exit 3' TERM\n"+
		"date +%s > "+started+"\nsleep 600 & wait\n"), 0o755))
	lp := g.lease(t, g.srv, "--gpus", "1", "--duration", "120", "--expiry-notice", "90", "--", "sbatch", "-n", "1", "-o", "/dev/null", warns)
	for end := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if b, err := os.ReadFile(started); err == nil && len(b) > 0 {
			break
		}
		require.False(t, time.Now().After(end), "the wrapper's job did not start\n%s", lp.stderr)
	}
	time.Sleep(time.Second) // the wrapper is tracking the job
	for _, pid := range childrenOf(t, lp.cmd.Process.Pid) {
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL)) // the watchdog
	}
	require.NoError(t, lp.cmd.Process.Signal(syscall.SIGKILL))
	lp.wait(t, 10*time.Second)

	// No wrapper, no enforcer (the service runs none), and now no
	// service: only Slurm's own limit is left.
	g.srv.signal(t, syscall.SIGKILL)
	// The backstop counts from the job's start (whole seconds in
	// scontrol's answer: one more).
	out, _ = g.sh(t, "scontrol show job "+job)
	m := regexp.MustCompile(`StartTime=(\S+)`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	start, err := time.ParseInLocation("2006-01-02T15:04:05", m[1], time.Local)
	require.NoError(t, err, out)
	backstop := start.Add(time.Second + time.Minute + limitCheck + killWait)
	expiry := time.Unix(l.Expires, 0)
	for g.jobs(t) != "" {
		require.False(t, time.Now().After(backstop.Add(time.Second)),
			"job %s still queued %v after its lease's expiry, past the backstop (start + 1 min + %v + %v):\n%s",
			job, time.Since(expiry), limitCheck, killWait, g.jobs(t))
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("the job started %.1f s after its token was issued and ended %.1f s after its lease's expiry (backstop: %.1f s after it)",
		start.Sub(expiry.Add(-time.Minute)).Seconds(), time.Since(expiry).Seconds(), backstop.Sub(expiry).Seconds())

	at := func(file string) int64 {
		b, err := os.ReadFile(file)
		require.NoError(t, err, "%s: the job's TERM trap never ran", file)
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		require.NoError(t, err)
		return n
	}
	after := at(warned) - at(started)
	t.Logf("Slurm's own notice reached the wrapper's job %d s after its start (two-minute limit, --expiry-notice 90)", after)
	assert.GreaterOrEqual(t, after, int64(25))
	assert.LessOrEqual(t, after, int64(70), "the notice came from Slurm's --signal, before the limit")
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	require.NoError(t, err)
	var kids []int
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so after ")".
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			if k, err := strconv.Atoi(filepath.Base(filepath.Dir(st))); err == nil {
				kids = append(kids, k)
			}
		}
	}
	return kids
}
