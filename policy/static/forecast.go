package static

import (
	"math"
	"slices"

	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/easy"
)

// A fair start's fork (trace's fairForks) runs a copy of the replay on,
// with every later submit withheld, until its sampled jobs start. Under
// lend none without a platform the partitions share nothing: a job's
// start is decided by its own partition's queue and its owners' leases
// alone, and a pass of a partition whose leases and queue did not change
// decides nothing (quietAfter). So a fork needs only its jobs'
// partitions, and of those only the ticks at which an owner's lease
// ends. Run through the Core, a fork's pass was mostly the Core's upkeep
// of every partition (the lease table, the journal, the books, the next
// change) around the few hundred instructions of its own partition's
// pass: forecast runs that pass alone, on the copy's queue and a list of
// its owners' leases.

// FirstGrants is baseline.GrantForecaster: for the pending requests
// ids names, each one's first grant in a run of the rule on from now
// with nothing more filed, at the ticks up to end, reported to grant in
// tick order by partition; the ticks passed, and false, with nothing
// reported, where the rule cannot tell without the Core (lend
// scavenger, a platform, an elastic request waiting, a queue made again
// or out of order, a planned job, a lease under notice, a request named
// in no partition's queue). It writes the copy's queues, and the Core
// is unusable after it (a fork's copy, dropped next).
func (r *Rule) FirstGrants(k *baseline.Core, ids []int, end int, grant func(id, t int)) (passes int, ok bool) {
	if r.knobs.Lend != LendNone || k.Seatable() != math.MaxInt || !k.RigidOnly() ||
		r.plainAdmit || r.unordered || r.stale || r.aging {
		return 0, false
	}
	leases := k.Leases()
	for i := range leases {
		if leases[i].UnderNotice || !leases[i].Rigid {
			return 0, false
		}
	}
	// The partitions of the requests named, and how many each holds.
	wanted := make([]int, len(r.parts))
	named := 0
	for _, id := range ids {
		i := k.Index(id)
		if i < 0 {
			continue // not pending
		}
		p, in := r.queueOf(k.Pend(i))
		if !in {
			return 0, false
		}
		wanted[p]++
		named++
	}
	if named == 0 {
		return 0, false
	}
	want := func(id int) bool { return slices.Contains(ids, id) }
	for p, n := range wanted {
		if n > 0 {
			passes += r.forecast(k, p, n, want, end, grant)
		}
	}
	return passes, true
}

// ownLeases are a partition's owners' leases as forecast keeps them:
// their GPUs and estimated ends (EASY's reservation reads them), in
// ascending order of those (easy.ReservationSorted, which spares the
// heap Reservation builds at every pass), and beside each the tick it
// ends at.
type ownLeases struct {
	running []easy.Running
	expires []int
}

// add puts a lease of gpus GPUs, ending at tick ends and estimated to
// end at estEnd, in its place (after those estimated to end with it).
func (o *ownLeases) add(gpus, ends, estEnd int) {
	o.running = append(o.running, easy.Running{})
	o.expires = append(o.expires, 0)
	at := len(o.running) - 1
	for ; at > 0 && o.running[at-1].EstEnd > int64(estEnd); at-- {
		o.running[at], o.expires[at] = o.running[at-1], o.expires[at-1]
	}
	o.running[at], o.expires[at] = easy.Running{GPUs: gpus, EstEnd: int64(estEnd)}, ends
}

// searched is a pass's first backfill search in forecast: from the
// blocked head's next place, for jobs no wider than free GPUs, and no
// wider than reach or no longer than limit seconds, it found the first
// at place at (−1: none). Until the blocked head moves (a fork files
// nothing, and the head only moves on) no job in head+1 … at−1 passes
// a search that asks no more: jobs only leave, and one that failed on
// its width or its estimate fails on less. A later pass's search that
// asks no more starts at at (none at −1): a fork's queue is most of it
// jobs too wide or too long, blocked behind its head for hundreds of
// places, and two passes in three asked no more than the pass before
// theirs (full KTH-SP2 log, static with 1,000 fair starts). Under one
// head the limit only falls where no lease outlasts its estimate (the
// shadow time never moves later), as in a replayed log, but the test
// asks it all the same.
type searched struct{ head, free, reach, limit, at int }

