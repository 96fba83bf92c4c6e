package trace

import (
	"errors"
	"fmt"
	"slices"

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
	w          *Workload
	base       int64
	ids        []policy.CampaignID
	jobOf      []int32 // request id → job, as the replay has it
	kept       []int64 // each job's run kept by checkpoints, as the replay has it (read only)
	next, done int     // the next job to file; the jobs finished or denied
	stop       int     // the horizon tick
	tickByTick bool
	// grantsOnly: the copy is read only for its grants, so a policy that
	// can (grantsOnlier) stops keeping its books where that cannot change
	// one.
	grantsOnly bool
}

// recycler is a copy that can hand its memory to the next copy once it
// is done (policy.Broker.Recycle).
type recycler interface{ Recycle() }

// grantsOnlier is a policy that can stop keeping the books no grant
// depends on, up to a given tick (baseline.Core.GrantsOnly).
type grantsOnlier interface{ GrantsOnly(until int) bool }

// grantsReacher is a grantsOnlier that tells how far GrantsOnly would
// reach (baseline.Core.GrantsOnlyReach).
type grantsReacher interface{ GrantsOnlyReach(limit int) int }

// run drives alloc (a copy of the replay's policy at the fork point) on as
// Replay does, filing the jobs from next up to limit (later ones are
// withheld), requeueing preempted jobs, until every job is done, the
// horizon, or grant (called with each grant's job and log time) says
// stop. rec receives the copy's journal. The replay's jobOf is appended
// to only beyond its length, which the replay overwrites as it goes on.
func (fs forkState) run(alloc policy.Allocator, limit, until int, rec policy.Recorder, grant func(j int32, t int64) bool) error {
	w, base := fs.w, fs.base
	rr, ok := alloc.(policy.RigidRequester)
	if !ok {
		return fmt.Errorf("fork: policy %T cannot file rigid requests", alloc)
	}
	cap := &capture{next: rec}
	alloc.SetRecorder(cap)
	skip, _ := alloc.(policy.EventSkipper)
	if fs.tickByTick {
		skip = nil
	}
	// The replay's request ids are read, never written: the copy's new
	// ones go to its own table.
	shared := fs.jobOf
	var own []int32 // request id − len(shared) → job
	jobOf := func(id int) int32 {
		switch {
		case id < 0:
			return -1
		case id < len(shared):
			return shared[id]
		case id-len(shared) < len(own):
			return own[id-len(shared)]
		}
		return -1
	}
	end := fs.stop
	if until > 0 {
		end = min(end, until-1)
	}
	if g, ok := alloc.(grantsOnlier); ok && fs.grantsOnly {
		g.GrantsOnly(end)
	}
	n := len(w.Jobs)
	next, done := fs.next, fs.done
	// The copy's own checkpoints (§6.7), on top of the replay's at the
	// fork, which the copy must not change.
	var kept map[int32]int64
	file := func(j int) error {
		jb := &w.Jobs[j]
		k := kept[int32(j)]
		if fs.kept != nil {
			k += fs.kept[j]
		}
		id, err := fileRigid(w, rr, fs.ids[jb.Campaign], jb, int(jb.Submit-base), k)
		if id >= len(shared) {
			for len(own) <= id-len(shared) {
				own = append(own, -1)
			}
			own[id-len(shared)] = int32(j)
		}
		if errors.Is(err, policy.ErrExceedsLimit) {
			done++
			return nil
		}
		return err
	}
	var requeue []int32
	for {
		now := alloc.Now()
		for next < limit && w.Jobs[next].Submit-base <= int64(now)+1 {
			if err := file(next); err != nil {
				return err
			}
			next++
		}
		if done == n || alloc.Now() >= end {
			return nil
		}
		alloc.Tick()
		requeue = requeue[:0]
		stopped := false
		for i := range cap.ev {
			e := &cap.ev[i]
			j := jobOf(e.Lease)
			if j < 0 {
				continue
			}
			switch {
			case e.Kind == policy.EventGrant:
				if grant != nil && grant(j, int64(e.T)+base) {
					stopped = true
				}
			case e.Kind == policy.EventRelease && e.Reason == policy.ReasonPreempted:
				if e.Kept > 0 {
					if kept == nil {
						kept = map[int32]int64{}
					}
					kept[j] += int64(e.Kept)
				}
				requeue = append(requeue, j)
			case e.Kind == policy.EventRelease:
				done++
			}
		}
		cap.ev = cap.ev[:0]
		for _, j := range requeue {
			if err := file(int(j)); err != nil {
				return err
			}
		}
		if stopped || done == n || alloc.Now() >= end {
			return nil
		}
		if skip != nil {
			target := min(skip.NextChange()-1, end-1)
			if next < limit {
				target = min(target, int(w.Jobs[next].Submit-base)-1)
			}
			if target > alloc.Now() {
				skip.SkipTo(target)
			}
		}
	}
}

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
		pf.fs.grantsOnly = true
		for k, j := range pf.group {
			switch r := &run.Records[j]; {
			case len(r.Starts) > 0:
				run.FairStart[fp+k] = r.Starts[0]
			case !run.Denied[j]:
				pf.waiting++
			}
		}
		if pf.waiting > 0 {
			c, err := CloneAllocator(alloc)
			alloc.SetRecorder(cap)
			if err != nil {
				return fp, err
			}
			pf.alloc = c
			pf.fs.jobOf = fs.jobOf[:len(fs.jobOf):len(fs.jobOf)]
			// The replay's checkpoints go on changing; the copy needs them
			// as they are now.
			if fs.kept != nil {
				pf.fs.kept = slices.Clone(fs.kept[:fs.next])
			}
			ahead, err := ff.runAhead(pf)
			if err != nil {
				return fp, err
			}
			if !ahead && pf.alloc == nil {
				// Run ahead without an answer: a copy as the replay still
				// is, to run when its jobs have started.
				if pf.alloc, err = CloneAllocator(alloc); err != nil {
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
	err = pf.fs.run(c, pf.fs.next, reach+1, nil, func(j int32, t int64) bool {
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
	if err != nil {
		return false, fmt.Errorf("fair start of job %d: %w", pf.fs.w.Jobs[pf.group[0]].Number, err)
	}
	if !all && reach < pf.fs.stop && c.Now() >= reach {
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
		err := pf.fs.run(pf.alloc, pf.fs.next, until, nil, func(j int32, t int64) bool {
			for k, g := range pf.group {
				if g == int(j) && found[k] < 0 {
					found[k] = t
					left--
				}
			}
			return left == 0
		})
		if r, ok := pf.alloc.(recycler); ok {
			r.Recycle()
		}
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
