package baseline

import (
	"cmp"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/easy"
)

// QueueKeys is what a rule that orders its queue by a key per request
// tells AdmitEASYKeyed: the key, higher first (ties by submit time, then
// id), and the epoch of the keys, which changes whenever any key may have
// changed. The key of a request is a function of its campaign and its
// submit time only, and within one campaign it does not grow with the
// submit time, so that each campaign's requests in submit order are in
// queue order (fairshare: the campaign's fair-share factor plus an age
// term; its QueueKey says why that holds to the bit).
//
// KeyCeiling is a ceiling on QueueKey(k, c, submitted) from now until
// CeilingGen changes: at least the key at this epoch and at every later
// one of the generation, to the bit. A ceiling may be loose (+Inf is one:
// every head is then keyed at every new epoch); the tighter it is, the
// fewer heads a pass keys. CeilingGen is read at a pass, after the keys'
// epoch.
type QueueKeys interface {
	QueueKey(k *Core, c policy.CampaignID, submitted int) float64
	KeyEpoch() uint64
	KeyCeiling(k *Core, c policy.CampaignID, submitted int) float64
	CeilingGen(k *Core) uint64
}

// Keyed is the queue of a rule whose order is QueueKeys', kept between
// passes for AdmitEASYKeyed, so that a pass on a trace's long queue reads
// the campaigns' heads, the requests that may start and the requests
// filed since the last pass, not the whole queue (issue 32; docs/traces.md
// "Work per job"). The rule tells it of every request the Core files and
// drops (Watcher: File and Leave); the filler's are not its to keep. The
// zero value is ready.
//
// Each campaign's requests wait in a list in submit order (struck out
// when they leave, dropped at once when they are half of the list), so
// that the queue is the merge of the lists: its head is the best of the
// campaigns' heads. Every key may change at every epoch (fairshare's
// period), so the heads are kept in a heap by their keys' ceilings
// (QueueKeys.KeyCeiling), which hold for a generation of epochs: a new
// epoch keys only the heads whose ceiling reaches the best key found
// (best), and the heap is built again only at a new generation; in
// between, only the campaigns whose head changed are ceiled and keyed
// again. A backfill reads each width's requests from a heap by estimate
// down to the head's shadow time (as Ranked does), which are the only
// ones EASY could start, and tries them in key order, keeping only the
// first few in order at a time (tryCands).
type Keyed struct {
	pool []keyedEntry
	free []int32
	// camps[c] is campaign c's requests in (submit time, id) order.
	camps []keyedList
	// heads are the campaigns with a request waiting, a max-heap by
	// their head's ceiling (hceil, as of generation gen); at[c] is c's
	// place in it (-1: none), dirty the campaigns whose head changed
	// since it was ceiled (marked in isDirty). hkey, hsub and hid are
	// c's head's key, submit time and id, keyed at stamp keyedAt[c]
	// (stamp counts the keys' epochs seen; 0: never). top is the best
	// head as of stamp (-1: to be found).
	heads   []policy.CampaignID
	at      []int32
	hceil   []float64
	hkey    []float64
	hsub    []int
	hid     []int
	keyedAt []uint64
	dirty   []policy.CampaignID
	isDirty []bool
	epoch   uint64
	stamp   uint64
	gen     uint64
	keyed   bool
	top     policy.CampaignID
	// widths[w] is a min-heap of the requests of w GPUs by estimate, then
	// id (pool slots; each entry's slot is its place); sized marks the w
	// with any.
	widths [][]int32
	sized  []uint64
	passBase
	// arrived are the requests filed since the last pass (still waiting
	// or not).
	arrived []keyedEntry
	// scratch for a pass.
	backfillCands
	stack []int
	front []int32
}

// keyedEntry is what Keyed keeps of a request: what does not change
// while it waits, and its place in its width's heap.
type keyedEntry struct {
	id, submitted, gpus, estimate int
	campaign                      policy.CampaignID
	slot                          int32
}

// keyedCand is a request a backfill may start, with its key.
type keyedCand struct {
	key                           float64
	id, submitted, gpus, estimate int
}

// keyedBefore is the queue order: key descending, then submit time, then
// id (a total order: ids are unique).
func keyedBefore(ka float64, sa, ida int, kb float64, sb, idb int) bool {
	if c := cmp.Compare(kb, ka); c != 0 {
		return c < 0
	}
	if sa != sb {
		return sa < sb
	}
	return ida < idb
}

