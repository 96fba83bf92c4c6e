package trace

import (
	"errors"
	"fmt"

	"github.com/bursar-hpc/bursar/hosts"
	"github.com/bursar-hpc/bursar/platform"
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
	// Actor, if set, shares the machine with the workload's users: the
	// replay registers it after their campaigns and steps it around each
	// tick (Actor). An Actor that is also Users declares each job's class
	// and hears its starts. Not with FairStart.
	Actor Actor
	// Hosts, if set, is a failure process on the policy's nodes (docs/
	// hosts.md): the policy must schedule on a platform of as many nodes.
	// The driver steps it after each tick, ends the leases it ends and
	// files their jobs again (restarting by the policy's restart rule), and
	// never skips a tick at which it acts. Run.Hosts is its tally. Not
	// with FairStart.
	Hosts *hosts.Hosts
	// Work, if not nil, is added the policy's work (policy.Work) over
	// the replay, its fair starts' copies included, where the policy
	// counts it (policy.WorkCounter): counting is turned on for the
	// replay. The outcome is the same with or without.
	Work *policy.Work
	// Platform, if not zero, is the machine's nodes (docs/platform.md): a
	// job's processors become GPUs seated on them, and the policy
	// (policy.Placed) schedules on them. Its GPUs must be the workload's
	// pool. Zero: the workload's (Workload.Platform), if any; else the
	// pool is a number.
	Platform platform.Spec

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
	// last checkpoint (the whole run under restart zero, §6.7), the runs
	// ended by hosts included.
	LostGPUSeconds int64
	// HostEnded counts the jobs' leases ended by hosts (ReplayOptions.
	// Hosts: a node failed, or drained), each job requeued as a preempted
	// one is, but not counted in Preemptions; HostLostGPUSeconds is their
	// share of LostGPUSeconds, and Hosts the process's tally (zero
	// without hosts).
	HostEnded          int
	HostLostGPUSeconds int64
	Hosts              hosts.Tally
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

// fileRigid files job jb of campaign c, declared of class cls, as a
// rigid request submitted at tick submitted, into its site queue by name where the policy reads
// queues (baseline.QueuedRequester) and the log names it.
func fileRigid(w *Workload, rr policy.RigidRequester, c policy.CampaignID, jb *Job, cls policy.Class, submitted int, kept int64) (int, error) {
	// A job resumed from a checkpoint asks for what is left of its run
	// and its estimate (§6.7).
	est, run := int(jb.Estimate-kept), int(jb.Run-kept)
	if qr, ok := rr.(baseline.QueuedRequester); ok {
		if q := w.SiteQueue(jb); q != "" {
			return qr.RequestRigidQueued(c, jb.GPUs, est, run, cls, submitted, q)
		}
	}
	return rr.RequestRigid(c, jb.GPUs, est, run, cls, submitted)
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
	if _, ok := alloc.(policy.RigidRequester); !ok {
		return nil, fmt.Errorf("trace replay: policy %T cannot file rigid requests", alloc)
	}
	if alloc.NumCampaigns() != 0 || alloc.Now() != 0 {
		return nil, errors.New("trace replay: the policy must be fresh")
	}
	if alloc.Config().Pool != w.Pool {
		return nil, fmt.Errorf("trace replay: policy pool %d, workload pool %d", alloc.Config().Pool, w.Pool)
	}
	if opt.Actor != nil && len(opt.FairStart) > 0 {
		return nil, errors.New("trace replay: fair starts with an actor (a fork would run without it)")
	}
	if opt.Hosts != nil && len(opt.FairStart) > 0 {
		return nil, errors.New("trace replay: fair starts with hosts (a fork would run without them)")
	}
	spec := opt.Platform
	if spec.IsZero() && w.Platform != nil {
		spec = *w.Platform
	}
	if err := policy.PlaceOn(alloc, spec); err != nil {
		return nil, fmt.Errorf("trace replay: %w", err)
	}
	n := len(w.Jobs)
	run := &Run{Start: make([]int64, n), Denied: make([]bool, n), Records: newRecords(w), Converged: true}
	for i := range run.Start {
		run.Start[i] = -1
	}
	if n == 0 {
		return run, nil
	}
	base := w.Jobs[0].Submit - 1
	ids := make([]policy.CampaignID, len(w.Campaigns))
	for c, env := range w.Envelopes() {
		if opt.Actor != nil {
			env = opt.Actor.Envelope(env)
		}
		id, err := alloc.Register(env)
		if err != nil {
			return nil, fmt.Errorf("trace replay: campaign %s: %w", w.Campaigns[c].Name, err)
		}
		ids[c] = id
	}
	cap := &capture{next: opt.Recorder}
	alloc.SetRecorder(cap)
	defer alloc.SetRecorder(opt.Recorder)
	if opt.TickByTick {
		if t, ok := alloc.(policy.TickByTicker); ok {
			t.SetTickByTick(true)
		}
	}
	if u, ok := opt.Actor.(Users); ok {
		u.Registered(ids)
	}
	if opt.Actor != nil {
		if err := opt.Actor.Join(alloc); err != nil {
			return nil, fmt.Errorf("trace replay: %w", err)
		}
	}
	horizon := opt.Horizon
	if horizon <= 0 {
		horizon = max(w.Jobs[n-1].Submit-w.Jobs[0].Submit, 7*86400)
	}
	stop := int(w.Jobs[n-1].Submit - base + horizon)
	rb := &replayBooks{w: w, run: run, grantedAt: make([]int64, n), finished: make([]bool, n), forkHook: opt.forkHook,
		ff: &fairForks{sample: opt.FairStart, run: run, aheadReach: opt.aheadReach, work: opt.Work}}
	counter, counts := alloc.(policy.WorkCounter)
	var workBefore policy.Work
	if counts && opt.Work != nil {
		workBefore = counter.Work()
		counter.CountWork(true)
		defer counter.CountWork(false)
	}
	run.FairSample, run.FairSeed = opt.FairStart, opt.FairSeed
	run.FairStart = make([]int64, len(opt.FairStart))
	for i := range run.FairStart {
		run.FairStart[i] = -1
	}
	d, err := newDriver(w, base, ids, alloc, cap, rb, n, stop, opt.TickByTick)
	if err != nil {
		return nil, fmt.Errorf("trace replay: %w", err)
	}
	if len(opt.FairStart) > 0 {
		d.reqOf = make([]int32, n)
		for j := range d.reqOf {
			d.reqOf[j] = -1
		}
	}
	d.actor = opt.Actor
	d.users, _ = opt.Actor.(Users)
	if opt.Hosts != nil {
		if d.hosts, err = newHostsHook(opt.Hosts, d, &run.Hosts); err != nil {
			return nil, fmt.Errorf("trace replay: %w", err)
		}
	}
	if err := d.run(); err != nil {
		return nil, fmt.Errorf("trace replay: %w", err)
	}
	run.Ticks = d.ticks
	if d.done < n {
		// Stopped at the horizon.
		run.Converged = false
		run.Unfinished = make([]bool, n)
		for j := range rb.finished {
			if !rb.finished[j] && !run.Denied[j] {
				run.Unfinished[j] = true
				run.UnfinishedJobs++
				run.Start[j] = -1
			}
		}
	}
	if err := rb.ff.finish(); err != nil {
		return nil, err
	}
	// The sampled jobs submitted after the last fork: no submit followed
	// them, so the replay itself was their withheld one.
	for k := rb.fp; k < len(opt.FairStart); k++ {
		if r := &run.Records[opt.FairStart[k]]; len(r.Starts) > 0 {
			run.FairStart[k] = r.Starts[0]
		}
	}
	run.Stop = max(int64(alloc.Now())+base, run.End)
	if counts && opt.Work != nil {
		opt.Work.Add(counter.Work().Sub(workBefore))
	}
	return run, nil
}

// replayBooks are the replay's books: every job's record, the run's
// totals, and the fair starts' forks, taken as the jobs are filed.
type replayBooks struct {
	w         *Workload
	run       *Run
	grantedAt []int64 // tick of each job's current lease's grant
	finished  []bool
	ff        *fairForks
	fp        int // the next sampled job whose fair start is to be found
	forkHook  func(fs forkState, alloc policy.Allocator, cap *capture) error
}

// filing takes the fair starts' forks due just before the next submit is
// filed: until then the replay is the withheld one (§6.17).
func (b *replayBooks) filing(d *driver) error {
	if b.fp < len(b.ff.sample) && b.ff.sample[b.fp] < d.next {
		var err error
		b.fp, err = b.ff.take(d.forkState(), d.alloc, d.cap, b.fp)
		return err
	}
	return nil
}

func (b *replayBooks) filed(d *driver) error {
	if b.forkHook != nil {
		return b.forkHook(d.forkState(), d.alloc, d.cap)
	}
	return nil
}

func (b *replayBooks) denied(j int) {
	b.run.Denied[j] = true
	b.run.Records[j].State = Denied
	b.run.Unserved++
}

func (b *replayBooks) granted(d *driver, j int32, e *policy.Event) (bool, error) {
	run, r := b.run, &b.run.Records[j]
	t := int64(e.T) + d.base
	b.grantedAt[j] = int64(e.T)
	run.Start[j] = t
	r.Starts = append(r.Starts, t)
	if len(r.Starts) == 1 && len(b.ff.pending) > 0 {
		return false, b.ff.started(j, t)
	}
	return false, nil
}

func (b *replayBooks) preempted(d *driver, j int32, e *policy.Event) error {
	run, r, jb := b.run, &b.run.Records[j], &b.w.Jobs[j]
	held := int64(e.T) - b.grantedAt[j]
	// A host ends a lease at once, even at its grant's tick or at a
	// checkpoint (kept = held); a preemption's notice leaves a grace after
	// the last checkpoint.
	host := e.Reason != policy.ReasonPreempted
	if e.Kept < 0 || int64(e.Kept) > held || !host && int64(e.Kept) == held {
		return fmt.Errorf("job %d: a lease of %d s ended (%s) kept %d s", jb.Number, held, e.Reason, e.Kept)
	}
	lost := int64(jb.GPUs) * (held - int64(e.Kept))
	if host {
		run.HostEnded++
		run.HostLostGPUSeconds += lost
		r.HostEnded++
	} else {
		run.Preemptions++
		r.Preemptions++
	}
	run.LostGPUSeconds += lost
	run.HeldGPUSeconds += int64(jb.GPUs) * held
	run.Start[j] = -1
	r.Abort(int64(e.T)+d.base, int64(e.Kept))
	r.LostGPUSeconds += lost
	return nil
}

func (b *replayBooks) released(d *driver, j int32, e *policy.Event) error {
	run, r, jb := b.run, &b.run.Records[j], &b.w.Jobs[j]
	held := int64(e.T) - b.grantedAt[j]
	if k := d.kept.of(int(j)); held != jb.Run-k {
		return fmt.Errorf("job %d: lease ended after %d s (%s), run %d s of which %d s kept before", jb.Number, held, e.Reason, jb.Run, k)
	}
	run.HeldGPUSeconds += int64(jb.GPUs) * held
	run.End = max(run.End, int64(e.T)+d.base)
	r.End = int64(e.T) + d.base
	r.State = Served
	b.finished[j] = true
	return nil
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
