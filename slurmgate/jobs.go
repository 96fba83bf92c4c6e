package slurmgate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/bursar-hpc/bursar/internal/slurmtoken"
)

// Slurm jobs on a lease are found by their --comment, which holds the
// lease's token (docs/slurm.md): that finds the job of an srun, an sbatch
// or an salloc alike, without parsing what each prints.

// submitters are the commands `bursar lease --slurm` wraps.
var submitters = map[string]bool{"srun": true, "sbatch": true, "salloc": true}

// WithToken inserts the token as the job's comment right after the
// submitting command's name, so that the user's own options (and the batch
// script with its arguments) follow unchanged.
func WithToken(args []string, token string) ([]string, error) {
	if !submitters[filepath.Base(args[0])] {
		return nil, fmt.Errorf("--slurm wraps srun, sbatch or salloc, not %s", args[0])
	}
	out := append([]string{args[0], "--comment=" + token}, args[1:]...)
	return out, nil
}

// JobsOf lists the ids of the jobs (pending, running or completing)
// whose comment is token.
func JobsOf(c Cluster, token string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), CmdTimeout)
	defer cancel()
	jobs, err := c.Queue(ctx)
	if err != nil {
		return nil, fmt.Errorf("squeue: %w", err)
	}
	var ids []string
	for _, j := range jobs {
		if j.Comment == token {
			ids = append(ids, j.ID)
		}
	}
	return ids, nil
}

// End ends jobs: with term, the notice (Notice: SIGTERM to the jobs'
// tasks, for their own traps); without, Kill.
func End(c Cluster, ids []string, term bool) error {
	if len(ids) == 0 {
		return nil
	}
	if term {
		return Notice(c, ids)
	}
	return Kill(c, ids)
}

// Notice sends running jobs ids SIGTERM through Slurm so that their tasks'
// own traps run (issue 35: notices that arrive), whatever ran them:
//
//   - each numbered step (an srun, alone or in a batch script) gets it
//     addressed to the step (`scancel --signal=TERM JOB.STEP`), which
//     slurmd delivers to the step's tasks. `--full` for the whole job
//     reached no task of a plain srun job, and in a batch job it reached
//     the srun process too, which on Slurm 22.05 answers a SIGTERM by
//     killing its step at once: the task's trap never ran;
//   - a batch job with numbered steps gets it in its batch shell only
//     (`--batch`: not the shell's children, among which is that srun);
//   - a batch job without numbered steps, and a job whose steps were not
//     read, gets it in every process of the job (`--full`): the batch
//     shell and the commands it runs.
//
// Steps first, so that a task's trap is under way before its batch shell
// hears of the notice.
func Notice(c Cluster, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	steps, batch, err := StepsOf(c, ids)
	if err != nil {
		return errors.Join(err, Scancel(c, append([]string{"--signal=TERM", "--full"}, ids...)...))
	}
	stepped := map[string]bool{}
	for _, st := range steps {
		job, _, _ := strings.Cut(st, ".")
		stepped[job] = true
	}
	hasBatch := map[string]bool{}
	for _, job := range batch {
		hasBatch[job] = true
	}
	var shells, whole []string
	for _, id := range ids {
		switch {
		case hasBatch[id] && stepped[id]:
			shells = append(shells, id)
		case !stepped[id]:
			whole = append(whole, id)
		}
	}
	var errs []error
	if len(steps) > 0 {
		errs = append(errs, Scancel(c, append([]string{"--signal=TERM"}, steps...)...))
	}
	if len(shells) > 0 {
		errs = append(errs, Scancel(c, append([]string{"--signal=TERM", "--batch"}, shells...)...))
	}
	if len(whole) > 0 {
		errs = append(errs, Scancel(c, append([]string{"--signal=TERM", "--full"}, whole...)...))
	}
	return errors.Join(errs...)
}

// runningJobsOf lists the ids of token's running jobs.
func runningJobsOf(c Cluster, token string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), CmdTimeout)
	defer cancel()
	jobs, err := c.Queue(ctx)
	if err != nil {
		return nil, fmt.Errorf("squeue: %w", err)
	}
	var ids []string
	for _, j := range jobs {
		if j.Comment == token && j.State == "RUNNING" {
			ids = append(ids, j.ID)
		}
	}
	return ids, nil
}

// Scancel runs scancel with args on c (bounded by CmdTimeout).
func Scancel(c Cluster, args ...string) error { return scancel(c, CmdTimeout, args...) }

