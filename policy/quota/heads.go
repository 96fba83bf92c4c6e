package quota

import (
	"math"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
)

// Each queue keeps its waiting workloads sorted by (class, submit time,
// id), Kueue's order within a ClusterQueue (priority, then creation time),
// told of them by the Core (baseline.Watcher): walking the whole pending
// list for every queue every round cost most of a replay of the full
// SDSC-SP2 log, whose queue runs to thousands of jobs. A workload that
// leaves is taken out of its list at once, found by a binary search (a
// list kept its dead entries until they outnumbered the live ones, and
// passing over them was most of the walks' steps on the full log).
//
// Admission walks each list from the start with a cursor that only moves
// forward within a tick: a workload set aside (BestEffortFIFO) stays set
// aside until the next tick, as Kueue marks it inadmissible until the
// cluster changes.

type waiting struct {
	class     policy.Class
	submitted int
	id        int
	gpus      int
	rigid     bool
}

func (a *waiting) before(b *waiting) bool {
	if a.class != b.class {
		return a.class < b.class
	}
	if a.submitted != b.submitted {
		return a.submitted < b.submitted
	}
	return a.id < b.id
}

type queue struct {
	list []waiting
	live int // len(list): the workloads waiting
	// least is at most the fewest GPUs any of its waiting workloads could
	// start with (a rigid job's width, 1 for an elastic request): lowered
	// as workloads are filed, raised only by a walk of the whole list.
	least int
	// list[:skipTo] holds only rigid jobs wider than skipReach:
	// while the widths that could start reach no further, a walk may
	// begin at skipTo (BestEffortFIFO).
	skipTo, skipReach int
	// blockLeast[b] is the fewest GPUs any workload of
	// list[b·blockLen : (b+1)·blockLen] could start with (a rigid job's
	// width, 1 for an elastic request), for the blocks b < blocksKnown;
	// the others are worked out again when a walk needs them. A workload
	// filed or taken out in the middle of the list shifts the blocks
	// after it.
	blockLeast  []int
	blocksKnown int
}

// blockLen is the number of workloads a queue's walk may skip at once
// (BestEffortFIFO): the full SDSC-SP2 log's queues hold thousands of jobs,
// most of them wider than the GPUs in reach, and a walk of each one by one
// per round cost most of a replay.
const blockLen = 64

// leastOf is the fewest GPUs e could start with, at most: its width if
// rigid, else 1 (an elastic request may start with a partial grant).
func (e *waiting) leastOf() int {
	if e.rigid {
		return e.gpus
	}
	return 1
}

// filedAt keeps the block bounds told of a workload filed at list[at].
func (qu *queue) filedAt(at int) {
	b := at / blockLen
	switch {
	case at < len(qu.list)-1:
		qu.blocksKnown = min(qu.blocksKnown, b) // the blocks from b on shift
	case b < qu.blocksKnown:
		qu.blockLeast[b] = min(qu.blockLeast[b], qu.list[at].leastOf())
	case b == qu.blocksKnown && at%blockLen == 0:
		qu.blockLeast = append(qu.blockLeast[:b], qu.list[at].leastOf())
		qu.blocksKnown = b + 1
	}
}

// knowBlocks works out the bounds of the blocks not known.
func (r *Rule) knowBlocks(qu *queue) {
	n := (len(qu.list) + blockLen - 1) / blockLen
	if qu.blocksKnown >= n {
		return
	}
	qu.blockLeast = slices.Grow(qu.blockLeast[:qu.blocksKnown], n-qu.blocksKnown)[:n]
	for b := qu.blocksKnown; b < n; b++ {
		least := math.MaxInt
		for x := b * blockLen; x < min(len(qu.list), (b+1)*blockLen); x++ {
			least = min(least, qu.list[x].leastOf())
		}
		qu.blockLeast[b] = least
	}
	qu.blocksKnown = n
}

