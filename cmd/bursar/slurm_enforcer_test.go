//go:build unix

package main

import (
	"context"
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
	"github.com/bursar-hpc/bursar/slurmgate"
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

// beating says whether the heartbeat in file moved within d (read every
// 50 ms: a read between the shell's truncation and its write is empty).
func beating(t *testing.T, file string, d time.Duration) bool {
	t.Helper()
	first := ""
	for end := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(file)
		switch s := strings.TrimSpace(string(b)); {
		case s == "":
		case first == "":
			first = s
		case s != first:
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
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

// holdsLease says whether campaign sci holds lease id.
func (g *slurmGate) holdsLease(t *testing.T, id int) bool {
	t.Helper()
	ls, err := g.admin.Leases(context.Background(), "sci")
	require.NoError(t, err)
	for _, l := range ls.Leases {
		if l.ID == id {
			return true
		}
	}
	return false
}

// TestSlurmGateSelfCancel: a job whose tasks ignore SIGTERM, cancelled by
// its own user 2 s before its lease (a minute) ends, runs on, COMPLETING, for
// Slurm's KillWait (30 s here), where neither the wrapper nor the
// enforcer can signal it any more. Its lease stays held (the broker
// counts its CPUs) for as long as the job's heartbeat beats, and is
// released within a few seconds after. At the parent the lease ended at
// its deadline while the job's tasks held the whole node for 28 s more.
func TestSlurmGateSelfCancel(t *testing.T) {
	ledger := filepath.Join(t.TempDir(), "ledger.jsonl")
	g := startSlurmGate(t, "--slurm-enforce", "--slurm-grace", "3s", "--slurm-ledger", ledger)
	beat := filepath.Join(g.dir, "beat")
	script := filepath.Join(g.dir, "ignores.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/bash\ntrap '' TERM\n"+strings.TrimPrefix(heartbeat(beat, false), "#!/bin/bash\n")), 0o755))
	id, tok := g.token(t, 16, 60) // the gate's shortest: a whole minute
	ends := time.Unix(tokenExpiry(t, tok), 0)
	out, code := g.sh(t, "sbatch --parsable -n 16 -o /dev/null --comment="+tok+" "+script)
	require.Equal(t, 0, code, out)
	job := strings.TrimSpace(out)
	for end := time.Now().Add(time.Minute); !beating(t, beat, 300*time.Millisecond); {
		require.False(t, time.Now().After(end), "job %s did not start", job)
	}
	time.Sleep(time.Until(ends.Add(-2 * time.Second)))
	out, code = g.sh(t, "scancel "+job)
	require.Equal(t, 0, code, out)
	time.Sleep(time.Until(ends.Add(time.Second)))
	for beating(t, beat, 500*time.Millisecond) {
		require.True(t, g.holdsLease(t, id), "%v past the lease's end the job's tasks still run, but its lease is released\n%s",
			time.Since(ends).Round(time.Millisecond), g.srv.stderr)
		require.Less(t, time.Since(ends), time.Minute, "the job's tasks ran on for a minute")
		time.Sleep(300 * time.Millisecond)
	}
	ran := time.Since(ends)
	t.Logf("the self-cancelled job's tasks ran %v past the lease's end (KillWait), the lease held meanwhile", ran.Round(100*time.Millisecond))
	assert.Greater(t, ran, 10*time.Second, "the job ran on after its cancellation (KillWait 30 s): the test saw the leak")
	for end := time.Now().Add(10 * time.Second); g.holdsLease(t, id); time.Sleep(200 * time.Millisecond) {
		require.False(t, time.Now().After(end), "the lease is still held 10 s after its job ended")
	}
	// Slurm's record ends the job at its cancellation; the enforcer's
	// ledger saw it run on: reconcile reports the real end.
	jobcomp := filepath.Join(g.dir, "slurm", "jobcomp.txt")
	g.waitQueueEmpty(t, 10*time.Second)
	out, _ = g.sh(t, bin+" slurm reconcile --no-squeue --jobcomp "+jobcomp)
	t.Logf("reconcile by the WcKey and jobcomp alone:\n%s", out)
	out, code = g.sh(t, bin+" slurm reconcile --no-squeue --jobcomp "+jobcomp+" --ledger "+ledger)
	assert.Equal(t, 3, code, out)
	assert.Regexp(t, "job "+job+` \(local, CANCELLED, 16 CPUs\): past its lease: lease `+strconv.Itoa(id)+` ended \S+, the job 2\d\.\d+s later \(Slurm records its end at`, out)
}

// TestSlurmGateUserRelease: a lease its user releases while its job
// runs is not freed at once. A job on the whole node (16 CPUs) whose
// tasks ignore SIGTERM beats (a heartbeat file its batch shell writes)
// after its lease's release, through the enforcer's notice and the
// --slurm-grace (5 s) before the kill; for as long as it beats the
// broker counts its 16 CPUs as held (none free), and frees them within a
// few seconds after the beat stops. At the parent the release freed the
// 16 CPUs at once while the job's tasks held them for the grace. The
// same for the release of all of the campaign's leases (DELETE
// /v1/campaigns/C/leases), which at its parent freed them at once too.
func TestSlurmGateUserRelease(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		release func(c *client.Client, lease int) (*client.ReleaseResult, error)
	}{
		{"its own release", func(c *client.Client, lease int) (*client.ReleaseResult, error) {
			return c.ReleaseLease(ctx, "sci", lease)
		}},
		// DELETE /v1/campaigns/C/leases: at its parent it freed the
		// 16 CPUs at once.
		{"the release of all of its campaign's leases", func(c *client.Client, _ int) (*client.ReleaseResult, error) { return c.ReleaseAll(ctx, "sci", "") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A cluster each: run second on the same one, a job was
			// killed within 0.5 s of its lease's release, whichever
			// release came second (not looked into).
			ledger := filepath.Join(t.TempDir(), "ledger.jsonl")
			g := startSlurmGate(t, "--slurm-enforce", "--slurm-grace", "5s", "--slurm-ledger", ledger)
			beat := filepath.Join(g.dir, "beat")
			script := filepath.Join(g.dir, "ignores.sh")
			require.NoError(t, os.WriteFile(script, []byte("#!/bin/bash\ntrap '' TERM\n"+strings.TrimPrefix(heartbeat(beat, false), "#!/bin/bash\n")), 0o755))
			free := func() int {
				s, err := g.admin.Supply(ctx, "sci")
				require.NoError(t, err)
				return s.Free
			}
			id, tok := g.token(t, 16, 120)
			out, code := g.sh(t, "sbatch --parsable -n 16 -o /dev/null --comment="+tok+" "+script)
			require.Equal(t, 0, code, out)
			job := strings.TrimSpace(out)
			for end := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
				b, _ := os.ReadFile(ledger)
				if beating(t, beat, 300*time.Millisecond) && strings.Contains(string(b), `"job":"`+job+`","event":"running"`) {
					break
				}
				require.False(t, time.Now().After(end), "job %s did not start, or the enforcer did not see it\n%s", job, g.srv.stderr)
			}
			require.Equal(t, 0, free(), "the job's lease holds the whole pool")

			res, err := c.release(g.admin, id)
			require.NoError(t, err)
			released := time.Now()
			t.Logf("release answered %+v", *res)
			assert.Equal(t, 16, res.HeldGPUs, "the answer names the GPUs still held")
			beats := 0
			for beating(t, beat, 500*time.Millisecond) {
				beats++
				f := free()
				require.Equal(t, 0, f, "%v after its lease's release the job's tasks still run on 16 CPUs, but the broker counts %d of them free\n%s",
					time.Since(released).Round(time.Millisecond), f, g.srv.stderr)
				require.Less(t, time.Since(released), time.Minute, "the job's tasks ran on for a minute after the release")
			}
			ran := time.Since(released)
			t.Logf("the job's tasks ran %v after its lease's release (the grace, 5 s, then the kill), none of its CPUs free meanwhile", ran.Round(100*time.Millisecond))
			assert.Greater(t, beats, 3, "the job ran on after the release: the test saw the window\n%s", g.srv.stderr)
			for end := time.Now().Add(10 * time.Second); free() != 16; time.Sleep(200 * time.Millisecond) {
				require.False(t, time.Now().After(end), "the lease still holds %d CPUs 10 s after its job ended", 16-free())
			}
			t.Logf("the CPUs were free %v after the release", time.Since(released).Round(100*time.Millisecond))
			assert.False(t, g.holdsLease(t, id), "the lease is gone once its job is")
		})
	}
}

