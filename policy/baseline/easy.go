package baseline

import (
	"math"
	"slices"
)

// EASY is the scratch space of an EASY admission (docs/studies.md §2.1 steps 3
// and 4): the pass itself is policy/easy's, this adapts the lease table and
// the pending list to it. The zero value is ready; a pass allocates
// nothing once the buffers have grown.
type EASY struct {
	pass    easyScheduler
	running []easyRunning
	jobs    []easyJob
	ids     []int
	wants   []int
	// leaseIDs are the running leases' ids, on a platform (easyRunning).
	leaseIDs []int

	// The head and the rule's eligibility, behind one closure made once.
	head     *Request
	eligible func(head *Request, l *Lease) bool
	el       func(l *Lease) bool

	// Order, if set, is the order a blocked head takes its victims in
	// (Core.Preempt's order; nil: VictimOrder). A rule sets it before each
	// AdmitEASY: a copy of the Core (trace.CloneAllocator) drops it.
	Order func(a, b *Lease) int

	// VictimKey, if set, takes the place of Order: victims in
	// KeyedVictimOrder by this key, worked out once per candidate
	// (Core.PreemptKeyed). Like Order, a copy of the Core drops it.
	VictimKey VictimKey

	// Key, if set, writes a request's Key just before it is granted: a
	// rule whose keys follow its priorities sets them where the grant
	// record reads them instead of over the whole queue each pass.
	Key func(r *Request)

	// Search, if set, is called before each victim search with the head,
	// so that an eligibility that keeps running state (budget's
	// final-share check counts what each victim campaign has lost so far)
	// starts afresh; it reports whether to search (false: the rule knows
	// that the search would notice nothing, and it is skipped). Like
	// Order, a copy of the Core drops it.
	Search func(head *Request) bool

	// AdmitEASYRanked's scratch: the merge cursors of one rank, and the
	// queue order it builds when it needs the plain backfill.
	cursors []int
	order   Queue
}

// AdmitEASY admits the pending requests ids (not the filler's), in the
// queue order the rule chose (FCFS, or priority order):
//
//  1. While the head fits (whole, or by the broker's partial-grant rule,
//     docs/studies.md §6.1, with its reservation), start it.
//  2. A head that does not fit may preempt: the filler's leases always
//     (§6.2), others where eligible accepts them for that head (nil: none),
//     as Core.Preempt does (§6.6).
//  3. One EASY backfill pass over the rest of the queue from the head on:
//     the running leases' estimated ends are their ends (expiry, or the
//     preemption time under notice), and the GPUs the head already has
//     reserved count as ending now, so the head's shadow time is right;
//     backfilled jobs start whole in the GPUs nobody has reserved.
//
// A request whose campaign is at its limit (Want 0) cannot run and is left
// out of the pass.
func (k *Core) AdmitEASY(e *EASY, ids []int, eligible func(head *Request, l *Lease) bool) {
	h := 0
	for ; h < len(ids); h++ {
		i := k.Index(ids[h])
		if k.Want(i) == 0 {
			continue // a campaign at its limit does not hold the queue
		}
		if !k.startOrPreempt(e, i, eligible) {
			break
		}
	}
	if h < len(ids) {
		k.easyBackfill(e, ids, h)
	}
}

// startOrPreempt is steps 1 and 2 for head candidate i (its campaign not
// at its limit): start it if it fits, else put under notice what it lacks
// (the filler's leases, and others' where eligible accepts them for this
// head). It reports whether the request started and left the list.
func (k *Core) startOrPreempt(e *EASY, i int, eligible func(head *Request, l *Lease) bool) bool {
	room := k.rule.Room(k, k.pending[i].Campaign)
	if e.Key != nil {
		e.Key(&k.pending[i])
	}
	if k.TryStart(i, room) {
		return true
	}
	var el func(l *Lease) bool
	if eligible != nil {
		if e.el == nil {
			e.el = func(l *Lease) bool { return e.eligible(e.head, l) }
		}
		e.head, e.eligible, el = &k.pending[i], eligible, e.el
	}
	if e.Search != nil && !e.Search(&k.pending[i]) {
		e.head = nil
		return false
	}
	if e.VictimKey != nil {
		k.PreemptKeyed(i, k.Missing(i, room), e.VictimKey, el)
	} else {
		k.Preempt(i, k.Missing(i, room), e.Order, el)
	}
	e.head = nil
	return false
}

// easyBackfill is AdmitEASY's step 3: the pass over the queue from the
// blocked head ids[h] on.
func (k *Core) easyBackfill(e *EASY, ids []int, h int) {
	head := &k.pending[k.Index(ids[h])]
	k.easyRunning(e, head)
	e.jobs, e.ids, e.wants = e.jobs[:0], e.ids[:0], e.wants[:0]
	for _, id := range ids[h:] {
		i := k.Index(id)
		want := k.Want(i)
		if want == 0 {
			continue
		}
		e.jobs = append(e.jobs, easyJob{GPUs: want, Estimate: int64(k.pending[i].Duration)})
		e.ids = append(e.ids, id)
		e.wants = append(e.wants, want)
	}
	k.easyPass(e, nil)
}