// Kill ends jobs at once, whatever their processes do with SIGTERM:
// SIGKILL to each of their steps and batch shells directly, then Slurm's
// cancellation (killWith). A running job is never cancelled before its
// steps were killed: on Slurm 22.05 slurmctld turns a SIGKILL for a whole
// running job (`scancel --signal=KILL [--full] JOB`, like a bare
// `scancel`) into a cancellation, for which slurmd sends the job's steps
// SIGTERM and SIGKILL only KillWait later (30 s by default), and a
// cancelled job's steps take no more signals; so a job that ignores
// SIGTERM would run on, COMPLETING, on CPUs the broker has given to
// another lease. A SIGKILL addressed to a step (`scancel --signal=KILL
// JOB.STEP`) or to the batch shell (`--batch`) is delivered as it is, and
// the job ends when they do (srun's or the batch script's end completes
// it).
func Kill(c Cluster, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	steps, batch, serr := StepsOf(c, ids)
	if serr != nil {
		return serr // without the steps, a cancellation could let a job run for KillWait
	}
	return killWith(c, ids, steps, batch)
}

// killWith is Kill with the steps and batch shells of ids already read
// (StepsOf). The steps are killed before the batch shells (a batch
// shell's end ends the job, and its steps then get the cancellation's
// SIGTERM and KillWait), and the jobs are cancelled once both kills went
// through, which takes them out of the running state at once rather than
// when their srun has reported the end (slow on a busy login node); if a
// kill failed, only the jobs with nothing to kill are cancelled, and the
// rest are left for the next kill.
func killWith(c Cluster, ids, steps, batch []string) error {
	kerr := killSteps(c, steps, batch)
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
	return errors.Join(kerr, Scancel(c, cancel...))
}

// killSteps sends SIGKILL through Slurm to steps (JOB.STEP), then to the
// batch shells of jobs batch.
func killSteps(c Cluster, steps, batch []string) error {
	var kerr, berr error
	if len(steps) > 0 {
		kerr = scancel(c, killTimeout, append([]string{"--signal=KILL"}, steps...)...)
	}
	if len(batch) > 0 {
		berr = scancel(c, killTimeout, append([]string{"--signal=KILL", "--batch"}, batch...)...)
	}
	return errors.Join(kerr, berr)
}

// StepsOf lists the running steps of jobs ids (squeue -s): the numbered
// ones (JOB.0, JOB.1, …) and the jobs that have a batch shell
// (JOB.batch). The extern step (PrologFlags=contain) runs no job process.
func StepsOf(c Cluster, ids []string) (steps, batch []string, err error) {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	lines, err := stepLines(c)
	steps, batch = ParseSteps(lines, want)
	return steps, batch, err
}

// stepLines is every running step, JOB.STEP a line (bounded by
// CmdTimeout).
func stepLines(c Cluster) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), CmdTimeout)
	defer cancel()
	lines, err := c.Steps(ctx)
	if err != nil {
		return nil, fmt.Errorf("squeue -s: %w", err)
	}
	return lines, nil
}

// ParseSteps reads the lines of `squeue -h -s -o %i` (one JOB.STEP each)
// and keeps the steps of the jobs in want: numbered steps as they are,
// and the jobs with a batch step. An array task's job id (123_4) is kept
// as squeue prints it.
func ParseSteps(lines []string, want map[string]bool) (steps, batch []string) {
	for _, line := range lines {
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

// EndJobs finds the token's jobs and ends them as End does.
func EndJobs(c Cluster, token string, term bool) ([]string, error) {
	ids, err := JobsOf(c, token)
	if err != nil {
		return nil, err
	}
	return ids, End(c, ids, term)
}

// EndLease ends the token's jobs as End does, but names them by the
// lease's WcKey (slurmtoken.WCKey: the gate writes it from the token's own
// fields), so that the notice needs no squeue to find them first (one
// scancel, however many jobs the lease runs), and the end's cancellation
// also reaches a job submitted meanwhile. A token that cannot be read
// falls back to the comment (EndJobs). It says which jobs it ended.
func EndLease(c Cluster, token string, term bool) (string, error) {
	l, err := slurmtoken.Parse(token)
	if err != nil {
		ids, err := EndJobs(c, token, term)
		return "jobs " + strings.Join(ids, ","), err
	}
	key := slurmtoken.WCKey(l)
	what := "the jobs of WcKey " + key
	if term {
		// Running jobs only: scancel answers a SIGTERM to a pending job
		// (one still waiting for CPUs) by retrying 5 s later. The notice
		// goes to each step (Notice says why), which needs the jobs' ids
		// and steps.
		ids, err := runningJobsOf(c, token)
		if err != nil {
			return what, err
		}
		return what + " (" + strings.Join(ids, ",") + ")", Notice(c, ids)
	}
	// The kill goes to each step (Kill says why), which needs the jobs'
	// ids; a job still pending is cancelled by WcKey, which also ends one
	// submitted after the squeue.
	ids, err := JobsOf(c, token)
	if err != nil {
		return what, err
	}
	what += " (" + strings.Join(ids, ",") + ")"
	kerr := Kill(c, ids)
	return what, errors.Join(kerr, Scancel(c, "--state=PENDING", "--wckey="+key))
}

// OKOr is err's text, or "ok" for none: how the gate's log lines and the
// wrapper's messages report a call.
func OKOr(err error) string {
	if err != nil {
		return err.Error()
	}
	return "ok"
}
