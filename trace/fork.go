package trace

import (
	"fmt"

	"github.com/bursar-hpc/bursar/internal/deepcopy"
	"github.com/bursar-hpc/bursar/policy"
)

// Cloner is a policy that copies its own state (baseline.Core.Clone):
// cheaper than a reflective copy of all of it.
type Cloner interface {
	Clone() (policy.Allocator, error)
}

// CloneAllocator is a copy of a policy's whole state without a recorder:
// the copy runs on alone, and neither run sees the other's steps. A
// Cloner copies itself; any other policy is copied whole by
// internal/deepcopy. It unsets a's recorder first (a recorder may hold
// files, which are not copied): the caller sets a's back. The policies are
// pure state machines; a closure a policy caches (budget's and the EASY
// adapter's eligibility tests) is dropped from the copy and rebuilt on
// first use, bound to the copy. The property test
// TestForkContinuesLikeTheOriginal checks, policy by policy, that a copy
// continued gives the journal the original gives.
func CloneAllocator(a policy.Allocator) (policy.Allocator, error) {
	a.SetRecorder(nil)
	if c, ok := a.(Cloner); ok {
		return c.Clone()
	}
	h, err := deepcopy.Copy(&struct{ a policy.Allocator }{a}, deepcopy.Options{DropFuncs: true})
	if err != nil {
		return nil, fmt.Errorf("copy of policy %T: %w", a, err)
	}
	return h.a, nil
}

// forkState is the point of a replay under a policy at which a copy of the
// policy is run on alone: just after the jobs of one tick were filed.
type forkState struct {
	w     *Workload
	base  int64
	ids   []policy.CampaignID
	jobOf []int32 // request id → job, as the replay has it
	// reqOf is the replay's job → last request id (driver.reqOf), read
	// only when the fork is taken; reqs are then the requests of the
	// fork's jobs still waiting (fairForks.take), which a copy that
	// forecasts its grants is asked about.
	reqOf      []int32
	reqs       []int
	kept       *checkpoints // the replay's checkpoints (read only), as of change keptSeen
	keptSeen   int
	next, done int // the next job to file; the jobs finished or denied
	stop       int // the horizon tick
	tickByTick bool
	// grantsOnly: the copy is read only for its grants, so a policy that
	// can (grantsOnlier) stops keeping its books where that cannot change
	// one.
	grantsOnly bool
	// work, if not nil, takes the copy's work and ticks
	// (ReplayOptions.Work).
	work *policy.Work
}

// forkState is the replay driver d's point now, for a copy of its policy
// to go on from. Only the replay's driver is forked: a fork's request ids
// are its own.
func (d *driver) forkState() forkState {
	return forkState{w: d.w, base: d.base, ids: d.ids, jobOf: d.jobOf.own, reqOf: d.reqOf, kept: &d.kept, keptSeen: d.kept.seq,
		next: d.next, done: d.done, stop: d.end, tickByTick: d.tickByTick}
}

// recycler is a copy that can hand its memory to the next copy once it
// is done (policy.Broker.Recycle).
type recycler interface{ Recycle() }

// recycle ends copy a, done with, where it can hand its memory on.
func recycle(a policy.Allocator) {
	if r, ok := a.(recycler); ok {
		r.Recycle()
	}
}

// grantsOnlier is a policy that can stop keeping the books no grant
// depends on, up to a given tick (baseline.Core.GrantsOnly).
type grantsOnlier interface{ GrantsOnly(until int) bool }

// grantsReacher is a grantsOnlier that tells how far GrantsOnly would
// reach (baseline.Core.GrantsOnlyReach).
type grantsReacher interface{ GrantsOnlyReach(limit int) int }

