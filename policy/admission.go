package policy

import (
	"cmp"
	"math"
	"slices"
)

// FairDeficit is campaign c's share of the guarantees less its share of the
// usage over the fair-share window: positive when it has used less than it
// was promised.
func (b *Broker) FairDeficit(c CampaignID) float64 {
	cp := &b.camps[c]
	if cp.deficitAt != b.usageEpoch {
		// Every change of a usage sum or a share moves the epoch.
		cp.deficit = cp.share - float64(cp.usage.sum)/float64(max(b.usageTotal, 1))
		cp.deficitAt = b.usageEpoch
	}
	return cp.deficit
}

// pendingKey is one run of the pending list: a maximal stretch of one
// campaign and class, whose requests always share their admission sort
// keys, with those keys (read once per pass) and its place among the
// runs before the sort. The pending list is the sequence of its runs
// (Broker.runs), each holding its requests in admission order in its own
// slice (a Request holds no pointer): sorts, crossings and skips permute
// the runs, and admission compacts only the runs it walks (issue 32: on
// 64 weeks of SDSC-SP2, ~35 runs hold ~480 requests at a pass).
type pendingKey struct {
	deficit, tokens float64
	// pos is the run's place in the list (its index among the runs):
	// the last sort key, so that an unstable sort is the stable one.
	pos   int32
	class Class
	// camp is the run's campaign (a run's requests share it).
	camp int32
	// slot holds the run's requests, never empty: Broker.runReqs[slot].
	// (An index, not the slice: a key of 32 bytes, not 56, is what the
	// sorts move; BenchmarkAdmission, whose runs are one request each,
	// ran 20–50 % slower with the slice here.)
	slot int32
}

// comparePendingKeys orders the pending list: class rank ascending,
// fair-share deficit descending, GPU tokens descending, then the position
// before the sort. The last key makes the order total, so an unstable
// O(n log n) sort gives exactly what the model's stable sort gives.
func comparePendingKeys(a, b pendingKey) int {
	if c := cmp.Compare(a.class, b.class); c != 0 {
		return c
	}
	if a.deficit != b.deficit {
		if a.deficit > b.deficit {
			return -1
		}
		return 1
	}
	if a.tokens != b.tokens {
		if a.tokens > b.tokens {
			return -1
		}
		return 1
	}
	return cmp.Compare(a.pos, b.pos)
}

// admit is one admission pass (model.md §5). The pending list is put in the
// order of a stable sort and keeps that order; then every request is tried
// once, in order, against grants made earlier in the same pass.
//
// admitOne only changes the request it is given, and grants only append
// leases, so each run's requests are walked and compacted in place, in
// the run's own slice: a quiet campaign's run (throttled.go) is kept
// whole without a try, and nothing else moves. The runs of the
// compacted list are the old ones less the emptied, those that then
// meet merged (keepRun). Where no trace job is pending (the agent
// scenario) no campaign is quiet (an agent's request is always tried,
// throttled.go), and every run is walked.
func (b *Broker) admit() {
	if len(b.runs) == 0 {
		return
	}
	b.order()
	if b.counting {
		b.countPass()
	}
	runs := b.runs
	rigid := b.rigidPending > 0
	if rigid {
		b.refreshFloors(runs)
	}
	nr := 0
	walked, read, moved := 0, 0, 0 // (Work)
	ahead := len(runs) >= touchMinRuns
	for i := range runs {
		if ahead && i&(touchBatch-1) == 0 {
			b.touchRuns(runs, i+touchBatch)
		}
		reqs := b.runReqs[runs[i].slot]
		switch {
		case rigid && b.quietCampaign(&b.camps[runs[i].camp]):
		case b.runInert(&runs[i]):
			read++ // its summary, not its requests
		default:
			walked += len(reqs)
			// The summary of the requests kept, with the fill and the
			// held GPUs their tries saw at most (a grant in the walk
			// adds to them).
			cp := &b.camps[runs[i].camp]
			var sum runSummary
			sum.empty()
			sum.fill, sum.held = cp.tokens, cp.heldAll
			w := 0
			for j := range reqs {
				if b.admitOne(&reqs[j]) {
					if w != j {
						reqs[w] = reqs[j]
						moved++
					}
					sum.tried(&reqs[w])
					w++
				}
			}
			reqs = reqs[:w]
			b.runReqs[runs[i].slot] = reqs
			*b.sumOf(runs[i].slot) = sum
		}
		if len(reqs) == 0 {
			b.freeSlot(runs[i].slot)
			continue
		}
		var m int
		nr, m = b.keepRun(runs, nr, runs[i])
		moved += m
	}
	clear(runs[nr:])
	b.runs = runs[:nr]
	if b.counting {
		b.work.Walked += int64(walked)
		b.work.RunsRead += int64(read)
		b.work.Moved += int64(moved)
	}
}

