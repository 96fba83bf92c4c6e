package baseline

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/bursar-hpc/bursar/internal/deepcopy"
	"github.com/bursar-hpc/bursar/platform"
	"github.com/bursar-hpc/bursar/policy"
)

// Clone is a copy of the Core and its rule that runs on alone, without a
// recorder: the fair start times' forks (docs/studies.md §4.4) run one on
// from a sampled job's submit with later arrivals withheld. It shares
// nothing the copy or the original changes: the Core's tables are copied
// by hand (a reflective copy of its campaigns and queue was most of a
// fork's cost), the scratch buffers start empty, and the rule's state is
// copied by internal/deepcopy with its pointers to the Core turned to the
// copy's and its cached closures dropped (rebuilt on first use, bound to
// the copy). What is set once and only ever replaced whole is shared: the
// entitlements, the history, and the groups' member lists (reshare makes
// new ones). trace's TestForkContinuesLikeTheOriginal checks, rule by
// rule, that a copy continued writes the journal the original writes.
func (k *Core) Clone() (policy.Allocator, error) {
	c := new(Core)
	*c = *k
	c.rec = nil
	c.camps = CopyInto(&campaignBlocks, k.camps)
	for i := range c.camps {
		env := &c.camps[i].Env
		if env.IO != nil {
			f := *env.IO
			env.IO = &f
		}
		if env.Inference != nil {
			f := *env.Inference
			env.Inference = &f
		}
	}
	c.leases = slices.Clone(k.leases)
	// The list with up to an eighth of its length of room on either side,
	// copied with that room (nothing the list holds: a request is written
	// there before the list takes the place in), so that the copy is not
	// cleared first and then written over.
	n, room := len(k.pending), len(k.pending)/8+8
	lo, hi := max(0, k.pendHead-room), min(len(k.pendBase), k.pendHead+n+room)
	c.pendBase = CopyInto(&requestBlocks, k.pendBase[lo:hi])
	c.pendHead = k.pendHead - lo
	c.pending = c.pendBase[c.pendHead : c.pendHead+n]
	c.countMoved(n)
	c.groups = slices.Clone(k.groups)
	c.queueNames = slices.Clone(k.queueNames)
	c.posOf = CopyInto(&positionBlocks, k.posOf)
	c.cands, c.victim, c.keyed, c.debits = nil, nil, VictimSorter{}, debits{}
	c.placer, c.board = k.placer.Clone(), platform.Board{}
	if rc, ok := k.rule.(RuleCloner); ok {
		c.rule = rc.CloneRule(k, c)
	} else {
		r, err := deepcopy.Copy(&struct{ r Rule }{k.rule}, deepcopy.Options{DropFuncs: true, Replace: map[any]any{k: c}})
		if err != nil {
			return nil, fmt.Errorf("copy of rule %s: %w", k.rule.Name(), err)
		}
		c.rule = r.r
	}
	c.watch, _ = c.rule.(Watcher)
	c.holds, _ = c.rule.(HoldWatcher)
	if wr, ok := c.rule.(WaitingRule); ok {
		c.countMoved(wr.WaitingQueue().Entries())
	}
	return c, nil
}

// RuleCloner is an optional Rule hook: a rule that copies its own state
// for Core.Clone, cheaper than the reflective copy Clone makes otherwise.
// CloneRule returns a copy of the rule that shares no memory either may
// change, its references to the Core from turned to the Core to, its
// cached closures nil (rebuilt on first use, bound to the copy): what
// internal/deepcopy would make of it (a test checks it field for field).
type RuleCloner interface {
	CloneRule(from, to *Core) Rule
}

// Clone is a copy of the EASY pass's buffers that shares none of them,
// without the rule's hooks (Order, Key, Search; a rule sets them again
// before its next pass) or the cached eligibility.
func (e *EASY) Clone() EASY {
	return EASY{
		pass:     e.pass.Clone(),
		running:  slices.Clone(e.running),
		jobs:     slices.Clone(e.jobs),
		ids:      slices.Clone(e.ids),
		wants:    slices.Clone(e.wants),
		leaseIDs: slices.Clone(e.leaseIDs),
		cursors:  slices.Clone(e.cursors),
		order:    e.order.Clone(),
	}
}

// Clone is a copy of the queue's buffers that shares none of them.
func (q *Queue) Clone() Queue {
	return Queue{ids: slices.Clone(q.ids), counts: slices.Clone(q.counts)}
}

