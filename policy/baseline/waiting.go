package baseline

import (
	"math/bits"
	"slices"

	"github.com/bursar-hpc/bursar/policy/easy"
)

// Waiting is the queue of a rule whose order is fixed per request — a
// band (fifo: one; priority: its tier), then submit time, then id — kept
// between passes for AdmitEASYWaiting, so that a pass on a trace's long
// queue reads the head, the requests that may start and the requests
// filed since the last pass, not the whole queue (issue 32; docs/traces.md
// "Work per job"). The rule tells it of every request the Core files and
// drops (Watcher: File and Leave); the filler's are not its to keep. The
// zero value is ready.
//
// It keeps each band's requests, and each width's (a trace job is
// granted whole, so its width is what it wants), in queue order, in lists
// whose granted requests are struck out and dropped at once when they are
// half of the list, so that no removal shifts a long list.
//
// It keeps a list only for the widths filed, not for every width up to
// the widest: on a wide pool (the 300k-job log of issue 32 has 93,056
// processors and 128 widths) a table by width was 93,057 lists that each
// pass cleared the cursors of and each fork copied.
type Waiting struct {
	bands []waitList
	// widths are the widths filed, ascending, and lists their lists.
	widths []int
	lists  []waitList
	// sized marks the widths with a request waiting.
	sized []uint64
	passBase
	// arrived are the requests filed since the last pass (still waiting
	// or not).
	arrived []waitEntry
	// pass numbers the backfill passes, which the lists' cursors are of.
	pass uint64
	// scratch for a pass: the requests to start.
	starts []waitEntry
}

// waitEntry is what Waiting keeps of a request: what does not change
// while it waits. A struck-out entry has gpus 0.
type waitEntry struct {
	id, submitted, gpus, estimate int
	band                          int
}

// before is the queue order: band, then submit time, then id.
func (a *waitEntry) before(b *waitEntry) bool {
	if a.band != b.band {
		return a.band < b.band
	}
	if a.submitted != b.submitted {
		return a.submitted < b.submitted
	}
	return a.id < b.id
}

// waitList is a list of entries in queue order, from front on; dead
// counts those struck out. cursor is a width's backfill cursor in pass
// cursorPass (see first).
type waitList struct {
	list        []waitEntry
	front, dead int
	cursor      int
	cursorPass  uint64
}

// live is the number of entries waiting in l.
func (l *waitList) live() int { return len(l.list) - l.front - l.dead }

// add files e in its place (nearly always the end).
func (l *waitList) add(k *Core, e waitEntry) {
	at := len(l.list)
	for at > l.front && e.before(&l.list[at-1]) {
		at-- // a requeued job goes back to its place
	}
	l.list = append(l.list, waitEntry{})
	copy(l.list[at+1:], l.list[at:])
	l.list[at] = e
	k.countMoved(len(l.list) - 1 - at)
}

// strike strikes e out (found by binary search, one request looked
// at), and drops the struck-out entries once they are half of the list.
func (l *waitList) strike(k *Core, e *waitEntry) {
	k.countWalk(1)
	lo, hi := l.front, len(l.list)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l.list[m].before(e) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo >= len(l.list) || l.list[lo].id != e.id {
		return
	}
	l.list[lo].gpus = 0
	l.dead++
	for l.front < len(l.list) && l.list[l.front].gpus == 0 {
		l.front++
		l.dead--
	}
	if l.front == len(l.list) {
		l.list, l.front, l.dead = l.list[:0], 0, 0
		return
	}
	if n := len(l.list) - l.front; 2*(l.dead+l.front) > n+l.front {
		w := 0
		for _, x := range l.list[l.front:] {
			if x.gpus != 0 {
				l.list[w] = x
				w++
			}
		}
		k.countMoved(w)
		clear(l.list[w:])
		l.list, l.front, l.dead = l.list[:w], 0, 0
	}
}