// run drives alloc (a copy of the replay's policy at the fork point) on
// with the replay's driver, filing the jobs from next up to limit (later
// ones are withheld), until every job is done, the horizon, the tick
// until (exclusive; 0: none), or grant (called with each grant's job and
// log time) says stop, and returns the copy's clock then. rec receives
// the copy's journal. The replay's request ids and checkpoints are read,
// never written: the copy keeps its own beyond them.
//
// A copy read only for the grants of the jobs wants names, with nothing
// to file, is asked for them first (grantForecaster), by their requests
// (fs.reqs): one that can tell its first grants without the driver
// reports them to grant in the same tick order, each job's, and its
// clock is then the tick of the grant that said stop, or the last tick
// the driver would have run.
func (fs forkState) run(alloc policy.Allocator, limit, until int, rec policy.Recorder, wants func(j int32) bool, grant func(j int32, t int64) bool) (int, error) {
	end := fs.stop
	if until > 0 {
		end = min(end, until-1)
	}
	if f, ok := alloc.(grantForecaster); ok && rec == nil && limit == fs.next && !fs.tickByTick && wants != nil && len(fs.reqs) > 0 {
		alloc.SetRecorder(nil)
		jobOf := jobTable{shared: fs.jobOf}
		clock, stopped := max(alloc.Now(), end), false
		var before policy.Work
		wc, counts := alloc.(policy.WorkCounter)
		if counts && fs.work != nil {
			before = wc.Work()
		}
		passes, ok := f.FirstGrants(fs.reqs, end, func(id, t int) {
			if grant != nil && grant(jobOf.at(id), int64(t)+fs.base) && !stopped {
				clock, stopped = t, true
			}
		})
		if ok {
			if fs.work != nil {
				if counts {
					fs.work.Add(wc.Work().Sub(before))
				}
				fs.work.ForkTicks += int64(passes)
			}
			return clock, nil
		}
	}
	cap := &capture{next: rec}
	alloc.SetRecorder(cap)
	d, err := newDriver(fs.w, fs.base, fs.ids, alloc, cap, forkBooks{grant: grant}, limit, end, fs.tickByTick)
	if err != nil {
		return 0, fmt.Errorf("fork: %w", err)
	}
	if g, ok := alloc.(grantsOnlier); ok && fs.grantsOnly {
		g.GrantsOnly(end)
	}
	d.next, d.done = fs.next, fs.done
	d.jobOf.shared = fs.jobOf
	d.kept = checkpoints{view: fs.kept, seen: fs.keptSeen}
	if fs.work == nil {
		err := d.run()
		return alloc.Now(), err
	}
	wc, counts := alloc.(policy.WorkCounter)
	var before policy.Work
	if counts {
		before = wc.Work()
	}
	err = d.run()
	if counts {
		fs.work.Add(wc.Work().Sub(before))
	}
	fs.work.ForkTicks += d.ticks
	return alloc.Now(), err
}

// grantForecaster is a copy that may tell its first grants without the
// driver (baseline.Core.FirstGrants), of the requests named.
type grantForecaster interface {
	FirstGrants(ids []int, end int, grant func(id, t int)) (passes int, ok bool)
}

// wants reports whether job j is one of pf's.
func (pf *pendingFork) wants(j int32) bool {
	for _, g := range pf.group {
		if g == int(j) {
			return true
		}
	}
	return false
}

// forkBooks are a fork's books: it watches for grants and keeps nothing.
type forkBooks struct {
	grant func(j int32, t int64) bool // nil: none
}

func (forkBooks) filing(*driver) error { return nil }
func (forkBooks) filed(*driver) error  { return nil }
func (forkBooks) denied(int)           {}

func (b forkBooks) granted(d *driver, j int32, e *policy.Event) (bool, error) {
	return b.grant != nil && b.grant(j, int64(e.T)+d.base), nil
}

func (forkBooks) preempted(*driver, int32, *policy.Event) error { return nil }
func (forkBooks) released(*driver, int32, *policy.Event) error  { return nil }

// fairForks holds the fair-start forks of a replay under a policy. A fork
// is taken at the next submit after a sampled job's (until then the replay
// is the job's withheld replay) if the job has not started by then, but
// run only once the job has started in the replay, at a, and only up to
// a: if the copy has not started the job by then, its fair start is at or
// after its start and it was not late — what it is exactly does not
// change the measure. Jobs submitted at one time share a fork, run once
// all of them have started. Unstarted jobs' forks run at the end, to the
// horizon.
type fairForks struct {
	sample  []int
	run     *Run
	pending []*pendingFork         // in the order taken
	byJob   map[int32]*pendingFork // a sampled job's pending fork
	// aheadReach caps how far a copy runs ahead (ReplayOptions).
	aheadReach func(now, reach int) int
	// work, if not nil, takes the copies' work (ReplayOptions.Work).
	work *policy.Work
}

