package slurmcheck

import (
	"fmt"
	"strings"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/fifo"
	"github.com/bursar-hpc/bursar/policy/slurm"
	"github.com/bursar-hpc/bursar/swf"
	"github.com/bursar-hpc/bursar/trace"
)

// The predictors a real replay is measured against.
const (
	// PredictSlurm is policy slurm with the replay's settings.
	PredictSlurm = "slurm"
	// PredictFifo is fifo, FCFS + EASY: the naive predictor.
	PredictFifo = "fifo"
)

// Simulate replays one real replay's jobs under predictor, from what the
// real one saw, on its cycles (OnCycles): each job's submit and run in
// cycles and its limit in whole minutes as the estimate, on a pool of
// nodes GPUs, policy slurm with knobs; it returns each job's simulated
// times.
func Simulate(predictor string, knobs slurm.Knobs, nodes int, jobs []Job, obs []Cycled) ([]Times, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "; MaxProcs: %d\n", nodes)
	for i, j := range jobs {
		o := obs[i]
		// SWF: number, submit, wait, run, procs, cpu, mem, requested
		// procs, requested time, requested mem, status, user, group,
		// application, queue, partition, preceding job, think time.
		fmt.Fprintf(&b, "%d %d -1 %d %d -1 -1 %d %d -1 1 1 1 -1 1 -1 -1 -1\n",
			i+1, o.Submit, o.Run, j.CPUs, j.CPUs, j.Limit*60)
	}
	r, err := swf.NewReader(strings.NewReader(b.String()), "replay.swf")
	if err != nil {
		return nil, err
	}
	w, err := trace.Read(r, trace.Options{})
	if err != nil {
		return nil, err
	}
	if len(w.Jobs) != len(jobs) {
		return nil, fmt.Errorf("slurmcheck: the simulator kept %d of %d jobs", len(w.Jobs), len(jobs))
	}
	var a policy.Allocator
	switch predictor {
	case PredictSlurm:
		a, err = slurm.New(policy.DefaultConfig(w.Pool), knobs)
	case PredictFifo:
		a, err = fifo.New(policy.DefaultConfig(w.Pool))
	default:
		err = fmt.Errorf("slurmcheck: no predictor %q (want %s or %s)", predictor, PredictSlurm, PredictFifo)
	}
	if err != nil {
		return nil, err
	}
	run, err := trace.Replay(w, a, trace.ReplayOptions{})
	if err != nil {
		return nil, err
	}
	// trace.Read orders the jobs by submit time then number: map back,
	// in the real replay's seconds (were the log's seconds counted from
	// another origin, the offset puts them back).
	out := make([]Times, len(jobs))
	for k, j := range w.Jobs {
		if run.Start[k] < 0 {
			return nil, fmt.Errorf("slurmcheck: %s never started job %d", predictor, j.Number)
		}
		off := obs[j.Number-1].Submit - j.Submit
		out[j.Number-1] = Times{Submit: j.Submit + off, Start: run.Start[k] + off}
	}
	return out, nil
}
