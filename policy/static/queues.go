package static

import (
	"cmp"
	"math"
	"slices"

	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/easy"
)

// Each partition keeps its owners' waiting jobs in the pending list's
// order, told of them by the Core (baseline.Watcher), with a tree of
// the widths and estimates below each stretch of the list: building the
// partitions' queues from the whole pending list and handing the whole of
// each to EASY at every pass made static's work per job grow 7.4× from 8
// to 64 weeks of SDSC-SP2 (docs/traces.md, "Work per job"), where the
// condo partitions' queues run to thousands of jobs. A pass now reads
// each partition's heads up to the one that blocks, and finds the jobs
// EASY may backfill by the tree: a stretch none of whose jobs is narrow
// enough for the free GPUs, or both wider than the extra GPUs and longer
// than the shadow time allows, is passed over whole.
//
// The list's order is the pending list's, (submit time, id), which the
// Core keeps for requests filed in order and for rigid jobs filed in
// the past (a requeued job); an elastic request filed behind a job
// submitted later (the Core appends it) breaks it, and the rule then
// admits as it did before, from the whole list (plain), until the list
// is back in order.

// waiting is a job in a partition's queue.
type waiting struct {
	submitted, id int
	gpus          int
	est           int
	rigid         bool
	dead          bool // left the pending list, kept until a compaction
}

// least is the fewest GPUs the job could start with in a backfill (a
// rigid job's width, 1 for an elastic request, which is cut), MaxInt
// once it has left.
func (e *waiting) least() int {
	switch {
	case e.dead:
		return math.MaxInt
	case e.rigid:
		return e.gpus
	}
	return 1
}

// before orders the queue as the pending list: by submit time, then id.
func (e *waiting) before(o *waiting) bool {
	if e.submitted != o.submitted {
		return e.submitted < o.submitted
	}
	return e.id < o.id
}

// partQueue is one partition's waiting jobs.
type partQueue struct {
	list []waiting
	// list[:first] have all left.
	first      int
	live, dead int
	// A tree over list's places, leaves at leaves+i: by node, the least
	// (waiting.least) of its live jobs, and by band b < bands the
	// shortest estimate of those whose least is at most bandWidth(b)
	// units, so that a search passes over a stretch whose narrow jobs are
	// all too long (estimates capped at noneLeft−1; noneLeft: no such
	// job). unit divides every live job's least (build, add). The bands
	// reach the widest search, most GPUs (the partition's size; 0: the
	// pool): a search asks for at most its partition's free GPUs, and
	// the last band holds every job, for a search for more.
	leaves, bands int
	unit, most    int
	least         []int32
	short         []int32
	// share, if not nil, counts the other queues (a fork's copy, or the
	// queue it was copied from) that hold list, least and short too:
	// copied before the first write (own, clone.go).
	share *sharing
	// hint is the place of the job a pass is about to start (remove looks
	// there before it searches the list); headStart marks it as a head
	// the heads' walk starts under lend none without a platform, whose
	// bounds remove leaves as they were (see remove). A hint that names
	// another job is not used.
	hint      int
	headStart bool
}

// bandWidth is band b's widest job, in units (partQueue.unit): 1, 2, 3,
// 4, 7, 8, 15, 16, …, two bands an octave, each power of two and the
// width just below it. A search for jobs of at most w units reads the
// band of the least width ≥ w, and a stretch passes it if a job there
// is short enough, though that job may be wider than w (up to the band's
// width): the search then descends for nothing. Widths are mostly powers
// of two (SDSC-SP2's, in GPUs; the resampled 300k-job log's, in units of
// 727 GPUs), so that a band ending at one held every job of that width
// for a search just narrower (a band of 8 for 7 units free), where 2ᵏ − 1
// holds none; bands of 4, 6, 8, 12, … did, and on the resampled log,
// with no unit, every band held widths of 727 × 2ᵏ beyond the search's:
// a fork's failed search read 400 nodes.
func bandWidth(b int) int {
	if b < 2 {
		return b + 1
	}
	w := 1 << (b/2 + 1) // b = 2: 3, b = 3: 4, b = 4: 7, b = 5: 8, …
	if b%2 == 0 {
		w--
	}
	return w
}

