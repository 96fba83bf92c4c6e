package quota

import (
	"math"
	"math/bits"
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
	// gone: the workload left, and its place is kept (queue.dead), so
	// that the positions behind it, and the blocks, do not shift.
	gone bool
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
	// list holds the waiting workloads in queue order, and the places of
	// dead ones that left from its middle (gone; never first or last):
	// a workload that leaves from the middle (BestEffortFIFO grants a
	// workload behind others) keeps its place until the dead outnumber
	// the live, when the list is compacted (remove).
	list []waiting
	live int // the workloads waiting: len(list) − dead
	dead int
	// least is at most the fewest GPUs any of its waiting workloads could
	// start with (a rigid job's width, 1 for an elastic request): lowered
	// as workloads are filed, raised only by a walk of the whole list.
	least int
	// list[:skipTo] holds only rigid jobs wider than skipReach:
	// while the widths that could start reach no further, a walk may
	// begin at skipTo (BestEffortFIFO).
	skipTo, skipReach int
	// The blocks are blockLen places each, numbered from the list's
	// first place ever (off places before list[0] have left from its
	// front since it was last compacted), so that a workload that leaves
	// from the front shifts none of them. blockLeast[b] is the fewest
	// GPUs any live workload of block first+b (first = off/blockLen; its
	// places in the list from (first+b)·blockLen − off) could start with
	// (a rigid job's width, 1 for an elastic request) and how many
	// could, for the blocks b < blocksKnown; the others are worked out
	// again when a walk needs them. A workload that leaves keeps its
	// place (gone); the last of its block's narrowest to leave makes the
	// bound unknown until a walk reads the block again. One filed in the
	// middle of the list shifts the blocks from its own on.
	off         int
	blockLeast  []bound
	blocksKnown int
}

// bound is a block's narrowest live workload (least, unknown if to be
// worked out again) and how many of its live workloads are that narrow.
type bound struct{ least, n int }

// with is b told of a workload of least GPUs.
func (b bound) with(least int) bound {
	switch {
	case least < b.least:
		return bound{least, 1}
	case least == b.least:
		b.n++
	}
	return b
}

// block is the index in blockLeast of the block holding list[x].
func (qu *queue) block(x int) int { return (x+qu.off)/blockLen - qu.off/blockLen }

// blockEnd is the place in the list after the end of the block holding
// list[x] (or the list's end).
func (qu *queue) blockEnd(x int) int {
	return min(len(qu.list), ((x+qu.off)/blockLen+1)*blockLen-qu.off)
}

// blockLen is the number of workloads a queue's walk may skip at once
// (BestEffortFIFO): the full SDSC-SP2 log's queues hold thousands of jobs,
// most of them wider than the GPUs in reach, and a walk of each one by one
// per round cost most of a replay.
const blockLen = 64

// leastOf is the fewest GPUs e could start with, at most: its width if
// rigid, else 1 (an elastic request may start with a partial grant);
// none (MaxInt) if it is gone.
func (e *waiting) leastOf() int {
	if e.gone {
		return math.MaxInt
	}
	if e.rigid {
		return e.gpus
	}
	return 1
}

// filedAt keeps the block bounds told of a workload filed at list[at]
// (shifted is whether the places behind it moved).
func (qu *queue) filedAt(at int, shifted bool) {
	b := qu.block(at)
	switch {
	case shifted:
		qu.blocksKnown = min(qu.blocksKnown, b) // the blocks from b on shift
	case b < qu.blocksKnown && qu.blockLeast[b].least != unknown:
		qu.blockLeast[b] = qu.blockLeast[b].with(qu.list[at].leastOf())
	case b == qu.blocksKnown && at == len(qu.list)-1 && (at == 0 || (at+qu.off)%blockLen == 0):
		qu.blockLeast = append(qu.blockLeast[:b], bound{qu.list[at].leastOf(), 1})
		qu.blocksKnown = b + 1
	}
}

// unknown is a block bound to be worked out again (blockBound).
const unknown = -1

