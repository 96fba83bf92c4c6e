package trace

import (
	"fmt"
	"slices"
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
// records and the workload's jobs and nothing else (Measure), so a reader
// can audit every number.
type JobRecord struct {
	// Job is the index into Workload.Jobs (records are indexed alike),
	// where the job's SWF number, user, group, queue, campaign, class,
	// GPUs, estimate and logged wait are: a record keeps only the job's
	// submit and run time, which its Wait and BSLD read, not a copy of
	// every field of the job. With State beside it in one word and the
	// aborted runs behind one pointer, a record is 88 bytes, not 200
	// (34 MB less on a 300k-job replay; docs/traces.md).
	Job    int32
	State  State
	Submit int64
	Run    int64 // the real run time
	// Starts is every start of the job, in order: a preempted job is
	// requeued and starts again (§6.7), as is one a host ended (its node
	// failed or drained, docs/hosts.md). Aborted()[k] is when the run
	// begun at Starts[k] was ended by a preemption or a host, for k <
	// Preemptions + HostEnded; the last start of a served job is the one
	// that ran to End.
	Starts []int64
	// End is the served job's end, −1 otherwise.
	End         int64
	Preemptions int
	// HostEnded is the job's runs ended by hosts (not preemptions).
	HostEnded int
	// LostGPUSeconds is GPUs × the aborted runs' lengths less what their
	// checkpoints kept, the work thrown away (§6.7).
	LostGPUSeconds int64
	// aborts are the aborted runs (Aborted, Kept), nil while none is, as
	// for most jobs: one pointer a record rather than two slice headers
	// (40 bytes a job less, 12 MB of a 300k-job replay's; docs/traces.md).
	aborts *aborts
}

// aborts are a record's aborted runs: at[k] is when the run begun at
// Starts[k] was ended, kept[k] the seconds of it its checkpoints kept.
// owner is the record that made them (Abort): only it may append to
// their arrays in place.
type aborts struct {
	at, kept []int64
	owner    *JobRecord
}

// Aborted is when each aborted run ended: Aborted()[k] ended the run
// begun at Starts[k] (nil: no run was aborted).
func (r *JobRecord) Aborted() []int64 {
	if r.aborts == nil {
		return nil
	}
	return r.aborts.at
}

// Kept is the seconds of each aborted run its checkpoints kept (restart
// checkpoint:S, §6.7; 0 under restart zero): the job resumed from there,
// so that part of the run was useful work. It is as long as Aborted.
func (r *JobRecord) Kept() []int64 {
	if r.aborts == nil {
		return nil
	}
	return r.aborts.kept
}

// String prints the record's fields with its aborted runs' values rather
// than their pointer, so that two records of one fate print alike (tests
// compare replays by their printed records).
func (r JobRecord) String() string {
	return fmt.Sprintf("{%d %v %d %d %d %d %v %v %v %d %d}", r.Job, r.State, r.Submit, r.Run, r.End, r.Preemptions,
		r.Starts, r.Aborted(), r.Kept(), r.HostEnded, r.LostGPUSeconds)
}

// Abort records that the job's latest run was ended at t, kept seconds of
// it kept by its checkpoints. Each call makes new aborts, so that a copy
// of the record (a fork's), which shares the old ones, still reads its
// own runs; the arrays behind them grow in place, by append's doubling,
// only for the record that made them. Any other record (a copy) copies
// them first, so that it never writes where its original may write
// next. Copying at every call was quadratic in a job's aborted runs:
// under quota-fair, whose jobs are preempted again and again, 496 MB a
// replay of the full SDSC-SP2 log against 26 MB (BenchmarkScaling).
func (r *JobRecord) Abort(t, kept int64) {
	at, kp := r.Aborted(), r.Kept()
	if r.aborts != nil && r.aborts.owner != r {
		at, kp = slices.Clip(at), slices.Clip(kp)
	}
	r.aborts = &aborts{at: append(at, t), kept: append(kp, kept), owner: r}
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
		c.Job = int32(i)
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
	return r.State == Unfinished && len(r.Starts) > len(r.Aborted())
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
	aborted, kept := r.Aborted(), r.Kept()
	for k, s := range r.Starts {
		switch {
		case k < len(aborted):
			if k < len(kept) && kept[k] > 0 {
				f(s, s+kept[k], false)
				s += kept[k]
			}
			f(s, aborted[k], true)
		case r.State == Served:
			f(s, r.End, false)
		default:
			f(s, max(stop, s), false)
		}
	}
}

// recordsFromStarts are the records of a replay in which every job ran
// once, from start[i] to its end, never preempted (the exact FCFS + EASY).
// Each record's one start is start[i] itself, its capacity cut to one so
// that an append copies: the Run's Start, which nothing changes once the
// exact replay is done, and no copy of it (8 bytes a job).
func recordsFromStarts(w *Workload, start []int64) []JobRecord {
	recs := newRecords(w)
	for i := range recs {
		recs[i].Starts = start[i : i+1 : i+1]
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