// TestSlurmGateReconcileLedger: reconcile --ledger reads the enforcer's
// ledger, not the WcKey a job carries: a job from before the gate whose
// WcKey names a lease is listed as without one; a job that ignored its
// SIGTERM ran on after its lease's release until the enforcer's kill,
// and is not listed, since the broker held its lease until it had ended
// (TestSlurmGateUserRelease; before that rule it was listed "after its
// lease's release"); an array's two tasks on a 2-GPU lease run together under the enforcer (a
// task is not taken for a second job on the token), are killed at the
// lease's end whatever they do with SIGTERM, and pass. At the parent
// reconcile had no --ledger and the forged WcKey passed.
func TestSlurmGateReconcileLedger(t *testing.T) {
	ledger := filepath.Join(t.TempDir(), "ledger.jsonl")
	g := startSlurmGate(t, "--slurm-enforce", "--slurm-grace", "2s", "--slurm-ledger", ledger, "--slurm-ungated", "free")
	ctx := context.Background()

	// Before the gate: a job with a WcKey that names a lease.
	gate := g.swapGate(t, []byte("function slurm_job_submit(j, p, u) return slurm.SUCCESS end\n"+
		"function slurm_job_modify(j, r, p, u) return slurm.SUCCESS end\nreturn slurm.SUCCESS\n"))
	out, code := g.sh(t, "sbatch --parsable -n 1 -o /dev/null --wckey=bursar:99:sci:16:9999999999 --wrap 'sleep 1'")
	require.Equal(t, 0, code, out)
	forged := strings.TrimSpace(out)
	g.swapGate(t, gate)

	// An array of two 1-CPU tasks on a 2-GPU lease, each beating and
	// ignoring SIGTERM.
	_, tok := g.token(t, 2, 60) // the gate's shortest: a whole minute
	arrayEnds := time.Unix(tokenExpiry(t, tok), 0)
	script := filepath.Join(g.dir, "task.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/bash\ntrap '' TERM\n"+
		strings.TrimPrefix(strings.Replace(heartbeat(filepath.Join(g.dir, "beat"), false), "/beat;", "/beat.$SLURM_ARRAY_TASK_ID;", 1), "#!/bin/bash\n")), 0o755))
	out, code = g.sh(t, "sbatch --parsable -n 1 -o /dev/null --array=0-1 --comment="+tok+" "+script)
	require.Equal(t, 0, code, out)
	array := strings.TrimSpace(out)
	for end := time.Now().Add(30 * time.Second); ; {
		if beating(t, filepath.Join(g.dir, "beat.0"), 300*time.Millisecond) && beating(t, filepath.Join(g.dir, "beat.1"), 300*time.Millisecond) {
			break
		}
		require.False(t, time.Now().After(end), "the array's tasks do not both run:\n%s\n%s", g.jobs(t), g.srv.stderr)
	}
	time.Sleep(2 * time.Second) // four reads of the queue
	assert.True(t, beating(t, filepath.Join(g.dir, "beat.1"), time.Second), "the second task runs on:\n%s", g.srv.stderr)
	// A job that ignores SIGTERM, its lease released while it runs.
	ignores := filepath.Join(g.dir, "ignores.sh")
	require.NoError(t, os.WriteFile(ignores, []byte("#!/bin/bash\ntrap '' TERM\n"+strings.TrimPrefix(heartbeat(filepath.Join(g.dir, "rel"), false), "#!/bin/bash\n")), 0o755))
	id, tok := g.token(t, 2, 120)
	out, code = g.sh(t, "sbatch --parsable -n 1 -o /dev/null --comment="+tok+" "+ignores)
	require.Equal(t, 0, code, out)
	released := strings.TrimSpace(out)
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		b, _ := os.ReadFile(ledger)
		if beating(t, filepath.Join(g.dir, "rel"), 300*time.Millisecond) && strings.Contains(string(b), `"job":"`+released+`","event":"running"`) {
			break
		}
		require.False(t, time.Now().After(end), "job %s did not start, or the enforcer did not see it", released)
	}
	_, err := g.admin.ReleaseLease(ctx, "sci", id)
	require.NoError(t, err)

	// At the lease's end each task's step is killed (its id as its steps
	// carry it, 9_1.batch), not cancelled into KillWait.
	time.Sleep(time.Until(arrayEnds.Add(2 * time.Second)))
	for _, b := range []string{"beat.0", "beat.1"} {
		assert.False(t, beating(t, filepath.Join(g.dir, b), time.Second), "%s: the task runs on %v past its lease\n%s", b, time.Since(arrayEnds), g.srv.stderr)
	}

	g.waitQueueEmpty(t, 30*time.Second)

	out, code = g.sh(t, bin+" slurm reconcile --no-squeue --ungated free --jobcomp "+filepath.Join(g.dir, "slurm", "jobcomp.txt")+" --ledger "+ledger)
	t.Logf("reconcile --ledger:\n%s", out)
	assert.Equal(t, 3, code, out)
	assert.Contains(t, out, "job "+forged+" (local, COMPLETED, 1 CPUs): no lease: the enforcer's ledger binds it to no lease")
	assert.NotContains(t, out, "job "+released+" ", "the broker held its lease until it ended")
	assert.NotContains(t, out, "job "+array, "the array's tasks kept to their lease")
	assert.Contains(t, out, "4 jobs checked: 1 without a lease, 0 past their lease, 0 larger than their lease")
	assert.NotContains(t, out, "after their lease's release")
}