// File adds request r of band band (the rule's Watcher.Filed; not the
// filler's).
func (q *Waiting) File(k *Core, r *Request, band int) {
	e := waitEntry{id: r.ID, submitted: r.Submitted, gpus: r.GPUs, estimate: r.Duration, band: band}
	for len(q.bands) <= band {
		q.bands = append(q.bands, waitList{})
	}
	q.bands[band].add(k, e)
	at, found := slices.BinarySearch(q.widths, e.gpus)
	if !found {
		q.widths = slices.Insert(q.widths, at, e.gpus)
		q.lists = slices.Insert(q.lists, at, waitList{})
	}
	q.lists[at].add(k, e)
	for len(q.sized)*64 <= e.gpus {
		q.sized = append(q.sized, 0)
	}
	q.sized[e.gpus/64] |= 1 << (e.gpus % 64)
	q.filed++
	q.arrived = append(q.arrived, e)
}

// Leave forgets request r of band band (the rule's Watcher.Left).
func (q *Waiting) Leave(k *Core, r *Request, band int) {
	e := waitEntry{id: r.ID, submitted: r.Submitted, gpus: r.GPUs, band: band}
	at, found := slices.BinarySearch(q.widths, e.gpus)
	if band >= len(q.bands) || !found {
		return
	}
	q.bands[band].strike(k, &e)
	w := &q.lists[at]
	w.strike(k, &e)
	if w.live() == 0 {
		q.sized[e.gpus/64] &^= 1 << (e.gpus % 64)
	}
	q.left++
}

// head is the first request waiting in queue order.
func (q *Waiting) head() (waitEntry, bool) {
	for b := range q.bands {
		if l := &q.bands[b]; l.front < len(l.list) {
			return l.list[l.front], true
		}
	}
	return waitEntry{}, false
}

// Indexable reports whether AdmitEASYWaiting decides as AdmitEASY does
// over the rule's order: every pending request is a rigid one (a trace
// job, granted whole, its want its size under a Limit of the pool, and
// none the filler's), the list is in submit order or in none
// (UnorderedPending: Waiting's order within a band is submit order
// either way) and the pool is a number (on a platform's nodes the pass
// is PassOn's).
func (k *Core) Indexable() bool {
	return k.flexPending == 0 && (k.unordered || !k.pendUnsorted) && k.placer == nil && !k.plainQueue
}

// SetPlainQueue makes every pass build its queue from the whole pending
// list, as before Waiting (Indexable is false): the oracle that the
// tests of the kept queues compare against.
func (k *Core) SetPlainQueue(on bool) { k.plainQueue = on }

// Forget makes the next AdmitEASYWaiting pass build on nothing: a rule
// calls it after a pass it made another way.
func (q *Waiting) Forget() {
	q.forget()
	q.arrived = q.arrived[:0]
}

// Entries is the number of entries q keeps (a copy of the Core counts
// them moved).
func (q *Waiting) Entries() int {
	n := 0
	for b := range q.bands {
		n += len(q.bands[b].list)
	}
	for w := range q.lists {
		n += len(q.lists[w].list)
	}
	return n
}

// WaitingRule is an optional Rule hook: a rule that keeps a Waiting
// queue, which a copy of the Core (Clone) counts as moved with its
// pending list.
type WaitingRule interface {
	WaitingQueue() *Waiting
}