// easyRunning lists the running leases for the pass, and the GPUs the
// blocked head has reserved as ending now.
func (k *Core) easyRunning(e *EASY, head *Request) {
	e.running = e.running[:0]
	for j := range k.leases {
		l := &k.leases[j]
		e.running = append(e.running, easyRunning{GPUs: l.GPUs, EstEnd: int64(l.Estimated())})
	}
	if head.Reserved > 0 {
		e.running = append(e.running, easyRunning{GPUs: head.Reserved, EstEnd: int64(k.now)})
	}
	if k.placer != nil {
		// The leases' ids, for the reservation on nodes (PassOn); the
		// head's reserved GPUs are free on their nodes already (-1).
		e.leaseIDs = e.leaseIDs[:0]
		for j := range k.leases {
			e.leaseIDs = append(e.leaseIDs, k.leases[j].ID)
		}
		if head.Reserved > 0 {
			e.leaseIDs = append(e.leaseIDs, -1)
		}
	}
}

// easyPass runs the pass over e.jobs and starts what it picks, telling
// granted (if not nil) of each request just before it starts.
func (k *Core) easyPass(e *EASY, granted func(r *Request)) {
	var start []int
	if k.placer == nil {
		start = e.pass.Pass(int64(k.now), max(0, k.FreeGeneral()), e.running, e.jobs)
	} else {
		k.board.Reset(k.placer)
		start = e.pass.PassOn(int64(k.now), max(0, k.FreeGeneral()), &k.board, e.running, e.leaseIDs, e.jobs)
	}
	for _, j := range start {
		i := k.Index(e.ids[j])
		if want := e.wants[j]; want <= k.FreeGeneral() {
			if e.Key != nil {
				e.Key(&k.pending[i])
			}
			if granted != nil {
				granted(&k.pending[i])
			}
			k.Grant(i, want)
		}
	}
}

// IsFiller reports whether lease l is the filler's.
func (k *Core) IsFiller(l *Lease) bool { return k.camps[l.Campaign].Filler }

// AdmitEASYRanked is AdmitEASY over q, in the order of rank[campaign]
// (ascending; the campaigns in byRank, rank order, hold every campaign
// waiting), then submit time, then id, for a rule whose Limit is the pool
// for every campaign (budget). It decides exactly as AdmitEASY over that
// order and journals the same:
//
//   - Steps 1 and 2 walk the order from its head (each rank's campaigns'
//     requests merged by submit time and id) as AdmitEASY does, calling
//     Want, TryStart and Preempt on the same requests in the same order.
//   - Under the pool limit Want is a rigid job's size, else its size
//     capped by the pool less its campaign's holding, and it journals a
//     throttle only for a campaign holding the whole pool. While none
//     does, no request before the blocked head was passed over, and the
//     wants are computed here, without Want.
//   - The pass starts nothing with no GPU free; and while the blocked
//     head does not fit (it failed to start), the jobs that want more
//     than is free are passed over by it one by one without effect, so
//     its queue is the head and then only the requests that may fit, in
//     order: q lists them by the fewest GPUs they could want. Without a
//     platform, of those only the ones narrow enough for the extra GPUs
//     at the head's shadow time or short enough to end by it (q keeps
//     each width's by estimate): the pass would pass over the others.
//     They are tried in queue order as the pass tries them, without
//     sorting them all (backfillCands.pick, as AdmitEASYKeyed's); on a
//     platform, whose seats make a job's fit depend on the seats taken
//     before it, they are sorted and the pass runs over them.
//
// In any other case it builds the order and runs AdmitEASY's backfill.
// q must be synced (Ranked.Sync) to the pending list; it follows the
// grants.
func (k *Core) AdmitEASYRanked(e *EASY, q *Ranked, rank, byRank []int, eligible func(head *Request, l *Lease) bool) {
	head := k.easyRankedHeads(e, q, rank, byRank, eligible)
	if head < 0 {
		return
	}
	hj := &q.jobs[head]
	pool := k.cfg.Pool
	if k.leased >= pool && len(k.leases) > 0 && k.camps[k.leases[0].Campaign].HeldAll >= pool {
		// One campaign holds the whole pool (all leases are its): Want
		// may journal its requests' throttles, in queue order; but only
		// a request that is not rigid's (a rigid job is never throttled
		// under the pool limit), and with nothing free the pass starts
		// nothing, so with none waiting the pass would do nothing.
		if k.flexPending == 0 && k.FreeGeneral() <= 0 {
			return
		}
		k.easyRankedPlain(e, q, rank, hj.id)
		return
	}
	free := k.FreeGeneral()
	if free <= 0 {
		return
	}
	want := func(j *rankedJob) int {
		if j.rigid {
			return j.gpus
		}
		return min(j.gpus, pool-k.camps[j.campaign].HeldAll)
	}
	headWant := want(hj)
	if headWant <= free {
		k.easyRankedPlain(e, q, rank, hj.id)
		return
	}
	k.easyRunning(e, &k.pending[k.Index(hj.id)])
	q.reset()
	// A candidate's key is its campaign's rank negated: the candidates'
	// order (backfillCands) is the higher key first, then submit time,
	// then id.
	cand := func(p int32) (keyedCand, bool) {
		j := &q.jobs[p]
		w := want(j)
		return keyedCand{key: -float64(rank[j.campaign]), id: j.id, submitted: j.submitted, gpus: w, estimate: j.duration}, p != head && w <= free
	}
	if k.placer != nil {
		q.fittingWithin(k, free, free, math.MaxInt64, func(p int32) { // every one narrow enough
			if c, ok := cand(p); ok {
				q.cands = append(q.cands, c)
			}
		})
		k.easyRankedOn(e, q, headWant, hj)
		return
	}
	// Only the jobs the pass could backfill, by the head's reservation
	// (the pass reserves the same): a job that fails its tests with every
	// GPU free now fails them later in the pass.
	now := int64(k.now)
	shadow, extra := e.pass.Reservation(now, free, e.running, headWant)
	q.fittingWithin(k, free, extra, shadow-now, func(p int32) {
		if c, ok := cand(p); ok {
			q.offer(k, c)
		}
	})
	for _, s := range q.pick(k, shadow, extra, free) {
		i := k.Index(s.id)
		if s.gpus <= k.FreeGeneral() {
			if e.Key != nil {
				e.Key(&k.pending[i])
			}
			q.removeRequest(&k.pending[i])
			k.Grant(i, s.gpus)
		}
	}
}