// tokenExpiry is a token's expiry, unix seconds.
func tokenExpiry(t *testing.T, tok string) int64 {
	t.Helper()
	f := strings.Split(tok, ":")
	require.GreaterOrEqual(t, len(f), 6, tok)
	n, err := strconv.ParseInt(f[4], 10, 64)
	require.NoError(t, err)
	return n
}

// trapTime is the time a job's trap wrote into file (EPOCHREALTIME).
func trapTime(t *testing.T, file string) (time.Time, bool) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		return time.Time{}, false
	}
	sec, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	require.NoError(t, err, "%s: %q", file, b)
	return time.Unix(0, int64(sec*1e9)), true
}

// TestSlurmGateNotices: the notice (slurmgate.Notice, which the wrapper,
// its watchdog and the enforcer send) reaches a task's own TERM trap
// under `srun`, under `sbatch`, and in an `srun` step of an `sbatch` job,
// each job writing the time its trap ran. The notice here is the
// enforcer's, to jobs on tokens given by hand whose leases are released
// (no wrapper, so no --signal warning of Slurm's own either): each trap
// runs within a few seconds of the release, long before the kill that
// follows the grace (10 s). At the parent (scancel --signal=TERM --full)
// the srun job's trap and the step's trap never ran: srun's tasks were
// not signalled, and the step was killed with its srun.
func TestSlurmGateNotices(t *testing.T) {
	ledger := filepath.Join(t.TempDir(), "ledger.jsonl")
	g := startSlurmGate(t, "--slurm-enforce", "--slurm-grace", "10s", "--slurm-ledger", ledger)
	dir := g.dir
	loop := "while :; do sleep 0.2 & wait; done\n"
	trap := "trap 'echo \"$EPOCHREALTIME\" > " + dir + "/$1.trap; exit 3' TERM\n"
	ready := "echo > " + dir + "/$1.ready\n"
	task := filepath.Join(dir, "task.sh")
	require.NoError(t, os.WriteFile(task, []byte("#!/bin/bash\n"+trap+ready+loop), 0o755))
	stepped := filepath.Join(dir, "stepped.sh")
	// The batch shell waits for its step at the notice, as a script
	// whose work is in srun steps would.
	require.NoError(t, os.WriteFile(stepped, []byte("#!/bin/bash\ntrap 'wait' TERM\nsrun -n 1 "+task+" $1 &\nwait\nwait\n"), 0o755))
	for _, kind := range []string{"srun", "sbatch", "sbatch+srun"} {
		id, tok := g.token(t, 2, 120)
		var done <-chan error
		switch kind {
		case "srun":
			cmd := exec.Command(sysBin("srun"), "--comment="+tok, "-n", "1", task, kind)
			cmd.Env, cmd.Dir = g.env(), dir
			require.NoError(t, cmd.Start())
			ch := make(chan error, 1)
			go func() { ch <- cmd.Wait() }()
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			done = ch
		case "sbatch":
			out, code := g.sh(t, "sbatch -n 1 -o /dev/null --comment="+tok+" "+task+" "+kind)
			require.Equal(t, 0, code, out)
		default:
			out, code := g.sh(t, "sbatch -n 1 -o /dev/null --comment="+tok+" "+stepped+" "+kind)
			require.Equal(t, 0, code, out)
		}
		// The trap is set, the enforcer has seen this lease's job run
		// while the lease was held (a job first seen after its release
		// is killed at once, with no notice), and Slurm lists the job's
		// srun step (the notice goes to a job's steps when it has any).
		// The ledger is read for this lease's own job: counting events
		// over the whole ledger raced with the enforcer's "last-seen"
		// line of the previous case's job, written up to a read (0.5 s)
		// after the queue emptied, and so could pass before the
		// enforcer had seen this job at all.
		for end := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
			_, err := os.Stat(filepath.Join(dir, kind+".ready"))
			job := ledgerRunning(t, ledger, id)
			if err == nil && job != "" && (kind != "sbatch+srun" || g.stepListed(t, job)) {
				break
			}
			require.False(t, time.Now().After(end), "%s: the job did not start, or the enforcer did not see it\n%s", kind, g.jobs(t))
		}
		released := time.Now()
		_, err := g.admin.ReleaseLease(context.Background(), "sci", id)
		require.NoError(t, err)
		g.waitQueueEmpty(t, 30*time.Second)
		if done != nil {
			<-done
		}
		ran, ok := trapTime(t, filepath.Join(dir, kind+".trap"))
		if assert.True(t, ok, "%s: the task's TERM trap did not run\n%s", kind, g.srv.stderr) {
			t.Logf("%s: the trap ran %v after the lease's release", kind, ran.Sub(released).Round(time.Millisecond))
			assert.Less(t, ran.Sub(released), 5*time.Second, "%s: the trap ran at the notice, not at the kill after the grace", kind)
		}
	}
}