// AdmitEASYWaiting is AdmitEASY over q's order, for a rule whose Limit
// is the pool for every campaign, while the Core is Indexable; q must
// have been told of every request filed and dropped. It decides exactly
// as AdmitEASY does and journals the same:
//
//   - Steps 1 and 2 start or preempt for the head in q's order, as
//     AdmitEASY does (every want is the request's size: none is passed
//     over).
//   - Step 3 starts, in queue order, each request that the EASY rule
//     lets start given what the ones before it took (easy.Backfills).
//     Free GPUs and extra GPUs only fall during the pass, so a request
//     that could not start at its turn cannot later: the next to start is
//     the first in queue order that may start now. The pass finds it by
//     width, reading the widths of at most the GPUs free and, in each,
//     the first request that may start: any request if its width fits
//     in the extra GPUs, else the first that ends by the shadow time.
//   - A pass after which nothing changed but requests filed behind the
//     same head (no lease started, ended or was noticed, nothing left
//     the queue), and none of whose grants held GPUs reserved for it (a
//     grant that gives back more GPUs than the backfill counted), finds every request the last pass left unable to start
//     unable still (its free and extra GPUs are where that pass left
//     them, and its shadow time has not moved), and backfills only from
//     the requests filed since.
func (k *Core) AdmitEASYWaiting(e *EASY, q *Waiting, eligible func(head *Request, l *Lease) bool) {
	var head waitEntry
	for {
		h, ok := q.head()
		if !ok {
			q.endPass(k, -1)
			return
		}
		i := k.IndexSubmitted(h.id, h.submitted)
		if !k.startOrPreempt(e, i, eligible) {
			head = h
			break
		}
	}
	free := max(0, k.FreeGeneral())
	if free > 0 {
		if q.builds(k, head.id) {
			q.backfillArrived(k, e, head, free)
		} else {
			q.backfill(k, e, head, free)
		}
	}
	q.endPass(k, head.id)
}

// endPass notes the state a pass left, which the next builds on.
func (q *Waiting) endPass(k *Core, head int) {
	q.passBase.endPass(k, head)
	q.arrived = q.arrived[:0]
}

// backfillArrived is step 3 over the requests filed since the last pass
// (a clean pass, see AdmitEASYWaiting): AdmitEASY's pass over the head
// and those of them still waiting that fit in free GPUs, in queue order.
func (q *Waiting) backfillArrived(k *Core, e *EASY, head waitEntry, free int) {
	e.jobs = append(e.jobs[:0], easyJob{GPUs: head.gpus, Estimate: int64(head.estimate)})
	k.countWalk(len(q.arrived))
	// In queue order: filing order but for a band or a requeued job's
	// place (insertion, a few requests).
	for a := 1; a < len(q.arrived); a++ {
		for b := a; b > 0 && q.arrived[b].before(&q.arrived[b-1]); b-- {
			q.arrived[b], q.arrived[b-1] = q.arrived[b-1], q.arrived[b]
		}
	}
	q.starts = q.starts[:0]
	for _, a := range q.arrived {
		if a.gpus > free || !head.before(&a) {
			continue
		}
		e.jobs = append(e.jobs, easyJob{GPUs: a.gpus, Estimate: int64(a.estimate)})
		q.starts = append(q.starts, a)
	}
	if len(q.starts) == 0 {
		return
	}
	k.easyRunning(e, &k.pending[k.IndexSubmitted(head.id, head.submitted)])
	start := e.pass.Pass(int64(k.now), free, e.running, e.jobs)
	for x, j := range start {
		q.starts[x] = q.starts[j-1] // j ≥ 1: the head does not fit
	}
	q.starts = q.starts[:len(start)]
	q.grant(k, e)
}

// grant grants q.starts, in order, as AdmitEASY's pass does.
func (q *Waiting) grant(k *Core, e *EASY) {
	for _, s := range q.starts {
		i := k.IndexSubmitted(s.id, s.submitted)
		if s.gpus <= k.FreeGeneral() {
			if k.pending[i].Reserved > 0 {
				// Its grant frees the GPUs reserved for it: the pass
				// ends with more free than it counted (endPass).
				q.unfounded = true
			}
			if e.Key != nil {
				e.Key(&k.pending[i])
			}
			k.Grant(i, s.gpus)
		}
	}
}