// clone is CloneAllocator(alloc), its copy of the pending list counted
// as the copy's work.
func (ff *fairForks) clone(alloc policy.Allocator) (policy.Allocator, error) {
	c, err := CloneAllocator(alloc)
	if ff.work != nil && err == nil {
		if wa, ok := alloc.(policy.WorkCounter); ok {
			if wc, ok := c.(policy.WorkCounter); ok {
				ff.work.Add(wc.Work().Sub(wa.Work()))
			}
		}
	}
	return c, err
}

type pendingFork struct {
	fs      forkState
	alloc   policy.Allocator
	at      int   // the group's first position in the sample
	group   []int // its jobs
	waiting int   // its jobs not yet started (nor denied) in the replay
	until   int64 // the latest first start among them, seconds of the log
	done    bool
	// found, once the copy has been run ahead (runAhead), is each job's
	// first grant in it, seconds of the log (−1: none); the copy is then
	// dropped.
	found []int64
}

// take resolves the sampled jobs filed by now (sample[fp:] with an index
// below fs.next), just before the next submit is filed: a job started
// already has its fair start; for the others a copy is taken. It returns
// the next sample position.
func (ff *fairForks) take(fs forkState, alloc policy.Allocator, cap *capture, fp int) (int, error) {
	sample, run := ff.sample, ff.run
	for fp < len(sample) && sample[fp] < fs.next {
		s := fs.w.Jobs[sample[fp]].Submit
		q := fp
		for q < len(sample) && fs.w.Jobs[sample[q]].Submit == s {
			q++
		}
		pf := &pendingFork{fs: fs, at: fp, group: sample[fp:q]}
		pf.fs.grantsOnly, pf.fs.work = true, ff.work
		for k, j := range pf.group {
			switch r := &run.Records[j]; {
			case len(r.Starts) > 0:
				run.FairStart[fp+k] = r.Starts[0]
			case !run.Denied[j]:
				pf.waiting++
				// A job waits in at most one request, its last: a
				// requeued job's earlier requests were granted.
				if fs.reqOf != nil && fs.reqOf[j] >= 0 {
					pf.fs.reqs = append(pf.fs.reqs, int(fs.reqOf[j]))
				}
			}
		}
		if pf.waiting > 0 {
			c, err := ff.clone(alloc)
			alloc.SetRecorder(cap)
			if err != nil {
				return fp, err
			}
			pf.alloc = c
			pf.fs.jobOf = fs.jobOf[:len(fs.jobOf):len(fs.jobOf)]
			ahead, err := ff.runAhead(pf)
			if err != nil {
				return fp, err
			}
			if !ahead && pf.alloc == nil {
				// Run ahead without an answer: a copy as the replay still
				// is, to run when its jobs have started.
				if pf.alloc, err = ff.clone(alloc); err != nil {
					return fp, err
				}
				alloc.SetRecorder(cap)
			}
			if ff.byJob == nil {
				ff.byJob = map[int32]*pendingFork{}
			}
			for _, j := range pf.group {
				ff.byJob[int32(j)] = pf
			}
			ff.pending = append(ff.pending, pf)
		}
		fp = q
	}
	return fp, nil
}

// started tells the forks that job j started (first) in the replay at a;
// the job's fork runs once all of its group have.
func (ff *fairForks) started(j int32, a int64) error {
	pf := ff.byJob[j]
	if pf == nil || pf.done {
		return nil
	}
	delete(ff.byJob, j)
	pf.waiting--
	pf.until = max(pf.until, a)
	if pf.waiting > 0 {
		return nil
	}
	return ff.runFork(pf, int(pf.until-pf.fs.base))
}

