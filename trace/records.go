package trace

import (
	"fmt"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
)

// State is how a trace job ended in a replay (docs/studies.md §4.1).
type State uint8

const (
	// Served: the job ran to completion.
	Served State = iota
	// Denied: the policy refused it as never fitting (§6.1).
	Denied
	// Unfinished: still queued or running when the replay stopped at its
	// horizon (§4.3).
	Unfinished
)

// States are the three states in their order, for tables.
var States = [3]State{Served, Denied, Unfinished}

func (s State) String() string {
	switch s {
	case Served:
		return "served"
	case Denied:
		return "denied"
	case Unfinished:
		return "unfinished"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// JobRecord is one job's fate in one replay (docs/studies.md §4.6): what the
// log says of it and what the policy did with it. Times are seconds of the
// log (SWF field 2's clock). The summary of a replay is computed from these
// records and nothing else (Measure), so a reader can audit every number.
type JobRecord struct {
	// Job is the index into Workload.Jobs, where the job's SWF number,
	// user, group, queue, estimate and logged wait are: a record keeps
	// only what its measures read, not a copy of every field of the job
	// (48 bytes a job less, 14 MB of a 300k-job replay's; docs/traces.md).
	Job      int
	Campaign int // index into Workload.Campaigns
	Class    policy.Class
	// State is beside Class, so that the two bytes share one word (a
	// record is 152 bytes, not 160: 2.4 MB of a 300k-job replay's).
	State  State
	GPUs   int
	Submit int64
	Run    int64 // the real run time
	// Starts is every start of the job, in order: a preempted job is
	// requeued and starts again (§6.7), as is one a host ended (its node
	// failed or drained, docs/hosts.md). Aborted[k] is when the run begun
	// at Starts[k] was ended by a preemption or a host, for k <
	// Preemptions + HostEnded; the last start of a served job is the one
	// that ran to End.
	Starts  []int64
	Aborted []int64
	// Kept[k] is the seconds of the aborted run k its checkpoints kept
	// (restart checkpoint:S, §6.7; 0 under restart zero): the job resumed
	// from there, so that part of the run was useful work.
	Kept []int64
	// End is the served job's end, −1 otherwise.
	End         int64
	Preemptions int
	// HostEnded is the job's runs ended by hosts (not preemptions).
	HostEnded int
	// LostGPUSeconds is GPUs × the aborted runs' lengths less what their
	// checkpoints kept, the work thrown away (§6.7).
	LostGPUSeconds int64
}

// newRecords are the records of a replay that has not started: every job
// unfinished, never started.
func newRecords(w *Workload) []JobRecord {
	recs := make([]JobRecord, len(w.Jobs))
	for i := range w.Jobs {
		j := &w.Jobs[i]
		c := &recs[i]
		// Field by field, leaving the (nil) slices alone: assigning the
		// whole struct copies its slice headers through the GC's write
		// barrier whenever a collection is under way, which cost most of
		// this function on the full SDSC-SP2 log.
		c.Job, c.Campaign, c.Class, c.GPUs = i, j.Campaign, j.Class, j.GPUs
		c.Submit, c.Run = j.Submit, j.Run
		c.End, c.State = -1, Unfinished
	}
	return recs
}

// LastStart is the job's latest start, −1 if it never started.
func (r *JobRecord) LastStart() int64 {
	if len(r.Starts) == 0 {
		return -1
	}
	return r.Starts[len(r.Starts)-1]
}

// Running reports whether the job was running when the replay stopped:
// unfinished, started, and its last run not aborted.
func (r *JobRecord) Running() bool {
	return r.State == Unfinished && len(r.Starts) > len(r.Aborted)
}

// Wait is the job's wait, response − run (§6.7), so that the time lost to
// preemptions counts as waiting. For an unfinished job it is the censored
// value, a lower bound, at the replay's stop time: a job queued at stop
// has waited at least stop − submit, one running since s at least s −
// submit (its run cannot end before s + run). It is meaningless for a
// denied job (−1).
func (r *JobRecord) Wait(stop int64) int64 {
	switch {
	case r.State == Denied:
		return -1
	case r.State == Served:
		return r.End - r.Submit - r.Run
	case r.Running():
		return r.LastStart() - r.Submit
	}
	return max(stop-r.Submit, 0)
}

// BSLD is the bounded slowdown max(1, (wait + run) ÷ max(run, τ)) at the
// job's (possibly censored) wait.
func (r *JobRecord) BSLD(stop int64) float64 {
	return max(1, float64(r.Wait(stop)+r.Run)/float64(max(r.Run, BSLDTau)))
}

// runs calls f with every run of the job: [start, end) and whether it
// was thrown away. The part of an aborted run its checkpoints kept comes
// first, as a run that was not (Kept). A run still going at the replay's
// stop ends at stop.
func (r *JobRecord) runs(stop int64, f func(start, end int64, aborted bool)) {
	for k, s := range r.Starts {
		switch {
		case k < len(r.Aborted):
			if k < len(r.Kept) && r.Kept[k] > 0 {
				f(s, s+r.Kept[k], false)
				s += r.Kept[k]
			}
			f(s, r.Aborted[k], true)
		case r.State == Served:
			f(s, r.End, false)
		default:
			f(s, max(stop, s), false)
		}
	}
}

// recordsFromStarts are the records of a replay in which every job ran
// once, from start[i] to its end, never preempted (the exact FCFS + EASY).
func recordsFromStarts(w *Workload, start []int64) []JobRecord {
	recs := newRecords(w)
	flat := slices.Clone(start)
	for i := range recs {
		recs[i].Starts = flat[i : i+1 : i+1]
		recs[i].End = start[i] + w.Jobs[i].Run
		recs[i].State = Served
	}
	return recs
}

// ReplayExact is the exact FCFS + EASY replay (ReplayEASY) as a Run: every
// job served, its records, converged. It is what `fifo` on a trace runs:
// TestReplayFifoMatchesReplayEASY proves the allocator path gives the same
// records. With a sample (FairSample), the run also carries the sampled
// jobs' fair start times (ExactFairStarts), drawn with seed.
func ReplayExactFair(w *Workload, sample []int, seed uint64) *Run {
	run := ReplayExactSampled(w, sample, seed)
	// As Replay reports them: a fair start no earlier than the job's
	// start is the start (the job was not late).
	for k, j := range sample {
		run.FairStart[k] = min(run.FairStart[k], run.Records[j].Starts[0])
	}
	return run
}

// ReplayExact is ReplayExactFair without fair start times.
func ReplayExact(w *Workload) *Run {
	return exactRun(w, ReplayEASY(w))
}

// ReplayExactSampled is ReplayExact with the sampled jobs' fair start
// times (ExactFairStarts) as they are, not capped at the jobs' starts
// as ReplayExactFair's are, computed in the same replay: one replay of
// the log, not two (the whole `trace --policy fifo` process on a
// 300k-job log spent ≈ 10 % of its CPU in the second).
func ReplayExactSampled(w *Workload, sample []int, seed uint64) *Run {
	start, fair := exactStartsFair(w, sample)
	run := exactRun(w, start)
	run.FairSample, run.FairSeed, run.FairStart = sample, seed, fair
	return run
}

// exactRun is the Run of the exact replay whose starts are start.
func exactRun(w *Workload, start []int64) *Run {
	run := &Run{Start: start, Denied: make([]bool, len(w.Jobs)), Converged: true}
	run.Records = recordsFromStarts(w, start)
	for i := range w.Jobs {
		gs := int64(w.Jobs[i].GPUs) * w.Jobs[i].Run
		run.HeldGPUSeconds += gs
		run.End = max(run.End, start[i]+w.Jobs[i].Run)
	}
	run.Stop = run.End
	return run
}