// The walk reads each run's campaign, slot, summary and requests in
// priority order, which is no order in memory: with many runs these are
// beyond the caches (BenchmarkAdmission at 10,000 campaigns: 4 MB of
// campaign records), and a walk that reads them as it comes to them
// waits for each line in turn, a run's slot before its requests, since
// a run's tries are more instructions than the processor looks ahead.
// So from touchMinRuns runs on, every touchBatch runs the walk first
// reads a word of each line it will read of the next batch's runs
// (touchRuns), loads that do not wait on one another and so wait for
// memory once for the batch, and the walk then finds those lines in the
// cache. Fewer runs fit the caches, and the walk is as before.
const (
	touchMinRuns = 128
	touchBatch   = 8 // a power of two
)

// touchRuns reads a word of every cache line that the walk reads first of
// runs from to from + touchBatch: the campaign record's fields that
// admitOne, grant and the run's summary read (a record spans seven lines
// and its fields fall on them differently as it starts on a line or half
// way), the run's summary and first request, and the slot headers of the
// touchBatch runs after them, read for the next batch. It changes
// nothing but touchSum, which keeps the compiler from leaving the loads
// out.
func (b *Broker) touchRuns(runs []pendingKey, from int) {
	near := runs[min(from, len(runs)):min(from+touchBatch, len(runs))]
	far := runs[min(from+touchBatch, len(runs)):min(from+2*touchBatch, len(runs))]
	s := 0
	for i := range near {
		k := &near[i]
		cp := &b.camps[k.camp]
		s += cp.env.Guaranteed + int(math.Float64bits(cp.tokens)) + cp.heldAt +
			cp.held[0] + cp.heldAll + cp.pending[0] + cp.tries
		if int(k.slot) < len(b.runSums) { // (sumOf grows them)
			sum := &b.runSums[k.slot]
			s += sum.narrowest + sum.held
		}
		if reqs := b.runReqs[k.slot]; len(reqs) > 0 {
			s += reqs[0].GPUs
		}
	}
	for i := range far {
		s += len(b.runReqs[far[i].slot])
	}
	b.touchSum += s
}

// keepRun puts run k at place nr of runs being compacted in place (nr no
// further than k's old place), merged into the run before where the two
// are of one campaign and class, so that the runs stay maximal; it
// returns the runs kept and the requests a merge moved. A run's place is
// its pos.
func (b *Broker) keepRun(runs []pendingKey, nr int, k pendingKey) (int, int) {
	if nr > 0 && runs[nr-1].class == k.class && runs[nr-1].camp == k.camp {
		into, from := runs[nr-1].slot, k.slot
		n := len(b.runReqs[from])
		b.runReqs[into] = append(b.runReqs[into], b.runReqs[from]...)
		b.sumOf(into).merge(b.sumOf(from))
		b.freeSlot(from)
		return nr, n
	}
	k.pos = int32(nr)
	runs[nr] = k
	return nr + 1, 0
}

// mergeRuns renumbers runs from place from on and merges those that now
// meet (keepRun), after runs from on moved or left.
func (b *Broker) mergeRuns(runs []pendingKey, from int) []pendingKey {
	nr, moved := from, 0
	for i := from; i < len(runs); i++ {
		var m int
		nr, m = b.keepRun(runs, nr, runs[i])
		moved += m
	}
	clear(runs[nr:])
	if b.counting {
		b.work.Moved += int64(moved)
	}
	return runs[:nr]
}

// dropRun removes run i, emptied, from the pending list.
func (b *Broker) dropRun(i int) {
	b.freeSlot(b.runs[i].slot)
	b.runs = b.mergeRuns(slices.Delete(b.runs, i, i+1), i)
}

// takeSlot is a slot for a new run's requests, empty: one an emptied
// run left (freeSlot), with its slice's room, so that filing allocates
// nothing once the list has grown.
func (b *Broker) takeSlot() int32 {
	if n := len(b.freeSlots); n > 0 {
		s := b.freeSlots[n-1]
		b.freeSlots = b.freeSlots[:n-1]
		b.sumOf(s).empty()
		return s
	}
	b.runReqs = append(b.runReqs, nil)
	s := int32(len(b.runReqs) - 1)
	b.sumOf(s).empty()
	return s
}

// freeSlot empties an emptied or merged run's slot for takeSlot (a
// Request holds no pointer: nothing to clear).
func (b *Broker) freeSlot(s int32) {
	b.runReqs[s] = b.runReqs[s][:0]
	b.freeSlots = append(b.freeSlots, s)
}

