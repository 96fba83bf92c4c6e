package slurmcheck

import (
	"math"
	"slices"
)

// Slurm acts only at its scheduling cycles (docs/validate-slurm.md): the
// backfill pass every bf_interval (backfill.c, backfill_agent: it sleeps
// bf_interval between passes), and the main scheduler from slurmctld's
// background thread, once a second (controller.c,
// _slurmctld_background: ten 100 ms sleeps a round; a submission only
// asks for a run, proc_req.c _slurm_rpc_submit_batch_job →
// queue_job_scheduler, which that thread serves when batch_sched_delay
// has passed, job_scheduler.c). With bf_interval=1 and sched_interval=1
// both come round once a second at a phase of their own, and a job
// submitted, or freed nodes, between two cycles wait for the next. The
// simulator's tick is one second; a real replay is laid on its cycles
// (cycle k is the instant phase + k), so that tick k is cycle k.

// Cycled is one job of a real replay on Slurm's cycles: the first cycle
// after its submission, the cycle it started at, and its run in cycles
// (the first cycle after its end, less its start's).
type Cycled struct {
	Submit, Start, Run int64
}

// cycles are a replay's scheduling cycles as its jobs' starts show them:
// each start is at a cycle, and the cycles drift slowly (each pass
// sleeps its interval after the last one ended, and the machine's load
// stretches them), so the phase of the cycles around an instant is that
// of the start nearest to it.
type cycles struct{ starts []float64 }

func newCycles(obs []Observed) cycles {
	s := make([]float64, len(obs))
	for i, o := range obs {
		s[i] = o.StartAt
	}
	slices.Sort(s)
	return cycles{s}
}

// phase is the fraction of a second at which the cycles around t fall.
func (c cycles) phase(t float64) float64 {
	j, _ := slices.BinarySearch(c.starts, t)
	near := c.starts[min(j, len(c.starts)-1)]
	if j > 0 && (j == len(c.starts) || t-c.starts[j-1] < near-t) {
		near = c.starts[j-1]
	}
	return near - math.Floor(near)
}

// next is the index of the first cycle at or after t: cycle k is the
// instant k + phase.
func (c cycles) next(t float64) int64 { return int64(math.Ceil(t - c.phase(t))) }

// at is the index of the cycle nearest to t.
func (c cycles) at(t float64) int64 { return int64(math.Round(t - c.phase(t))) }

// OnCycles lays a real replay on its scheduling cycles.
func OnCycles(obs []Observed) []Cycled {
	c := newCycles(obs)
	out := make([]Cycled, len(obs))
	for i, o := range obs {
		start := c.at(o.StartAt)
		out[i] = Cycled{Submit: min(c.next(o.SubmitAt), start), Start: start, Run: max(1, c.next(o.EndAt)-start)}
	}
	return out
}

// Real is a real replay's times on its cycles.
func Real(c []Cycled) []Times {
	t := make([]Times, len(c))
	for i, x := range c {
		t[i] = Times{Submit: x.Submit, Start: x.Start}
	}
	return t
}
