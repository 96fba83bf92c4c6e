package trace

import (
	"errors"
	"fmt"

	"github.com/bursar-hpc/bursar/internal/deepcopy"
	"github.com/bursar-hpc/bursar/policy"
)

// CloneAllocator is a deep copy of a policy's whole state (package
// internal/deepcopy) without a recorder: the copy runs on alone, and
// neither run sees the other's steps. It unsets a's recorder first (a
// recorder may hold files, which are not copied): the caller sets a's back. The policies are pure state
// machines; a closure a policy caches (budget's and the EASY adapter's
// eligibility tests) is dropped from the copy and rebuilt on first use,
// bound to the copy. The property test TestForkContinuesLikeTheOriginal
// checks, policy by policy, that a copy continued gives the journal the
// original gives.
func CloneAllocator(a policy.Allocator) (policy.Allocator, error) {
	a.SetRecorder(nil)
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
}

// run drives alloc (a copy of the replay's policy at the fork point) on as
// Replay does, filing the jobs from next up to limit (later ones are
// withheld), requeueing preempted jobs, until every job is done, the
// horizon, or grant (called with each grant's job and log time) says
// stop. rec receives the copy's journal. The replay's jobOf is appended
// to only beyond its length, which the replay overwrites as it goes on.
func (fs forkState) run(alloc policy.Allocator, limit int, rec policy.Recorder, grant func(j int32, t int64) bool) error {
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
	jobOf := fs.jobOf
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
		if id >= 0 {
			for len(jobOf) <= id {
				jobOf = append(jobOf, -1)
			}
			jobOf[id] = int32(j)
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
		if done == n {
			return nil
		}
		alloc.Tick()
		requeue = requeue[:0]
		stopped := false
		for i := range cap.ev {
			e := &cap.ev[i]
			if e.Lease < 0 || e.Lease >= len(jobOf) || jobOf[e.Lease] < 0 {
				continue
			}
			j := jobOf[e.Lease]
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
		if stopped || done == n || alloc.Now() >= fs.stop {
			return nil
		}
		if skip != nil {
			target := min(skip.NextChange()-1, fs.stop-1)
			if next < limit {
				target = min(target, int(w.Jobs[next].Submit-base)-1)
			}
			if target > alloc.Now() {
				skip.SkipTo(target)
			}
		}
	}
}

// fairStarts resolves the sampled jobs filed by now (sample[fp:] with an
// index below fs.next), just before the next submit is filed: up to this
// point the replay is each one's withheld replay, so a job that has
// started already has its fair start; for the others (jobs submitted at
// one time share one fork) a copy of the policy runs on with every later
// submit withheld until they have started (docs/studies.md §6.17). It
// returns the next sample position.
func fairStarts(fs forkState, alloc policy.Allocator, cap *capture, sample []int, fp int, run *Run) (int, error) {
	for fp < len(sample) && sample[fp] < fs.next {
		s := fs.w.Jobs[sample[fp]].Submit
		q := fp
		for q < len(sample) && fs.w.Jobs[sample[q]].Submit == s {
			q++
		}
		group := sample[fp:q]
		left := 0
		for k, j := range group {
			switch r := &run.Records[j]; {
			case len(r.Starts) > 0:
				run.FairStart[fp+k] = r.Starts[0]
			case !run.Denied[j]:
				left++
			}
		}
		if left > 0 {
			c, err := CloneAllocator(alloc)
			alloc.SetRecorder(cap)
			if err != nil {
				return fp, err
			}
			at := fp
			err = fs.run(c, fs.next, nil, func(j int32, t int64) bool {
				for k, g := range group {
					if g == int(j) && run.FairStart[at+k] < 0 {
						run.FairStart[at+k] = t
						left--
					}
				}
				return left == 0
			})
			if err != nil {
				return fp, fmt.Errorf("fair start of job %d: %w", fs.w.Jobs[group[0]].Number, err)
			}
		}
		fp = q
	}
	return fp, nil
}
