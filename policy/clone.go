package policy

import (
	"errors"
	"math"
	"sync"
)

// Clone is a copy of the broker's whole state that shares nothing either
// may change, without a recorder (trace.Cloner): the fair start times'
// forks copy the broker at a sampled job's submit (docs/traces.md).
// internal/deepcopy made the same copy by reflection, a tenth of the
// forks' time on the full SDSC-SP2 log; by hand it is the slices'
// copies and one block for the usage rings (recycled: Recycle). Every
// slice is copied with its room (cloneRoom), scratch included, so that
// the copy goes on exactly as the original would, but for the pending
// list's requests (read only up to each run's length; one block for all
// runs, each run's slice capped at its length so that it grows into a
// slice of its own; a free slot's slice is empty, without its room), and
// skipFlows, which holds pointers into the campaigns.
// TestCloneSharesNothingMutable (trace) checks that no memory is shared,
// and TestForkContinuesLikeTheOriginal and TestCloneMatchesDeepCopy that
// the copy is the original's.
func (b *Broker) Clone() (Allocator, error) {
	c := *b
	c.rec = nil
	c.camps = cloneRoom(b.camps)
	// The usage rings are most of a copy's bytes (2.4 kB a campaign):
	// one block, taken from a done fork's where one was recycled.
	rings := takeRings(len(b.camps))
	c.rings = rings
	for i := range c.camps {
		cp := &c.camps[i]
		rings[i] = *cp.usage
		cp.usage = &rings[i]
		if f := cp.env.IO; f != nil {
			g := *f
			cp.env.IO = &g
		}
		if f := cp.env.Inference; f != nil {
			g := *f
			cp.env.Inference = &g
		}
	}
	c.leases = cloneRoom(b.leases)
	c.placer = b.placer.Clone()
	c.runs = cloneRoom(b.runs)
	c.freeSlots = cloneRoom(b.freeSlots)
	c.runSums = cloneRoom(b.runSums)
	n := b.pendingLen()
	block := make([]Request, n)
	c.runReqs = nil
	if b.runReqs != nil {
		c.runReqs = make([][]Request, len(b.runReqs), cap(b.runReqs))
	}
	off := 0
	for s, reqs := range b.runReqs {
		switch {
		case reqs == nil:
		case len(reqs) == 0:
			c.runReqs[s] = []Request{} // a free slot
		default:
			m := copy(block[off:], reqs)
			c.runReqs[s] = block[off : off+m : off+m]
			off += m
		}
	}
	if c.counting {
		c.work.Moved += int64(n)
	}
	c.cands = cloneRoom(b.cands)
	c.exits = cloneRoom(b.exits)
	c.exitTouched = cloneRoom(b.exitTouched)
	c.skipToks = cloneRoom(b.skipToks)
	c.skipLazy = cloneRoom(b.skipLazy)
	c.skipSlide = cloneRoom(b.skipSlide)
	c.skipWatch = cloneRoom(b.skipWatch)
	c.skipWatchCamps = cloneRoom(b.skipWatchCamps)
	c.skipWatchSpare = cloneRoom(b.skipWatchSpare)
	c.skipLineEnd = cloneRoom(b.skipLineEnd)
	c.skipFlows = nil
	c.skipMuls = cloneRoom(b.skipMuls)
	c.skipOff = cloneRoom(b.skipOff)
	c.skipAt = cloneRoom(b.skipAt)
	c.skipOrder = cloneRoom(b.skipOrder)
	c.skipAdds = cloneRoom(b.skipAdds)
	c.book.groups = cloneRoom(b.book.groups)
	c.book.vals = cloneRoom(b.book.vals)
	c.tailAdds = cloneRoom(b.tailAdds)
	c.bookAt = cloneRoom(b.bookAt)
	c.sortKeys = cloneRoom(b.sortKeys)
	c.sortedRuns = cloneRoom(b.sortedRuns)
	c.sortTiedKeys = cloneRoom(b.sortTiedKeys)
	c.sortTiedRuns = cloneRoom(b.sortTiedRuns)
	c.skipSlope = cloneRoom(b.skipSlope)
	c.skipTokLines = cloneRoom(b.skipTokLines)
	c.skipMoved = cloneRoom(b.skipMoved)
	c.skipPairs = cloneRoom(b.skipPairs)
	c.skipRunFirst = cloneRoom(b.skipRunFirst)
	c.skipRunNext = cloneRoom(b.skipRunNext)
	c.skipRunCamps = cloneRoom(b.skipRunCamps)
	c.skipTies = cloneRoom(b.skipTies)
	c.skipSeg = cloneRoom(b.skipSeg)
	return &c, nil
}