// Filed adds a campaign's request to its queue (baseline.Watcher). The
// filler's requests are the Core's to admit.
func (r *Rule) Filed(_ *baseline.Core, q *baseline.Request) {
	r.stirred = true
	qi := r.queueOf[q.Campaign]
	if qi < 0 {
		return
	}
	for len(r.live) <= q.ID {
		r.live = append(r.live, false)
	}
	r.live[q.ID] = true
	qu := &r.queues[qi]
	if qu.live++; qu.live == 1 {
		at, _ := slices.BinarySearch(r.active, qi)
		r.active = slices.Insert(r.active, at, qi)
	}
	e := waiting{q.Class, q.Submitted, q.ID, q.GPUs, q.Rigid}
	w := q.GPUs
	if !q.Rigid {
		w = 1
	}
	if qu.live == 1 || w < qu.least {
		qu.least = w
	}
	// A trace's jobs arrive in order, and most go to the end; a requeued
	// job (docs/studies.md §6.7) goes back to its place by its submit
	// time, found by binary search (the list is in queue order, and ids
	// differ).
	at := len(qu.list)
	if at > 0 && e.before(&qu.list[at-1]) {
		at, _ = slices.BinarySearchFunc(qu.list, e, queueOrder)
	}
	qu.list = slices.Insert(qu.list, at, e)
	qu.skipTo = min(qu.skipTo, at)
	qu.filedAt(at)
}

// UnorderedPending marks that the rule reads the Core's pending list only
// request by request (baseline.UnorderedPending): its queues keep Kueue's
// order, and it looks each candidate up by id before it grants or
// preempts for it.
func (*Rule) UnorderedPending() {}

// Left forgets a request (baseline.Watcher), keeping the cursor on the
// same workload and the skipped prefix over the same ones.
func (r *Rule) Left(_ *baseline.Core, q baseline.Request) {
	r.stirred = true
	if q.ID >= len(r.live) || !r.live[q.ID] {
		return // the filler's
	}
	r.live[q.ID] = false
	if x := slices.IndexFunc(r.preemptors, func(f preemptor) bool { return f.id == q.ID }); x >= 0 {
		r.preemptors = slices.Delete(r.preemptors, x, x+1)
	}
	qi := r.queueOf[q.Campaign]
	qu := &r.queues[qi]
	// Under StrictFIFO the workload that leaves is nearly always its
	// queue's head (granted); else it is found by its order.
	at, found := 0, len(qu.list) > 0 && qu.list[0].id == q.ID
	if !found {
		at, found = slices.BinarySearchFunc(qu.list, waiting{q.Class, q.Submitted, q.ID, q.GPUs, q.Rigid}, queueOrder)
	}
	if !found {
		// Not where its order puts it (never, as filed): look for it.
		if at = slices.IndexFunc(qu.list, func(e waiting) bool { return e.id == q.ID }); at < 0 {
			return
		}
	}
	qu.remove(at)
	if qu.live--; qu.live == 0 {
		if x, ok := slices.BinarySearch(r.active, qi); ok {
			r.active = slices.Delete(r.active, x, x+1)
		}
	}
	if at < r.cursor[qi] {
		r.cursor[qi]--
	}
	if at < qu.skipTo {
		qu.skipTo--
	}
	qu.blocksKnown = min(qu.blocksKnown, at/blockLen)
}

// remove takes list[at] out, moving the shorter side: the workloads
// before it one place back (the list then starts one place later in its
// array), or those behind it one place forward. Either way the positions
// before at stay and those behind it drop by one. Under StrictFIFO the
// workload that leaves is nearly always its queue's head, and a queue of
// the full SDSC-SP2 log holds thousands.
func (qu *queue) remove(at int) {
	if n := len(qu.list); at < n-1-at {
		copy(qu.list[1:at+1], qu.list[:at])
		qu.list[0] = waiting{}
		qu.list = qu.list[1:]
		return
	}
	qu.list = slices.Delete(qu.list, at, at+1)
}

// queueOrder is a queue's order (before) as a comparison.
func queueOrder(x, y waiting) int {
	switch {
	case x.before(&y):
		return -1
	case y.before(&x):
		return 1
	}
	return 0
}