// blockBound is the bound of the block that starts at list[x], worked out
// again (its places read, counted) if a workload that left may have been
// its narrowest.
func (r *Rule) blockBound(qu *queue, x int) int {
	b := qu.block(x)
	if qu.blockLeast[b].least == unknown {
		end := qu.blockEnd(x)
		r.walked += end - x
		qu.blockLeast[b] = qu.boundOf(x, end)
	}
	return qu.blockLeast[b].least
}

// boundOf is the bound of list[from:to].
func (qu *queue) boundOf(from, to int) bound {
	b := bound{math.MaxInt, 0}
	for x := from; x < to; x++ {
		if !qu.list[x].gone {
			b = b.with(qu.list[x].leastOf())
		}
	}
	return b
}

// knowBlocks works out the bounds of the blocks not known.
func (r *Rule) knowBlocks(qu *queue) {
	if len(qu.list) == 0 {
		return
	}
	n := qu.block(len(qu.list)-1) + 1
	if qu.blocksKnown >= n {
		return
	}
	qu.blockLeast = slices.Grow(qu.blockLeast[:qu.blocksKnown], n-qu.blocksKnown)[:n]
	from := 0
	if qu.blocksKnown > 0 {
		from = qu.blockEnd(0) + (qu.blocksKnown-1)*blockLen
	}
	r.walked += len(qu.list) - from
	for x := from; x < len(qu.list); {
		end := qu.blockEnd(x)
		qu.blockLeast[qu.block(x)] = qu.boundOf(x, end)
		x = end
	}
	qu.blocksKnown = n
}

// Filed adds a campaign's request to its queue (baseline.Watcher). The
// filler's requests are the Core's to admit.
func (r *Rule) Filed(k *baseline.Core, q *baseline.Request) {
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
	e := waiting{class: q.Class, submitted: q.Submitted, id: q.ID, gpus: q.GPUs, rigid: q.Rigid}
	w := q.GPUs
	if !q.Rigid {
		w = 1
	}
	if qu.live++; qu.live == 1 {
		qu.least = w
		r.activate(k, qi)
	} else if w < qu.least {
		r.setLeast(k, qi, w)
	}
	// A trace's jobs arrive in order, and most go to the end; a requeued
	// job (docs/studies.md §6.7) goes back to its place by its submit
	// time, found by binary search (the list is in queue order, and ids
	// differ).
	at, found := len(qu.list), false
	if at > 0 && e.before(&qu.list[at-1]) {
		at, found = slices.BinarySearchFunc(qu.list, e, queueOrder)
	}
	if found {
		// Its own place, kept since it left (a requeued job's): nothing
		// shifts.
		qu.list[at] = e
		qu.dead--
	} else {
		k.CountMoved(len(qu.list) - at)
		qu.list = slices.Insert(qu.list, at, e)
	}
	qu.skipTo = min(qu.skipTo, at)
	qu.filedAt(at, !found && at < len(qu.list)-1)
}

// UnorderedPending marks that the rule reads the Core's pending list only
// request by request (baseline.UnorderedPending): its queues keep Kueue's
// order, and it looks each candidate up by id before it grants or
// preempts for it.
func (*Rule) UnorderedPending() {}

// Left forgets a request (baseline.Watcher), keeping the cursor on the
// same workload and the skipped prefix over the same ones.
func (r *Rule) Left(k *baseline.Core, q baseline.Request) {
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
		at, found = slices.BinarySearchFunc(qu.list, waiting{class: q.Class, submitted: q.Submitted, id: q.ID}, queueOrder)
		found = found && !qu.list[at].gone
	}
	if !found {
		// Not where its order puts it (never, as filed): look for it.
		if at = slices.IndexFunc(qu.list, func(e waiting) bool { return e.id == q.ID && !e.gone }); at < 0 {
			return
		}
	}
	r.remove(k, qi, at)
	if qu.live--; qu.live == 0 {
		r.deactivate(k, qi)
	}
}

