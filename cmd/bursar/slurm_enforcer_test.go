//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The enforcer's side of issue 35 against the real cluster: each leak
// is checked by what the job's own tasks do (a heartbeat file they write
// while they run), with serve --slurm-enforce running.

// heartbeat is a batch script that writes the time into file every 0.2 s
// for its whole life (its TERM trap, when trap is set, writes
// file.term and exits).
func heartbeat(file string, trapTerm bool) string {
	s := "#!/bin/bash\n"
	if trapTerm {
		s += "trap 'echo \"$EPOCHREALTIME\" > " + file + ".term; exit 3' TERM\n"
	}
	return s + "while :; do echo \"$EPOCHREALTIME\" > " + file + "; sleep 0.2 & wait; done\n"
}

// beating says whether the heartbeat in file moved within d.
func beating(t *testing.T, file string, d time.Duration) bool {
	t.Helper()
	a, _ := os.ReadFile(file)
	time.Sleep(d)
	b, _ := os.ReadFile(file)
	return len(b) > 0 && string(a) != string(b)
}

// swapGate replaces the cluster's job_submit.lua with body (the plugin
// reloads a script whose modification time changed) and returns the
// original's.
func (g *slurmGate) swapGate(t *testing.T, body []byte) []byte {
	t.Helper()
	p := filepath.Join(g.dir, "slurm", "job_submit.lua")
	old, err := os.ReadFile(p)
	require.NoError(t, err)
	st, err := os.Stat(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, body, 0o644))
	later := st.ModTime().Add(2 * time.Second)
	if time.Now().After(later) {
		later = time.Now()
	}
	require.NoError(t, os.Chtimes(p, later, later))
	return old
}

// TestSlurmGatePreGateJobs: jobs queued and running before the gate was
// enabled (here: while the plugin let everything through) are listed by
// `bursar slurm audit`; serve --slurm-unleased hold gives the pending
// one an administrator's hold, which its user cannot release, and leaves
// the running one; --slurm-unleased cancel ends both (the running one's
// heartbeat stops within the grace), and never a job of an ungated
// partition. At the parent the enforcer ignored them: they kept running,
// or started later, with no lease.
func TestSlurmGatePreGateJobs(t *testing.T) {
	g := startSlurmGate(t)
	shared := filepath.Join(g.dir, "shared")
	require.NoError(t, os.Mkdir(shared, 0o777))
	require.NoError(t, os.Chmod(shared, 0o777))
	beat := filepath.Join(shared, "beat")
	script := filepath.Join(shared, "beat.sh")
	require.NoError(t, os.WriteFile(script, []byte(heartbeat(beat, false)), 0o755))

	gate := g.swapGate(t, []byte("function slurm_job_submit(j, p, u) return slurm.SUCCESS end\n"+
		"function slurm_job_modify(j, r, p, u) return slurm.SUCCESS end\nreturn slurm.SUCCESS\n"))
	as := "runuser -u nobody -- "
	sub := func(line string) string {
		out, code := g.sh(t, as+"sbatch --parsable -o /dev/null "+line)
		require.Equal(t, 0, code, out)
		return strings.TrimSpace(out)
	}
	running := sub("-n 1 " + script)
	pending := sub("-n 1 --begin=now+3600 --wrap true")
	free := sub("-p free -n 1 --wrap 'sleep 60'")
	g.swapGate(t, gate)
	out, code := g.sh(t, "srun -n 1 true")
	require.NotEqual(t, 0, code, "the gate is back: %s", out)
	for end := time.Now().Add(time.Minute); !beating(t, beat, 500*time.Millisecond); {
		require.False(t, time.Now().After(end), "job %s did not start", running)
	}

	out, code = g.sh(t, bin+" slurm audit --key-file "+g.key+" --ungated free")
	assert.Equal(t, 3, code, out)
	assert.Contains(t, out, "job "+running+" (local, RUNNING, 1 CPUs): without a lease: no lease token")
	assert.Contains(t, out, "job "+pending+" (local, PENDING, 1 CPUs): without a lease")
	assert.NotContains(t, out, "job "+free+" ")
	assert.Contains(t, out, "3 jobs queued: 2 without a lease")

	reason := func(job string) string {
		out, _ := g.sh(t, "squeue -h -j "+job+" -o %r")
		return strings.TrimSpace(out)
	}
	enforcer := func(rule string) *proc {
		return startServe(t, g.env(), "--admin-token-file", tokenFile(t), "--speed", "1", "--pool", "16", "--slurm-key-file", g.key,
			"--slurm-enforce", "--slurm-grace", "2s", "--slurm-unleased", rule, "--slurm-ungated", "free")
	}
	p := enforcer("hold")
	for end := time.Now().Add(20 * time.Second); reason(pending) != "JobHeldAdmin"; time.Sleep(200 * time.Millisecond) {
		require.False(t, time.Now().After(end), "job %s was not held: %s\n%s", pending, reason(pending), p.stderr)
	}
	out, code = g.sh(t, as+"scontrol release "+pending)
	assert.NotEqual(t, 0, code, "its user cannot release an administrator's hold: %s", out)
	assert.True(t, beating(t, beat, time.Second), "by the hold rule a running job runs on")
	p.signal(t, syscall.SIGTERM)

	p = enforcer("cancel")
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if q := g.jobs(t); !strings.Contains(q, running+"|") && !strings.Contains(q, pending+"|") {
			break
		}
		require.False(t, time.Now().After(end), "jobs without a lease still queued:\n%s\n%s", g.jobs(t), p.stderr)
	}
	assert.False(t, beating(t, beat, time.Second), "the running job's tasks are gone")
	assert.Contains(t, g.jobs(t), free+"|", "a job of an ungated partition is not the gate's")
	out, code = g.sh(t, bin+" slurm audit --key-file "+g.key+" --ungated free")
	assert.Equal(t, 0, code, out)
	_, _ = g.sh(t, "scancel "+free)
}
