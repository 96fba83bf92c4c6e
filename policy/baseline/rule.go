package baseline

import (
	"cmp"
	"math/bits"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
)

// Base gives a Rule the defaults most baselines share: any campaign may
// hold the whole pool, may take any free GPU, files requests in the class
// it asked for, and keeps no usage. Embed it and override what differs.
type Base struct{}

// Limit is the pool.
func (Base) Limit(k *Core, _ policy.CampaignID) int { return k.cfg.Pool }

// Room is the free GPUs nobody has reserved.
func (Base) Room(k *Core, _ policy.CampaignID) int { return max(0, k.FreeGeneral()) }

// ClassFor is the class asked for.
func (Base) ClassFor(_ *Core, _ policy.CampaignID, asked policy.Class) policy.Class { return asked }

// EndTick does nothing.
func (Base) EndTick(*Core) {}

// Queue is the scratch list of pending request ids a rule orders each
// pass; keeping it in the rule means a pass allocates nothing once it has
// grown.
type Queue struct {
	ids    []int
	counts []int
}

// BuildRanked is Build ordered by rank[campaign] (ascending), then submit
// time, then id.
func (q *Queue) BuildRanked(k *Core, rank []int) []int {
	return q.BuildByKey(k, func(r *Request) int { return rank[r.Campaign] }, func(a, b *Request) int {
		if c := cmp.Compare(rank[a.Campaign], rank[b.Campaign]); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Submitted, b.Submitted); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// BuildByKey is Build(k, order) for an order that sorts by key (a small
// int ≥ 0), then submit time, and among equal submit times keeps the
// pending list's order or sorts by id. The pending list is nearly always
// in (submit time, id) order already (a trace's jobs are; requeued ones go
// back to their place), and then that sort is a counting sort by key,
// linear in the queue, where the comparison sort cost most of a trace
// replay; otherwise it sorts with order.
func (q *Queue) BuildByKey(k *Core, key func(*Request) int, order func(a, b *Request) int) []int {
	pend := k.pending
	k.countWalk(len(pend))
	for i := 1; i < len(pend); i++ {
		if a, b := &pend[i-1], &pend[i]; b.Submitted < a.Submitted || b.Submitted == a.Submitted && b.ID < a.ID {
			return q.Build(k, order)
		}
	}
	top, n := 0, 0
	for i := range pend {
		if r := &pend[i]; !k.camps[r.Campaign].Filler {
			top = max(top, key(r))
			n++
		}
	}
	counts := Ints(q.counts, top+2)
	for i := range pend {
		if r := &pend[i]; !k.camps[r.Campaign].Filler {
			counts[key(r)+1]++
		}
	}
	for r := 1; r < len(counts); r++ {
		counts[r] += counts[r-1]
	}
	ids := q.ids[:0]
	for range n {
		ids = append(ids, 0)
	}
	for i := range pend {
		if r := &pend[i]; !k.camps[r.Campaign].Filler {
			kk := key(r)
			ids[counts[kk]] = r.ID
			counts[kk]++
		}
	}
	q.ids, q.counts = ids, counts
	return ids
}

// Build lists the ids of the pending requests that are not the filler's,
// in submit order, sorted (stably) by cmp over the requests. The list is
// valid until the next Build.
func (q *Queue) Build(k *Core, cmp func(a, b *Request) int) []int {
	ids := q.ids[:0]
	k.countWalk(len(k.pending))
	for i := range k.pending {
		if !k.camps[k.pending[i].Campaign].Filler {
			ids = append(ids, i)
		}
	}
	if cmp != nil {
		slices.SortStableFunc(ids, func(a, b int) int { return cmp(&k.pending[a], &k.pending[b]) })
	}
	for j, i := range ids {
		ids[j] = k.pending[i].ID
	}
	q.ids = ids
	return ids
}

// Index is the position of request id in the pending list, -1 if it has
// left it. Grants remove requests, so a rule walking its ordered ids looks
// each one up.
func (k *Core) Index(id int) int { return k.pendingIndex(id) }

// Pend returns pending request i. A rule may set its Key only.
func (k *Core) Pend(i int) *Request { return &k.pending[i] }

// Cleared returns buf resized to n and cleared, reusing its storage: a
// rule's per-campaign or per-partition tables, sized again at each
// rebuild without a new allocation once they have grown.
func Cleared[T any](buf []T, n int) []T {
	if cap(buf) < n {
		buf = make([]T, n)
	}
	buf = buf[:n]
	clear(buf)
	return buf
}

// Flags is Cleared for flags.
func Flags(buf []bool, n int) []bool { return Cleared(buf, n) }

// Ints is Cleared for counts.
func Ints(buf []int, n int) []int { return Cleared(buf, n) }

// Ranked is the pending queue of a rule that orders it by a rank per
// campaign, then submit time, then id (budget), kept between passes for
// AdmitEASYRanked: per campaign its waiting requests in (submit time, id)
// order, and the requests by the fewest GPUs each could want. A pass
// then touches the head of the queue and the requests that may fit, not
// the whole queue, and a new ranking reorders nothing. The zero value is
// ready.
type Ranked struct {
	// What the queue was synced to (see Sync): the Core, its next request
	// id and its pending list's length; synced is false until a build.
	core         *Core
	next, length int
	synced       bool

	// jobs are the waiting requests' records, each in a slot reused
	// once its request leaves (free lists the slots unused), so that a
	// copy of the queue (a fork's) copies what waits, not one record per
	// request of the log: a table by request id was 560 MB of the 770 MB
	// budget's forks allocated on the full SDSC-SP2 log.
	jobs  []rankedJob
	free  []int32
	camps [][]int32 // per campaign, its waiting slots by (submit time, id)
	// waiting marks the campaigns whose lists are not empty (bit c%64 of
	// word c/64), so that Waiting reads a word per 64 campaigns, not
	// every list (437 campaigns on a 300k-job log, listed at each of
	// 335,000 rankings).
	waiting []uint64
	// bySize[w] are the slots of the requests that could want as few as
	// w GPUs: a rigid job's size (it is granted whole), 1 for any other
	// (its want follows its campaign's holding), as a min-heap by
	// estimate (then id), so that a backfill reads only those short
	// enough (fittingWithin); sized marks the w with any, and sizedWords
	// the words of sized that are not 0 (bit i of its word j for word
	// 64j + i), so that a backfill finds the widths waiting up to the
	// GPUs free reading a word per 4,096 widths rather than one per 64 (on
	// a 300k-job log on 93,056 processors, with a few dozen widths
	// waiting and thousands of GPUs free, reading sized was 12 % of
	// budget's replay).
	bySize     [][]int32
	sized      []uint64
	sizedWords []uint64
	stack      []int // fittingWithin's
	// A backfill's candidates (AdmitEASYRanked).
	backfillCands
}

// rankedJob is what the queue keeps of a request: what does not change
// while it waits, and its place in bySize.
type rankedJob struct {
	id, gpus, duration, submitted int
	campaign                      policy.CampaignID
	rigid                         bool
	slot                          int32
}

// least is the fewest GPUs job j could want.
func (j *rankedJob) least() int {
	if j.rigid {
		return j.gpus
	}
	return 1
}

// before orders waiting requests of one campaign by their slots: submit
// time, then id.
func (q *Ranked) before(a, b int32) bool {
	ja, jb := &q.jobs[a], &q.jobs[b]
	if ja.submitted != jb.submitted {
		return ja.submitted < jb.submitted
	}
	return ja.id < jb.id
}

// Sync brings the queue up to the pending list — the requests filed since
// the last sync are added; if any other left the list than the queue saw
// leave (the filler's, an expiry, a release) it is rebuilt — and reports
// whether the set of campaigns waiting may have grown, so that the rule
// ranks them again. Filing takes an id and leaving shortens the list, so
// the next id and the length tell.
func (q *Ranked) Sync(k *Core) bool {
	if !q.synced || q.core != k {
		q.build(k)
		return true
	}
	found, grew := 0, false
	for id := q.next; id < k.nextID; id++ {
		i := k.Index(id)
		if i < 0 {
			continue // denied, or gone already
		}
		found++
		if r := &k.pending[i]; !k.camps[r.Campaign].Filler {
			q.add(r)
			grew = true
		}
	}
	if len(k.pending) != q.length+found {
		q.build(k)
		return true
	}
	q.Mark(k)
	return grew
}

// Mark records that the queue lists the pending list as it is: a rule
// calls it at the end of its tick, after the filler's admission.
func (q *Ranked) Mark(k *Core) {
	if q.core == k {
		q.next, q.length = k.nextID, len(k.pending)
	}
}

// build rebuilds the queue from the pending list.
func (q *Ranked) build(k *Core) {
	q.core, q.synced = k, true
	q.jobs, q.free = q.jobs[:0], q.free[:0]
	for c := range q.camps {
		q.camps[c] = q.camps[c][:0]
	}
	clear(q.waiting)
	for w := range q.bySize {
		q.bySize[w] = q.bySize[w][:0]
	}
	clear(q.sized)
	clear(q.sizedWords)
	k.countWalk(len(k.pending))
	for i := range k.pending {
		if r := &k.pending[i]; !k.camps[r.Campaign].Filler {
			q.add(r)
		}
	}
	q.Mark(k)
}

// add files waiting request r.
func (q *Ranked) add(r *Request) {
	p := takeSlot(&q.jobs, &q.free)
	j := &q.jobs[p]
	*j = rankedJob{id: r.ID, gpus: r.GPUs, duration: r.Duration, submitted: r.Submitted, campaign: r.Campaign, rigid: r.Rigid}
	for len(q.camps) <= int(r.Campaign) {
		q.camps = append(q.camps, nil)
	}
	list := q.camps[r.Campaign]
	at := len(list)
	for at > 0 && q.before(p, list[at-1]) {
		at-- // a requeued job goes back to its place (usually near the end)
	}
	list = slices.Insert(list, at, p)
	q.camps[r.Campaign] = list
	for len(q.waiting)*64 <= int(r.Campaign) {
		q.waiting = append(q.waiting, 0)
	}
	q.waiting[r.Campaign/64] |= 1 << (r.Campaign % 64)
	w := j.least()
	for len(q.bySize) <= w {
		q.bySize = append(q.bySize, nil)
	}
	for len(q.sized)*64 <= w {
		q.sized = append(q.sized, 0)
	}
	j.slot = int32(len(q.bySize[w]))
	q.bySize[w] = append(q.bySize[w], p)
	q.up(w, int(j.slot))
	q.sized[w/64] |= 1 << (w % 64)
	for len(q.sizedWords)*64 <= w/64 {
		q.sizedWords = append(q.sizedWords, 0)
	}
	q.sizedWords[w/4096] |= 1 << (w / 64 % 64)
}

// shorter orders two slots of one heap: estimate, then id.
func (q *Ranked) shorter(a, b int32) bool {
	if da, db := q.jobs[a].duration, q.jobs[b].duration; da != db {
		return da < db
	}
	return q.jobs[a].id < q.jobs[b].id
}

// up and down restore heap bySize[w] from place x.
func (q *Ranked) up(w, x int) {
	h := q.bySize[w]
	for x > 0 {
		p := (x - 1) / 2
		if !q.shorter(h[x], h[p]) {
			return
		}
		h[x], h[p] = h[p], h[x]
		q.jobs[h[x]].slot, q.jobs[h[p]].slot = int32(x), int32(p)
		x = p
	}
}

func (q *Ranked) down(w, x int) {
	h := q.bySize[w]
	for {
		m := x
		if l := 2*x + 1; l < len(h) && q.shorter(h[l], h[m]) {
			m = l
		}
		if r := 2*x + 2; r < len(h) && q.shorter(h[r], h[m]) {
			m = r
		}
		if m == x {
			return
		}
		h[x], h[m] = h[m], h[x]
		q.jobs[h[x]].slot, q.jobs[h[m]].slot = int32(x), int32(m)
		x = m
	}
}

// remove forgets the request in slot p, granted, and frees the slot.
func (q *Ranked) remove(p int32) {
	j := &q.jobs[p]
	list := q.camps[j.campaign]
	at, _ := slices.BinarySearchFunc(list, p, func(a, b int32) int {
		switch {
		case q.before(a, b):
			return -1
		case q.before(b, a):
			return 1
		}
		return 0
	})
	q.camps[j.campaign] = slices.Delete(list, at, at+1)
	if len(list) == 1 {
		q.waiting[j.campaign/64] &^= 1 << (j.campaign % 64)
	}
	w := j.least()
	b := q.bySize[w]
	last, x := b[len(b)-1], int(j.slot)
	b[x], q.jobs[last].slot = last, int32(x)
	q.bySize[w] = b[:len(b)-1]
	if x < len(q.bySize[w]) {
		q.up(w, x)
		q.down(w, int(q.jobs[last].slot))
	}
	if len(q.bySize[w]) == 0 {
		if q.sized[w/64] &^= 1 << (w % 64); q.sized[w/64] == 0 {
			q.sizedWords[w/4096] &^= 1 << (w / 64 % 64)
		}
	}
	q.free = append(q.free, p)
}

// removeRequest forgets waiting request r, granted: its slot is found in
// its campaign's list by (submit time, id).
func (q *Ranked) removeRequest(r *Request) {
	list := q.camps[r.Campaign]
	at, _ := slices.BinarySearchFunc(list, r, func(a int32, r *Request) int {
		if c := cmp.Compare(q.jobs[a].submitted, r.Submitted); c != 0 {
			return c
		}
		return cmp.Compare(q.jobs[a].id, r.ID)
	})
	q.remove(list[at])
}

// Waiting appends to buf the campaigns with requests waiting, in id
// order.
func (q *Ranked) Waiting(buf []int) []int {
	for w, word := range q.waiting {
		for ; word != 0; word &= word - 1 {
			buf = append(buf, 64*w+bits.TrailingZeros64(word))
		}
	}
	return buf
}

// fittingWithin calls f with the slot of every waiting request that
// could want at most free GPUs and either at most extra or is estimated
// to run at most limit seconds: the only ones an EASY pass with free GPUs
// free and extra to spare at a shadow time limit seconds away could
// backfill (a job wider than extra must end by the shadow time).
func (q *Ranked) fittingWithin(k *Core, free, extra int, limit int64, f func(p int32)) {
	fittingIn(k, q.sized, q.sizedWords, q.bySize, &q.stack, free, extra, limit, func(p int32) int64 { return int64(q.jobs[p].duration) }, f)
}

// fittingIn calls f with every element of heaps[w] for each w marked in
// sized up to free that is at most extra wide or whose estimate (est) is
// at most limit: each heap at most extra wide whole, each wider one from
// its root down through the elements short enough (heaps[w] is a
// min-heap by est). It counts the elements it reads as walked (each
// heap's short ones, and the first too long below them); stack is its
// scratch; words, if not nil, marks sized's words that are not 0
// (eachSet).
func fittingIn[E any](k *Core, sized, words []uint64, heaps [][]E, stack *[]int, free, extra int, limit int64, est func(E) int64, f func(E)) {
	read := 0
	eachSet(sized, words, free, func(w int) {
		h := heaps[w]
		if w <= extra {
			read += len(h)
			for _, x := range h {
				f(x)
			}
			return
		}
		s := append((*stack)[:0], 0)
		for len(s) > 0 {
			x := s[len(s)-1]
			s = s[:len(s)-1]
			read++
			if est(h[x]) > limit {
				continue
			}
			f(h[x])
			for c := 2*x + 1; c <= 2*x+2 && c < len(h); c++ {
				s = append(s, c)
			}
		}
		*stack = s
	})
	k.countWalk(read)
}

// eachSet calls f with every bit set in set up to most, lowest first,
// reading only the words of set that words marks as not 0 (bit i of its
// word j for word 64j + i) when words is not nil, else every word up to
// most's.
func eachSet(set, words []uint64, most int, f func(n int)) {
	if most < 0 {
		return
	}
	last := min(len(set)-1, most/64)
	if words == nil {
		for wi := 0; wi <= last; wi++ {
			eachBit(set[wi], wi, most, f)
		}
		return
	}
	for j := 0; j < len(words) && j <= last/64; j++ {
		for m := words[j]; m != 0; m &= m - 1 {
			wi := j*64 + bits.TrailingZeros64(m)
			if wi > last {
				return
			}
			eachBit(set[wi], wi, most, f)
		}
	}
}

// eachBit calls f with every bit set in word wi of a set, word, up to
// most.
func eachBit(word uint64, wi, most int, f func(n int)) {
	for ; word != 0; word &= word - 1 {
		n := wi*64 + bits.TrailingZeros64(word)
		if n > most {
			return
		}
		f(n)
	}
}