// easyRankedOn is AdmitEASYRanked's backfill on a platform: the blocked
// head hj (wanting headWant) and then q.cands, sorted into queue order
// (each comparison counted as a request looked at), through the pass.
func (k *Core) easyRankedOn(e *EASY, q *Ranked, headWant int, hj *rankedJob) {
	slices.SortFunc(q.cands, func(a, b keyedCand) int {
		k.countWalk(1)
		if a.before(&b) {
			return -1
		}
		return 1 // ids are unique: a and b are never equal
	})
	e.ids = append(e.ids[:0], hj.id)
	e.jobs = append(e.jobs[:0], easyJob{GPUs: headWant, Estimate: int64(hj.duration)})
	e.wants = append(e.wants[:0], headWant)
	for _, c := range q.cands {
		e.ids = append(e.ids, c.id)
		e.jobs = append(e.jobs, easyJob{GPUs: c.gpus, Estimate: int64(c.estimate)})
		e.wants = append(e.wants, c.gpus)
	}
	k.easyPass(e, q.removeRequest)
}

// easyRankedHeads is AdmitEASY's steps 1 and 2 in q's order; it returns
// the blocked head's slot in q (-1: none).
func (k *Core) easyRankedHeads(e *EASY, q *Ranked, rank, byRank []int, eligible func(head *Request, l *Lease) bool) int32 {
	for g := 0; g < len(byRank); {
		end := g + 1
		for end < len(byRank) && rank[byRank[end]] == rank[byRank[g]] {
			end++
		}
		members := byRank[g:end]
		g = end
		e.cursors = Ints(e.cursors, len(members))
		for {
			// The next request of this rank: the first by (submit time,
			// id) at the members' cursors.
			m, p := -1, int32(-1)
			for x, c := range members {
				if c >= len(q.camps) {
					continue
				}
				if list := q.camps[c]; e.cursors[x] < len(list) {
					if cand := list[e.cursors[x]]; m < 0 || q.before(cand, p) {
						m, p = x, cand
					}
				}
			}
			if m < 0 {
				break
			}
			i := k.Index(q.jobs[p].id)
			if k.Want(i) == 0 {
				e.cursors[m]++ // a campaign at its limit does not hold the queue
				continue
			}
			if !k.startOrPreempt(e, i, eligible) {
				return p
			}
			q.remove(p) // started: the cursor now points at the next
		}
	}
	return -1
}

// easyRankedPlain runs AdmitEASY's own backfill from the blocked head on,
// over the order built in full.
func (k *Core) easyRankedPlain(e *EASY, q *Ranked, rank []int, head int) {
	ids := e.order.BuildRanked(k, rank)
	h := slices.Index(ids, head)
	before := len(k.pending)
	k.easyBackfill(e, ids, h)
	if len(k.pending) != before {
		// Let the next Sync rebuild q rather than track these grants.
		q.synced = false
	}
}