// reqsOf is run k's requests.
func (b *Broker) reqsOf(k *pendingKey) []Request { return b.runReqs[k.slot] }

// pendingLen is the number of pending requests.
func (b *Broker) pendingLen() int {
	n := 0
	for i := range b.runs {
		n += len(b.reqsOf(&b.runs[i]))
	}
	return n
}

// order is admission's first step: the pending list in the order of a
// stable sort by its sort keys (class rank, fair-share deficit, GPU
// tokens). The requests of a run share their keys and stand together in
// a stable sort, so the list is ordered run by run (sortRuns): one key per
// run is read, and only runs move.
func (b *Broker) order() {
	if n := len(b.runs); n > 1 || n == 1 && len(b.reqsOf(&b.runs[0])) > 1 {
		if runs := b.runs; !b.runsSorted(runs) {
			b.runs = b.sortRuns(runs)
		}
	}
}

// runsOf is the pending list's runs.
func (b *Broker) runsOf() []pendingKey { return b.runs }

// keyBefore is comparePendingKeys(*a, *b) < 0 written out small enough
// to inline, for the loops over the runs: the same keys in the same
// order, each decided by the same test (a NaN deficit or token count
// decides as it does there: it is never before).
func keyBefore(a, b *pendingKey) bool {
	switch {
	case a.class != b.class:
		return a.class < b.class
	case a.deficit != b.deficit:
		return a.deficit > b.deficit
	case a.tokens != b.tokens:
		return a.tokens > b.tokens
	}
	return a.pos < b.pos
}

// pendingKeysSorted is slices.IsSortedFunc(keys, comparePendingKeys) with
// the comparison written out (comparePendingKeys is too big to inline, and
// this runs every tick): a pair is out of order exactly when
// comparePendingKeys(keys[i], keys[i-1]) < 0, tested key by key in the
// same order, so a NaN deficit or token count decides as it does there.
func pendingKeysSorted(keys []pendingKey) bool {
	for i := 1; i < len(keys); i++ {
		a, b := &keys[i], &keys[i-1]
		switch {
		case a.class != b.class:
			if a.class < b.class {
				return false
			}
		case a.deficit != b.deficit:
			if a.deficit > b.deficit {
				return false
			}
		case a.tokens != b.tokens:
			if a.tokens > b.tokens {
				return false
			}
		case a.pos < b.pos:
			return false
		}
	}
	return true
}

// rateCap is the most GPUs campaign cp may hold for a request of the given
// duration under the broker's enforcement mode.
func (b *Broker) rateCap(cp *campaign, duration int) int {
	env := &cp.env
	var c int
	if b.cfg.GrantTimeOnly {
		// The leaky mode: any tokens at all open the full burst ceiling,
		// however long the lease will run.
		if cp.tokens > 0 {
			c = env.BurstCeiling
		} else {
			c = truncGPUs(env.Sustained)
		}
	} else {
		// Prepaid leases: the lease must be affordable over its whole
		// duration from the sustained rate plus the tokens in hand.
		afford := env.Sustained + cp.tokens/float64(max(duration, 1))
		if afford >= float64(env.BurstCeiling) {
			c = env.BurstCeiling
		} else {
			c = int(afford)
		}
	}
	return max(c, env.Guaranteed)
}

// truncGPUs is trunc(x) for a finite x ≥ 0, saturated at the largest int:
// a sustained rate beyond the range of int is no cap at all, whereas the
// plain conversion is implementation-defined there (amd64 gives
// math.MinInt64, a cap below every guarantee).
func truncGPUs(x float64) int {
	if x >= math.MaxInt {
		return math.MaxInt
	}
	return int(x)
}

// admitOne tries one pending request and reports whether it stays pending.
func (b *Broker) admitOne(r *Request) (keep bool) {
	if r.rigid {
		return b.admitRigid(r)
	}
	cp := &b.camps[r.Campaign]
	if b.now-r.Submitted > RequestTTL {
		b.dropPending(cp, r)
		if b.rec != nil {
			b.record(Event{Kind: EventRequestExpired, Campaign: cp.env.Name, CampaignID: r.Campaign, GPUs: r.GPUs, Class: r.Class})
		}
		return false
	}
	limit := b.rateCap(cp, r.Duration)
	headroom := limit - cp.heldAll
	if headroom <= 0 {
		if !r.throttleJournaled {
			cp.journaledThrottle(r)
			b.changedAt = b.now
			if b.rec != nil {
				b.record(Event{Kind: EventThrottle, Campaign: cp.env.Name, CampaignID: r.Campaign, GPUs: r.GPUs, Class: r.Class, Tokens: cp.tokens, Cap: limit})
			}
		}
		return true
	}
	want := min(r.GPUs, headroom)
	x := b.seatable(b.grantable(cp, want))
	switch {
	case x >= want:
		b.grant(cp, r, want)
		return false
	case x >= min(want, PartialGrantMin):
		// A partial grant finishes the request; the agent asks again for
		// the rest.
		b.grant(cp, r, x)
		return false
	case r.Class != Opportunistic:
		b.preemptFor(want - x)
	}
	return true
}