// candidate is queue q's next candidate this round: its first live
// workload from the cursor on that could start now or by preemption, by a
// cheap bound: the free GPUs, what the workload has coming, and the GPUs
// preemption could touch for it — the filler's, and those of the other
// borrowing queues it may take from (any, if it stays within its nominal
// quota; else only those whose share is at least its own with the
// request, as both strategies need). A workload that could not is passed
// over (BestEffortFIFO) or makes the queue done (StrictFIFO). least[q]
// bounds the widths of q's workloads from below (see Filed), so that a
// queue none of whose workloads could fit is skipped without a walk.
//
// Under StrictFIFO a workload with GPUs on their way to it (reserved, or
// under notice for it) is its queue's candidate before the head: it was
// the head when it preempted. A job of its queue preempted earlier by
// another queue is requeued with its original submit time (docs/studies.md
// §6.7; Kueue too orders a preempted workload by its creation time, see
// docs/policies.md) and may come back ahead of the preemptor; as head it
// would block the queue while the GPUs freed for the preemptor stay
// reserved (a reservation Kueue does not keep), and neither would ever
// start (the excerpt stopped at its horizon with 462 jobs waiting and
// nothing running: TestStrictFIFOPreemptorGoesFirst).
func (r *Rule) candidate(k *baseline.Core, q int, h *head) bool {
	qu := &r.queues[q]
	free := max(0, k.FreeGeneral())
	room := r.limitOf(k, q) - r.usage[q]
	if r.strict && r.bonusSum > 0 {
		if r.inFlight(k, q, room, h) {
			return true
		}
	}
	if r.strict && !r.plain {
		return r.strictHead(qu, q, room, free, h)
	}
	if !r.plain && r.cursor[q] == 0 && qu.least > min(room, free+r.touchMax+r.bonusSum) {
		r.done[q] = true
		return false
	}
	seen := len(qu.list) + 1 // the narrowest live workload walked
	// w − touchable(q, w) grows with w (a wider request touches no more),
	// so the widths that could start or preempt are those up to reach:
	// the widest w ≤ room with w ≤ free + touchable(q, w), and below the
	// width a preemption of q already failed at this tick.
	hi := room
	if r.minFail[q] > 0 {
		hi = min(hi, r.minFail[q]-1)
	}
	// StrictFIFO looks at one workload, and asks only whether its width
	// (and the narrowest) is within reach: since w − touchable(q, w)
	// grows with w, w ≤ reach if and only if w ≤ hi and w ≤ free +
	// touchable(q, w), one bound where the search for reach takes a
	// dozen. (plain searches: TestSkipsChangeNothing compares.)
	lazy := r.strict && !r.plain
	reach := min(free, hi)
	for lo := reach + 1; lo <= hi && !lazy; {
		m := int(uint(lo+hi) >> 1)
		if m <= free+r.touchable(q, m) {
			reach, lo = m, m+1
		} else {
			hi = m - 1
		}
	}
	within := func(w int) bool {
		if lazy {
			return w <= hi && w <= free+r.touchable(q, w)
		}
		return w <= reach
	}
	if !r.plain && !within(qu.least) && r.bonusSum == 0 {
		r.done[q] = true
		return false
	}
	// The prefix known to hold nothing within reach, and how far this
	// walk extends it (only from the start of the list, and only over
	// rigid jobs: an elastic request's least follows the room).
	whole := r.cursor[q] == 0 // a walk of the whole list may update least
	prefix := !r.plain && !r.strict && r.bonusSum == 0 && r.cursor[q] == 0
	if prefix {
		if qu.skipReach >= reach {
			r.cursor[q] = qu.skipTo
			whole = whole && qu.skipTo == 0
		} else {
			qu.skipTo = 0
		}
	}
	// Whole blocks of workloads none of which could start are skipped
	// (BestEffortFIFO; StrictFIFO stops at its first live workload
	// anyway). A workload of least GPUs could start if least ≤ reach; while
	// GPUs are on their way to some workloads, also if least is within
	// the room and the free GPUs plus what it has coming: so a block whose
	// narrowest workload is wider than beyond is skipped, unless it holds
	// one of the few with GPUs coming (stop: the first of those from the
	// cursor on that could start).
	blocks := !r.plain && !r.strict
	beyond, stop := reach, len(qu.list)
	if blocks && r.bonusSum > 0 {
		beyond = max(reach, min(room, free))
		stop = r.firstInFlight(k, q, room, free)
	}
	if blocks = blocks && beyond >= 1; blocks {
		r.knowBlocks(qu)
	}
	for ; r.cursor[q] < len(qu.list); r.cursor[q]++ {
		if blocks && r.cursor[q]%blockLen == 0 {
			for min(len(qu.list), r.cursor[q]+blockLen) <= stop && r.cursor[q] < len(qu.list) && qu.blockLeast[r.cursor[q]/blockLen] > beyond {
				// Only rigid jobs wider than beyond ≥ reach with
				// nothing coming: the walk would pass over each.
				seen = min(seen, qu.blockLeast[r.cursor[q]/blockLen])
				r.cursor[q] = min(len(qu.list), r.cursor[q]+blockLen)
				if prefix {
					qu.skipTo, qu.skipReach = r.cursor[q], reach
				}
			}
			if r.cursor[q] >= len(qu.list) {
				break
			}
		}
		e := &qu.list[r.cursor[q]]
		least := e.gpus // a rigid job starts whole
		if !e.rigid {
			least = min(e.gpus, max(room, 0), policy.PartialGrantMin)
			seen = min(seen, 1)
		} else {
			seen = min(seen, e.gpus)
		}
		ok := least >= 1 && least <= room
		if ok && !within(least) {
			// Only what it has coming (reserved, or under notice for it)
			// could still make it start.
			ok = r.bonusSum > 0 && least <= free+r.bonusOf(e.id)
		}
		if ok {
			r.setHead(h, q, e, room)
			return true
		}
		if r.strict {
			break
		}
		if prefix = prefix && e.rigid; prefix {
			qu.skipTo, qu.skipReach = r.cursor[q]+1, reach
		}
	}
	if whole && r.cursor[q] >= len(qu.list) && seen <= len(qu.list) {
		qu.least = seen // walked every live workload this tick
	}
	r.done[q] = true
	return false
}