// bandOf is the first band whose widest job is at least w (0 for w ≤ 1).
func bandOf(w int) int {
	b := 0
	for bandWidth(b) < w {
		b++
	}
	return b
}

// noneLeft marks a node with no live job (of the band).
const noneLeft = math.MaxInt32

// gcd is the greatest common divisor of a, b ≥ 0 (gcd(0, b) = b).
func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func clamp32(v int) int32 { return int32(min(v, noneLeft-1)) }

// add files e at its place (the end, unless it was submitted before the
// last job: a requeued job).
func (qu *partQueue) add(k *baseline.Core, e waiting) {
	qu.own(k)
	qu.live++
	at := len(qu.list)
	if at > 0 && e.before(&qu.list[at-1]) {
		at, _ = qu.place(e.submitted, e.id)
		qu.list = slices.Insert(qu.list, at, e)
		k.CountMoved(len(qu.list) - at)
		qu.first = min(qu.first, at)
		qu.build(k)
		return
	}
	qu.list = append(qu.list, e)
	if len(qu.list) > qu.leaves || e.least()%qu.unit != 0 {
		// Out of room, or a width the unit does not divide: the bands
		// are made again in a unit that does.
		qu.build(k)
		return
	}
	qu.set(at)
}

func cmpWaiting(a, b waiting) int {
	switch {
	case a.before(&b):
		return -1
	case b.before(&a):
		return 1
	}
	return 0
}

// place is where the job of request id, submitted at submitted, stands
// in the list or would, and whether it is there: slices.BinarySearchFunc
// with cmpWaiting written out, whose call per comparison was a tenth of
// a static replay's forks on the full SDSC-SP2 log.
func (qu *partQueue) place(submitted, id int) (int, bool) {
	lo, hi := 0, len(qu.list)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if e := &qu.list[m]; e.submitted < submitted || e.submitted == submitted && e.id < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(qu.list) && qu.list[lo].submitted == submitted && qu.list[lo].id == id
}

// remove marks the job of request id, submitted at submitted, as left.
//
// A head the heads' walk starts under lend none without a platform
// (headStart) keeps its bounds in the tree: every later search starts
// after it. There a pass's heads either start or block (nothing is
// planned and held, schedule), so that after the pass every place
// before its blocked head h has left, and the next pass's blocked head
// is at h or after it (a fork files nothing; the replay files behind
// the list's end, and a job filed before it, a requeued one, makes the
// tree again, add); a search reads only the nodes right of its start
// (after), and the root, whose bound a job that left only lowers, so
// that the test against the root passes where it might not have and the
// search then finds what it would have found. Each such start climbed
// the tree over every band, a quarter of a static replay's forks on the
// full SDSC-SP2 log, where the forks start every job queued ahead of
// theirs, most of them as heads.
func (qu *partQueue) remove(k *baseline.Core, submitted, id int) {
	at, found := qu.hint, false
	if at >= 0 && at < len(qu.list) && qu.list[at].submitted == submitted && qu.list[at].id == id {
		found = true
	} else {
		at, found = qu.place(submitted, id)
	}
	if !found || qu.list[at].dead {
		return
	}
	qu.own(k)
	qu.list[at].dead = true
	qu.live--
	qu.dead++
	if qu.headStart && at == qu.hint {
		return
	}
	qu.set(at)
}

// leaf writes node n's bounds for job e (nil: none), and reports which
// changed: the least, and the bands lo … hi−1 (none: lo ≥ hi). The
// bands that hold a job are those from its width's up (bandOf; the last
// holds every job), so that the bands a job joining or leaving changes
// are one run (set).
func (qu *partQueue) leaf(n int, e *waiting) (leastMoved bool, lo, hi int) {
	least, est, first := int32(noneLeft), int32(noneLeft), qu.bands
	if e != nil && !e.dead {
		l := e.least()
		least, est, first = clamp32(l), clamp32(e.est), min(bandOf(l/qu.unit), qu.bands-1)
	}
	leastMoved = qu.least[n] != least
	qu.least[n] = least
	band := qu.short[n*qu.bands : (n+1)*qu.bands]
	lo = len(band)
	for b := range band {
		v := est
		if b < first {
			v = noneLeft
		}
		if band[b] != v {
			band[b] = v
			lo, hi = min(lo, b), b+1
		}
	}
	return leastMoved, lo, hi
}