// ledgerRunning is the Slurm job number of the job the enforcer's
// ledger says it saw running on lease id ("": none yet, or no ledger).
func ledgerRunning(t *testing.T, ledger string, id int) string {
	t.Helper()
	f, err := os.Open(ledger)
	if err != nil {
		return ""
	}
	defer f.Close()
	l, err := slurmgate.ReadLedger(f, ledger)
	if err != nil {
		return "" // a line being written: read again
	}
	for _, j := range l {
		if j.Lease == id && !j.Running.IsZero() {
			if j.Number != "" {
				return j.Number
			}
			return j.Job
		}
	}
	return ""
}

// stepListed says whether squeue lists a step of job (other than its
// batch step).
func (g *slurmGate) stepListed(t *testing.T, job string) bool {
	out, code := g.sh(t, "squeue -h -s -j "+job+" -o '%i'")
	if code != 0 {
		return false
	}
	for _, l := range strings.Fields(out) {
		if _, step, ok := strings.Cut(l, "."); ok && step != "batch" && step != "extern" {
			return true
		}
	}
	return false
}

// TestSlurmGateEnforcerBehindTheGate: the enforcer's own checks, with a
// plugin that admits everything standing in for a gate that missed a
// job (a size it did not count, a release it had not recorded): a job
// whose allocated TRES exceed its lease (16 CPUs on a 1-GPU lease) is
// killed the first time the enforcer sees it running, and a job on a
// released lease's token is killed at once, with no grace;
// both are checked by their heartbeat, with the enforcer running.
func TestSlurmGateEnforcerBehindTheGate(t *testing.T) {
	g := startSlurmGate(t, "--slurm-enforce", "--slurm-grace", "10s")
	g.swapGate(t, []byte("function slurm_job_submit(j, p, u) return slurm.SUCCESS end\n"+
		"function slurm_job_modify(j, r, p, u) return slurm.SUCCESS end\nreturn slurm.SUCCESS\n"))
	ctx := context.Background()
	for _, c := range []struct{ name, opts string }{{"oversized", "--mincpus=16 -n 1"}, {"released", "-n 1"}} {
		beat := filepath.Join(g.dir, c.name)
		script := filepath.Join(g.dir, c.name+".sh")
		require.NoError(t, os.WriteFile(script, []byte(heartbeat(beat, true)), 0o755))
		id, tok := g.token(t, 1, 120)
		if c.name == "released" {
			_, err := g.admin.ReleaseLease(ctx, "sci", id)
			require.NoError(t, err)
		}
		out, code := g.sh(t, "sbatch --parsable -o /dev/null "+c.opts+" --comment="+tok+" "+script)
		require.Equal(t, 0, code, out)
		job := strings.TrimSpace(out)
		started := time.Now()
		g.waitQueueEmpty(t, 30*time.Second)
		// (Its trap may run: a job seen running before its batch step
		// is listed has no step to kill, and is cancelled.)
		assert.False(t, beating(t, beat, time.Second), "%s: job %s's tasks still run", c.name, job)
		assert.Less(t, time.Since(started), 10*time.Second, "%s: killed at once, not after the grace\n%s", c.name, g.srv.stderr)
	}
	log := g.srv.stderr.String()
	assert.Contains(t, log, "a job larger than its lease: killed")
	assert.Contains(t, log, "jobs first seen, whose lease is gone")
}