// forecast runs partition p's passes from now to tick end, or until its
// n requests named by want have started, reporting their grants, and
// returns the passes run: one at the next tick (the Core's next tick
// after the last filing; a pass that finds nothing changed decides
// nothing), then one at each tick an owner's lease ends.
func (r *Rule) forecast(k *baseline.Core, p, n int, want func(id int) bool, end int, grant func(id, t int)) (passes int) {
	qu := &r.parts[p]
	var own ownLeases
	free := r.size[p]
	for _, l := range k.Leases() {
		if r.partOf[l.Campaign] == p {
			own.add(l.GPUs, l.Expires, l.Estimated())
			free -= l.GPUs
		}
	}
	running, expires := &own.running, &own.expires
	var picked []int
	passed := searched{head: -1}
	// next is the first tick after this pass at which an owner's lease
	// ends: the least of the leases' ends, kept as the expiry's walk
	// keeps the leases and as each starts (a second walk of them at every
	// pass, for it alone, was a tenth of the pass).
	next := math.MaxInt
	start := func(t, x int, head bool) {
		e := &qu.list[x]
		req := k.Pend(k.IndexSubmitted(e.id, e.submitted))
		own.add(e.gpus, t+req.Run, t+req.Duration)
		next = min(next, t+req.Run)
		free -= e.gpus
		if want(e.id) {
			grant(e.id, t)
			n--
		}
		qu.hint, qu.headStart = x, head
		qu.remove(k, e.submitted, e.id)
		qu.hint, qu.headStart = -1, false
	}
	for t := k.Now() + 1; t <= end && n > 0; {
		passes++
		// The leases that end by t, in order (Core.expire).
		w := 0
		next = math.MaxInt
		for i, l := range *running {
			if x := (*expires)[i]; x <= t {
				free += l.GPUs
			} else {
				(*running)[w], (*expires)[w] = l, x
				w++
				next = min(next, x)
			}
		}
		*running, *expires = (*running)[:w], (*expires)[:w]
		// The heads start while they fit (headStep, rigid).
		for qu.first < len(qu.list) && qu.list[qu.first].dead {
			qu.first++
		}
		h := qu.first
		for ; h < len(qu.list); h++ {
			if e := &qu.list[h]; !e.dead {
				if e.gpus > free {
					break
				}
				start(t, h, true)
			}
		}
		k.CountWalked(h - qu.first + 1)
		// EASY's backfill from the blocked head (backfillIndexed).
		if h < len(qu.list) && free > 0 && int(qu.least[1]) <= free {
			shadow, extra := easy.ReservationSorted(free, *running, qu.list[h].gpus)
			reach, limit := extra, int(min(shadow-int64(t), math.MaxInt))
			picked = picked[:0]
			from, first := h+1, &passed
			if h == passed.head && free <= passed.free && reach <= passed.reach && limit <= passed.limit {
				// Nothing in h+1 … passed.at−1 passes (see searched).
				from = passed.at
			}
			for left := free; left > 0; {
				x := -1
				if from >= 0 {
					x = qu.find(k, from, left, reach, limit)
				}
				if first != nil {
					*first, first = searched{head: h, free: free, reach: reach, limit: limit, at: x}, nil
				}
				if x < 0 {
					break
				}
				from = x + 1
				e := &qu.list[x]
				if e.gpus > left {
					continue
				}
				switch {
				case int64(t)+int64(e.est) <= shadow:
				case e.gpus <= extra:
					extra -= e.gpus
					reach = extra
				default:
					continue
				}
				left -= e.gpus
				picked = append(picked, x)
			}
			for _, x := range picked {
				start(t, x, false)
			}
		}
		if next == math.MaxInt {
			break
		}
		t = max(next, t+1)
	}
	return passes
}