// join writes node n's bounds from its children's, and reports whether
// they changed.
func (qu *partQueue) join(n int) bool {
	l := min(qu.least[2*n], qu.least[2*n+1])
	changed := l != qu.least[n]
	qu.least[n] = l
	band, lb, rb := qu.short[n*qu.bands:(n+1)*qu.bands], qu.short[2*n*qu.bands:], qu.short[(2*n+1)*qu.bands:]
	for b := range band {
		if v := min(lb[b], rb[b]); v != band[b] {
			band[b], changed = v, true
		}
	}
	return changed
}

// set writes leaf at and the nodes above it, up to the first whose
// bounds it leaves as they were (those above it read only theirs): a
// job leaving a queue thousands long moves the bounds of a few nodes,
// and the climb over every band at every level to the root was a fifth
// of a static replay with fair starts on the full SDSC-SP2 log.
//
// Each node's bounds are its children's least (join), so that a bound
// of a node changes only where the same bound of a child below it did:
// the climb joins only the bounds that changed at the level below (the
// least, and a run of bands), not every band of every node. A job
// that leaves changes only the bands that held it (those at and above
// its width's), and of those, higher up, only where it was the shortest:
// the joins of every band at every level of the climb were two fifths of
// the forks' work of a static replay with fair starts on KTH-SP2.
func (qu *partQueue) set(at int) {
	n := qu.leaves + at
	leastMoved, lo, hi := qu.leaf(n, &qu.list[at])
	least, short, bands := qu.least, qu.short, qu.bands
	// The bands that move are one run, lo … hi−1, at every level: a leaf
	// set here is a job that joins (its bands from none to its estimate)
	// or leaves (back to none), and the bands that hold it are those from
	// its width's up (leaf). The bands are nested, each holding the jobs
	// of the one below it, so that a node's shortest estimates do not
	// grow from band to band; where the job's estimate no longer moves a
	// node's band b (it is not below the band's shortest, or, leaving, a
	// job as short stays), it moves none of the bands above b either.
	// So the climb stops at the first band that stays, rather than
	// reading every band that moved below (the climbs were a quarter of
	// a static replay with fair starts on KTH-SP2).
	for n /= 2; n > 0 && (leastMoved || lo < hi); n /= 2 {
		if leastMoved {
			l := min(least[2*n], least[2*n+1])
			leastMoved = l != least[n]
			least[n] = l
		}
		at, left := n*bands, 2*n*bands // node n's bands, its left child's; its right child's follow
		b := lo
		for ; b < hi; b++ {
			v := min(short[left+b], short[left+bands+b])
			if v == short[at+b] {
				break
			}
			short[at+b] = v
		}
		hi = b
	}
}

// build makes the tree again, with room for the list to double, counting
// the jobs written. Its bands count widths in units of the live jobs'
// greatest common divisor: a log whose widths are multiples of a node's
// GPUs, or of a scale (the resampled 300k-job log's 727), has its powers
// of two at the bands' edges, as SDSC-SP2 has in GPUs.
func (qu *partQueue) build(k *baseline.Core) {
	qu.own(k)
	n := len(qu.list)
	qu.leaves = 1
	for qu.leaves <= n {
		qu.leaves *= 2
	}
	qu.unit = 0
	for i := range qu.list {
		if e := &qu.list[i]; !e.dead {
			qu.unit = gcd(qu.unit, e.least())
		}
	}
	qu.unit = max(qu.unit, 1)
	most := qu.most
	if most < 1 {
		most = k.Config().Pool
	}
	qu.bands = bandOf(most/qu.unit) + 1
	qu.least = slices.Grow(qu.least[:0], 2*qu.leaves)[:2*qu.leaves]
	qu.short = slices.Grow(qu.short[:0], 2*qu.leaves*qu.bands)[:2*qu.leaves*qu.bands]
	for i := range qu.leaves {
		var e *waiting
		if i < n {
			e = &qu.list[i]
		}
		qu.leaf(qu.leaves+i, e)
	}
	for x := qu.leaves - 1; x > 0; x-- {
		qu.join(x)
	}
	// Node 0 is no node (the root is 1) and nothing reads it, but what an
	// array held before (a build with other bands, a copy's) is written
	// over, so that the arrays are a function of the list alone.
	qu.leaf(0, nil)
	k.CountMoved(n)
}