// setHead makes waiting workload e of queue q the queue's candidate h,
// keyed by the share its queue would have with it admitted: whole if
// rigid, else as much as room leaves.
func (r *Rule) setHead(h *head, q int, e *waiting, room int) {
	want := e.gpus
	if !e.rigid {
		want = min(e.gpus, room)
	}
	*h = head{queue: q, id: e.id, submitted: e.submitted, class: e.class,
		key: r.keyOf(q, r.kept[q]+want)}
}

// strictHead is the rest of candidate under StrictFIFO: the workload at
// the cursor (the head) if its width is within reach, by the same bounds
// and tests as the walk below, which under StrictFIFO stops at it. A
// StrictFIFO replay with fair starts asks some 70 million times, nearly
// every time of a head that cannot start, and the walk's setup for
// BestEffortFIFO (the search for reach, the skipped prefix, the blocks)
// was most of each ask. Plain walks: the twin tests compare.
func (r *Rule) strictHead(qu *queue, q, room, free int, h *head) bool {
	hi := room
	if r.minFail[q] > 0 {
		hi = min(hi, r.minFail[q]-1)
	}
	if r.cursor[q] == 0 && qu.least > min(room, free+r.touchMax+r.bonusSum) ||
		r.bonusSum == 0 && !(qu.least <= hi && qu.least <= free+r.touchable(q, qu.least)) {
		r.done[q] = true
		return false
	}
	if c := r.cursor[q]; c < len(qu.list) {
		e := &qu.list[c]
		least := e.gpus // a rigid job starts whole
		if !e.rigid {
			least = min(e.gpus, max(room, 0), policy.PartialGrantMin)
		}
		ok := least >= 1 && least <= room
		if ok && !(least <= hi && least <= free+r.touchable(q, least)) {
			// Only what it has coming could still make it start.
			ok = r.bonusSum > 0 && least <= free+r.bonusOf(e.id)
		}
		if ok {
			r.setHead(h, q, e, room)
			return true
		}
	}
	r.done[q] = true
	return false
}