// Clone is a copy of the queue that shares nothing with it, synced to the
// Core to where it was synced to the Core from (a copy of that Core).
func (q *Ranked) Clone(from, to *Core) Ranked {
	c := *q
	if q.core == from {
		c.core = to
	}
	c.jobs, c.free = slices.Clone(q.jobs), slices.Clone(q.free)
	c.camps = CloneLists(q.camps)
	c.waiting = slices.Clone(q.waiting)
	c.bySize = CloneLists(q.bySize)
	c.sized, c.sizedWords = slices.Clone(q.sized), slices.Clone(q.sizedWords)
	c.stack = slices.Clone(q.stack)
	c.backfillCands = q.backfillCands.clone()
	return c
}

// CloneLists is a copy of lists that shares no array with it (the Core's
// copy uses it, and so do the rules' own copies, as quota's CloneRule).
func CloneLists[E any](lists [][]E) [][]E {
	if lists == nil {
		return nil
	}
	c := make([][]E, len(lists))
	for i, l := range lists {
		c[i] = slices.Clone(l)
	}
	return c
}

// GrantsOnly stops keeping credits and the utilization sum from now on, in
// a copy of the Core that is read only for its grants and releases (the
// fair start times' forks, docs/studies.md §4.4), ticked or skipped and
// given rigid requests up to tick until at the latest, and never asked to
// Consume. Charging every held GPU every second is most of a long skip
// (debit is linear in the seconds skipped, to match Tick bit for bit),
// and a fork skips through the sampled job's whole wait.
//
// Credits decide a grant only where a campaign's are exhausted (a request
// is then denied, Core.file): GrantsOnly does nothing and reports false
// unless every campaign's credits stay positive to tick until even if it
// held the whole pool at the dearest class's price every second, so that
// no grant or denial can differ from the Core's with its books kept.
// Credits, Spent, Supply and Utilization of the copy are then stale.
func (k *Core) GrantsOnly(until int) bool {
	if k.grantsOnly {
		return true
	}
	if !k.creditsLast(until) {
		return false
	}
	k.grantsOnly = true
	return true
}

// ForGrantsOnly reports whether the Core no longer keeps the books no
// grant depends on (GrantsOnly): a copy read only for its grants, which a
// rule may spare the upkeep of indices that only keep its later passes
// fast (static's compaction of its partitions' queues).
func (k *Core) ForGrantsOnly() bool { return k.grantsOnly }

// Settler is an optional Rule hook for a copy read only for its grants
// (GrantsOnly): Settled reports, right after a pass and its EndTick,
// that the rule would decide nothing at any later tick unless a lease
// ends, a request is filed or leaves, or its own next event (Paced) comes,
// though the pass itself granted. The Core then does not run the tick
// after the pass's changes (NextChange's next tick after a change), at
// which the rule would only find that: after every grant of a static
// fork, one tick in two of its forks.
type Settler interface {
	Settled(k *Core) bool
}

// GrantsOnlyReach is the last tick up to limit for which GrantsOnly
// would stop the books; one before now if none. The credits' test is
// monotone in the tick (a later one can only charge more), so a binary
// search finds it.
func (k *Core) GrantsOnlyReach(limit int) int {
	if k.grantsOnly {
		return limit
	}
	lo, hi := k.now, limit // the answer is in [lo, hi]
	if limit < lo || !k.creditsLast(lo) {
		return k.now - 1
	}
	// Each campaign's test is monotone in the tick, and so is all of
	// theirs, which implies the poorest campaign's: the search on the
	// poorest alone (its fewest credits) ends at or after the answer,
	// and at it if all pass there. A search testing every campaign at
	// every step read some 500 campaigns thirty times a fork on the full
	// SDSC-SP2 log.
	poorest := 0
	for i := range k.camps {
		if k.camps[i].credits < k.camps[poorest].credits {
			poorest = i
		}
	}
	if len(k.camps) > 0 {
		at := k.lastTick(lo, hi, func(m int) bool { return lasts(k.camps[poorest].credits, k.mostCharged(m)) })
		if k.creditsLast(at) {
			return at
		}
		hi = at - 1 // the answer is before it
	}
	return k.lastTick(lo, hi, k.creditsLast)
}

// lastTick is the last tick in [lo, hi] at which holds, true at lo and
// monotone (true, then false), holds.
func (k *Core) lastTick(lo, hi int, holds func(int) bool) int {
	for lo < hi {
		m := lo + (hi-lo+1)/2
		if holds(m) {
			lo = m
		} else {
			hi = m - 1
		}
	}
	return lo
}

