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

// pendingKey is one pending request's admission sort key, read once per
// pass, with its position in the list before the sort.
type pendingKey struct {
	deficit, tokens float64
	pos             int
	class           Class
	// camp is the run's campaign (a run's requests share it), kept here
	// so that the skip's walks over the runs do not look it up in the
	// pending list, thousands of requests long on a full trace log.
	camp int32
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
func (b *Broker) admit() {
	if len(b.pending) == 0 {
		return
	}
	b.order()
	if b.counting {
		b.countPass()
	}
	if b.rigidPending == 0 {
		b.admitEach()
		return
	}
	runs := b.runsOf()
	b.refreshFloors(runs)
	// admitOne only changes the request it is given, and grants only
	// append leases, so the list can be walked and compacted in place,
	// run by run: a quiet campaign's run (throttled.go) is kept whole
	// without a try. The runs of the compacted list are the old ones
	// less the emptied, those that then meet merged (nr kept so far).
	pend := b.pending
	w, nr := 0, 0
	walked, moved := 0, 0 // (Work)
	for i := range runs {
		start, end := runs[i].pos, runEnd(runs, i, len(pend))
		from := w
		if cp := &b.camps[runs[i].camp]; b.quietCampaign(cp) {
			if w != start {
				copy(pend[w:], pend[start:end])
				moved += end - start
			}
			w += end - start
		} else {
			walked += end - start
			for j := start; j < end; j++ {
				if b.admitOne(&pend[j]) {
					if w != j {
						pend[w] = pend[j]
						moved++
					}
					w++
				}
			}
		}
		if w == from || nr > 0 && runs[nr-1].class == runs[i].class && runs[nr-1].camp == runs[i].camp {
			continue // emptied, or one with the run before
		}
		runs[nr] = runs[i]
		runs[nr].pos = from
		nr++
	}
	if w < len(pend) {
		clear(pend[w:])
		b.pending = pend[:w]
	}
	b.runs = runs[:nr]
	if b.counting {
		b.work.Walked += int64(walked)
		b.work.Moved += int64(moved)
	}
}

// admitEach is admission's walk where no trace job is pending (the agent
// scenario): then no campaign is quiet (an agent's request is always
// tried, throttled.go), so the runs buy nothing, and the list is walked
// request by request and its runs worked out again when next needed
// (BenchmarkScenario: the run-by-run walk cost 0.7 % more).
func (b *Broker) admitEach() {
	// admitOne only changes the request it is given, and grants only
	// append leases, so the list can be walked and compacted in place.
	pend := b.pending
	w, moved := 0, 0
	for i := range pend {
		if b.admitOne(&pend[i]) {
			if w != i {
				pend[w] = pend[i]
				moved++
			}
			w++
		}
	}
	if b.counting {
		b.work.Walked += int64(len(pend))
		b.work.Moved += int64(moved)
	}
	if w < len(pend) {
		clear(pend[w:])
		b.pending = pend[:w]
		b.runsOK = false
	}
}

// order is admission's first step: the pending list in the order of a
// stable sort by its sort keys (class rank, fair-share deficit, GPU
// tokens). The requests of a run share their keys and stand together in
// a stable sort, so the list is ordered run by run (sortRuns): one key per
// run is read, and the list is rewritten only where runs move.
func (b *Broker) order() {
	if len(b.pending) > 1 {
		if runs := b.runsOf(); !b.runsSorted(runs) {
			b.runs = b.sortRuns(runs)
		}
	}
}

// runsOf is the pending list's runs, rebuilt if a removal left them
// stale.
func (b *Broker) runsOf() []pendingKey {
	if !b.runsOK {
		b.runs, b.runsOK = b.pendingRuns(b.runs[:0]), true
	}
	return b.runs
}

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
	x := b.grantable(cp, want)
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
	slices.SortFunc(cands, func(x, y candidate) int {
		if c := cmp.Compare(y.gpus, x.gpus); c != 0 {
			return c
		}
		return cmp.Compare(x.index, y.index)
	})
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