// remove takes list[at] of queue qi out, keeping the cursor on the same
// workload and the skipped prefix over the same ones. One in the middle
// is marked gone, in its place; the list then sheds the dead from its
// ends (off counts those shed from the front, so that no block shifts),
// and is compacted once the dead outnumber the live (its blocks then
// worked out again): the moves, each live workload once per compaction,
// and the reads are counted. Under StrictFIFO the workload that leaves
// is nearly always its queue's head, and BestEffortFIFO grants a
// workload behind others often enough that moving the rest of a list
// thousands long, and working out every block behind it again, was most
// of a replay's work on 64 weeks of SDSC-SP2.
func (r *Rule) remove(k *baseline.Core, qi, at int) {
	qu := &r.queues[qi]
	if b := qu.block(at); b < qu.blocksKnown && qu.blockLeast[b].least == qu.list[at].leastOf() {
		if qu.blockLeast[b].n--; qu.blockLeast[b].n == 0 {
			qu.blockLeast[b].least = unknown // its last narrowest: a walk works it out again
		}
	}
	qu.list[at].gone = true
	qu.dead++
	// Only the one that left can have made an end dead: the dead behind
	// it are read (counted), and the live one that stops the search.
	front, back := 0, len(qu.list)
	if at == 0 {
		for front < len(qu.list) && qu.list[front].gone {
			front++
		}
		k.CountWalked(min(front, len(qu.list)-1))
	}
	if at == len(qu.list)-1 {
		for back > front && qu.list[back-1].gone {
			back--
		}
		if back > front {
			k.CountWalked(len(qu.list) - back) // with the one that stops it
		} else {
			k.CountWalked(len(qu.list) - back - 1)
		}
	}
	clear(qu.list[back:])
	clear(qu.list[:front])
	qu.dead -= front + len(qu.list) - back
	qu.list = qu.list[front:back]
	if front > 0 {
		first := qu.off / blockLen
		qu.off += front
		drop := min(qu.off/blockLen-first, len(qu.blockLeast))
		qu.blockLeast = qu.blockLeast[drop:]
		qu.blocksKnown = max(0, qu.blocksKnown-drop)
		r.cursor[qi] = max(0, r.cursor[qi]-front)
		qu.skipTo = max(0, qu.skipTo-front)
	}
	if len(qu.list) == 0 {
		qu.off, qu.blocksKnown, qu.blockLeast = 0, 0, qu.blockLeast[:0]
		r.cursor[qi], qu.skipTo = 0, 0
		return
	}
	qu.blocksKnown = min(qu.blocksKnown, qu.block(len(qu.list)-1)+1)
	r.cursor[qi], qu.skipTo = min(r.cursor[qi], len(qu.list)), min(qu.skipTo, len(qu.list))
	if qu.dead <= len(qu.list)-qu.dead {
		return
	}
	// Compact: every place behind a dead one moves.
	w, cur, skip := 0, r.cursor[qi], qu.skipTo
	for x := range qu.list {
		if x == r.cursor[qi] {
			cur = w
		}
		if x == qu.skipTo {
			skip = w
		}
		if !qu.list[x].gone {
			qu.list[w] = qu.list[x]
			w++
		}
	}
	if r.cursor[qi] >= len(qu.list) {
		cur = w
	}
	if qu.skipTo >= len(qu.list) {
		skip = w
	}
	k.CountWalked(len(qu.list))
	k.CountMoved(w)
	clear(qu.list[w:])
	qu.list = qu.list[:w]
	qu.dead, qu.off, qu.blocksKnown = 0, 0, 0
	qu.blockLeast = qu.blockLeast[:0]
	r.cursor[qi], qu.skipTo = cur, skip
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
	return r.candidateAt(k, q, max(0, k.FreeGeneral()), h)
}