// compact drops the jobs that left once they outnumber those waiting,
// but in a copy read only for its grants (a fair start's fork, which
// files nothing: its queues only shrink): the jobs that left are passed
// over by the heads' walk once (first) and by every search (their bounds
// are none), so that a compaction, a copy of the whole queue and its
// tree, would spare a fork less than it costs.
func (qu *partQueue) compact(k *baseline.Core) {
	if qu.dead <= qu.live || qu.dead < 16 || k.ForGrantsOnly() {
		return
	}
	qu.own(k)
	w := 0
	for _, e := range qu.list {
		if !e.dead {
			qu.list[w] = e
			w++
		}
	}
	clear(qu.list[w:])
	qu.list = qu.list[:w]
	qu.first, qu.dead = 0, 0
	qu.build(k)
}

// reset empties the queue.
func (qu *partQueue) reset(k *baseline.Core) {
	qu.own(k)
	qu.list = qu.list[:0]
	qu.first, qu.live, qu.dead = 0, 0, 0
}

// find is the first place from on of a job that may start in a backfill
// with free GPUs free, extra GPUs to spare at the shadow time and limit
// seconds to it: no wider than free, and no wider than extra or no
// longer than limit (-1: none). It counts the tree's nodes it reads.
func (qu *partQueue) find(k *baseline.Core, from, free, extra, limit int) int {
	if free < 1 {
		return -1
	}
	// A job narrow enough has a least of at most free / unit units (the
	// unit divides it), so that it is in that band.
	// The last band holds every job, however wide (leaf).
	at, steps := qu.after(from, free, extra, limit, min(bandOf(free/qu.unit), qu.bands-1))
	k.CountWalked(steps)
	return at
}

// after is find's first place from on that passes, and the nodes it
// read (steps), climbing from its leaf and descending into each stretch
// on its right in turn, nearest first, so that a search costs the log
// of the distance it goes, not of the queue; the root first, as most
// searches find nothing. A descent goes left where the left child
// passes, else right; where neither does (a stretch passed on the
// bounds of two jobs, neither of which passes itself), it climbs on
// from there as from a leaf, to the next stretch on the right: the
// nodes read in the order a recursive descent reads them. band is the
// first whose widest job (bandWidth) is at least free, in units. The
// tree and the bounds are read from locals, in a loop: a search's
// recursive calls and its reads through a struct were a third of a
// static fork's work on the full SDSC-SP2 log.
func (qu *partQueue) after(from, free, extra, limit, band int) (at, steps int) {
	least, short, bands, leaves := qu.least, qu.short, qu.bands, qu.leaves
	// passes reads node n: whether a job below it may pass. Unless one
	// is narrow enough for the extra GPUs, every job narrow enough may
	// be too long.
	passes := func(n int) bool {
		steps++
		l := int(least[n])
		return l <= free && (l <= extra || int(short[n*bands+band]) <= limit)
	}
	if from >= leaves || !passes(1) {
		return -1, steps
	}
	n := leaves + from
	if passes(n) {
		return from, steps
	}
climb:
	for {
		// Up to the first left child whose right sibling passes.
		for n%2 == 1 || !passes(n+1) {
			if n /= 2; n <= 1 {
				return -1, steps
			}
		}
		// Down from that sibling.
		for n++; n < leaves; {
			switch {
			case passes(2 * n):
				n = 2 * n
			case passes(2*n + 1):
				n = 2*n + 1
			default:
				continue climb
			}
		}
		return n - leaves, steps
	}
}

