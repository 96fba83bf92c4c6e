package trace

import (
	"errors"
	"fmt"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
)

// ReplayOptions are the knobs of a replay under a policy.
type ReplayOptions struct {
	// Recorder receives the policy's journal (nil: none).
	Recorder policy.Recorder
	// TickByTick ticks every second even where the policy could skip
	// (the oracle of the exactness tests).
	TickByTick bool
	// Horizon is how long after the last submit the replay may run, in
	// seconds; 0 means max(the submit span, 7 days). Jobs not finished by
	// then are unfinished: a policy that preempts and requeues can lose
	// work faster than it finishes it (budget's churn) and would otherwise
	// run for ever.
	Horizon int64
	// FairStart lists the jobs (indices into Workload.Jobs, ascending)
	// whose fair start times the replay computes (docs/studies.md §4.4,
	// §6.17): at each one's submit, a copy of the policy (CloneAllocator)
	// runs on with every later submit withheld until the job starts.
	// Run.FairStart holds the results.
	FairStart []int
	// FairSeed is the seed that drew FairStart (FairSample), for the
	// record.
	FairSeed uint64

	// aheadReach, for the tests, is how far a fair-start copy taken at
	// tick now may run ahead (fairForks.runAhead), given how far its books
	// allow (reach); below now + 1 it waits for its jobs' starts.
	aheadReach func(now, reach int) int
	// forkHook, for the tests, is called at every point where a fork could
	// be taken, with what the fork needs.
	forkHook func(fs forkState, alloc policy.Allocator, cap *capture) error
}

// Run is the outcome of a replay under a policy.
type Run struct {
	// Start is each job's final start, in seconds of the log, indexed
	// like Workload.Jobs; −1 for a job that never ran (Denied). A job that
	// resumed from a checkpoint ran only the rest of its run from there:
	// its wait is response − run (§6.7), JobRecord.Wait, not start −
	// submit.
	Start []int64
	// Denied marks the jobs the policy refused at once: larger than their
	// campaign can ever hold (§6.1). They count as unserved.
	Denied []bool
	// Unserved is the number of denied jobs.
	Unserved int
	// Unfinished marks the jobs still queued or running at the horizon
	// (their Start is −1); Unfinished counts them.
	Unfinished     []bool
	UnfinishedJobs int
	// Preemptions counts the jobs' leases ended by preemption; each job
	// was requeued, to restart from zero or resume from its last
	// checkpoint as the policy's restart rule says (§6.7).
	Preemptions int
	// LostGPUSeconds is Σ GPUs × the aborted runs' lengths since their
	// last checkpoint (the whole run under restart zero, §6.7).
	LostGPUSeconds int64
	// HeldGPUSeconds is every GPU-second held, lost work included.
	HeldGPUSeconds int64
	// Ticks is the number of Ticks executed; the rest were skipped.
	Ticks int64
	// End is the last job's end, in seconds of the log.
	End int64
	// Records are every job's record (indexed like Workload.Jobs): the
	// source of every metric (Measure).
	Records []JobRecord
	// Stop is when the replay stopped, in seconds of the log: the last
	// job's end, or the horizon.
	Stop int64
	// Converged is false when the replay stopped at its horizon with jobs
	// unfinished (docs/studies.md §4.3): its numbers are lower bounds.
	Converged bool
	// FairStart is the fair start time of each job of
	// ReplayOptions.FairStart (same order), in seconds of the log, where
	// it is earlier than the job's first start in the replay; otherwise
	// that first start (the job was not late: its fair start is at or
	// after it, and how far after does not change the measure). −1 where
	// there is none: the job was denied, or neither the replay nor the
	// copy started it by the horizon.
	FairStart []int64
	// FairSample and FairSeed are ReplayOptions.FairStart and FairSeed.
	FairSample []int
	FairSeed   uint64
}

// fileRigid files job jb of campaign c as a rigid request submitted at
// tick submitted, into its site queue by name where the policy reads
// queues (baseline.QueuedRequester) and the log names it.
func fileRigid(w *Workload, rr policy.RigidRequester, c policy.CampaignID, jb *Job, submitted int, kept int64) (int, error) {
	// A job resumed from a checkpoint asks for what is left of its run
	// and its estimate (§6.7).
	est, run := int(jb.Estimate-kept), int(jb.Run-kept)
	if qr, ok := rr.(baseline.QueuedRequester); ok {
		if q := w.QueueName(jb); q != "" {
			return qr.RequestRigidQueued(c, jb.GPUs, est, run, jb.Class, submitted, q)
		}
	}
	return rr.RequestRigid(c, jb.GPUs, est, run, jb.Class, submitted)
}