// firstInFlight is the position in queue q's list, from its cursor on,
// of the first live workload with GPUs on their way to it (reserved, or
// under notice for it) that could start with them: the walk's test in
// candidate. len(list) if none; the cursor if one cannot be found in the
// list (nothing is skipped then).
func (r *Rule) firstInFlight(k *baseline.Core, q, room, free int) int {
	qu := &r.queues[q]
	stop := len(qu.list)
	for x := range r.bonus {
		b := &r.bonus[x]
		e, ok := r.inFlightOf(k, b, q)
		if !ok {
			continue
		}
		least := e.gpus
		if !e.rigid {
			least = min(e.gpus, max(room, 0), policy.PartialGrantMin)
		}
		if least < 1 || least > room || least > free+b.gpus {
			continue
		}
		at, found := slices.BinarySearchFunc(qu.list, e, queueOrder)
		if !found {
			return r.cursor[q]
		}
		if at >= r.cursor[q] {
			stop = min(stop, at)
		}
	}
	return stop
}

// touchable bounds what preemption could free for a request of queue q of
// want GPUs: the filler's GPUs not under notice, and the GPUs not under
// notice of the other borrowing queues it may take from. With the request
// q holds over = kept + want − nominal GPUs above its quota; within it
// (over ≤ 0) every borrower may go, else only a queue whose share is at
// least q's, that is, whose GPUs above its quota are at least over (the
// shares have the same divisor). The borrowers are sorted by their excess
// (borrowed), largest first, with prefix sums of what they keep, once a
// round; q itself, if it borrows, has less excess than over and is never
// counted.
//
// Under reclaimWithinCohort Never only the filler's may go.
func (r *Rule) touchable(q, want int) int {
	if r.reclaim == Never {
		return r.fillerKept
	}
	over := r.kept[q] + want - r.nominal[q]
	if over <= 0 {
		return r.fillerKept + r.keptSum[len(r.excess)]
	}
	lo, hi := 0, len(r.excess) // the borrowers with excess ≥ over: excess[:lo]
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r.excess[m] >= over {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return r.fillerKept + r.keptSum[lo]
}

// inFlightOf is the workload of bonus b if it waits in queue q (ok): as
// the pass found it (refresh), while it waits still; plain looks it up
// again (waitingOf).
func (r *Rule) inFlightOf(k *baseline.Core, b *bonus, q int) (waiting, bool) {
	if r.plain {
		w, wq, ok := r.waitingOf(k, b.id)
		return w, ok && wq == q
	}
	if !b.ok || b.queue != q || !r.live[b.id] {
		return waiting{}, false
	}
	return b.w, true
}

// waitingOf is waiting workload id and its queue (ok: it waits): from the
// preemptors, or else the Core's pending list. A workload's fields do not
// change while it waits, and one that leaves is no longer live: what it
// gives in a pass stays right while the workload is live.
func (r *Rule) waitingOf(k *baseline.Core, id int) (waiting, int, bool) {
	if id >= len(r.live) || !r.live[id] {
		return waiting{}, -1, false
	}
	for _, f := range r.preemptors {
		if f.id == id {
			return f.waiting, f.queue, true
		}
	}
	i := k.Index(id)
	if i < 0 {
		return waiting{}, -1, false
	}
	req := k.Pend(i)
	return waiting{req.Class, req.Submitted, req.ID, req.GPUs, req.Rigid}, r.queueOf[req.Campaign], true
}

// inFlight is queue q's first waiting workload (in queue order) with GPUs
// on their way to it, if any.
func (r *Rule) inFlight(k *baseline.Core, q, room int, h *head) bool {
	var best waiting
	found := false
	if r.plain {
		for x := range r.bonus {
			b := &r.bonus[x]
			e, ok := r.inFlightOf(k, b, q)
			if !ok {
				continue
			}
			if !found || e.before(&best) {
				best, found = e, true
			}
		}
	} else {
		// The pass sorted them by queue (refresh): q's are one run.
		lo, hi := 0, len(r.bonus)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if b := &r.bonus[m]; b.ok && b.queue < q {
				lo = m + 1
			} else {
				hi = m
			}
		}
		for x := lo; x < len(r.bonus) && r.bonus[x].ok && r.bonus[x].queue == q; x++ {
			if b := &r.bonus[x]; r.live[b.id] && (!found || b.w.before(&best)) {
				best, found = b.w, true
			}
		}
	}
	if !found {
		return false
	}
	want := best.gpus
	if !best.rigid {
		want = min(best.gpus, max(room, 0))
	}
	*h = head{queue: q, id: best.id, submitted: best.submitted, class: best.class, key: r.keyOf(q, r.kept[q]+want)}
	return true
}