// Filed puts an owner's job in its partition's queue (baseline.Watcher).
func (r *Rule) Filed(k *baseline.Core, q *baseline.Request) {
	if !q.Rigid && q.Submitted < r.lastSubmitted {
		// The Core appends it behind a job submitted later.
		r.unordered = true
	}
	r.lastSubmitted = max(r.lastSubmitted, q.Submitted)
	if r.unordered || r.stale {
		return // queues made again from the list at the next pass
	}
	if p, ok := r.queueOf(q); ok {
		r.parts[p].add(k, waiting{submitted: q.Submitted, id: q.ID, gpus: q.GPUs, est: q.Duration, rigid: q.Rigid})
		r.quiet[p] = false
	}
}

// Left marks a job that left the pending list (baseline.Watcher).
func (r *Rule) Left(k *baseline.Core, q baseline.Request) {
	if r.unordered || r.stale {
		return
	}
	if p, ok := r.queueOf(&q); ok {
		r.parts[p].remove(k, q.Submitted, q.ID)
		r.quiet[p] = false
	}
}

// queueOf is the partition whose queue holds request q, if any: not the
// filler's, nor a rigid job wider than its partition (a scavenger only).
func (r *Rule) queueOf(q *baseline.Request) (int, bool) {
	if int(q.Campaign) >= len(r.partOf) {
		return 0, false
	}
	p := r.partOf[q.Campaign]
	if p < 0 || q.Rigid && q.GPUs > r.size[p] {
		return 0, false
	}
	return p, true
}

// UnorderedPending marks that the rule reads the Core's pending list
// only request by request (baseline.UnorderedPending) while it holds only
// trace jobs: its partitions' queues keep the submit order, so that the
// Core takes a granted job out of a list thousands long by moving its
// last one into the place (the shifts were most of the work left on 64
// weeks of SDSC-SP2, and growing with the queue). The rule orders what
// it reads of the whole list itself then (inOrder).
func (*Rule) UnorderedPending() {}

// inOrder sorts a rule's walk of the whole pending list, jobs and their
// places, into submit order if the Core keeps none (Ordered): the order
// the list has otherwise, as it held only rigid jobs, filed in place.
func inOrder(k *baseline.Core, jobs []queued, at []int) {
	if k.Ordered() {
		return
	}
	idx := make([]int, len(jobs))
	for x := range idx {
		idx[x] = x
	}
	slices.SortFunc(idx, func(a, b int) int { return cmpQueued(jobs[a], jobs[b]) })
	js, as := slices.Clone(jobs), slices.Clone(at)
	for x, y := range idx {
		jobs[x] = js[y]
		if at != nil {
			at[x] = as[y]
		}
	}
}

func cmpQueued(a, b queued) int {
	if a.submitted != b.submitted {
		return cmp.Compare(a.submitted, b.submitted)
	}
	return cmp.Compare(a.id, b.id)
}

// reindex makes the partitions' queues again from the pending list,
// which it reads whole (counted by the Core), if it is in order; else
// the pass admits plain.
func (r *Rule) reindex(k *baseline.Core) {
	pend := k.Pending()
	for i := 1; k.Ordered() && i < len(pend); i++ {
		if pend[i].Submitted < pend[i-1].Submitted || pend[i].Submitted == pend[i-1].Submitted && pend[i].ID < pend[i-1].ID {
			r.unordered = true
			return
		}
	}
	r.unordered, r.stale = false, false
	clear(r.quiet)
	for p := range r.parts {
		r.parts[p].reset(k)
	}
	for i := range pend {
		q := &pend[i]
		if p, ok := r.queueOf(q); ok {
			qu := &r.parts[p]
			qu.list = append(qu.list, waiting{submitted: q.Submitted, id: q.ID, gpus: q.GPUs, est: q.Duration, rigid: q.Rigid})
			qu.live++
		}
	}
	for p := range r.parts {
		qu := &r.parts[p]
		if !k.Ordered() {
			slices.SortFunc(qu.list, cmpWaiting)
		}
		if p < len(r.size) {
			qu.most = r.size[p]
		}
		qu.build(k)
	}
}