func (a *keyedCand) before(b *keyedCand) bool {
	return keyedBefore(a.key, a.submitted, a.id, b.key, b.submitted, b.id)
}

// keyedList is one campaign's requests in (submit time, id) order, from
// front on; a struck-out place has pool -1, and dead counts those.
type keyedList struct {
	list        []keyedPlace
	front, dead int
}

type keyedPlace struct {
	submitted, id int
	pool          int32
}

func (p *keyedPlace) after(submitted, id int) bool {
	return p.submitted > submitted || p.submitted == submitted && p.id > id
}

// File adds request r (the rule's Watcher.Filed; not the filler's).
func (q *Keyed) File(k *Core, r *Request) {
	e := keyedEntry{id: r.ID, submitted: r.Submitted, gpus: r.GPUs, estimate: r.Duration, campaign: r.Campaign}
	p := takeSlot(&q.pool, &q.free)
	q.pool[p] = e
	c := int(r.Campaign)
	for len(q.camps) <= c {
		q.camps = append(q.camps, keyedList{})
		q.at = append(q.at, -1)
		q.hceil = append(q.hceil, 0)
		q.keyedAt = append(q.keyedAt, 0)
		q.hkey = append(q.hkey, 0)
		q.hsub = append(q.hsub, 0)
		q.hid = append(q.hid, 0)
		q.isDirty = append(q.isDirty, false)
	}
	l := &q.camps[c]
	at := len(l.list)
	for at > l.front && l.list[at-1].after(e.submitted, e.id) {
		at-- // a requeued job goes back to its place
	}
	l.list = slices.Insert(l.list, at, keyedPlace{submitted: e.submitted, id: e.id, pool: p})
	k.countMoved(len(l.list) - 1 - at)
	if at == l.front {
		q.markDirty(r.Campaign) // a new head
	}
	w := e.gpus
	for len(q.widths) <= w {
		q.widths = append(q.widths, nil)
	}
	for len(q.sized)*64 <= w {
		q.sized = append(q.sized, 0)
	}
	q.pool[p].slot = int32(len(q.widths[w]))
	q.widths[w] = append(q.widths[w], p)
	q.up(k, w, len(q.widths[w])-1)
	q.sized[w/64] |= 1 << (w % 64)
	q.filed++
	q.arrived = append(q.arrived, e)
}

