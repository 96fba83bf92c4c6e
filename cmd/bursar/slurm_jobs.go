//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bursar-hpc/bursar/service"
)

// Slurm jobs on a lease are found by their --comment, which holds the
// lease's token (docs/slurm.md): that finds the job of an srun, an sbatch
// or an salloc alike, without parsing what each prints.

// slurmSubmitters are the commands `bursar lease --slurm` wraps.
var slurmSubmitters = map[string]bool{"srun": true, "sbatch": true, "salloc": true}

// withSlurmToken inserts the token as the job's comment right after the
// submitting command's name, so that the user's own options (and the batch
// script with its arguments) follow unchanged.
func withSlurmToken(args []string, token string) ([]string, error) {
	if !slurmSubmitters[filepath.Base(args[0])] {
		return nil, fmt.Errorf("--slurm wraps srun, sbatch or salloc, not %s", args[0])
	}
	out := append([]string{args[0], "--comment=" + token}, args[1:]...)
	return out, nil
}

// slurmJobsOf lists the ids of the jobs (pending, running or completing)
// whose comment is token.
func slurmJobsOf(token string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), slurmCmdTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "squeue", "-h", "-o", "%i|%k").Output()
	if err != nil {
		return nil, fmt.Errorf("squeue: %w", err)
	}
	var ids []string
	for _, line := range strings.Split(string(out), "\n") {
		id, comment, ok := strings.Cut(strings.TrimSpace(line), "|")
		if ok && comment == token {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// scancelJobs ends jobs: with term, SIGTERM to every process of the job
// (the batch shell too: --full), which is how a job's own trap gets the
// notice (srun turns a SIGTERM it gets itself into an immediate kill);
// without, killSlurmJobs.
func scancelJobs(ids []string, term bool) error {
	if len(ids) == 0 {
		return nil
	}
	if term {
		return runScancel(append([]string{"--signal=TERM", "--full"}, ids...)...)
	}
	return killSlurmJobs(ids)
}

// runScancel runs scancel with args (bounded).
func runScancel(args ...string) error { return runScancelWithin(slurmCmdTimeout, args...) }

// slurmKillTimeout bounds a SIGKILL's scancel: scancel answers a job
// that is "in a transitional state" (starting, or ending already) by
// sleeping 5 s and retrying, which would hold back the cancellation that
// follows; the kill of a job that is ending anyway is not needed, and
// the enforcer's next look at the queue kills what is still there.
const slurmKillTimeout = 2 * time.Second

// runScancelWithin runs scancel with args, for at most d.
func runScancelWithin(d time.Duration, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "scancel", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("scancel %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// killSlurmJobs ends jobs at once, whatever their processes do with
// SIGTERM: SIGKILL to each of their steps and batch shells directly, then
// Slurm's cancellation (killSlurmJobsWith). A running job is never
// cancelled before its steps were killed: on Slurm 22.05 slurmctld turns a SIGKILL for a
// whole running job (`scancel --signal=KILL [--full] JOB`, like a bare
// `scancel`) into a cancellation, for which slurmd sends the job's steps
// SIGTERM and SIGKILL only KillWait later (30 s by default), and a
// cancelled job's steps take no more signals; so a job that ignores
// SIGTERM would run on, COMPLETING, on CPUs the broker has given to
// another lease. A SIGKILL addressed to a step (`scancel --signal=KILL
// JOB.STEP`) or to the batch shell (`--batch`) is delivered as it is, and
// the job ends when they do (srun's or the batch script's end completes
// it).
func killSlurmJobs(ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	steps, batch, serr := slurmStepsOf(ids)
	if serr != nil {
		return serr // without the steps, a cancellation could let a job run for KillWait
	}
	return killSlurmJobsWith(ids, steps, batch)
}

// killSlurmJobsWith is killSlurmJobs with the steps and batch shells of
// ids already read (slurmStepsOf). The steps are killed before the batch
// shells (a batch shell's end ends the job, and its steps then get the
// cancellation's SIGTERM and KillWait), and the jobs are cancelled once
// both kills went through, which takes them out of the running state at
// once rather than when their srun has reported the end (slow on a busy
// login node); if a kill failed, only the jobs with nothing to kill are
// cancelled, and the rest are left for the next kill.
func killSlurmJobsWith(ids, steps, batch []string) error {
	kerr := killSlurmSteps(steps, batch)
	cancel := ids
	if kerr != nil {
		running := make(map[string]bool, len(steps)+len(batch))
		for _, st := range steps {
			job, _, _ := strings.Cut(st, ".")
			running[job] = true
		}
		for _, job := range batch {
			running[job] = true
		}
		cancel = nil
		for _, id := range ids {
			if !running[id] {
				cancel = append(cancel, id)
			}
		}
	}
	if len(cancel) == 0 {
		return kerr
	}
	// A job that ended meanwhile makes scancel fail for its id only.
	return errors.Join(kerr, runScancel(cancel...))
}

// killSlurmSteps sends SIGKILL through Slurm to steps (JOB.STEP), then
// to the batch shells of jobs batch.
func killSlurmSteps(steps, batch []string) error {
	var kerr, berr error
	if len(steps) > 0 {
		kerr = runScancelWithin(slurmKillTimeout, append([]string{"--signal=KILL"}, steps...)...)
	}
	if len(batch) > 0 {
		berr = runScancelWithin(slurmKillTimeout, append([]string{"--signal=KILL", "--batch"}, batch...)...)
	}
	return errors.Join(kerr, berr)
}

// slurmStepsOf lists the running steps of jobs ids (squeue -s): the
// numbered ones (JOB.0, JOB.1, …) and the jobs that have a batch shell
// (JOB.batch). The extern step (PrologFlags=contain) runs no job process.
func slurmStepsOf(ids []string) (steps, batch []string, err error) {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	out, err := squeueSteps()
	steps, batch = parseSlurmSteps(out, want)
	return steps, batch, err
}

// squeueSteps is `squeue -h -s -o %i`: every running step, JOB.STEP a
// line.
func squeueSteps() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), slurmCmdTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "squeue", "-h", "-s", "-o", "%i").Output()
	if err != nil {
		return "", fmt.Errorf("squeue -s: %w", err)
	}
	return string(out), nil
}

// parseSlurmSteps reads `squeue -h -s -o %i` (one JOB.STEP a line) and
// keeps the steps of the jobs in want: numbered steps as they are, and
// the jobs with a batch step. An array task's job id (123_4) is kept as
// squeue prints it.
func parseSlurmSteps(out string, want map[string]bool) (steps, batch []string) {
	for _, line := range strings.Split(out, "\n") {
		job, step, ok := strings.Cut(strings.TrimSpace(line), ".")
		if !ok || !want[job] {
			continue
		}
		switch {
		case step == "batch":
			batch = append(batch, job)
		case step != "" && strings.Trim(step, "0123456789") == "":
			steps = append(steps, job+"."+step)
		}
	}
	return steps, batch
}

// endSlurmJobs finds the token's jobs and ends them as scancelJobs does.
func endSlurmJobs(token string, term bool) ([]string, error) {
	ids, err := slurmJobsOf(token)
	if err != nil {
		return nil, err
	}
	return ids, scancelJobs(ids, term)
}

// endSlurmLease ends the token's jobs as scancelJobs does, but names them
// by the lease's WcKey (service.SlurmWCKey: the gate writes it from the
// token's own fields), so that the notice needs no squeue to find them
// first (one scancel, however many jobs the lease runs), and the end's
// cancellation also reaches a job submitted meanwhile. A token that
// cannot be read falls back to the comment (endSlurmJobs).
func endSlurmLease(token string, term bool) (string, error) {
	l, err := service.ParseSlurmToken(token)
	if err != nil {
		ids, err := endSlurmJobs(token, term)
		return "jobs " + strings.Join(ids, ","), err
	}
	key := service.SlurmWCKey(l)
	what := "the jobs of WcKey " + key
	if term {
		// Running jobs only: scancel answers a SIGTERM to a pending job
		// (one still waiting for CPUs) by retrying 5 s later.
		return what, runScancel("--signal=TERM", "--full", "--state=RUNNING", "--wckey="+key)
	}
	// The kill goes to each step (killSlurmJobs says why), which needs the
	// jobs' ids; a job still pending is cancelled by WcKey, which also
	// ends one submitted after the squeue.
	ids, err := slurmJobsOf(token)
	if err != nil {
		return what, err
	}
	what += " (" + strings.Join(ids, ",") + ")"
	kerr := killSlurmJobs(ids)
	return what, errors.Join(kerr, runScancel("--state=PENDING", "--wckey="+key))
}

// slurmHand makes the wrapper's Slurm calls off the wrapper's loop, each
// as soon as it is asked for: on a loaded slurmctld a scancel can take
// seconds, and neither the loop nor the end of the lease waits for the
// notice's call to come back (a SIGKILL that overtakes the SIGTERM ends
// the job all the same).
type slurmHand struct {
	token string
	say   func(format string, args ...any)
	wg    sync.WaitGroup
}

// slurmAct is one call: the notice (term) or the end, why, and what to do
// once it is made.
type slurmAct struct {
	term  bool
	why   string
	after func()
	// cancel, when set, are jobs to cancel outright (their steps were
	// killed already).
	cancel []string
}

func newSlurmHand(token string, say func(string, ...any)) *slurmHand {
	return &slurmHand{token: token, say: say}
}

// send makes a call (the loop makes at most one notice and one end).
func (h *slurmHand) send(a slurmAct) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		if len(a.cancel) > 0 {
			err := runScancel(a.cancel...)
			h.say("%s: cancelled %s (%v)", a.why, strings.Join(a.cancel, ","), errOrOK(err))
			return
		}
		what, err := endSlurmLease(h.token, a.term)
		if a.term {
			h.say("%s: SIGTERM through Slurm to %s (%v)", a.why, what, errOrOK(err))
		} else {
			h.say("%s: SIGKILL through Slurm to %s, cancelled (%v)", a.why, what, errOrOK(err))
		}
		if a.after != nil {
			a.after()
		}
	}()
}

// close waits for the calls made.
func (h *slurmHand) close() { h.wg.Wait() }
