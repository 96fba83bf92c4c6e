package static

import (
	"slices"
	"sync"

	"github.com/bursar-hpc/bursar/policy/baseline"
)

// A fair start's fork (docs/traces.md, "Fair starts") copies the rule at
// a sampled job's submit and runs on until that job starts. The
// partitions' queues and their trees are most of the rule's bytes (on
// the full SDSC-SP2 log under condo partitions, thousands of jobs and
// trees of tens of thousands of bounds), and a fork reads them all but
// writes only the partitions whose jobs start during its job's wait. So a copy shares each
// partition's arrays with the original, copy on write: whichever of the
// two writes a partition's queue first copies its arrays then, and a
// copy that ends (Recycle) hands them back, so that the replay, which
// goes on writing after a fork ran ahead and was dropped, writes in
// place again.

// sharing counts the other holders of a partition queue's arrays
// (partQueue.share): the queue that finds it above 0 must copy the arrays
// before it writes them. All of a replay's copies run on its one
// goroutine (trace's forks run one after the other).
type sharing struct{ others int }

// own makes qu's arrays its own before a write: copied if another queue
// holds them too, else written in place from now on.
func (qu *partQueue) own(k *baseline.Core) {
	if qu.share == nil {
		return
	}
	if qu.share.others > 0 {
		qu.share.others--
		qu.list = baseline.CopyInto(&waitingBlocks, qu.list)
		qu.least = baseline.CopyInto(&leastBlocks, qu.least)
		qu.short = baseline.CopyInto(&shortBlocks, qu.short)
		k.CountMoved(len(qu.list))
	}
	qu.share = nil
}

// lend is a copy of qu that shares its arrays until either writes them.
func (qu *partQueue) lend() partQueue {
	if qu.share == nil {
		qu.share = &sharing{}
	}
	qu.share.others++
	return *qu
}

// release gives qu's arrays back: qu is done with them.
func (qu *partQueue) release() {
	if qu.share != nil && qu.share.others > 0 {
		qu.share.others--
	} else {
		// Its own: the next copy's (baseline.CopyInto).
		baseline.PutBlock(&waitingBlocks, qu.list)
		baseline.PutBlock(&leastBlocks, qu.least)
		baseline.PutBlock(&shortBlocks, qu.short)
	}
	*qu = partQueue{}
}

// waitingBlocks, leastBlocks and shortBlocks hold the arrays of copies that are done
// (release), for the next copies' (own): a fork's first write copies its
// partition's queue and tree, half a megabyte on the full SDSC-SP2 log,
// and fresh memory cost more to clear and fault in than the copy itself.
// An array taken is written up to its length before it is read, and
// nothing reads beyond it.
var waitingBlocks, leastBlocks, shortBlocks sync.Pool // of *[]waiting, *[]int32, *[]int32

// CloneRule is a copy of the rule for a copy of its Core
// (baseline.RuleCloner): the tables copied, the partitions' queues
// shared until written (see above). The knobs are shared: nothing
// changes them after New. A table added to Rule must be copied here:
// trace's TestCloneSharesNothingMutable fails until it is.
func (r *Rule) CloneRule(_, _ *baseline.Core) baseline.Rule {
	c := *r
	c.partOf, c.size = slices.Clone(r.partOf), slices.Clone(r.size)
	c.owner, c.lent, c.noticed = slices.Clone(r.owner), slices.Clone(r.lent), slices.Clone(r.noticed)
	c.loans, c.scav = slices.Clone(r.loans), slices.Clone(r.scav)
	c.queues = baseline.CloneLists(r.queues)
	c.ownerFree, c.idle, c.waiting = slices.Clone(r.ownerFree), slices.Clone(r.idle), slices.Clone(r.waiting)
	c.planned, c.plannedID = slices.Clone(r.planned), slices.Clone(r.plannedID)
	c.others = slices.Clone(r.others)
	c.pass = r.pass.Clone()
	c.running, c.jobs, c.jobIDs, c.jobAt = slices.Clone(r.running), slices.Clone(r.jobs), slices.Clone(r.jobIDs), slices.Clone(r.jobAt)
	c.alive, c.victims, c.order = slices.Clone(r.alive), slices.Clone(r.victims), slices.Clone(r.order)
	c.scavAt, c.scavGranted = slices.Clone(r.scavAt), slices.Clone(r.scavGranted)
	if r.parts != nil {
		c.parts = make([]partQueue, len(r.parts))
		for p := range r.parts {
			c.parts[p] = r.parts[p].lend()
		}
	}
	c.heads, c.quiet = slices.Clone(r.heads), slices.Clone(r.quiet)
	c.leases, c.ownersNow = slices.Clone(r.leases), slices.Clone(r.ownersNow)
	return &c
}

// Recycle ends a copy (CloneRule) that will not be used again: the
// partitions' queues it still shares go back to their other holders. The
// rule is unusable after it.
func (r *Rule) Recycle() {
	for p := range r.parts {
		r.parts[p].release()
	}
	r.parts = nil
}