// finish runs the forks still pending at the end of the replay, to the
// horizon.
func (ff *fairForks) finish() error {
	for _, pf := range ff.pending {
		if !pf.done {
			if err := ff.runFork(pf, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// runAhead runs pf's copy at once, as far as its books can be left
// (GrantsOnlyReach), until every one of its jobs not started in the
// replay has been granted in it; ok if that settles its fair starts: the
// copy granted them all, or ran out of jobs, or reached the horizon.
// Otherwise the copy, run part of the way, is dropped, and the caller
// takes another. Run at once, a copy needs no memory of its own while its
// jobs wait in the replay: a StrictFIFO replay of the full SDSC-SP2 log
// held some 700 copies of a pending list thousands long at once, and
// their first touch of fresh memory cost two seconds of the kernel's
// time. It runs further than runFork would where the replay starts a job
// before the copy does (runFork stops there), but that changes no fair
// start: runFork's answer for a job is its first grant in the copy where
// that is earlier than its first start in the replay, else that start,
// and the copy's grants before any tick are the same however far it runs.
func (ff *fairForks) runAhead(pf *pendingFork) (ok bool, err error) {
	if pf.fs.tickByTick {
		return false, nil
	}
	g, isReacher := pf.alloc.(grantsReacher)
	if !isReacher {
		return false, nil
	}
	run := ff.run
	reach := g.GrantsOnlyReach(pf.fs.stop)
	if ff.aheadReach != nil {
		reach = ff.aheadReach(pf.alloc.Now(), reach)
	}
	if reach < pf.alloc.Now()+1 {
		return false, nil
	}
	found := make([]int64, len(pf.group))
	need := make([]bool, len(pf.group))
	left := 0
	for k, j := range pf.group {
		found[k] = -1
		if run.FairStart[pf.at+k] < 0 && !run.Denied[j] {
			need[k] = true
			left++
		}
	}
	all := false
	c := pf.alloc
	pf.alloc = nil
	clock, err := pf.fs.run(c, pf.fs.next, reach+1, nil, pf.wants, func(j int32, t int64) bool {
		for k, g := range pf.group {
			if g == int(j) && found[k] < 0 {
				found[k] = t
				if need[k] {
					left--
				}
			}
		}
		all = left == 0
		return all
	})
	recycle(c)
	if err != nil {
		return false, fmt.Errorf("fair start of job %d: %w", pf.fs.w.Jobs[pf.group[0]].Number, err)
	}
	if !all && reach < pf.fs.stop && clock >= reach {
		return false, nil
	}
	pf.found = found
	return true, nil
}

// runFork runs pf's copy up to the tick until (exclusive; 0: the horizon)
// and sets its jobs' fair starts: the copy's first grant where it is
// earlier than the job's first start in the replay, else that start.
func (ff *fairForks) runFork(pf *pendingFork, until int) error {
	run := ff.run
	pf.done = true
	left := pf.waiting
	for _, j := range pf.group {
		if len(run.Records[j].Starts) > 0 {
			left++
		}
	}
	found := pf.found
	if found == nil {
		found = make([]int64, len(pf.group))
		for k := range found {
			found[k] = -1
		}
		_, err := pf.fs.run(pf.alloc, pf.fs.next, until, nil, pf.wants, func(j int32, t int64) bool {
			for k, g := range pf.group {
				if g == int(j) && found[k] < 0 {
					found[k] = t
					left--
				}
			}
			return left == 0
		})
		recycle(pf.alloc)
		pf.alloc = nil
		if err != nil {
			return fmt.Errorf("fair start of job %d: %w", pf.fs.w.Jobs[pf.group[0]].Number, err)
		}
	}
	for k, j := range pf.group {
		r := &run.Records[j]
		if run.FairStart[pf.at+k] >= 0 {
			continue // started before the fork was taken
		}
		switch {
		case len(r.Starts) > 0 && (found[k] < 0 || found[k] >= r.Starts[0]):
			run.FairStart[pf.at+k] = r.Starts[0]
		case found[k] >= 0:
			run.FairStart[pf.at+k] = found[k]
		}
	}
	return nil
}