// Replay replays the workload under alloc, a fresh policy with no
// campaigns registered, which must implement policy.RigidRequester. It
// registers one campaign per trace campaign (Workload.Envelope: shares as
// R, §1, §3), files each job at its submit time as a rigid request that
// never expires (§6.1, §6.3) — job by job in submit order, ties by job
// number, just before the tick that may admit it, so that a job that
// starts at once has wait 0 (§6.13) — and lets the policy end each lease
// at its real end. A preempted job is requeued with its original submit
// time after the tick of its preemption; it asks for what is left of its
// run and its estimate after the seconds its checkpoints kept (the release
// record's Kept: 0 under restart zero), and the rest of its aborted run
// counts as lost GPU-seconds (§6.7). It runs until every job has finished
// or been denied.
//
// Time: the policy's tick t is second t + (first submit − 1) of the log,
// so that a window late in a log does not tick through its first years.
// Where alloc implements policy.EventSkipper (and TickByTick is off) the
// quiet ticks between events are skipped; the exactness tests check that
// this changes neither the journal nor the metrics.
func Replay(w *Workload, alloc policy.Allocator, opt ReplayOptions) (*Run, error) {
	rr, ok := alloc.(policy.RigidRequester)
	if !ok {
		return nil, fmt.Errorf("trace replay: policy %T cannot file rigid requests", alloc)
	}
	if alloc.NumCampaigns() != 0 || alloc.Now() != 0 {
		return nil, errors.New("trace replay: the policy must be fresh")
	}
	if alloc.Config().Pool != w.Pool {
		return nil, fmt.Errorf("trace replay: policy pool %d, workload pool %d", alloc.Config().Pool, w.Pool)
	}
	n := len(w.Jobs)
	run := &Run{Start: make([]int64, n), Denied: make([]bool, n), Records: newRecords(w), Converged: true}
	recs := run.Records
	for i := range run.Start {
		run.Start[i] = -1
	}
	if n == 0 {
		return run, nil
	}
	base := w.Jobs[0].Submit - 1
	ids := make([]policy.CampaignID, len(w.Campaigns))
	for c, env := range w.Envelopes() {
		id, err := alloc.Register(env)
		if err != nil {
			return nil, fmt.Errorf("trace replay: campaign %s: %w", w.Campaigns[c].Name, err)
		}
		ids[c] = id
	}
	cap := &capture{next: opt.Recorder}
	alloc.SetRecorder(cap)
	defer alloc.SetRecorder(opt.Recorder)
	skip, _ := alloc.(policy.EventSkipper)
	if opt.TickByTick {
		skip = nil
		if t, ok := alloc.(policy.TickByTicker); ok {
			t.SetTickByTick(true)
		}
	}

	var jobOf []int32           // request id → job
	granted := make([]int64, n) // tick of the current lease's grant
	// kept is each job's run kept by checkpoints (§6.7): a requeued job
	// asks for what is left of its run and of its estimate. It stays nil
	// until a checkpoint keeps something (only under a checkpointing
	// restart rule), so that a fork need not copy it (fairForks.take).
	var kept []int64
	keptOf := func(j int) int64 {
		if kept == nil {
			return 0
		}
		return kept[j]
	}
	file := func(j int, submitted int) error {
		jb := &w.Jobs[j]
		id, err := fileRigid(w, rr, ids[jb.Campaign], jb, submitted, keptOf(j))
		if id >= 0 {
			for len(jobOf) <= id {
				jobOf = append(jobOf, -1)
			}
			jobOf[id] = int32(j)
		}
		if errors.Is(err, policy.ErrExceedsLimit) {
			run.Denied[j] = true
			recs[j].State = Denied
			run.Unserved++
			return nil
		}
		if err != nil {
			return fmt.Errorf("trace replay: job %d: %w", jb.Number, err)
		}
		return nil
	}
	horizon := opt.Horizon
	if horizon <= 0 {
		horizon = max(w.Jobs[n-1].Submit-w.Jobs[0].Submit, 7*86400)
	}
	stop := int(w.Jobs[n-1].Submit - base + horizon)
	finished := make([]bool, n)
	next, done := 0, 0
	var requeue []int32
	fp := 0 // the next sampled job whose fair start is to be found
	ff := &fairForks{sample: opt.FairStart, run: run, aheadReach: opt.aheadReach}
	run.FairSample, run.FairSeed = opt.FairStart, opt.FairSeed
	run.FairStart = make([]int64, len(opt.FairStart))
	for i := range run.FairStart {
		run.FairStart[i] = -1
	}
	for {
		now := alloc.Now()
		// The fair starts' forks are taken just before the next submit is
		// filed: until then the replay is the withheld one (§6.17).
		if fp < len(opt.FairStart) && opt.FairStart[fp] < next && next < n && w.Jobs[next].Submit-base <= int64(now)+1 {
			fs := forkState{w: w, base: base, ids: ids, jobOf: jobOf, kept: kept, next: next, done: done, stop: stop, tickByTick: opt.TickByTick}
			var err error
			if fp, err = ff.take(fs, alloc, cap, fp); err != nil {
				return nil, err
			}
		}
		for next < n && w.Jobs[next].Submit-base <= int64(now)+1 {
			if err := file(next, int(w.Jobs[next].Submit-base)); err != nil {
				return nil, err
			}
			if run.Denied[next] {
				done++
			}
			next++
		}
		if opt.forkHook != nil {
			fs := forkState{w: w, base: base, ids: ids, jobOf: jobOf, kept: kept, next: next, done: done, stop: stop, tickByTick: opt.TickByTick}
			if err := opt.forkHook(fs, alloc, cap); err != nil {
				return nil, err
			}
		}
		if done == n {
			break
		}
		alloc.Tick()
		run.Ticks++
		requeue = requeue[:0]
		for i := range cap.ev {
			e := &cap.ev[i]
			if e.Lease < 0 || e.Lease >= len(jobOf) || jobOf[e.Lease] < 0 {
				continue
			}
			j := jobOf[e.Lease]
			jb := &w.Jobs[j]
			switch {
			case e.Kind == policy.EventGrant:
				granted[j] = int64(e.T)
				run.Start[j] = int64(e.T) + base
				recs[j].Starts = append(recs[j].Starts, int64(e.T)+base)
				if len(recs[j].Starts) == 1 && len(ff.pending) > 0 {
					if err := ff.started(j, int64(e.T)+base); err != nil {
						return nil, err
					}
				}
			case e.Kind == policy.EventRelease && e.Reason == policy.ReasonPreempted:
				d := int64(e.T) - granted[j]
				if e.Kept < 0 || int64(e.Kept) >= d {
					return nil, fmt.Errorf("trace replay: job %d: a preempted lease of %d s kept %d s", jb.Number, d, e.Kept)
				}
				run.Preemptions++
				run.LostGPUSeconds += int64(jb.GPUs) * (d - int64(e.Kept))
				run.HeldGPUSeconds += int64(jb.GPUs) * d
				if e.Kept > 0 {
					if kept == nil {
						kept = make([]int64, n)
					}
					kept[j] += int64(e.Kept)
				}
				run.Start[j] = -1
				recs[j].Aborted = append(recs[j].Aborted, int64(e.T)+base)
				recs[j].Kept = append(recs[j].Kept, int64(e.Kept))
				recs[j].Preemptions++
				recs[j].LostGPUSeconds += int64(jb.GPUs) * (d - int64(e.Kept))
				requeue = append(requeue, j)
			case e.Kind == policy.EventRelease:
				d := int64(e.T) - granted[j]
				if d != jb.Run-keptOf(int(j)) {
					return nil, fmt.Errorf("trace replay: job %d: lease ended after %d s (%s), run %d s of which %d s kept before", jb.Number, d, e.Reason, jb.Run, keptOf(int(j)))
				}
				run.HeldGPUSeconds += int64(jb.GPUs) * d
				run.End = max(run.End, int64(e.T)+base)
				recs[j].End = int64(e.T) + base
				recs[j].State = Served
				finished[j] = true
				done++
			}
		}
		cap.ev = cap.ev[:0]
		for _, j := range requeue {
			if err := file(int(j), int(w.Jobs[j].Submit-base)); err != nil {
				return nil, err
			}
			if run.Denied[j] {
				done++
			}
		}
		if done == n {
			break
		}
		if alloc.Now() >= stop {
			run.Converged = false
			run.Unfinished = make([]bool, n)
			for j := range finished {
				if !finished[j] && !run.Denied[j] {
					run.Unfinished[j] = true
					run.UnfinishedJobs++
					run.Start[j] = -1
				}
			}
			break
		}
		if skip != nil {
			// At most to stop − 1: the next tick is then stop's, the last
			// one, as when ticking every second.
			target := min(skip.NextChange()-1, stop-1)
			if next < n {
				target = min(target, int(w.Jobs[next].Submit-base)-1)
			}
			if target > alloc.Now() {
				skip.SkipTo(target)
			}
		}
	}
	if err := ff.finish(); err != nil {
		return nil, err
	}
	// The sampled jobs submitted after the last fork: no submit followed
	// them, so the replay itself was their withheld one.
	for k := fp; k < len(opt.FairStart); k++ {
		if r := &recs[opt.FairStart[k]]; len(r.Starts) > 0 {
			run.FairStart[k] = r.Starts[0]
		}
	}
	run.Stop = max(int64(alloc.Now())+base, run.End)
	return run, nil
}

// capture keeps the journal records the replay needs (grants and
// releases) and passes every record on.
type capture struct {
	next policy.Recorder
	ev   []policy.Event
}

func (c *capture) Record(e policy.Event) {
	if e.Kind == policy.EventGrant || e.Kind == policy.EventRelease {
		c.ev = append(c.ev, e)
	}
	if c.next != nil {
		c.next.Record(e)
	}
}

// Served is the workload of the jobs that ran to their end, with their
// final starts: what Summarize reads for a replay with unserved or
// unfinished jobs.
func (r *Run) Served(w *Workload) (*Workload, []int64) {
	if r.Unserved == 0 && r.UnfinishedJobs == 0 {
		return w, r.Start
	}
	s := *w
	s.Jobs = make([]Job, 0, len(w.Jobs))
	start := make([]int64, 0, len(w.Jobs))
	for i := range w.Jobs {
		if !r.Denied[i] && (r.Unfinished == nil || !r.Unfinished[i]) {
			s.Jobs = append(s.Jobs, w.Jobs[i])
			start = append(start, r.Start[i])
		}
	}
	return &s, start
}
