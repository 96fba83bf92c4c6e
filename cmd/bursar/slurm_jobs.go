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
// without, SIGKILL to every process of the job and then Slurm's
// cancellation (a bare scancel sends SIGTERM first and SIGKILL only
// KillWait later, 30 s by default: the notice was the time to act on a
// SIGTERM).
func scancelJobs(ids []string, term bool) error {
	if len(ids) == 0 {
		return nil
	}
	run := func(args ...string) error {
		ctx, cancel := context.WithTimeout(context.Background(), slurmCmdTimeout)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "scancel", append(args, ids...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("scancel %s: %w: %s", strings.Join(ids, " "), err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	if term {
		return run("--signal=TERM", "--full")
	}
	kerr := run("--signal=KILL", "--full") // fails for a job still pending: nothing runs to kill
	if err := run(); err != nil {
		return errors.Join(kerr, err)
	}
	return nil
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
// token's own fields), so that no squeue is needed to find them first: at
// the end of a lease one scancel per signal, however many jobs it runs. A
// token that cannot be read falls back to the comment (endSlurmJobs).
func endSlurmLease(token string, term bool) (string, error) {
	l, err := service.ParseSlurmToken(token)
	if err != nil {
		ids, err := endSlurmJobs(token, term)
		return "jobs " + strings.Join(ids, ","), err
	}
	key := service.SlurmWCKey(l)
	run := func(args ...string) error {
		ctx, cancel := context.WithTimeout(context.Background(), slurmCmdTimeout)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "scancel", append(args, "--wckey="+key)...).CombinedOutput(); err != nil {
			return fmt.Errorf("scancel %s --wckey=%s: %w: %s", strings.Join(args, " "), key, err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	what := "the jobs of WcKey " + key
	if term {
		return what, run("--signal=TERM", "--full")
	}
	kerr := run("--signal=KILL", "--full") // a pending job has nothing to kill
	if err := run(); err != nil {
		return what, errors.Join(kerr, err)
	}
	return what, nil
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
}

func newSlurmHand(token string, say func(string, ...any)) *slurmHand {
	return &slurmHand{token: token, say: say}
}

// send makes a call (the loop makes at most one notice and one end).
func (h *slurmHand) send(a slurmAct) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
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