// candidateAt is candidate with free GPUs free: those of the round's
// start, for an ask made after a grant of the round (settleUnasked,
// catchUp).
func (r *Rule) candidateAt(k *baseline.Core, q, free int, h *head) bool {
	qu := &r.queues[q]
	r.walked++ // the search itself: the queue's bounds, its head
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
	seen := math.MaxInt // the narrowest live workload walked, at most
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
	if !lazy && !r.plain {
		reach = r.reachOf(q, free, hi)
	}
	for lo := reach + 1; lo <= hi && !lazy && r.plain; {
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
			if qu.skipTo > 0 {
				// Passed over, not walked: only rigid jobs wider than
				// skipReach.
				seen = qu.skipReach + 1
			}
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
		if blocks && (r.cursor[q] == 0 || (r.cursor[q]+qu.off)%blockLen == 0) {
			for r.cursor[q] < len(qu.list) && qu.blockEnd(r.cursor[q]) <= stop && r.blockBound(qu, r.cursor[q]) > beyond {
				// Only rigid jobs wider than beyond ≥ reach with
				// nothing coming: the walk would pass over each.
				r.walked++ // the block's bound, in place of its workloads
				seen = min(seen, qu.blockLeast[qu.block(r.cursor[q])].least)
				r.cursor[q] = qu.blockEnd(r.cursor[q])
				if prefix {
					qu.skipTo, qu.skipReach = r.cursor[q], reach
				}
			}
			if r.cursor[q] >= len(qu.list) {
				break
			}
		}
		e := &qu.list[r.cursor[q]]
		r.walked++
		if e.gone {
			if prefix {
				qu.skipTo = r.cursor[q] + 1
			}
			continue
		}
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
	if whole && r.cursor[q] >= len(qu.list) && seen < math.MaxInt && seen != qu.least {
		r.setLeast(k, q, seen) // walked every live workload this tick
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
		key: r.keyOf(q, r.kept[q]+want), want: want, rigid: e.rigid}
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
	// q's are one run of the bonuses (refresh sorts them by queue): read
	// all of them only where plain looks each one up again. The full
	// SDSC-SP2 log's first 64 weeks read 52 bonuses a job so.
	lo, hi := 0, len(r.bonus)
	if r.plain {
		r.walked += len(r.bonus)
	} else {
		lo, hi = r.bonusRun(q)
	}
	for x := lo; x < hi; x++ {
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
		r.walked += bits.Len(uint(len(qu.list))) // the search's steps, at most
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

// bonusRun is the run r.bonus[lo:hi] of the bonuses of workloads that
// waited in queue q when the pass began (refresh sorts them by queue),
// found by binary search; its steps and the run's reads are counted.
func (r *Rule) bonusRun(q int) (lo, hi int) {
	lo, hi = 0, len(r.bonus)
	for lo < hi {
		r.walked++
		m := int(uint(lo+hi) >> 1)
		if b := &r.bonus[m]; b.ok && b.queue < q {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for hi = lo; hi < len(r.bonus) && r.bonus[hi].ok && r.bonus[hi].queue == q; hi++ {
		r.walked++
	}
	return lo, hi
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

// reachOf is candidate's reach for queue q: the widest w ≤ hi with w ≤
// free + touchable(q, w), and at least min(free, hi). touchable(q, w) is
// the filler's GPUs and keptSum[n], n the borrowers whose excess is at
// least over = kept + w − nominal (all of them while over ≤ 0: every
// excess is positive), so w − touchable(q, w) grows with w and, between
// two borrowers' excesses, touchable is one number. The widths w with n
// borrowers touchable run from excess[n] − (kept − nominal) + 1 (none
// below for n = B, the borrowers) to excess[n−1] − (kept − nominal) (none
// above for n = 0); the first n whose run's narrowest width is within
// free + the filler's + keptSum[n] holds the reach, found by binary
// search over the borrowers: the least n, as that test only passes from
// some n on (its bound grows with n, the narrowest width falls). The
// search over the widths this replaces (plain keeps it: the twin tests
// compare) asked touchable, itself a search over the borrowers, at each
// of log₂(room) steps, most of a quota-fair replay on 93,056 processors.
func (r *Rule) reachOf(q, free, hi int) int {
	if r.reclaim == Never {
		return min(hi, free+r.fillerKept)
	}
	base := r.kept[q] - r.nominal[q]
	n, top := 0, len(r.excess)
	for n < top {
		m := int(uint(n+top) >> 1)
		if r.excess[m]-base+1 <= free+r.fillerKept+r.keptSum[m] {
			top = m
		} else {
			n = m + 1
		}
	}
	w := free + r.fillerKept + r.keptSum[n]
	if n > 0 {
		w = min(w, r.excess[n-1]-base)
	}
	return min(hi, w)
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
	return waiting{class: req.Class, submitted: req.Submitted, id: req.ID, gpus: req.GPUs, rigid: req.Rigid}, r.queueOf[req.Campaign], true
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
		lo, hi := r.bonusRun(q)
		for x := lo; x < hi; x++ {
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
	*h = head{queue: q, id: best.id, submitted: best.submitted, class: best.class, key: r.keyOf(q, r.kept[q]+want),
		want: want, rigid: best.rigid}
	return true
}

// The queues with waiting workloads are kept by their least, in buckets
// by its bit length (byLeast[b]: least in [2^(b−1), 2^b), in no order;
// bucketAt[q] is q's place in its bucket; bucketsUsed has bit b set
// while byLeast[b] holds any), so that a pass's first round asks only
// those whose least could be within reach (openQueues): on the first 64
// weeks of SDSC-SP2 a pass found some five queues with workloads, three
// of them too wide for the GPUs in reach, each asked only to be turned
// away. A queue that gets its first workload, loses its last or changes
// bucket is written in or out of its bucket in one step (counted as
// moved), where a list kept sorted by least shifted half of itself at
// each.

// bucketOf is the bucket of a queue whose least is least.
func bucketOf(least int) int { return min(bits.Len(uint(least)), 63) }

// activate files queue qi, which has just got its first waiting
// workload, by its least and by its over.
func (r *Rule) activate(k *baseline.Core, qi int) {
	r.fileLeast(k, qi)
	r.fileOver(k, qi)
}

// deactivate takes queue qi, whose last waiting workload has left, out
// of its buckets.
func (r *Rule) deactivate(k *baseline.Core, qi int) {
	r.unfileLeast(k, qi)
	r.unfileOver(k, qi)
}

// fileLeast files active queue qi in the bucket of its least.
func (r *Rule) fileLeast(k *baseline.Core, qi int) {
	for len(r.bucketAt) <= qi {
		r.bucketAt = append(r.bucketAt, 0)
	}
	b := bucketOf(r.queues[qi].least)
	r.bucketAt[qi] = len(r.byLeast[b])
	r.byLeast[b] = append(r.byLeast[b], qi)
	r.bucketsUsed |= 1 << b
	k.CountMoved(1)
}

// unfileLeast takes queue qi out of the bucket of its least: the
// bucket's last queue takes its place.
func (r *Rule) unfileLeast(k *baseline.Core, qi int) {
	b := bucketOf(r.queues[qi].least)
	list, x := r.byLeast[b], r.bucketAt[qi]
	last := list[len(list)-1]
	list[x], r.bucketAt[last] = last, x
	if r.byLeast[b] = list[:len(list)-1]; len(list) == 1 {
		r.bucketsUsed &^= 1 << b
	}
	k.CountMoved(1)
}

// setLeast sets active queue qi's least, moving it to the buckets of
// the new one.
func (r *Rule) setLeast(k *baseline.Core, qi, least int) {
	if bucketOf(least) != bucketOf(r.queues[qi].least) {
		r.unfileLeast(k, qi)
		r.queues[qi].least = least
		r.fileLeast(k, qi)
	} else {
		r.queues[qi].least = least
	}
	r.refileOver(k, qi)
}

// A queue's over is the GPUs above its nominal quota it would keep with
// a workload as narrow as its least admitted, as of the last refresh:
// kept − nominal + least. Preemption may take from another queue for
// that workload only if the other borrows at least as many GPUs above
// its own quota (touchable), so a queue whose over is above every
// borrower's excess reaches no GPU but the free ones and the filler's,
// and its least alone says whether it is asked (openReaching). On the
// first 64 weeks of SDSC-SP2 under quota-fair, a pass's first round
// asked some 23 queues that were turned away so, 20 of them past every
// borrower. The queues are kept by over in buckets (overBucket), finer
// than by bit length: the queues' overs crowd just past the largest
// excess, and buckets by bit length had a pass read 9.6 queues of the
// bucket that straddles it over 64 weeks (4.4 over 8), each to turn it
// away.

// overBuckets is the number of buckets by over.
const overBuckets = 512

// overBucket is the bucket of over: 0 for none above the quota, over
// itself up to 15, and above, eight buckets to each doubling (over's
// four leading bits), in order.
func overBucket(over int) int {
	if over <= 0 {
		return 0
	}
	n := bits.Len(uint(over))
	if n < 4 {
		return over
	}
	return (n-4)*8 + int(uint(over)>>(n-4))
}

// overOf is active queue q's over.
func (r *Rule) overOf(q int) int { return r.keptIdx[q] - r.nominal[q] + r.queues[q].least }

// fileOver files active queue qi in the bucket of its over.
func (r *Rule) fileOver(k *baseline.Core, qi int) {
	if !r.overIndexed {
		return
	}
	for len(r.overAt) <= qi {
		r.overAt, r.overKey = append(r.overAt, 0), append(r.overKey, 0)
	}
	o := r.overOf(qi)
	b := overBucket(o)
	r.overKey[qi], r.overAt[qi] = o, len(r.byOver[b])
	r.byOver[b] = append(r.byOver[b], qi)
	r.overUsed[b/64] |= 1 << (b % 64)
	k.CountMoved(1)
}

// unfileOver takes queue qi out of the bucket of its over.
func (r *Rule) unfileOver(k *baseline.Core, qi int) {
	if !r.overIndexed {
		return
	}
	b := overBucket(r.overKey[qi])
	list, x := r.byOver[b], r.overAt[qi]
	last := list[len(list)-1]
	list[x], r.overAt[last] = last, x
	if r.byOver[b] = list[:len(list)-1]; len(list) == 1 {
		r.overUsed[b/64] &^= 1 << (b % 64)
	}
	k.CountMoved(1)
}

// refileOver files active queue qi again after its least or its kept
// GPUs changed.
func (r *Rule) refileOver(k *baseline.Core, qi int) {
	if !r.overIndexed {
		return
	}
	o := r.overOf(qi)
	if overBucket(o) == overBucket(r.overKey[qi]) {
		r.overKey[qi] = o
		return
	}
	r.unfileOver(k, qi)
	r.fileOver(k, qi)
}

// indexKept brings keptIdx to what the refresh found kept, filing again
// the active queues whose over changed: those that kept GPUs at the last
// refresh or keep some now. After a cut (new nominal quotas) every
// active queue is filed again.
func (r *Rule) indexKept(k *baseline.Core) {
	if !r.overIndexed {
		return
	}
	if r.overStale {
		r.overStale = false
		clear(r.keptIdx)
		for _, q := range r.holding {
			r.keptIdx[q] = r.kept[q]
		}
		for b := range r.byOver {
			r.byOver[b] = r.byOver[b][:0]
		}
		clear(r.overUsed[:])
		for m := r.bucketsUsed; m != 0; m &= m - 1 {
			for _, q := range r.byLeast[bits.TrailingZeros64(m)] {
				r.fileOver(k, q)
			}
		}
	} else {
		for _, q := range r.idxHeld {
			r.reindex(k, q)
		}
		for _, q := range r.holding {
			r.reindex(k, q)
		}
	}
	r.idxHeld = append(r.idxHeld[:0], r.holding...)
}

// reindex sets keptIdx[q] to what q keeps, filing q again if active.
func (r *Rule) reindex(k *baseline.Core, q int) {
	if r.kept[q] == r.keptIdx[q] {
		return
	}
	r.keptIdx[q] = r.kept[q]
	if r.queues[q].live > 0 {
		r.refileOver(k, q)
	}
}