// Grantable is how many of n GPUs campaign c could be granted now without
// eating into another campaign's unmet guarantee.
func (b *Broker) Grantable(c CampaignID, n int) int { return b.grantable(&b.camps[c], n) }

func (b *Broker) grantable(cp *campaign, n int) int {
	free := b.Free()
	own := unmetOf(cp)
	reserve := b.unmet - own
	guar := min(n, own, free)
	extra := max(0, free-reserve-guar)
	return guar + min(n-guar, extra)
}

// preemptFor puts opportunistic leases under notice, largest first, until
// the GPUs already on their way back cover needed. The running inFlight sum
// and the cached candidate order make a call O(1) when nothing more is
// needed, and a pass O(leases · log leases) at most, however many requests
// fail.
func (b *Broker) preemptFor(needed int) {
	if b.inFlight >= needed {
		return
	}
	if !b.candsValid {
		b.sortCandidates()
	}
	for b.candPos < len(b.cands) && b.inFlight < needed {
		l := &b.leases[b.cands[b.candPos].index]
		b.candPos++
		l.UnderNotice = true
		l.PreemptAt = b.now + b.cfg.Grace
		b.changedAt = b.now
		b.nextDeadline = min(b.nextDeadline, l.PreemptAt)
		b.inFlight += l.GPUs
		b.reclaimable -= l.GPUs
		if b.rec != nil {
			cp := &b.camps[l.Campaign]
			b.record(Event{Kind: EventPreemptNotice, Lease: l.ID, Campaign: cp.env.Name, CampaignID: l.Campaign, GPUs: l.GPUs, Class: l.Class, Grace: b.cfg.Grace})
		}
	}
}

// candidate is an opportunistic lease that preemptFor may put under notice:
// its index in the lease list and its size, kept together so that sorting
// reads one array.
type candidate struct{ gpus, index int }

// sortCandidates lists the opportunistic leases not under notice, largest
// first; equal sizes keep lease order (the index breaks the tie, so an
// unstable sort gives the stable order).
func (b *Broker) sortCandidates() {
	cands := b.cands[:0]
	for i := range b.leases {
		if l := &b.leases[i]; l.Class == Opportunistic && !l.UnderNotice {
			cands = append(cands, candidate{gpus: l.GPUs, index: i})
		}
	}
	b.sortCandidatesByKeys(cands)
	b.cands, b.candPos, b.candsValid = cands, 0, true
}

func (b *Broker) dropPending(cp *campaign, r *Request) {
	b.addPending(cp, r.Class, -r.GPUs)
	cp.dropTried(r)
	if r.rigid {
		b.rigidPending--
	}
}

// PathFor classifies a grant by its latency under grace period grace.
func PathFor(latency, grace int) Path {
	switch {
	case latency <= 1:
		return Warm
	case latency <= grace+10:
		return Reclaim
	default:
		return Cold
	}
}

func (b *Broker) grant(cp *campaign, r *Request, n int) {
	b.dropPending(cp, r)
	latency := b.now - r.Submitted
	path := PathFor(latency, b.cfg.Grace)
	b.leases = append(b.leases, Lease{
		ID: r.ID, Campaign: r.Campaign, GPUs: n, Class: r.Class,
		Submitted: r.Submitted, Granted: b.now, Expires: b.now + r.Duration,
	})
	b.seat(r.ID, n)
	b.dropBook()
	if b.chargesFresh {
		b.freshBefore = len(b.leases) - 1 // the leases before this one's
	}
	b.chargesFresh = false // its charge is not worked out yet
	b.addHeld(r.Campaign, r.Class, n)
	b.nextDeadline = min(b.nextDeadline, b.now+r.Duration)
	if r.Class == Opportunistic {
		b.candsValid = false // a new preemption candidate
		b.reclaimable += n
	}
	if b.rec != nil {
		b.record(Event{Kind: EventGrant, Lease: r.ID, Campaign: cp.env.Name, CampaignID: r.Campaign,
			GPUs: n, Class: r.Class, Latency: latency, Path: path,
			FairDeficit: b.FairDeficit(r.Campaign), RuleTokens: cp.tokens})
	}
}
