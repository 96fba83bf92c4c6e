package slurmcheck

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Cluster is where the real replays run: the one-node cluster of
// scripts/slurm-local.sh (Script), each replay in a fresh state folder
// under Dir, on its own ports so that it does not meet other clusters on
// the machine, its daemons at niceness Nice.
type Cluster struct {
	Script               string
	Dir                  string
	CtldPort, SlurmdPort int
	Nice                 int
}

// Observed is one job as a real replay recorded it, in seconds from the
// replay's epoch (the whole second of its first submit): Submit, Start
// and End as jobcomp/filetxt records them (whole seconds), SubmitAt,
// StartAt and EndAt to the millisecond from slurmctld's log.
type Observed struct {
	SlurmID                  int
	Submit, Start, End       int64
	SubmitAt, StartAt, EndAt float64
}

// Replay runs the log through a real slurmctld once: it starts the
// cluster of nodes one-CPU nodes with the scheduler's slurm.conf lines
// (and jobcomp/filetxt), submits each job at its submit time (a
// driver that sleeps until then) as `sleep Run` with its limit, waits for
// every job's jobcomp record, and stops the cluster. progress gets a line
// per stage.
func (c Cluster) Replay(ctx context.Context, name string, nodes int, scheduler string, jobs []Job, progress io.Writer) ([]Observed, error) {
	dir := filepath.Join(c.Dir, name)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	// munged wants every folder above its socket open to all.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	jobcomp := filepath.Join(dir, "jobcomp.txt")
	extra := filepath.Join(c.Dir, name+".conf")
	conf := scheduler + "JobCompType=jobcomp/filetxt\nJobCompLoc=" + jobcomp + "\n"
	if err := os.WriteFile(extra, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	env := append(os.Environ(),
		"SLURMCTLD_PORT="+strconv.Itoa(c.CtldPort), "SLURMD_PORT="+strconv.Itoa(c.SlurmdPort),
		"SLURM_NICE="+strconv.Itoa(c.Nice), "BURSAR_SLURM_NODES="+strconv.Itoa(nodes), "BURSAR_SLURM_CPUS=1",
		"BURSAR_SLURM_EXTRA_CONF="+extra, "SLURM_CONF="+filepath.Join(dir, "slurm.conf"))
	script := func(verb string) error {
		cmd := exec.Command(c.Script, verb, dir)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s %s %s: %v\n%s", c.Script, verb, dir, err, out)
		}
		return nil
	}
	if err := script("start"); err != nil {
		return nil, err
	}
	defer func() {
		if err := script("stop"); err != nil {
			fmt.Fprintln(progress, err)
		}
	}()

	// The epoch is a whole second, a second ahead, so that Slurm's
	// whole-second times and the log's line up.
	epoch := time.Now().Truncate(time.Second).Add(2 * time.Second)
	for _, j := range jobs {
		at := epoch.Add(time.Duration(j.Submit * float64(time.Second)))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Until(at)):
		}
		cmd := exec.CommandContext(ctx, "sbatch", "--parsable", "--job-name=v"+strconv.Itoa(j.ID),
			"--time="+strconv.Itoa(j.Limit), "--ntasks="+strconv.Itoa(j.CPUs), "--output=/dev/null",
			"--wrap=exec sleep "+strconv.FormatFloat(j.Run, 'f', -1, 64))
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("sbatch job %d: %v\n%s", j.ID, err, out)
		}
		if _, err := strconv.Atoi(strings.TrimSpace(strings.Split(string(out), ";")[0])); err != nil {
			return nil, fmt.Errorf("sbatch job %d printed %q, not a job id", j.ID, out)
		}
		if late := time.Since(at); late > 2*time.Second {
			fmt.Fprintf(progress, "%s: job %d submitted %.1f s late (the machine is loaded)\n", name, j.ID, late.Seconds())
		}
	}
	fmt.Fprintf(progress, "%s: %d jobs submitted in %.0f s; waiting for them to end\n", name, len(jobs), time.Since(epoch).Seconds())

	// Wait for every record: the horizon is at most the serial sum of the
	// limits past the last submit.
	horizon := jobs[len(jobs)-1].Submit
	for _, j := range jobs {
		horizon += float64(j.Limit) * 60
	}
	deadline := time.Now().Add(time.Duration(horizon)*time.Second + time.Minute)
	for {
		done, err := finished(jobcomp)
		if err != nil {
			return nil, err
		}
		if done >= len(jobs) {
			fmt.Fprintf(progress, "%s: all %d jobs ended, %.0f s after the first submit\n", name, len(jobs), time.Since(epoch).Seconds())
			return ReadReplay(dir, jobs)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: %d of %d jobs still unfinished after %.0f s", name, len(jobs)-done, len(jobs), horizon+60)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// finished counts jobcomp's records (a missing file is none yet).
func finished(path string) (int, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	return bytes.Count(data, []byte("\n")), err
}