// Leave forgets request r (the rule's Watcher.Left): found in its
// campaign's list by binary search (one request looked at), struck out,
// and taken out of its width's heap.
func (q *Keyed) Leave(k *Core, r *Request) {
	c := int(r.Campaign)
	if c >= len(q.camps) {
		return
	}
	l := &q.camps[c]
	k.countWalk(1)
	lo, hi := l.front, len(l.list)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if !l.list[m].after(r.Submitted, r.ID) && l.list[m].id != r.ID {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo >= len(l.list) || l.list[lo].id != r.ID || l.list[lo].pool < 0 {
		return
	}
	p := l.list[lo].pool
	l.list[lo].pool = -1
	l.dead++
	if lo == l.front {
		q.markDirty(r.Campaign)
	}
	for l.front < len(l.list) && l.list[l.front].pool < 0 {
		l.front++
		l.dead--
	}
	switch n := len(l.list) - l.front; {
	case n == 0:
		l.list, l.front, l.dead = l.list[:0], 0, 0
	case 2*(l.dead+l.front) > n+l.front:
		w := 0
		for _, x := range l.list[l.front:] {
			if x.pool >= 0 {
				l.list[w] = x
				w++
			}
		}
		k.countMoved(w)
		l.list, l.front, l.dead = l.list[:w], 0, 0
	}
	q.dropWidth(k, p)
	q.free = append(q.free, p)
	q.left++
}

// dropWidth takes pool entry p out of its width's heap.
func (q *Keyed) dropWidth(k *Core, p int32) {
	w := q.pool[p].gpus
	h := q.widths[w]
	x, last := int(q.pool[p].slot), len(h)-1
	if x != last {
		h[x] = h[last]
		q.pool[h[x]].slot = int32(x)
	}
	q.widths[w] = h[:last]
	if x < last {
		q.up(k, w, x)
		q.down(k, w, int(q.pool[q.widths[w][x]].slot))
	}
	if last == 0 {
		q.sized[w/64] &^= 1 << (w % 64)
	}
}

// shorter orders two entries of one width's heap: estimate, then id.
func (q *Keyed) shorter(a, b int32) bool {
	if da, db := q.pool[a].estimate, q.pool[b].estimate; da != db {
		return da < db
	}
	return q.pool[a].id < q.pool[b].id
}

// up and down restore heap widths[w] from place x, moving the entries
// on the way one place each (counted as moved) and the one at x once.
func (q *Keyed) up(k *Core, w, x int) {
	h := q.widths[w]
	e, moved := h[x], 0
	for x > 0 {
		p := (x - 1) / 2
		if !q.shorter(e, h[p]) {
			break
		}
		h[x] = h[p]
		q.pool[h[x]].slot = int32(x)
		moved++
		x = p
	}
	q.place(k, w, x, e, moved)
}

func (q *Keyed) down(k *Core, w, x int) {
	h := q.widths[w]
	e, moved := h[x], 0
	for {
		m := 2*x + 1
		if m >= len(h) {
			break
		}
		if r := m + 1; r < len(h) && q.shorter(h[r], h[m]) {
			m = r
		}
		if !q.shorter(h[m], e) {
			break
		}
		h[x] = h[m]
		q.pool[h[x]].slot = int32(x)
		moved++
		x = m
	}
	q.place(k, w, x, e, moved)
}

// place puts entry e at place x of heap widths[w], after moved others.
func (q *Keyed) place(k *Core, w, x int, e int32, moved int) {
	q.widths[w][x] = e
	q.pool[e].slot = int32(x)
	if moved > 0 {
		k.countMoved(moved + 1)
	}
}

func (q *Keyed) markDirty(c policy.CampaignID) {
	if !q.isDirty[c] {
		q.isDirty[c] = true
		q.dirty = append(q.dirty, c)
	}
}

// Waiting reports whether any request waits.
func (q *Keyed) Waiting() bool { return len(q.pool) > len(q.free) }

// head is the first waiting place of campaign c's list.
func (q *Keyed) head(c policy.CampaignID) *keyedEntry {
	l := &q.camps[c]
	return &q.pool[l.list[l.front].pool]
}

// headBefore orders the queue's heads by what was keyed of them (hkey,
// hsub, hid): c's head before d's.
func (q *Keyed) headBefore(c, d policy.CampaignID) bool {
	return keyedBefore(q.hkey[c], q.hsub[c], q.hid[c], q.hkey[d], q.hsub[d], q.hid[d])
}

// keyHead keys campaign c's head as of the current epoch, unless it is
// keyed already (one head read, a run: policy.Work.RunsRead).
func (q *Keyed) keyHead(k *Core, by QueueKeys, c policy.CampaignID) {
	if q.keyedAt[c] == q.stamp {
		return
	}
	k.readHead()
	h := q.head(c)
	q.hkey[c], q.hsub[c], q.hid[c] = by.QueueKey(k, c, h.submitted), h.submitted, h.id
	q.keyedAt[c] = q.stamp
}

// ceil writes the ceiling of campaign c's head (one head read).
func (q *Keyed) ceil(k *Core, by QueueKeys, c policy.CampaignID) {
	k.readHead()
	q.hceil[c] = by.KeyCeiling(k, c, q.head(c).submitted)
}

// readHead counts one campaign head read (a run, policy.Work.RunsRead).
func (k *Core) readHead() {
	if k.counting {
		k.work.RunsRead++
	}
}

// higher orders the heads' heap: c's ceiling above d's, then the lower
// campaign first (any order would do; this one is total).
func (q *Keyed) higher(c, d policy.CampaignID) bool {
	if q.hceil[c] != q.hceil[d] {
		return q.hceil[c] > q.hceil[d]
	}
	return c < d
}

func (q *Keyed) headsUp(k *Core, x int) {
	h := q.heads
	for x > 0 {
		p := (x - 1) / 2
		k.readHead()
		if !q.higher(h[x], h[p]) {
			return
		}
		h[x], h[p] = h[p], h[x]
		q.at[h[x]], q.at[h[p]] = int32(x), int32(p)
		x = p
	}
}

func (q *Keyed) headsDown(k *Core, x int) {
	h := q.heads
	for {
		m := x
		if l := 2*x + 1; l < len(h) {
			k.readHead()
			if q.higher(h[l], h[m]) {
				m = l
			}
		}
		if r := 2*x + 2; r < len(h) {
			k.readHead()
			if q.higher(h[r], h[m]) {
				m = r
			}
		}
		if m == x {
			return
		}
		h[x], h[m] = h[m], h[x]
		q.at[h[x]], q.at[h[m]] = int32(x), int32(m)
		x = m
	}
}

// headsFix restores the heads' heap at place x, where the entry changed.
func (q *Keyed) headsFix(k *Core, x int) {
	c := q.heads[x]
	q.headsUp(k, x)
	q.headsDown(k, int(q.at[c]))
}

// syncHeads brings the heads up to the lists, to the keys' epoch and to
// the ceilings' generation. A new epoch makes every key stale (and the
// best head unknown); a new generation ceils every waiting campaign's
// head again and builds the heap; otherwise only the campaigns whose head
// changed are ceiled again, each fixed in the heap, and, while the best
// head is known and is not one of them, keyed against it (the others'
// keys did not move).
func (q *Keyed) syncHeads(k *Core, by QueueKeys) {
	if e := by.KeyEpoch(); !q.keyed || e != q.epoch {
		q.epoch = e
		q.stamp++
		q.top = -1
	}
	rebuild := !q.keyed
	if g := by.CeilingGen(k); g != q.gen {
		q.gen, rebuild = g, true
	}
	if rebuild {
		q.top = -1 // found again from the new ceilings
	}
	q.keyed = true
	for _, c := range q.dirty {
		q.isDirty[c] = false
		q.keyedAt[c] = 0 // a new head, or none
		if c == q.top {
			q.top = -1
		}
		l := &q.camps[c]
		waiting := l.front < len(l.list)
		x := int(q.at[c])
		switch {
		case waiting && x < 0:
			x = len(q.heads)
			q.heads = append(q.heads, c)
			q.at[c] = int32(x)
		case !waiting && x >= 0:
			q.dropHead(x)
			if x < len(q.heads) && !rebuild {
				q.headsFix(k, x)
			}
			continue
		case !waiting:
			continue
		}
		if rebuild {
			continue // ceiled below
		}
		q.ceil(k, by, c)
		q.headsFix(k, int(q.at[c]))
		if q.top >= 0 {
			q.keyHead(k, by, c)
			if q.headBefore(c, q.top) {
				q.top = c
			}
		}
	}
	q.dirty = q.dirty[:0]
	if rebuild {
		for _, c := range q.heads {
			q.ceil(k, by, c)
		}
		for x := len(q.heads)/2 - 1; x >= 0; x-- {
			q.headsDown(k, x)
		}
	}
}

// best is the campaign whose head is first in the queue (-1: none
// waits). Unless known (top), it is found by a search of the heads' heap
// from its root, highest ceiling first, keying each head it reaches, that
// stops at the first ceiling below the best key found: no head below it
// can come first, as each key is at most its ceiling and no ceiling in
// the heap is above its parent's. The search's own heap of places
// (front) counts its comparisons as head reads.
func (q *Keyed) best(k *Core, by QueueKeys) policy.CampaignID {
	if len(q.heads) == 0 {
		return -1
	}
	if q.top >= 0 {
		return q.top
	}
	best := policy.CampaignID(-1)
	f := append(q.front[:0], 0)
	for len(f) > 0 {
		x := f[0]
		f = q.frontPop(k, f)
		c := q.heads[x]
		if best >= 0 && q.hceil[c] < q.hkey[best] {
			break
		}
		q.keyHead(k, by, c)
		if best < 0 || q.headBefore(c, best) {
			best = c
		}
		for ch := 2*x + 1; ch <= 2*x+2 && int(ch) < len(q.heads); ch++ {
			f = q.frontPush(k, f, ch)
		}
	}
	q.front = f[:0]
	q.top = best
	return best
}

// frontPush and frontPop keep best's places in a max-heap by their
// heads' ceilings.
func (q *Keyed) frontPush(k *Core, f []int32, x int32) []int32 {
	f = append(f, x)
	for i := len(f) - 1; i > 0; {
		p := (i - 1) / 2
		k.readHead()
		if !q.higher(q.heads[f[i]], q.heads[f[p]]) {
			break
		}
		f[i], f[p] = f[p], f[i]
		i = p
	}
	return f
}

func (q *Keyed) frontPop(k *Core, f []int32) []int32 {
	last := len(f) - 1
	f[0] = f[last]
	f = f[:last]
	for i := 0; ; {
		m := i
		for _, ch := range [2]int{2*i + 1, 2*i + 2} {
			if ch < len(f) {
				k.readHead()
				if q.higher(q.heads[f[ch]], q.heads[f[m]]) {
					m = ch
				}
			}
		}
		if m == i {
			return f
		}
		f[i], f[m] = f[m], f[i]
		i = m
	}
}

// dropHead takes the campaign at place x out of the heads, the last
// taking its place.
func (q *Keyed) dropHead(x int) {
	last := len(q.heads) - 1
	q.at[q.heads[x]] = -1
	if x < last {
		q.heads[x] = q.heads[last]
		q.at[q.heads[x]] = int32(x)
	}
	q.heads = q.heads[:last]
}

// Forget makes the next AdmitEASYKeyed pass build on nothing: a rule
// calls it after a pass it made another way.
func (q *Keyed) Forget() {
	q.forget()
	q.arrived = q.arrived[:0]
}

// Entries is the number of entries q keeps: a copy of the queue moves
// them.
func (q *Keyed) Entries() int {
	n := len(q.pool) + len(q.heads)
	for c := range q.camps {
		n += len(q.camps[c].list)
	}
	for w := range q.widths {
		n += len(q.widths[w])
	}
	return n
}

// Clone is a copy of q that shares nothing with it.
func (q *Keyed) Clone() Keyed {
	c := *q
	c.pool, c.free = slices.Clone(q.pool), slices.Clone(q.free)
	c.camps = slices.Clone(q.camps)
	for i := range c.camps {
		c.camps[i].list = slices.Clone(q.camps[i].list)
	}
	c.heads, c.at, c.hkey = slices.Clone(q.heads), slices.Clone(q.at), slices.Clone(q.hkey)
	c.hceil, c.keyedAt = slices.Clone(q.hceil), slices.Clone(q.keyedAt)
	c.hsub, c.hid = slices.Clone(q.hsub), slices.Clone(q.hid)
	c.dirty, c.isDirty = slices.Clone(q.dirty), slices.Clone(q.isDirty)
	c.widths, c.sized = CloneLists(q.widths), slices.Clone(q.sized)
	c.arrived = slices.Clone(q.arrived)
	c.backfillCands = q.backfillCands.clone()
	c.stack = slices.Clone(q.stack)
	c.front = slices.Clone(q.front)
	return c
}

// AdmitEASYKeyed is AdmitEASY over q's order (by's keys, then submit
// time, then id), for a rule whose Limit is the pool for every campaign,
// while the Core is Indexable; q must have been told of every request
// filed and dropped. It decides exactly as AdmitEASY does over that
// order, and writes each request's Key (by's) before it is granted, as
// the rule's order would have:
//
//   - Steps 1 and 2 start or preempt for the head in q's order, the best
//     of the campaigns' heads, as AdmitEASY does (every want is the
//     request's size: none is passed over).
//   - Step 3 starts, in queue order, each request that the EASY rule
//     lets start given what the ones before it took (easy.Backfills).
//     Free GPUs and extra GPUs only fall during the pass, so a request
//     that could not start with the pass's first free and extra GPUs
//     cannot later: only the requests narrow enough for the free GPUs,
//     and narrow enough for the extra ones or short enough to end by the
//     shadow time, are read (each width's heap by estimate) and tried
//     in queue order as the pass tries them (tryCands).
//   - A pass after which nothing changed but requests filed behind the
//     same head (no lease started, ended or was noticed, nothing left the
//     queue) finds every request the last pass left unable to start
//     unable still, whatever the order now (its free and extra GPUs are
//     where that pass left them, and its shadow time has not moved), and
//     backfills only from the requests filed since.
func (k *Core) AdmitEASYKeyed(e *EASY, q *Keyed, by QueueKeys, eligible func(head *Request, l *Lease) bool) {
	if q.firstWidth() > k.FreeGeneral() && k.reserved == 0 && k.yielding == 0 {
		// Nothing can start, nor be noticed: the pass would change nothing.
		return
	}
	var head keyedCand
	for {
		q.syncHeads(k, by)
		c := q.best(k, by)
		if c < 0 {
			q.endKeyedPass(k, -1)
			return
		}
		h := q.head(c)
		i := k.IndexSubmitted(h.id, h.submitted)
		k.pending[i].Key = q.hkey[c]
		head = keyedCand{key: q.hkey[c], id: h.id, submitted: h.submitted, gpus: h.gpus, estimate: h.estimate}
		if !k.startOrPreempt(e, i, eligible) {
			break
		}
	}
	free := max(0, k.FreeGeneral())
	clean := q.builds(k, head.id)
	if free > 0 {
		if clean {
			q.backfillArrived(k, e, by, &head, free)
		} else {
			q.backfill(k, e, by, &head, free)
		}
	}
	q.endKeyedPass(k, head.id)
}

// endKeyedPass notes the state a pass left, which the next builds on.
func (q *Keyed) endKeyedPass(k *Core, head int) {
	q.endPass(k, head)
	q.arrived = q.arrived[:0]
}

// backfillArrived is step 3 over the requests filed since the last pass
// (a clean pass, see AdmitEASYKeyed): those behind the head in queue
// order (the others started before it in this pass) that fit in free
// GPUs.
func (q *Keyed) backfillArrived(k *Core, e *EASY, by QueueKeys, head *keyedCand, free int) {
	k.countWalk(len(q.arrived))
	q.cands = q.cands[:0]
	for _, a := range q.arrived {
		if a.gpus > free {
			continue
		}
		c := keyedCand{key: by.QueueKey(k, a.campaign, a.submitted), id: a.id, submitted: a.submitted, gpus: a.gpus, estimate: a.estimate}
		if head.before(&c) {
			q.cands = append(q.cands, c)
		}
	}
	if len(q.cands) == 0 {
		return
	}
	k.easyRunning(e, &k.pending[k.IndexSubmitted(head.id, head.submitted)])
	shadow, extra := e.pass.Reservation(int64(k.now), free, e.running, head.gpus)
	q.reread(k, int64(k.now), shadow, extra, free)
	q.tryCands(k, shadow, extra, free)
}

// backfill is step 3 of a pass that builds on nothing (see
// AdmitEASYKeyed).
func (q *Keyed) backfill(k *Core, e *EASY, by QueueKeys, head *keyedCand, free int) {
	if q.firstWidth() > free {
		return // nothing fits: the pass would start nothing
	}
	k.easyRunning(e, &k.pending[k.IndexSubmitted(head.id, head.submitted)])
	now := int64(k.now)
	shadow, extra := e.pass.Reservation(now, free, e.running, head.gpus)
	q.reset()
	q.fitting(k, free, extra, shadow-now, func(p int32) {
		a := &q.pool[p]
		if a.id != head.id {
			q.offer(k, keyedCand{key: by.QueueKey(k, a.campaign, a.submitted), id: a.id, submitted: a.submitted, gpus: a.gpus, estimate: a.estimate})
		}
	})
	q.tryCands(k, shadow, extra, free)
}

// tryCands grants, in order, the candidates that start when tried in
// queue order as the EASY pass tries them (backfillCands.pick), as
// AdmitEASY's pass does.
func (q *Keyed) tryCands(k *Core, shadow int64, extra, free int) {
	for _, s := range q.pick(k, shadow, extra, free) {
		i := k.IndexSubmitted(s.id, s.submitted)
		if s.gpus <= k.FreeGeneral() {
			if k.pending[i].Reserved > 0 {
				// Its grant frees the GPUs reserved for it: the pass
				// ends with more free than it counted, and the next
				// cannot build on it.
				q.unfounded = true
			}
			k.pending[i].Key = s.key
			k.Grant(i, s.gpus)
		}
	}
}

// backfillCands are the candidates of one backfill pass behind a blocked
// head, in no particular order, for a queue kept in an order of its own
// (Keyed, Ranked): first, the first few in queue order, and cands, the
// others (offer). pick tries them in queue order without sorting them
// all. The zero value is ready.
type backfillCands struct {
	first, cands, starts []keyedCand
}

// reset empties the candidates for a new pass.
func (b *backfillCands) reset() { b.first, b.cands = b.first[:0], b.cands[:0] }

// clone is a copy of b that shares nothing with it.
func (b *backfillCands) clone() backfillCands {
	return backfillCands{first: slices.Clone(b.first), cands: slices.Clone(b.cands), starts: slices.Clone(b.starts)}
}

// pick tries the candidates in queue order as the EASY pass does
// (easy.Backfills, with the head's shadow time and extra GPUs, and free
// GPUs free) and returns those that start, in order, valid until the
// next pick.
//
// A pass may have many candidates but start few: its free GPUs run out
// first. So they are not sorted (n·log₂n comparisons, which grew per job
// with the log's queue, issue 32): the first few are tried, and the rest
// read again for their first few only if GPUs are left after them.
func (b *backfillCands) pick(k *Core, shadow int64, extra, free int) []keyedCand {
	now := int64(k.now)
	b.starts = b.starts[:0]
	for {
		for _, c := range b.first {
			if free <= 0 {
				break
			}
			if c.gpus > free {
				continue
			}
			ok := false
			if ok, extra = easy.Backfills(now, shadow, extra, easyJob{GPUs: c.gpus, Estimate: int64(c.estimate)}); !ok {
				continue
			}
			free -= c.gpus
			b.starts = append(b.starts, c)
		}
		if free <= 0 || len(b.cands) == 0 {
			break
		}
		b.reread(k, now, shadow, extra, free)
	}
	return b.starts
}

// firstCandsKept is how many candidates first keeps: a pass starts a
// few at most before its free GPUs run out. Of 1 to 8, 2 did the least
// work per job on SDSC-SP2's first 64 weeks under fairshare (placing
// fewer kept ones against reading the rest again less often).
const firstCandsKept = 2

// offer adds backfill candidate c: to first if it is among the first
// firstCandsKept in queue order offered so far (the last of them then
// moving to cands), else to cands. Its comparison with the last kept
// is part of the look that found it (counted by the caller, as fittingIn
// counts its test of the estimate); the binary search that places a
// kept one is counted, one request looked at per comparison
// (policy.Work.Walked). For n candidates in no particular order that is
// about K·ln(n/K)·log₂K comparisons beyond the n looks (K =
// firstCandsKept), where a sort would take n·log₂n.
func (b *backfillCands) offer(k *Core, c keyedCand) {
	if n := len(b.first); n == firstCandsKept {
		if !c.before(&b.first[n-1]) {
			b.cands = append(b.cands, c)
			return
		}
		b.cands = append(b.cands, b.first[n-1])
		b.first = b.first[:n-1]
	}
	lo, hi := 0, len(b.first)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		k.countWalk(1)
		if b.first[m].before(&c) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	b.first = slices.Insert(b.first, lo, c)
}

// reread offers again the candidates in cands (each read counted) that
// could still start with free and extra GPUs: a pass's free and extra
// GPUs only fall, so a candidate that cannot start once cannot later in
// the pass, and those dropped now are never read again. first is
// emptied: its candidates, before all of cands in queue order, were
// tried.
func (b *backfillCands) reread(k *Core, now, shadow int64, extra, free int) {
	rest := b.cands
	k.countWalk(len(rest))
	// offer writes cands at most one place past what was read of rest.
	b.first, b.cands = b.first[:0], rest[:0]
	for _, c := range rest {
		if c.gpus > free || now+int64(c.estimate) > shadow && c.gpus > extra {
			continue // it cannot start now, nor later in the pass
		}
		b.offer(k, c)
	}
}

// fitting calls f with every waiting entry of at most free GPUs that
// either is at most extra wide or is estimated to run at most limit
// seconds (fittingIn over q's widths).
func (q *Keyed) fitting(k *Core, free, extra int, limit int64, f func(p int32)) {
	fittingIn(k, q.sized, nil, q.widths, &q.stack, free, extra, limit, func(p int32) int64 { return int64(q.pool[p].estimate) }, f)
}

// firstWidth is the narrowest width waiting (MaxInt: none).
func (q *Keyed) firstWidth() int { return firstSet(q.sized) }