// admitIndexed is admitPartition over partition p's own queue: the heads
// from the first waiting job while they start or are planned, then
// backfill from the blocked head.
func (r *Rule) admitIndexed(k *baseline.Core, p int) {
	qu := &r.parts[p]
	qu.compact(k)
	read := 0
	for qu.first < len(qu.list) && qu.list[qu.first].dead {
		qu.first++
		read++
	}
	r.heads = r.heads[:0]
	// Under lend none without a platform a head started keeps its bounds
	// (remove).
	keep := r.knobs.Lend == LendNone && k.Seatable() == math.MaxInt
	h := qu.first
	for ; h < len(qu.list); h++ {
		e := qu.list[h]
		read++
		if e.dead {
			continue
		}
		qu.hint, qu.headStart = h, keep
		stop, held := r.headStep(k, p, k.IndexSubmitted(e.id, e.submitted))
		qu.hint, qu.headStart = -1, false
		if stop {
			break
		}
		if held {
			r.heads = append(r.heads, h)
		}
	}
	k.CountWalked(read)
	if h < len(qu.list) && r.ownerFree[p] > 0 {
		r.backfillIndexed(k, p, h)
	}
	r.reclaim(k, p)
}

// backfillIndexed is backfill's EASY pass (easy.Scheduler.Pass) from
// partition p's blocked head at place h, its candidates found by the
// tree: those it passes over would fail Pass's tests.
func (r *Rule) backfillIndexed(k *baseline.Core, p, h int) {
	qu := &r.parts[p]
	now := k.Now()
	r.runningOf(k, p)
	for _, x := range r.heads {
		e := qu.list[x]
		if e.id < len(r.planned) && r.planned[e.id] > 0 {
			req := k.Pend(k.IndexSubmitted(e.id, e.submitted))
			r.running = append(r.running, easy.Running{GPUs: r.planned[e.id], EstEnd: int64(now + req.Duration)})
		}
	}
	first := r.ownerFree[p] // the GPUs an elastic request is cut to
	head := k.Pend(k.IndexSubmitted(qu.list[h].id, qu.list[h].submitted))
	need := head.GPUs
	if !head.Rigid {
		need = min(need, first)
	}
	free := first
	r.jobs, r.jobIDs, r.jobAt = r.jobs[:0], r.jobIDs[:0], r.jobAt[:0]
	// The reservation is made before the first search whenever some live
	// job of the queue is narrow enough for the free GPUs (the tree's
	// root), so that every search asks Pass's whole test: Pass makes it
	// at the first job that fits, and a search for that job alone, found
	// and then refused for the shadow time, was four in ten of the
	// searches of a static replay's forks on 64 weeks of SDSC-SP2. The
	// jobs started are the same: Reservation only reads its arguments,
	// which no job started changes before it (free is still first), and
	// the first job that passes the whole test is the first of those
	// that fit to pass it. Where no job fits, neither makes one.
	k.CountWalked(1)
	if int(qu.least[1]) > free {
		return
	}
	shadow, extra := r.pass.Reservation(int64(now), free, r.running, need)
	reach, limit := extra, int(min(shadow-int64(now), math.MaxInt))
	for from := h + 1; free > 0; {
		x := qu.find(k, from, free, reach, limit)
		if x < 0 {
			break
		}
		from = x + 1
		e := qu.list[x]
		req := k.Pend(k.IndexSubmitted(e.id, e.submitted))
		gpus := req.GPUs
		if !req.Rigid {
			gpus = min(gpus, first)
		}
		if gpus > free {
			continue
		}
		switch {
		case int64(now)+int64(req.Duration) <= shadow:
		case gpus <= extra:
			extra -= gpus
			reach = extra
		default:
			r.refused++
			continue
		}
		free -= gpus
		r.jobs = append(r.jobs, easy.Job{GPUs: gpus, Estimate: int64(req.Duration)})
		r.jobIDs = append(r.jobIDs, queued{e.id, e.submitted})
		r.jobAt = append(r.jobAt, x)
	}
	for j, e := range r.jobIDs {
		qu.hint = r.jobAt[j]
		r.schedule(k, p, k.IndexSubmitted(e.id, e.submitted), r.jobs[j].GPUs)
	}
	qu.hint = -1
}