// backfill is step 3 of a pass that builds on nothing (see
// AdmitEASYWaiting): by width, the next request that may start.
func (q *Waiting) backfill(k *Core, e *EASY, head waitEntry, free int) {
	if q.firstWidth() > free {
		return // nothing fits: Pass would start nothing
	}
	k.easyRunning(e, &k.pending[k.IndexSubmitted(head.id, head.submitted)])
	now := int64(k.now)
	shadow, extra := e.pass.Reservation(now, free, e.running, head.gpus)
	q.pass++
	q.starts = q.starts[:0]
	last := head
	for free > 0 {
		best, bw := (*waitEntry)(nil), 0
		q.eachWidth(free, func(w int) {
			if k.counting {
				k.work.RunsRead++
			}
			c := q.first(k, w, &last, extra, now, shadow)
			if c != nil && (best == nil || c.before(best)) {
				best, bw = c, w
			}
		})
		if best == nil {
			break
		}
		job := easyJob{GPUs: bw, Estimate: int64(best.estimate)}
		_, extra = easy.Backfills(now, shadow, extra, job)
		free -= bw
		last = *best
		q.starts = append(q.starts, *best)
	}
	q.grant(k, e)
}

// first is the first request of width w behind last in queue order that
// the EASY rule lets start (easy.Backfills), nil if none. The width's
// cursor (for this pass: the list's front before its first read) only
// moves on: a request passed over here cannot start later in the pass.
func (q *Waiting) first(k *Core, w int, last *waitEntry, extra int, now, shadow int64) *waitEntry {
	at, _ := slices.BinarySearch(q.widths, w) // w is sized: filed
	l := &q.lists[at]
	if l.cursorPass != q.pass {
		l.cursor, l.cursorPass = l.front, q.pass
	}
	c := max(l.cursor, l.front)
	for ; c < len(l.list); c++ {
		x := &l.list[c]
		if x.gpus == 0 || !last.before(x) {
			continue
		}
		k.countWalk(1)
		if ok, _ := easy.Backfills(now, shadow, extra, easyJob{GPUs: w, Estimate: int64(x.estimate)}); ok {
			l.cursor = c
			return x
		}
	}
	l.cursor = c
	return nil
}

// firstWidth is the narrowest width waiting (MaxInt: none).
func (q *Waiting) firstWidth() int { return firstSet(q.sized) }

// firstSet is the lowest bit set in set (MaxInt: none).
func firstSet(set []uint64) int {
	for wi, word := range set {
		if word != 0 {
			return wi*64 + bits.TrailingZeros64(word)
		}
	}
	return int(^uint(0) >> 1)
}

// eachWidth calls f with every width waiting up to most, narrowest first.
func (q *Waiting) eachWidth(most int, f func(w int)) { eachSet(q.sized, nil, most, f) }

// Clone is a copy of the queue that shares no memory with it, for a
// rule's CloneRule: what internal/deepcopy makes of it, without the
// reflection (a fork of priority on the 300k-job log spent most of its
// time in the reflective copy of this queue).
func (q *Waiting) Clone() Waiting {
	c := *q
	c.bands = cloneWaitLists(q.bands)
	c.widths, c.lists = slices.Clone(q.widths), cloneWaitLists(q.lists)
	c.sized, c.arrived, c.starts = slices.Clone(q.sized), slices.Clone(q.arrived), slices.Clone(q.starts)
	return c
}

// cloneWaitLists copies lists and each list's entries.
func cloneWaitLists(lists []waitList) []waitList {
	c := slices.Clone(lists)
	for i := range c {
		c[i].list = slices.Clone(c[i].list)
	}
	return c
}

// takeSlot is a slot of pool for a new entry: the last one freed (free
// holds the slots of entries that left), else a new zero one at the end.
// Kept queues reuse their slots so that a replay's queue is as long as
// what waits, not as the log (a fork copies it).
func takeSlot[T any](pool *[]T, free *[]int32) int32 {
	if n := len(*free); n > 0 {
		p := (*free)[n-1]
		*free = (*free)[:n-1]
		return p
	}
	var zero T
	*pool = append(*pool, zero)
	return int32(len(*pool) - 1)
}
