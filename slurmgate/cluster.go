package slurmgate

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Cluster is the few Slurm commands the gate makes: read the queue and
// its steps, read the running jobs' records, and scancel (which also
// sends signals). Exec makes them by running squeue and scancel; a test
// gives a fake, so that the enforcer's and the kill's rules run without
// Slurm.
type Cluster interface {
	// Queue lists the jobs pending, running or completing
	// (squeue -h -O JobID,Comment,State,NumCPUs,tres-alloc).
	Queue(ctx context.Context) ([]QueuedJob, error)
	// Steps lists the running steps, JOB.STEP each, as squeue prints
	// them (squeue -h -s -o %i), one a line.
	Steps(ctx context.Context) ([]string, error)
	// Running lists the jobs running or completing with the fields
	// reconciliation reads.
	Running(ctx context.Context) ([]Job, error)
	// Scancel runs scancel with args: cancellations and signals alike.
	Scancel(ctx context.Context, args ...string) error
	// Hold holds pending jobs ids (scontrol hold: by SlurmUser, root or
	// an operator an administrator's hold, which their user cannot
	// release).
	Hold(ctx context.Context, ids ...string) error
}

// QueuedJob is one line of the queue: the job's id as squeue's %i and
// scancel name it (an array task's array_task: 9_1, which its steps
// carry too, 9_1.0), the job's own number (Slurm's job id: 10 for 9_1,
// as jobcomp records it), its comment (a lease token, for a job `bursar
// lease --slurm` submitted), its state, its CPUs as squeue prints them,
// once it runs the TRES Slurm allocated it
// ("cpu=2,node=1,billing=2,gres/gpu=1"; empty while it is pending), its
// partition and, while it is pending, why (JobHeldAdmin: held by an
// administrator).
type QueuedJob struct {
	ID, Number, Comment, State, CPUs, TRES, Partition, Reason string
}

// CmdTimeout bounds one squeue or scancel call.
const CmdTimeout = 15 * time.Second

// killTimeout bounds a SIGKILL's scancel: scancel answers a job that is
// "in a transitional state" (starting, or ending already) by sleeping 5 s
// and retrying, which would hold back the cancellation that follows; the
// kill of a job that is ending anyway is not needed, and the enforcer's
// next look at the queue kills what is still there.
const killTimeout = 2 * time.Second

// Exec is the Cluster of the machine's Slurm commands (squeue, scancel on
// $PATH). Its errors are the commands' own; the callers say which call
// failed.
type Exec struct{}

// queueFields are what Exec.Queue asks squeue for (-O). JobArrayID is
// the id as %i prints it (9_1 for an array task; `-O JobID` prints the
// task's own number, 10, which its steps do not carry).
const queueFields = "JobArrayID:|,JobID:|,Comment:|,State:|,NumCPUs:|,tres-alloc:|,Partition:|,Reason:|"

// Queue runs squeue -h -O queueFields; a line without its eight fields (a
// comment with a | in it, never a lease token) is left out.
func (Exec) Queue(ctx context.Context) ([]QueuedJob, error) {
	out, err := exec.CommandContext(ctx, "squeue", "-h", "-O", queueFields).Output()
	if err != nil {
		return nil, err
	}
	return ParseQueue(string(out)), nil
}

// arrayThrottle is the %N at the end of an array's pending tasks' id.
var arrayThrottle = regexp.MustCompile(`%[0-9]+\]$`)

// ParseQueue reads the lines Exec.Queue asks squeue for.
func ParseQueue(out string) []QueuedJob {
	var jobs []QueuedJob
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 9 || f[8] != "" {
			continue
		}
		// An array's pending tasks are listed as 9_[2-7%2]: scancel
		// reads no throttle in an id.
		id := arrayThrottle.ReplaceAllString(f[0], "]")
		jobs = append(jobs, QueuedJob{ID: id, Number: f[1], Comment: f[2], State: f[3], CPUs: f[4], TRES: f[5], Partition: f[6], Reason: f[7]})
	}
	return jobs
}

// Steps runs squeue -h -s -o %i.
func (Exec) Steps(ctx context.Context) ([]string, error) {
	out, err := exec.CommandContext(ctx, "squeue", "-h", "-s", "-o", "%i").Output()
	if err != nil {
		return nil, err
	}
	return strings.Split(string(out), "\n"), nil
}

// Running reads squeue's running and completing jobs.
func (Exec) Running(ctx context.Context) ([]Job, error) {
	out, err := exec.CommandContext(ctx, "squeue", "-h", "-t", "RUNNING,COMPLETING",
		"-O", "JobID:|,Partition:|,State:|,WCKey:|,Account:|,NumCPUs:|,StartTime:").Output()
	if err != nil {
		return nil, err
	}
	var jobs []Job
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) < 7 {
			continue
		}
		j := Job{ID: f[0], Partition: f[1], State: f[2], WCKey: f[3], Account: f[4]}
		j.CPUs, _ = strconv.Atoi(f[5])
		j.Start, _ = time.ParseInLocation(slurmTimeLayout, f[6], time.Local)
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// Scancel runs scancel with args; its error carries what scancel said.
func (Exec) Scancel(ctx context.Context, args ...string) error {
	if out, err := exec.CommandContext(ctx, "scancel", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("scancel %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Hold runs scontrol hold ids (one call for all of them).
func (Exec) Hold(ctx context.Context, ids ...string) error {
	if out, err := exec.CommandContext(ctx, "scontrol", append([]string{"hold"}, ids...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("scontrol hold %s: %w: %s", strings.Join(ids, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// scancel runs scancel with args on c, for at most d.
func scancel(c Cluster, d time.Duration, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return c.Scancel(ctx, args...)
}