// creditsLast reports whether every campaign's credits stay positive to
// tick until even if it held the whole pool at the dearest class's price
// every second (GrantsOnly).
func (k *Core) creditsLast(until int) bool {
	most := k.mostCharged(until)
	for i := range k.camps {
		if !lasts(k.camps[i].credits, most) {
			return false
		}
	}
	return true
}

// mostCharged is the most a campaign could be charged from now to tick
// until: the whole pool at the dearest class's price every second, with
// a margin far above the rounding of the charges' sums (one part in
// 10¹⁶ per subtraction).
func (k *Core) mostCharged(until int) float64 {
	price := 0.0
	for c := range policy.Class(4) {
		price = max(price, c.BasePrice())
	}
	return float64(max(until-k.now, 0)) * float64(k.cfg.Pool) * price / 3600 * (1 + 1e-6)
}

// lasts reports whether credits c stay positive after a charge of most.
func lasts(c, most float64) bool { return c-most > 1e-6*math.Abs(c) }

// RuleRecycler is an optional Rule hook: a rule whose copy (CloneRule)
// shares memory until written gives it back when the copy is done.
type RuleRecycler interface {
	Recycle()
}

// Recycle ends a copy (Clone) that will not be used again: what its rule
// still shares with the original goes back to it (RuleRecycler), and its
// pending list's, campaigns' and positions' arrays to the next copy (Clone takes
// them: a thousand forks' fresh copies of a list thousands long, and of
// the positions by request id, were most of a static replay's allocations on the full SDSC-SP2 log, and
// the collections they cost). The Core is unusable after it.
func (k *Core) Recycle() {
	if r, ok := k.rule.(RuleRecycler); ok {
		r.Recycle()
	}
	PutBlock(&requestBlocks, k.pendBase)
	PutBlock(&campaignBlocks, k.camps)
	PutBlock(&positionBlocks, k.posOf)
	k.pendBase, k.pending, k.camps, k.posOf = nil, nil, nil, nil
}

// requestBlocks, campaignBlocks and positionBlocks hold the pending
// lists', the campaigns' and the positions' (posOf) arrays of copies
// that are done (Recycle).
var requestBlocks, campaignBlocks, positionBlocks sync.Pool // of *[]Request, *[]Campaign, *[]int32

// CopyInto is a copy of s, of s's length and at least its capacity, in an
// array from pool if the one it holds is big enough (one too small is
// dropped: what is copied only grows), else in a new one. The caller
// writes nothing beyond the length before writing it, and reads nothing
// there before writing it: the array may hold a copy's old elements.
func CopyInto[E any](pool *sync.Pool, s []E) []E {
	if s == nil {
		return nil
	}
	if b, ok := pool.Get().(*[]E); ok && cap(*b) >= cap(s) {
		return append((*b)[:0], s...)
	}
	return append(make([]E, 0, cap(s)), s...)
}

// PutBlock gives s's array to pool, for CopyInto; s's holder is done
// with it.
func PutBlock[E any](pool *sync.Pool, s []E) {
	if cap(s) > 0 {
		s = s[:0]
		pool.Put(&s)
	}
}

// GrantForecaster is an optional Rule hook for a fair start's fork: a
// rule whose passes depend on little of the Core's state may tell a
// copy's first grants without running the copy tick by tick
// (static.Rule.FirstGrants). FirstGrants reports, for the requests ids
// names that are pending (the caller names them: a walk of the pending
// list for them was a tenth of a static fork's work), the first grant
// of each in a run of the copy on from now with nothing more filed, at
// the ticks up to end, each in tick order, and returns the passes it
// ran; false, with nothing reported and nothing changed, where it
// cannot. The Core is unusable after it returns true.
type GrantForecaster interface {
	FirstGrants(k *Core, ids []int, end int, grant func(id, t int)) (passes int, ok bool)
}

// FirstGrants is the rule's GrantForecaster on this copy of the Core (a
// fork's, read only for its grants, whose every tick is skipped where
// nothing changes); false where the rule has none, where every tick is
// run (TickByTick), or where it cannot tell (the copy is then as it
// was). The Core is unusable after it returns true.
func (k *Core) FirstGrants(ids []int, end int, grant func(id, t int)) (passes int, ok bool) {
	f, is := k.rule.(GrantForecaster)
	if !is || k.tickByTick {
		return 0, false
	}
	return f.FirstGrants(k, ids, end, grant)
}