// ringBlocks holds the usage rings of copies that are done (Recycle),
// for the next copies: fresh megabytes per fork cost more in page
// faults than the copy itself (half of Clone's time on the full SDSC-SP2
// log). What a block held is written over whole before it is read.
var ringBlocks sync.Pool // of *[]usageRing

func takeRings(n int) []usageRing {
	if p, ok := ringBlocks.Get().(*[]usageRing); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]usageRing, n)
}

// Recycle ends a copy (Clone) that will not be used again: its usage
// rings go to the next copy. The broker is unusable after it (its
// campaigns are gone); a broker that is no copy is left as it is.
func (b *Broker) Recycle() {
	if b.rings == nil {
		return
	}
	rings := b.rings[:0]
	b.rings, b.camps = nil, nil
	ringBlocks.Put(&rings)
}

// cloneRoom is a copy of s with its room: its capacity and what lies in
// it, so that the copy grows, and reads its scratch, as s would.
func cloneRoom[E any](s []E) []E {
	if s == nil {
		return nil
	}
	return append(make([]E, 0, cap(s)), s[:cap(s)]...)[:len(s)]
}

// GrantsOnly stops keeping the credits, the congestion window and the
// utilization sum from now on, in a copy of the broker that is read only
// for its journal (the fair start times' forks, docs/studies.md §4.4):
// through a sampled job's wait, charging every lease every second is a
// sum nothing reads. The congestion window feeds nothing but the price
// multiplier, hence only the charges, and the credits decide a grant
// only where a campaign's are exhausted: Request denies every class but
// opportunistic then. So the copy grants, releases, throttles and
// notices exactly as the broker does, as long as every such Request can
// still tell: one is refused with ErrBooksNotKept unless the campaign's
// credits would still be positive had it held the whole pool at the
// dearest class's price and the highest multiplier every second since
// the books stopped (a fork files its jobs before its first tick, and a
// preempted job comes back as the opportunistic request it was, so this
// never refuses one). It always reports true (until is the interface's,
// trace's grantsOnlier, for policies that need a horizon). Credits,
// Spent, Supply, CongestionIndex, Multiplier and Utilization of the copy
// are then stale. The usage windows order the pending list (the
// fair-share deficit) and are kept.
func (b *Broker) GrantsOnly(until int) bool {
	if !b.grantsOnly {
		b.grantsOnly, b.booksAt = true, b.now
	}
	return true
}

// ErrBooksNotKept is returned by Request on a broker that keeps no books
// (GrantsOnly) when the campaign's credits might have run out since.
var ErrBooksNotKept = errors.New("credits not kept (GrantsOnly): cannot tell whether the budget is exhausted")

// creditsLeft is whether campaign cp's credits are certainly positive
// now on a broker that stopped charging at booksAt: worst case, it held
// the whole pool at the dearest price since.
func (b *Broker) creditsLeft(cp *campaign) bool {
	price := 0.0
	for _, p := range basePrice {
		price = max(price, p)
	}
	// With a margin far above the rounding of the charges' sums.
	most := float64(b.now-b.booksAt) * float64(b.cfg.Pool) * price * MultiplierFor(math.Inf(1)) / 3600 * (1 + 1e-6)
	b.settle(cp)
	return cp.credits-most > 1e-6*math.Abs(cp.credits)
}
