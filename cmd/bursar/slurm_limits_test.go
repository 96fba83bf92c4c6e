//go:build unix

package main

import (
	"os"
	"path/filepath"
	"regexp"
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
// in issue 35).
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
	// No wrapper, no enforcer (the service runs none), and now no
	// service: only Slurm's own limit is left.
	g.srv.signal(t, syscall.SIGKILL)
	// The backstop counts from the job's start (whole seconds in
	// scontrol's answer: one more).
	out, _ = g.sh(t, "scontrol show job "+job)
	m := regexp.MustCompile(`StartTime=(\S+)`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	started, err := time.ParseInLocation("2006-01-02T15:04:05", m[1], time.Local)
	require.NoError(t, err, out)
	backstop := started.Add(time.Second + time.Minute + limitCheck + killWait)
	expiry := time.Unix(l.Expires, 0)
	for g.jobs(t) != "" {
		require.False(t, time.Now().After(backstop.Add(time.Second)),
			"job %s still queued %v after its lease's expiry, past the backstop (start + 1 min + %v + %v):\n%s",
			job, time.Since(expiry), limitCheck, killWait, g.jobs(t))
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("the job started %.1f s after its token was issued and ended %.1f s after its lease's expiry (backstop: %.1f s after it)",
		started.Sub(expiry.Add(-time.Minute)).Seconds(), time.Since(expiry).Seconds(), backstop.Sub(expiry).Seconds())
}
