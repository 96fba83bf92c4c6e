package policy

import (
	"fmt"
	"math"
	"slices"
)

// Event skipping for the broker (EventSkipper): what lets a trace replay
// jump over the quiet seconds between its events and still write, byte for
// byte, the journal and the numbers of a replay that ticks every second.
//
// A tick is quiet when its expiry and admission steps change nothing that
// a later step reads other than through the per-tick bookkeeping: no lease
// ends or is noticed, no request is granted, expires, is throttled for the
// first time or puts a lease under notice. The bookkeeping (buckets,
// credits, congestion and usage windows, utilization, the pending list's
// order) still moves in a quiet tick and SkipTo replays it with the very
// same floating-point operations in the same order; it only leaves out the
// work whose result is known: a bucket at its fixed point, a usage window
// that holds one value, a congestion window that holds one pair, and the
// admission of requests whose outcome cannot have changed.
//
// Why a quiet stretch stays quiet. Suppose the last tick was quiet and
// nothing has been called since (changedAt < now). Then the lease list, the
// held GPUs (so free, unmet, reclaimable), the GPUs under notice and the
// pending list are those that tick's admission pass saw, and since the pass
// granted nothing every request in it saw that same state. Through the
// following quiet ticks the state stays so. Admission reads, per request,
// its age (request expiry), and its campaign's rate cap, a function of the
// campaign's GPU tokens alone; everything else it reads (grantable, the
// GPUs already in flight, the preemption candidates) is that unchanged
// state. So a request whose rate cap stays in the interval that gives the
// same outcome as in the last tick (throttled; or the same headroom; or
// headroom enough for the whole request) does again what it did then:
// nothing. With its campaign's held GPUs fixed, a bucket's fill follows
// T ← clamp(T + R − held, 0, B) (TokenBucket.Refill), a monotone map, so
// the fill moves monotonically and the rate cap, monotone in the fill,
// crosses each bound at most once: NextChange bounds that crossing from below (capExit), with
// the lease deadlines and the request expiries.
//
// The order of the pending list is admission state too (the stable sort
// breaks ties by the previous order), and it can change in a quiet tick as
// deficits and fills move; SkipTo keeps it exactly by checking, each
// skipped tick, whether it is still sorted under that tick's keys, and
// sorting it as Tick would when it is not.

// NextChange is the earliest tick after Now at which a Tick may do more
// than per-tick bookkeeping, given no call in between (EventSkipper): the
// next tick after any change; otherwise the first lease deadline, request
// expiry, or tick at which a pending request's rate cap may leave the
// interval that keeps its outcome.
//
// The answer worked out right after a tick that tried the requests holds
// until a change (it bounds the outcomes from that tick on): it is kept
// through Tick's quiet ticks, and asked again after them it is the same.
func (b *Broker) NextChange() int {
	if b.changedAt >= b.now {
		return b.now + 1
	}
	if b.quietFrom == b.admittedAt && b.changedAt < b.quietFrom {
		return max(b.quietUntil, b.now+1)
	}
	// Nothing NextChange reads moves between ticks without a change
	// (changedAt = now), so SkipTo's check reuses the driver's answer.
	if b.nextChangeNow == b.now {
		return b.nextChange
	}
	next := b.nextDeadline
	// Each request's cap exit is now + 1 + safeSteps(gap, rate), with the
	// rate its campaign's alone; safeSteps is monotone in the gap, so the
	// earliest exit of a campaign's requests is that of their smallest
	// gap: one gap per request is compared, and safeSteps is taken once
	// per campaign. A quiet campaign's smallest gap is its floor's
	// (throttled.go), and its runs are passed by.
	b.exitEpoch++
	if len(b.exits) < len(b.camps) {
		b.exits = make([]campExit, len(b.camps))
	}
	touched := b.exitTouched[:0]
	runs := b.runsOf()
	b.refreshFloors(runs)
runs:
	for ri := range runs {
		reqs := b.reqsOf(&runs[ri])
		c := CampaignID(runs[ri].camp)
		x := &b.exits[c]
		if x.epoch != b.exitEpoch {
			b.capSlope(x, c)
			if !x.fixed {
				touched = append(touched, int32(c))
			}
			cp := &b.camps[c]
			if x.quiet = b.quietCampaign(cp); x.quiet && x.up && cp.floor <= cp.env.Bucket {
				// Every job is throttled, so each one's gap is its
				// floor less the fill (rigidCapGap), the smallest the
				// campaign's; a floor above the bucket is never reached.
				x.noteGap(&next, cp.floor-x.t0, b.now)
			}
		}
		if x.quiet {
			continue
		}
		if x.fixed && b.runRigid(&runs[ri]) {
			if b.counting {
				b.work.RunsRead++ // its summary, not its requests
			}
			continue
		}
		if b.counting {
			b.work.Walked += int64(len(reqs))
		}
		for i := range reqs {
			r := &reqs[i]
			if !r.rigid {
				next = min(next, r.Submitted+RequestTTL+1)
			}
			if x.fixed {
				continue
			}
			if gap, ok := b.capGap(x, r); ok {
				x.noteGap(&next, gap, b.now)
			}
		}
		if next <= b.now+1 {
			break runs
		}
	}
	for _, c := range touched {
		if next <= b.now+1 {
			break
		}
		if x := &b.exits[c]; x.bounded {
			next = min(next, b.now+1+safeSteps(x.minGap, x.rate))
		}
	}
	b.exitTouched = touched
	b.nextChange, b.nextChangeNow = max(next, b.now+1), b.now
	if b.admittedAt == b.now {
		b.quietFrom, b.quietUntil = b.now, b.nextChange
	}
	return b.nextChange
}

// campExit is NextChange's per-campaign part of the cap exits, valid for
// the evaluation numbered epoch: whether the fill is at its fixed point
// (no request of the campaign ever exits), the direction and the step
// bound of its next moves, and the smallest gap of its requests so far
// (bounded: some request has one; a gap may be +Inf, which still bounds).
type campExit struct {
	epoch        int
	fixed, up    bool
	bounded      bool
	quiet        bool // quietCampaign: its gap is its floor's
	t0, e, d     float64
	rate, minGap float64
}

// noteGap takes one request's gap into the campaign's smallest; a gap
// that is not positive makes the next tick the answer (safeSteps is 0).
func (x *campExit) noteGap(next *int, gap float64, now int) {
	if !(gap > 0) {
		*next = now + 1
	} else if !x.bounded || gap < x.minGap {
		x.minGap, x.bounded = gap, true
	}
}

// capSlope fills x with campaign c's part of the cap exits (see capGap).
//
// The bound is rigorous over floating point: one refill step rounds twice,
// so the computed fill after k steps lies within k·E of the real line
// T₀ + k·(R − held), E = 2⁻⁵¹(B + R + held) (twice the bound of two half
// ulps); the rate cap's own rounding is covered by a margin in fill units
// far above its few ulps (capGap). A bound that is early only costs a real
// tick.
func (b *Broker) capSlope(x *campExit, c CampaignID) {
	cp := &b.camps[c]
	env := &cp.env
	held := float64(cp.heldAll)
	t0 := cp.tokens
	t1 := env.GPUBucket().Refill(t0, held) // exactly refill's step
	*x = campExit{epoch: b.exitEpoch}
	if t1 == t0 {
		x.fixed = true // a fixed point: the fill never moves again
		return
	}
	x.up, x.t0 = t1 > t0, t0
	x.e = 0x1p-51 * (env.Bucket + env.Sustained + held)
	x.d = env.Sustained - held
	if x.up {
		x.rate = x.d + x.e
	} else {
		x.rate = x.e - x.d
	}
}

// capGap bounds the first tick after Now at which request r's rate cap
// leaves the interval of caps that give it the outcome it had in the last
// tick: that tick is at least now + 1 + safeSteps(gap, x.rate), and ok is
// false when it never comes (with its campaign's held GPUs fixed). x is
// r's campaign's part (capSlope), not at a fixed point.
func (b *Broker) capGap(x *campExit, r *Request) (gap float64, ok bool) {
	cp := &b.camps[r.Campaign]
	env := &cp.env
	if b.cfg.GrantTimeOnly {
		// The cap reads only whether the bucket holds any tokens.
		switch {
		case x.up && x.t0 > 0:
			return 0, false
		case x.up:
			return 0, true // the next tick
		}
		// Falling: the fill stays > 0 while t0 + k(d − e) > 0.
		return x.t0, true
	}
	// Prepaid: cap(T) = max(g, min(burst, ⌊R + T/dur⌋)), and for an integer
	// K ≤ burst above g, cap ≥ K ⇔ R + T/dur ≥ K.
	dur := float64(max(r.Duration, 1))
	if r.rigid {
		return b.rigidCapGap(x, cp, r, dur)
	}
	margin := func(k int) float64 { return capMargin(env, k, dur) }
	lo, hi := b.outcomeInterval(cp, r)
	if x.up {
		if hi == math.MaxInt || hi+1 > env.BurstCeiling {
			return 0, false
		}
		thr := (float64(hi+1)-env.Sustained)*dur - margin(hi+1)
		if thr > env.Bucket {
			return 0, false // the fill never exceeds the bucket
		}
		// Below thr the cap is at most hi: safe while t0 + k(d + e) ≤ thr.
		return thr - x.t0, true
	}
	if lo == math.MinInt || env.Guaranteed >= lo {
		return 0, false
	}
	thr := (float64(lo)-env.Sustained)*dur + margin(lo)
	if thr < 0 {
		return 0, false // the fill is never negative
	}
	// Above thr the cap is at least lo: safe while t0 + k(d − e) ≥ thr.
	return x.t0 - thr, true
}

// outcomeInterval is the interval [lo, hi] of rate caps (math.MinInt,
// math.MaxInt: unbounded) in which request r does what it does at its
// campaign's current cap: a trace job is throttled below held + GPUs and
// tried whole from there; any other request is throttled at a headroom ≤ 0,
// asks for its whole size from held + GPUs on, and for the headroom in
// between.
func (b *Broker) outcomeInterval(cp *campaign, r *Request) (lo, hi int) {
	c0 := b.rateCap(cp, r.Duration)
	whole := cp.heldAll + r.GPUs
	switch {
	case c0 >= whole:
		return whole, math.MaxInt
	case r.rigid:
		return math.MinInt, whole - 1
	case c0 <= cp.heldAll:
		return math.MinInt, cp.heldAll
	default:
		return c0, c0
	}
}

// rigidCapGap is capGap for a trace job in the prepaid mode. Its bound in
// either direction is K = held + GPUs (outcomeInterval): a rising cap
// matters only while it is below K (then the job is tried whole from K
// on), a falling one only while it is at K or above (then the job is
// throttled below K). Which of the two holds takes a division (rateCap),
// so a gap that cannot lower its campaign's smallest one, and so cannot
// change NextChange's answer, is dropped before it is asked.
func (b *Broker) rigidCapGap(x *campExit, cp *campaign, r *Request, dur float64) (gap float64, ok bool) {
	env := &cp.env
	k := cp.heldAll + r.GPUs
	if x.up {
		if k > env.BurstCeiling {
			return 0, false
		}
		thr := risingCapThreshold(env, k, dur)
		if thr > env.Bucket {
			return 0, false // the fill never exceeds the bucket
		}
		gap = thr - x.t0
	} else {
		if env.Guaranteed >= k {
			return 0, false
		}
		thr := (float64(k)-env.Sustained)*dur + capMargin(env, k, dur)
		if thr < 0 {
			return 0, false // the fill is never negative
		}
		gap = x.t0 - thr
	}
	if x.bounded && gap > 0 && !(gap < x.minGap) {
		return 0, false // cannot lower the campaign's smallest gap
	}
	if below := b.rateCap(cp, r.Duration) < k; below != x.up {
		return 0, false // rising at K or above, or falling below K
	}
	return gap, true
}

// capMargin is the slack, in fill units, that covers the rounding of the
// rate cap R + T/dur against the integer cap K.
func capMargin(env *Envelope, k int, dur float64) float64 {
	return 1e-12 * ((math.Abs(float64(k))+env.Sustained)*dur + env.Bucket + 1)
}

// safeSteps is a k ≥ 0 with k·rate ≤ gap, a little below the largest
// (rate > 0): the number of further ticks a bound with that slack covers.
// It saturates well below math.MaxInt.
func safeSteps(gap, rate float64) int {
	if !(gap > 0) {
		return 0
	}
	if !(rate > 0) {
		return math.MaxInt / 4
	}
	k := gap / rate * (1 - 1e-9)
	if !(k < 1e15) {
		return math.MaxInt / 4
	}
	return max(int(k)-1, 0)
}

// SkipTo advances to tick t < NextChange() with exactly the effect of
// t − Now() Ticks (EventSkipper). The first of them is a real Tick (it
// resets the flows and sorts anything the last call filed); the others
// replay the bookkeeping only, see the top of this file.
func (b *Broker) SkipTo(t int) {
	if t <= b.now {
		return
	}
	if nc := b.NextChange(); t >= nc {
		panic(fmt.Sprintf("policy: SkipTo(%d) at or beyond the next change %d", t, nc))
	}
	b.Tick()
	if b.changedAt == b.now {
		// Not quiet after all: NextChange's bounds exclude this, and
		// ticking keeps the result exact if they ever did not.
		for b.now < t {
			b.Tick()
		}
		return
	}
	if b.now < t {
		b.skipQuiet(t)
	}
}

// skipQuiet is ticks Now()+1 … t, all quiet, after a quiet tick with no
// call since: the same steps as Tick in the same order, each left out
// where its result is known, and each sum that nothing reads before t
// taken in closed form (repeat.go) rather than a tick at a time.
//
// Within the skipped ticks only the order checks read anything that
// moves: the pending campaigns' GPU tokens and fair-share deficits. So
// the ticks are stepped one by one only while a check can still find
// something (the first CongestionWindow ticks, while a usage window
// still slides, while the pending list's order hangs on its campaigns'
// tokens), and only the pending campaigns' buckets with them; every
// other bucket, the flow buckets, the credits and the utilization sum
// jump to t at the end. With fewer than two runs there is no order check
// at all, and only the congestion pushes are stepped.
func (b *Broker) skipQuiet(t int) {
	camps := b.camps
	start := b.now
	// The campaigns whose GPU bucket still moves (a bucket at its fixed
	// point stays there: the map is the same each tick): those with
	// pending requests, stepped with the order checks, and the rest; the
	// flow buckets that still fill or still show the last tick's use
	// (after the real tick nobody draws on them), and the usage windows
	// that do not yet hold one value.
	toks, lazy, flows, slide := b.skipToks[:0], b.skipLazy[:0], b.skipFlows[:0], b.skipSlide[:0]
	for i := b.busyHead; i >= 0; i = camps[i].busyNext { // one at rest is in none of them
		cp := &camps[i]
		if cp.env.GPUBucket().Refill(cp.tokens, float64(cp.heldAll)) != cp.tokens {
			if cp.pending != ([numClasses]int{}) {
				toks = append(toks, int32(i))
			} else {
				lazy = append(lazy, int32(i))
			}
		}
		if cp.flowBusy { // (otherwise both flows are at rest)
			if cp.io.tokens != cp.io.Bucket || cp.io.usedLast != 0 {
				flows = append(flows, &cp.io)
			}
			if cp.inf.tokens != cp.inf.Bucket || cp.inf.usedLast != 0 {
				flows = append(flows, &cp.inf)
			}
		}
		if cp.heldAt+FairShareWindow > b.now {
			slide = append(slide, int32(i))
		}
	}
	runs := b.runsOf()
	if len(runs) < 2 {
		// One run keeps its place: nothing reads a bucket before t, and
		// the moving ones refill at the end with the others.
		lazy, toks = append(lazy, toks...), toks[:0]
	}
	// Each pending campaign's bucket line as tokenLines last read it
	// (tokLines, beside toks): within the skip its held GPUs stay, so a
	// line holds to its end, and the lines are read from this short
	// table instead of the campaigns' records.
	tokLines := b.skipTokLines[:0]
	for range toks {
		tokLines = append(tokLines, bucketLine{})
	}
	b.skipTokLines = tokLines
	free := b.Free()
	util := 1 - float64(free)/float64(b.cfg.Pool)
	// After CongestionWindow pushes of the one (demand, free) pair the
	// window holds nothing else, and a push only turns it.
	congPushes := CongestionWindow
	if b.grantsOnly {
		// The window feeds the charges alone, which are not kept.
		congPushes = 0
	}
	// stale: the runs' deficits need recomputing (the usage sums moved in
	// the last history step, or the runs are new).
	stale := true
	// byUsage: every pending campaign's share is 0, so the deficits order
	// the runs as their usage sums do (usageOrdered), and only the runs
	// whose usage moved (moved, from the last history step) can change
	// places by deficit; full: the runs' keys are not yet this skip's.
	byUsage, full := b.usageOrdered(runs), true
	moved := b.skipMoved[:0]
	b.skipIdxOK = false
	watch := b.skipWatch[:0]
	// The watched pairs' crossings of the last skip's list may read lines
	// that no longer hold (held GPUs changed since): the next list checks
	// them; and none of that list is watched yet.
	b.skipWatchHeld, b.skipPairsN = true, -1
	// The multiplier each tick's accounting charges at, in runs.
	muls := b.skipMuls[:0]
	// Under byUsage the pending campaigns' buckets move by segments
	// (tokenSegment) while the windows slide: a segment's ticks neither
	// refill them one by one nor check the watched pairs. Where none can
	// be shown (a bucket at the edge of its line, a watched pair about to
	// cross) the next tick tries again: a try reads the buckets' kept
	// lines (lineOf) and the watched pairs, no more than a tick of
	// refills and checks, and most such edges pass in a tick.
	b.skipSegOK = false
	if len(runs) < 2 {
		// No order step reads a tick (one run keeps its place, and every
		// bucket refills at the end): the ticks are the accounting's
		// multipliers, the congestion pushes and the usage windows' slots
		// alone, taken at once (slideAll) rather than a tick at a time.
		k := t - b.now
		muls = b.quietMuls(muls, k, &congPushes, free)
		b.slideAll(slide, k)
		slide = slide[:0]
		b.usagePos = (b.usagePos + k) % FairShareWindow
		b.now = t
	}
	for b.now < t {
		if byUsage && !full && (len(slide) > 0 || congPushes > 0) && (len(toks) == 0 || b.skipSegOK) {
			// The windows slide (or the congestion window fills) while
			// the buckets follow an open segment: a stretch of ticks in
			// which only the windows move, and no order step finds
			// anything, is taken at once (slideStretch).
			limit := t - b.now
			if len(toks) > 0 {
				limit = min(limit, b.skipSegEnd-b.now)
			}
			if k := b.slideStretch(runs, slide, moved, limit); k > 0 {
				// The accounting's multiplier and the congestion pushes
				// tick by tick while the window fills, then as one run.
				muls = b.quietMuls(muls, k, &congPushes, free)
				moved = b.slideWindows(k, runs, slide, moved)
				stale = len(moved) > 0
				b.usagePos = (b.usagePos + k) % FairShareWindow
				b.now += k
				w := 0
				for _, i := range slide {
					if camps[i].heldAt+FairShareWindow > b.now {
						slide[w] = i
						w++
					}
				}
				slide = slide[:w]
				continue
			}
		}
		if congPushes == 0 && len(slide) == 0 {
			// The windows hold one value each: a push only turns the
			// congestion window, a write changes no usage slot.
			b.syncSeg(toks)
			k := 0
			switch {
			case !(len(runs) >= 2 && (stale || len(watch) > 0 && len(toks) > 0)):
				// And the pending list's order cannot change: nothing
				// reads a tick any more.
				k = t - b.now
				b.refillSkipped(toks, t-b.now, b.now)
			case !stale:
				// Only the watched pairs read the ticks: up to the tick
				// before the first at which one may change places, or
				// through it where the buckets are still on their lines
				// there (watchThrough), and then that tick's order step.
				var through bool
				if k, through = b.watchThrough(toks, runs, watch, t-b.now); through {
					toks = b.dropStopped(toks)
					muls = appendMul(muls, b.Multiplier(), k)
					b.cong.pos = (b.cong.pos + k) % CongestionWindow
					b.usagePos = (b.usagePos + k) % FairShareWindow
					b.now += k
					if len(toks) > 0 {
						runs, watch = b.orderCrossing(runs, watch)
					}
					moved = moved[:0]
					b.usageEpoch++ // the stepped tick's history step
					continue
				}
			}
			if k > 0 {
				muls = appendMul(muls, b.Multiplier(), k)
				b.cong.pos = (b.cong.pos + k) % CongestionWindow
				b.usagePos = (b.usagePos + k) % FairShareWindow
				b.now += k
				continue
			}
		}
		b.now++
		// refill
		if !b.skipSegOK || b.now > b.skipSegEnd {
			b.syncSegTo(toks, b.now-1)
			w := 0
			tokLines := b.skipTokLines
			for j, i := range toks {
				cp := &camps[i]
				before := cp.tokens
				cp.tokens = cp.env.GPUBucket().Refill(cp.tokens, float64(cp.heldAll))
				if cp.tokens != before {
					toks[w], tokLines[w] = i, tokLines[j]
					w++
				}
			}
			toks, b.skipTokLines = toks[:w], tokLines[:w]
			if byUsage && len(toks) > 0 && len(runs) >= 2 {
				if k := b.tokenSegment(toks, runs, watch, t-b.now); k > 0 {
					b.skipSegOK, b.skipSegStart, b.skipSegEnd = true, b.now, b.now+k
				}
			}
		}
		// account
		muls = appendMul(muls, b.Multiplier(), 1)
		// admit: nothing is granted, expired, throttled or noticed; the
		// list is sorted as Tick's pass would sort it.
		switch {
		case len(runs) < 2:
		case stale && byUsage && !full:
			runs, watch = b.reorderMoved(toks, runs, watch, moved)
			stale = false
		case stale && byUsage:
			b.syncSeg(toks)
			if b.runsSortedByUsage(runs) {
				watch = b.tokenDecided(runs, watch[:0])
			} else {
				runs = b.sortRuns(runs)
				watch = b.tokenDecided(runs, watch[:0])
				b.skipIdxOK = false
			}
			stale, full = false, false
		case stale:
			if b.runsSorted(runs) {
				watch = b.tokenDecided(runs, watch[:0])
				stale = false
			} else {
				// runsSorted left each run its keys of this tick.
				runs = b.sortRuns(runs)
			}
		case len(toks) > 0 && !b.skipSegOK:
			// (Within a segment no watched pair changes places.)
			// With the deficits fixed, only a pair they do not order can
			// change places: one whose later run gains more tokens. The
			// runs are put in order as units (reorderRuns), and the list
			// is then in the order of this tick's keys, so the deficits
			// still fixed, the new watched pairs are again the only ones
			// that can change places.
			runs, watch = b.orderCrossing(runs, watch)
		}
		moved = moved[:0]
		// recordHistory
		if congPushes > 0 {
			congPushes--
			b.cong.push(b.pendingDemand, max(free, 0))
			b.congIndex = pyMin(10, float64(b.cong.sumDemand)/float64(max(b.cong.sumFree, 1)))
		} else if b.cong.pos++; b.cong.pos == CongestionWindow {
			b.cong.pos = 0
		}
		pos := b.usagePos
		w := 0
		for _, i := range slide {
			cp := &camps[i]
			u := cp.usage
			d := cp.heldAll - int(u.buf[pos])
			u.buf[pos] = int32(cp.heldAll)
			u.sum += d
			b.usageTotal += d
			if d != 0 && byUsage {
				// Only a pending campaign's usage orders runs.
				if cp.pending != ([numClasses]int{}) {
					moved = append(moved, i)
					stale = true
				}
			} else {
				stale = stale || d != 0
			}
			if cp.heldAt+FairShareWindow > b.now {
				slide[w] = i
				w++
			}
		}
		slide = slide[:w]
		b.usageEpoch++
		if b.usagePos++; b.usagePos == FairShareWindow {
			b.usagePos = 0
		}
	}
	b.syncSeg(toks)
	// What nothing read: the other buckets, the flows, the credits and
	// the utilization sum, all start+1 … t at once.
	n := t - start
	b.refillSkipped(lazy, n, start)
	for _, f := range flows {
		// As flowState.refill: nobody draws on the flows (usedNow is 0).
		if f.usedNow != 0 || f.tokens != f.Bucket {
			f.tokens = f.tokenBucket().Steps(f.tokens, f.usedNow, n)
		}
		f.usedLast, f.usedNow = f.usedNow, 0
	}
	if !b.grantsOnly {
		b.chargeSkipped(muls)
		b.utilSum = sumSteps(b.utilSum, []float64{util}, n)
		b.utilN += n
	}
	b.usageEpoch++
	b.skipToks, b.skipLazy, b.skipFlows, b.skipSlide, b.runs, b.skipWatch, b.skipMuls, b.skipMoved = toks, lazy, flows, slide, runs, watch, muls, moved
}

// slideAll writes the next k ticks' slots of the sliding campaigns'
// usage windows (slide), from usagePos, as the history steps of k quiet
// ticks would: each writes its held GPUs there until its window holds
// them alone, tick heldAt + FairShareWindow, after which a write changes
// nothing. The sums are of integers, so their order does not matter.
func (b *Broker) slideAll(slide []int32, k int) {
	camps := b.camps
	for _, i := range slide {
		cp := &camps[i]
		u := cp.usage
		held := int32(cp.heldAll)
		m := min(k, cp.heldAt+FairShareWindow-b.now)
		d := 0
		for p, j := b.usagePos, 0; j < m; j++ {
			d += cp.heldAll - int(u.buf[p])
			u.buf[p] = held
			if p++; p == FairShareWindow {
				p = 0
			}
		}
		u.sum += d
		b.usageTotal += d
		if d != 0 {
			b.usageEpoch++
		}
	}
}

// slideStretch is the number k ≤ limit of ticks from Now, 0 where no
// k ≥ 2 is shown, over which skipQuiet's steps change nothing but the
// windows, and those by a constant a tick: each sliding usage window's
// next k slots hold one value (so each tick moves its sum by the same
// step, usageStep), and no order step among those k finds a pair of
// runs out of order or a tie that changes, which under usageOrdered
// holds when every pair next to a run whose usage moves (moved, from the
// last history step, and the sliding campaigns' runs) stays ordered by
// usage, strictly, at the stored keys and at every usage the k order
// steps read (linear in the tick, so checked at both ends). The caller
// also keeps the buckets within their segment, so that no bucket is
// read. The sliding campaigns hold their steps in usageStep when k > 0
// (slideWindows clears them); every other campaign's is 0.
func (b *Broker) slideStretch(runs []pendingKey, slide, moved []int32, limit int) int {
	if limit < 2 {
		return 0
	}
	camps := b.camps
	pos := b.usagePos
	k := limit
	for _, i := range slide {
		u := camps[i].usage
		v := u.buf[pos]
		camps[i].usageStep = camps[i].heldAll - int(v)
		// The slots this stretch overwrites (with held) come round again
		// after a whole window: a step other than 0 ends by then.
		n, p := min(k, FairShareWindow), pos
		for j := 1; j < n; j++ {
			if p++; p == FairShareWindow {
				p = 0
			}
			if u.buf[p] != v {
				n = j
				break
			}
		}
		if n < k && (n < FairShareWindow || camps[i].usageStep != 0) {
			k = n
		}
	}
	if k >= 2 && len(runs) >= 2 {
		if !b.skipIdxOK {
			b.indexRuns(runs)
		}
		for _, c := range moved {
			k = b.stretchPairs(runs, c, k)
		}
		for _, i := range slide {
			if camps[i].usageStep != 0 && camps[i].pending != ([numClasses]int{}) {
				k = b.stretchPairs(runs, i, k)
			}
		}
	}
	if k < 2 {
		for _, i := range slide {
			camps[i].usageStep = 0
		}
		return 0
	}
	return k
}

// stretchPairs bounds k by the pairs of runs next to campaign c's runs
// (slideStretch): a pair of one class stays in order by usage while
// U_z − U_a > 0 for the earlier run's campaign a and the later's z, at
// the stored keys and at the usage of each of the next k order steps,
// U + j·step for j < k. It returns 0 where no k ≥ 2 is left.
func (b *Broker) stretchPairs(runs []pendingKey, c int32, k int) int {
	camps := b.camps
	first, next := b.skipRunFirst, b.skipRunNext
	for i := first[c]; i >= 0; i = next[i] {
		for j := max(i, 1); j <= i+1 && int(j) < len(runs); j++ {
			a, z := &runs[j-1], &runs[j]
			if a.class != z.class {
				continue // the class orders them, whatever the usage
			}
			if !(a.deficit > z.deficit) {
				return 0 // tied at the stored keys
			}
			ca, cz := a.camp, z.camp
			gap := camps[cz].usage.sum - camps[ca].usage.sum
			if gap <= 0 {
				return 0
			}
			if s := camps[cz].usageStep - camps[ca].usageStep; s < 0 {
				if k = min(k, (gap-1)/(-s)+1); k < 2 {
					return 0
				}
			}
		}
	}
	return k
}

// slideWindows takes k ticks of usage history at once, after
// slideStretch found them: each sliding window's next k slots take the
// campaign's held GPUs and its sum moves by k steps; the runs of the
// campaigns the order steps updated (moved, then each sliding pending
// campaign whose usage moves) hold the usage the last of them read. It
// returns the pending campaigns whose usage the last tick moved, and
// clears usageStep.
func (b *Broker) slideWindows(k int, runs []pendingKey, slide, moved []int32) []int32 {
	camps := b.camps
	first, next := b.skipRunFirst, b.skipRunNext
	setKey := func(c int32, u int) {
		if len(runs) >= 2 {
			for i := first[c]; i >= 0; i = next[i] {
				runs[i].deficit = -float64(u)
			}
		}
	}
	for _, c := range moved {
		setKey(c, camps[c].usage.sum)
	}
	moved = moved[:0]
	pos := b.usagePos
	for _, i := range slide {
		cp := &camps[i]
		d := cp.usageStep
		if d == 0 {
			continue // its slots hold its held GPUs already
		}
		cp.usageStep = 0
		u := cp.usage
		held := int32(cp.heldAll)
		for j, p := 0, pos; j < k; j++ {
			u.buf[p] = held
			if p++; p == FairShareWindow {
				p = 0
			}
		}
		u.sum += k * d
		b.usageTotal += k * d
		b.usageEpoch++
		if cp.pending != ([numClasses]int{}) {
			moved = append(moved, i)
			setKey(i, u.sum-d)
		}
	}
	return moved
}

// refillSkipped refills the buckets of the campaigns listed n ticks at
// once, from their fills of tick at. A bucket whose line (lineAt) holds
// for the n ticks moves along it, k·d, exactly as TokenBucket.Steps would take
// it, without working the line out again: a bucket that no pending job
// reads refills at every skip's end, and its line, which lasts for a
// binade, serves many skips.
func (b *Broker) refillSkipped(list []int32, n, at int) {
	if n <= 0 {
		return
	}
	for _, i := range list {
		cp := &b.camps[i]
		if k, d := b.lineAt(i, at); n <= k {
			if d != 0 { // (a fixed point keeps its very bits)
				cp.tokens += float64(n) * d
			}
			continue
		}
		cp.tokens = cp.env.GPUBucket().Steps(cp.tokens, float64(cp.heldAll), n)
	}
}

// mulRun is n consecutive ticks whose accounting charges at multiplier m.
type mulRun struct {
	m float64
	n int
}

// quietMuls appends the accounting's multipliers of k ticks in which
// only the windows move: while the congestion window still fills
// (*congPushes pushes left, each of free GPUs and the pending demand), a
// tick at a time, since each push moves the congestion index and so the
// multiplier; then the rest as one run, the full window's position moved
// on past them.
func (b *Broker) quietMuls(muls []mulRun, k int, congPushes *int, free int) []mulRun {
	n := k
	for ; n > 0 && *congPushes > 0; n-- {
		muls = appendMul(muls, b.Multiplier(), 1)
		*congPushes--
		b.cong.push(b.pendingDemand, max(free, 0))
		b.congIndex = pyMin(10, float64(b.cong.sumDemand)/float64(max(b.cong.sumFree, 1)))
	}
	if n > 0 {
		muls = appendMul(muls, b.Multiplier(), n)
		b.cong.pos = (b.cong.pos + n) % CongestionWindow
	}
	return muls
}

func appendMul(runs []mulRun, m float64, n int) []mulRun {
	if k := len(runs); k > 0 && runs[k-1].m == m {
		runs[k-1].n += n
		return runs
	}
	return append(runs, mulRun{m, n})
}

// chargeSkipped is the accounting of the skipped ticks, run by run of one
// multiplier: each campaign's credits lose its leases' charges in lease
// order every tick (as account takes them), in closed form. The leases are
// the same throughout, and campaigns' credits do not interact.
func (b *Broker) chargeSkipped(muls []mulRun) {
	b.dropBook() // the ticks before, owed at the book's charges
	leases := b.leases
	if len(leases) == 0 {
		return
	}
	// The leases by campaign, lease order kept (a counting sort).
	nc := len(b.camps)
	off := append(b.skipOff[:0], make([]int32, nc+1)...)
	for i := range leases {
		off[leases[i].Campaign+1]++
	}
	for c := range nc {
		off[c+1] += off[c]
	}
	at := append(b.skipAt[:0], off[:nc]...)
	order := append(b.skipOrder[:0], make([]int32, len(leases))...)
	for i := range leases {
		c := leases[i].Campaign
		order[at[c]] = int32(i)
		at[c]++
	}
	adds := append(b.skipAdds[:0], make([]float64, len(leases))...)
	for _, run := range muls {
		for j, i := range order {
			adds[j] = -leases[i].chargeAt(run.m)
		}
		for c := range nc {
			if off[c] < off[c+1] {
				cp := &b.camps[c]
				cp.credits = sumSteps(cp.credits, adds[off[c]:off[c+1]], run.n)
			}
		}
	}
	b.skipOff, b.skipAt, b.skipOrder, b.skipAdds = off, at, order, adds
	if len(muls) > 0 {
		// Every charge is now at the last run's multiplier.
		b.chargesFresh, b.chargedM, b.bookOK = true, muls[len(muls)-1].m, false
	}
}

// orderCrossing is a skipped tick's order step while the deficits stand
// and no segment is open: the watched pairs are checked on their tokens,
// and the runs put in order if one is out of order. Most often one pair
// crosses alone and its two runs just swap (swapCrossing).
func (b *Broker) orderCrossing(runs []pendingKey, watch []int32) ([]pendingKey, []int32) {
	camps := b.camps
	for w, p := range b.skipWatchCamps[:len(watch)] {
		if camps[p.c].tokens > camps[p.a].tokens {
			if !b.swapCrossing(runs, watch, w) {
				runs = b.reorderRuns(runs)
				watch = b.tokenDecided(runs, watch[:0])
			}
			b.skipIdxOK = false
			break
		}
	}
	return runs, watch
}

// watchThrough is how many ticks k ≤ limit from now change only the
// tokens of the pending campaigns' buckets (toks) and not the order of a
// watched pair of runs (while the deficits stand, the only pairs whose
// order can change): the segment of tokenLines. It moves the buckets k
// ticks on; 0 where no such k ≥ 2 is shown.
//
// It goes through the tick after them too where that tick is the first
// watched crossing (the earliest crossing of the whole list, kept:
// watchedCrossings) and every moving bucket is still on its line there,
// before the line's end (so that the tick's own tokenLines, in
// tokenSegment, would redo no line and find the crossing pair out of
// order, 0): the buckets then move k + 1 ticks, exactly the refill of
// the k skipped ticks and of the stepped one, and through is true; the
// caller does the rest of the stepped tick (dropStopped, the order
// step), which saves that tick's refill of every moving bucket one by
// one and its tokenLines.
func (b *Broker) watchThrough(toks []int32, runs []pendingKey, watch []int32, limit int) (k int, through bool) {
	if len(b.skipSlope) < len(b.camps) {
		b.skipSlope = make([]float64, len(b.camps))
	}
	slope := b.skipSlope
	k = b.tokenLines(slope, toks, runs, watch, limit)
	if k > 0 {
		cross := b.now + k + 1
		if k+1 <= limit && b.skipPairsN == len(watch) && b.skipPairCross == cross && cross < b.skipMinEnd {
			k, through = k+1, true
		}
		for _, i := range toks {
			b.camps[i].tokens += float64(k) * slope[i]
			slope[i] = 0
		}
	}
	return k, through
}

// dropStopped is the stepped tick's pruning of the moving buckets after
// watchThrough's jump: a bucket whose line has slope 0 is at its fixed
// point, where the tick's refill would have found it unchanged.
func (b *Broker) dropStopped(toks []int32) []int32 {
	lines := b.skipTokLines
	w := 0
	for j, i := range toks {
		if lines[j].slope != 0 {
			toks[w], lines[w] = i, lines[j]
			w++
		}
	}
	b.skipTokLines = lines[:w]
	return toks[:w]
}

// tokenLines is the k ≤ limit ticks after Now over which every pending
// campaign's bucket (toks) moves by a constant, slope[c] a tick, exactly
// (TokenBucket.Line), and no watched pair of runs changes places: a pair
// changes places at the first tick at which the later run's tokens exceed the
// earlier's, found exactly on those lines. It returns 0, with every
// slope of toks back at 0, where no k ≥ 2 is shown; otherwise the slopes
// stay in slope for the caller (watchThrough moves the buckets at once,
// tokenSegment keeps a segment open).
func (b *Broker) tokenLines(slope []float64, toks []int32, runs []pendingKey, watch []int32, limit int) int {
	camps := b.camps
	k := limit
	// skipQuiet keeps each line of toks beside it (skipTokLines): one
	// that holds at Now is the one lineOf would return (no held GPUs
	// change within a skip, and every line is worked out after the
	// last change: from > heldAt), so only an ended one is asked for.
	lines := b.skipTokLines[:len(toks)]
	if len(b.skipLineEnd) < len(camps) {
		b.skipLineEnd = make([]int, len(camps))
	}
	b.skipMinEnd = math.MaxInt
	for j, i := range toks {
		ln := &lines[j]
		if b.now >= ln.end {
			n, d := b.lineOf(i)
			*ln = bucketLine{from: b.now, end: b.now + n, slope: d}
		}
		slope[i] = ln.slope
		b.skipLineEnd[i] = ln.end
		b.skipMinEnd = min(b.skipMinEnd, ln.end)
		if k = min(k, ln.end-b.now); k < 2 {
			break
		}
	}
	if k >= 2 {
		k = b.watchedCrossings(slope, len(watch), k)
	}
	if k < 2 {
		for _, i := range toks {
			slope[i] = 0
		}
		return 0
	}
	return k
}

// watchedCrossings bounds tokenLines' k by the first n watched pairs'
// crossings (skipWatchCamps): k is cut to the tick before the first
// crossing. Each pair's crossing is kept with it (watchPair), worked out
// once per pair and pair of lines, and the earliest of them is kept for
// the list (skipPairCross, holding while Now < skipPairUntil) until
// tokenDecided makes a new one: a list lives over a few calls.
func (b *Broker) watchedCrossings(slope []float64, n, k int) int {
	if b.skipPairsN == n && b.now < b.skipPairUntil {
		return min(k, b.skipPairCross-1-b.now)
	}
	ends := b.skipLineEnd
	first, until, fresh := math.MaxInt, math.MaxInt, true
	for w := range n {
		p := &b.skipWatchCamps[w]
		if b.now >= p.until {
			b.pairCrossing(p, slope, ends)
		}
		if p.cross == crossOutOfOrder {
			// Its bound hangs on k as the pairs before it left it.
			k, fresh = b.crossingByLines(p, slope, k), false
			continue
		}
		first, until = min(first, p.cross), min(until, p.until)
		k = min(k, p.cross-1-b.now)
	}
	b.skipPairsN, b.skipPairCross, b.skipPairUntil = n, first, until
	if !fresh {
		b.skipPairsN = -1
	}
	return min(k, first-1-b.now)
}

// crossOutOfOrder is a watched pair's cross when its later run's tokens
// exceed the earlier's at the tick it was looked at (the tick's order step
// has yet to swap them): tokenLines then asks crossingByLines every call.
const crossOutOfOrder = math.MinInt

// pairCrossing works out watched pair p's crossing at Now on the pending
// campaigns' lines (slope, and their ends in ends; a campaign whose slope
// is 0 is at a fixed point and stays there): the first tick after Now at
// which c's tokens exceed a's, up to the first of the two lines' ends
// (math.MaxInt: none by then), which is how long it holds (until). Both
// fills are exact on their lines, t + j·d, so their difference is linear
// in j and the first tick is found by halving, as tokenLines did each
// call; the answer depends only on the pair's campaigns and their lines,
// so it holds for every later call before until, whatever the watch list
// around it.
func (b *Broker) pairCrossing(p *watchPair, slope []float64, ends []int) {
	camps := b.camps
	a, c := p.a, p.c
	ta, da, tc, dc := camps[a].tokens, slope[a], camps[c].tokens, slope[c]
	if tc > ta {
		p.cross, p.until = crossOutOfOrder, math.MinInt
		return
	}
	until := math.MaxInt
	if da != 0 {
		until = ends[a]
	}
	if dc != 0 {
		until = min(until, ends[c])
	}
	p.from, p.until, p.cross = b.now, until, math.MaxInt
	if until == math.MaxInt {
		return // two fixed points: their order stays
	}
	n := until - b.now
	if !(tc+float64(n)*dc > ta+float64(n)*da) {
		return // the difference is linear in j: not by n, not before
	}
	lo, hi := 0, n // not overtaken after lo ticks, overtaken after hi
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if tc+float64(mid)*dc > ta+float64(mid)*da {
			hi = mid
		} else {
			lo = mid
		}
	}
	p.cross = b.now + hi
}

// crossingByLines is tokenLines' bound k for a watched pair out of order
// at Now (crossOutOfOrder), as it was always worked out: 0 where c's
// tokens exceed a's k ticks on, else k. (With the later run ahead now and
// falling behind, which of the two it gives depends on k, so on the pairs
// before it: this keeps that answer.)
func (b *Broker) crossingByLines(p *watchPair, slope []float64, k int) int {
	camps := b.camps
	a, c := p.a, p.c
	ta, da, tc, dc := camps[a].tokens, slope[a], camps[c].tokens, slope[c]
	if !(tc+float64(k)*dc > ta+float64(k)*da) {
		return k
	}
	return 0 // overtaken now and k ticks on: so at every tick between
}

// lineOf is the number of ticks from Now over which campaign i's bucket
// provably moves by a constant, and that constant (TokenBucket.Line's
// answer, from its line when it still holds).
func (b *Broker) lineOf(i int32) (n int, d float64) { return b.lineAt(i, b.now) }

// lineAt is lineOf for a bucket that holds its fill of tick at (at most
// Now; no held GPUs changed since).
func (b *Broker) lineAt(i int32, at int) (n int, d float64) {
	cp := &b.camps[i]
	if n, d, ok := cp.line.at(at, cp.heldAt); ok {
		return n, d
	}
	cp.line = cp.env.GPUBucket().lineFrom(cp.tokens, float64(cp.heldAll), at)
	return cp.line.end - at, cp.line.slope
}

// swapCrossing is reorderRuns and tokenDecided for the watched pair w,
// out of order, when it is the only pair out of order and its two runs
// change places alone: the later run moves ahead of the earlier and of
// nothing else, and meets no run of its campaign and class, nor does the
// earlier. The list is sorted under the last tick's keys and the deficits
// stand, so every other adjacent pair is in order (a pair of runs their
// class or deficit orders stays so, and the other watched pairs are
// checked); the stable sort then swaps the two runs, as sortRuns'
// insertion would. The watched pairs are the same runs' pairs after it
// (the two runs tie on class and deficit, so either ties its other
// neighbour as the other did): only the three pairs with a swapped run
// in them change campaigns. It returns false, changing nothing, where
// the swap is not the sort.
func (b *Broker) swapCrossing(runs []pendingKey, watch []int32, w int) bool {
	camps, pairs := b.camps, b.skipWatchCamps[:len(watch)]
	for v := w + 1; v < len(pairs); v++ {
		if q := &pairs[v]; camps[q.c].tokens > camps[q.a].tokens {
			return false
		}
	}
	i := int(watch[w])
	ra, rc := runs[i-1], runs[i]
	a, c := pairs[w].a, pairs[w].c
	ra.tokens, rc.tokens = camps[a].tokens, camps[c].tokens
	if i >= 2 {
		x := &runs[i-2]
		xc := x.camp
		x.tokens = camps[xc].tokens
		if keyBefore(&rc, x) || x.class == rc.class && xc == c {
			return false
		}
	}
	if i+1 < len(runs) {
		y := &runs[i+1]
		yc := y.camp
		y.tokens = camps[yc].tokens
		if keyBefore(y, &ra) || y.class == ra.class && yc == a {
			return false
		}
	}
	// The runs a, c of the list become c, a: their places swap, their
	// requests stay where they are.
	rc.pos, ra.pos = ra.pos, rc.pos
	runs[i-1], runs[i] = rc, ra
	pairs[w] = watchPair{a: c, c: a, until: math.MinInt}
	if w > 0 && watch[w-1] == int32(i-1) {
		pairs[w-1].c, pairs[w-1].until = c, math.MinInt
	}
	if w+1 < len(watch) && watch[w+1] == int32(i+1) {
		pairs[w+1].a, pairs[w+1].until = a, math.MinInt
	}
	b.skipPairsN = -1
	return true
}

// reorderRuns puts the pending list in the order of this tick's sort keys,
// as order would, when only adjacent runs that their tokens order
// may be out of order (the deficits the runs hold still stand): it reads
// the runs' tokens and sorts them (sortRuns).
func (b *Broker) reorderRuns(runs []pendingKey) []pendingKey {
	for i := range runs {
		runs[i].tokens = b.camps[runs[i].camp].tokens
	}
	return b.sortRuns(runs)
}

// sortRuns is order's sort, on runs that hold their keys of this tick: a
// stable sort of the runs as units (the requests of a run share their
// keys and stand together, so this is the stable sort of the requests),
// by insertion, since the runs are nearly in order; only runs move, never
// a request but where two runs of one campaign and class now meet and
// merge (mergeRuns). It returns the runs of the new list.
func (b *Broker) sortRuns(runs []pendingKey) []pendingKey {
	if b.counting {
		b.work.RunsRead += int64(len(runs))
	}
	if inversions(runs) > sortRunsInsertionMax {
		// An O(r log r) sort of the runs: their places, distinct and in
		// list order, make the unstable sort the stable one.
		b.sortRunsWhole(runs)
		return b.mergeRuns(runs, 0)
	}
	lo := -1
	for i := 1; i < len(runs); i++ {
		if !keyBefore(&runs[i], &runs[i-1]) {
			continue
		}
		x := runs[i]
		j := i
		for ; j > 0 && keyBefore(&x, &runs[j-1]); j-- {
			runs[j] = runs[j-1]
		}
		runs[j] = x
		if lo < 0 || j < lo {
			lo = j
		}
	}
	if lo < 0 {
		return runs
	}
	// The runs were maximal before, so only a pair with a moved run in
	// it can meet: from lo on.
	return b.mergeRuns(runs, lo)
}

// sortRunsInsertionMax is the most adjacent runs out of order that
// sortRuns puts in place by insertion; beyond it a few runs moving far
// could cost a shift of the runs per pair, and it sorts them whole.
const sortRunsInsertionMax = 8

// inversions is the number of adjacent runs out of order.
func inversions(runs []pendingKey) int {
	n := 0
	for i := 1; i < len(runs); i++ {
		if keyBefore(&runs[i], &runs[i-1]) {
			n++
		}
	}
	return n
}

// runsSorted is whether the pending list is in the order of this tick's
// sort keys: adjacent runs in order (pendingKeysSorted on the runs' keys,
// with their positions ascending as within the list).
func (b *Broker) runsSorted(runs []pendingKey) bool {
	if b.counting {
		b.work.RunsRead += int64(len(runs))
	}
	for i := range runs {
		k := &runs[i]
		c := CampaignID(k.camp)
		k.deficit, k.tokens = b.FairDeficit(c), b.camps[c].tokens
	}
	return pendingKeysSorted(runs)
}

// tokenDecided appends the indices i of the adjacent runs i−1, i that
// their class and deficit leave tied, so that their tokens order them:
// while the deficits stay, no other pair can change its order. Each
// pair's campaigns go to skipWatchCamps, beside it, for tokenLines, which
// reads every pair's tokens at every segment: the pending list they
// were looked up in is thousands of requests long on a full trace log.
//
// A pair that was watched before keeps its crossing (watchPair): a
// reorder moves a run or two, so the pairs come in nearly the same order
// as in the last list, and each is looked for a few places on from where
// the last match was.
func (b *Broker) tokenDecided(runs []pendingKey, watch []int32) []int32 {
	if b.counting {
		b.work.RunsRead += int64(len(runs))
	}
	last, camps := b.skipWatchCamps, b.skipWatchSpare[:0]
	at := 0 // where the next pair is looked for in last
	for i := 1; i < len(runs); i++ {
		if runs[i].class != runs[i-1].class || runs[i].deficit != runs[i-1].deficit {
			continue
		}
		watch = append(watch, int32(i))
		a, c := runs[i-1].camp, runs[i].camp
		if at < len(last) && last[at].a == a && last[at].c == c {
			camps = append(camps, last[at])
			at++
			continue
		}
		p := watchPair{a: a, c: c, until: math.MinInt}
		for j := at + 1; j < min(at+watchLookahead, len(last)); j++ {
			if last[j].a == a && last[j].c == c {
				p, at = last[j], j+1
				break
			}
		}
		camps = append(camps, p)
	}
	if b.skipWatchHeld {
		// A skip's first list: a pair kept from the last skip's holds
		// only where neither campaign's held GPUs changed since.
		for w := range camps {
			if q := &camps[w]; q.until != math.MinInt && !(q.from > b.camps[q.a].heldAt && q.from > b.camps[q.c].heldAt) {
				q.until = math.MinInt
			}
		}
	}
	b.skipWatchCamps, b.skipWatchSpare = camps, last[:0]
	b.skipWatchHeld, b.skipPairsN = false, -1
	return watch
}

// watchLookahead is how many pairs on from the last match tokenDecided
// looks for a pair of the last list: a reorder of a run or two moves a
// pair by a place or two.
const watchLookahead = 4

// watchPair is a watched pair's campaigns: the earlier run's and the
// later's.
//
// Beside them, the pair's crossing (pairCrossing) as worked out at tick
// from: the tick at which c's tokens first exceed a's on their lines,
// math.MaxInt for none before until, crossOutOfOrder where they do at
// tick from; it holds while Now < until (until math.MinInt: not worked
// out) and neither campaign's held GPUs changed since from (the lines are
// those of the held GPUs): tokenDecided checks that at a skip's start.
type watchPair struct {
	a, c               int32
	from, until, cross int
}

// usageOrdered is whether every pending campaign has share 0 (no
// guarantee of its own: every trace campaign, docs/studies.md §3.2), and
// the usage total stays below 2⁵³. Then a deficit is 0 − fl(U_c ÷ U) with
// 0 ≤ U_c ≤ U < 2⁵³, and two sums U_a < U_b give quotients more than
// 2⁻⁵³ apart in [0, 1], where no rounding cell is wider: the deficits
// are equal exactly when the sums are, and larger exactly when the sum
// is smaller. So −U_c orders the runs exactly as the deficit does, and
// it moves only when the campaign's own usage does, not with the total.
func (b *Broker) usageOrdered(runs []pendingKey) bool {
	if float64(b.cfg.Pool)*FairShareWindow >= 1<<53 {
		return false // the total is at most the pool over the window
	}
	for _, r := range runs {
		if b.camps[r.camp].share != 0 {
			return false
		}
	}
	return true
}

// runsSortedByUsage is runsSorted with −U_c for the deficit
// (usageOrdered).
func (b *Broker) runsSortedByUsage(runs []pendingKey) bool {
	if b.counting {
		b.work.RunsRead += int64(len(runs))
	}
	for i := range runs {
		k := &runs[i]
		cp := &b.camps[k.camp]
		k.deficit, k.tokens = -float64(cp.usage.sum), cp.tokens
	}
	return pendingKeysSorted(runs)
}

// reorderMoved is a skipped tick's ordering step under usageOrdered,
// with the list in order under the last tick's keys and watch its pairs
// tied by class and deficit: only the campaigns in moved changed their
// usage sums. A pair of adjacent runs neither of which moved keeps its
// deficits, so it stays in order unless it is tied and its tokens swap
// (a watched pair); so the pairs next to a moved run are checked on all
// their keys and the watched pairs on their tokens, and the list is
// sorted (reorderRuns) only if one of them is out of order. The watched
// pairs are redone when a moved run's ties changed.
func (b *Broker) reorderMoved(toks []int32, runs []pendingKey, watch []int32, moved []int32) ([]pendingKey, []int32) {
	camps := b.camps
	if !b.skipIdxOK {
		b.indexRuns(runs)
	}
	first, next := b.skipRunFirst, b.skipRunNext
	pairs := b.skipPairs[:0] // j: the pair of runs j−1 and j
	for _, c := range moved {
		for i := first[c]; i >= 0; i = next[i] {
			if i > 0 {
				pairs = append(pairs, i)
			}
			if int(i)+1 < len(runs) {
				pairs = append(pairs, i+1)
			}
		}
	}
	ties := b.skipTies[:0]
	for _, j := range pairs {
		ties = append(ties, tiedRuns(&runs[j-1], &runs[j]))
	}
	for _, c := range moved {
		key := -float64(camps[c].usage.sum)
		for i := first[c]; i >= 0; i = next[i] {
			runs[i].deficit = key
		}
	}
	need, retie := false, false
	for k, j := range pairs {
		a, c := &runs[j-1], &runs[j]
		a.tokens, c.tokens = b.segTokens(CampaignID(a.camp)), b.segTokens(CampaignID(c.camp))
		need = need || keyBefore(c, a)
		retie = retie || tiedRuns(a, c) != ties[k]
	}
	// Within a segment no watched pair changes places (tokenSegment).
	for _, i := range watch {
		if need || b.skipSegOK {
			break
		}
		need = camps[runs[i].camp].tokens > camps[runs[i-1].camp].tokens
	}
	if need || retie {
		b.syncSeg(toks) // the whole list's tokens are read, or the watch list changes
	}
	switch {
	case need:
		runs = b.reorderRuns(runs)
		watch = b.tokenDecided(runs, watch[:0])
		b.skipIdxOK = false
	case retie:
		watch = b.tokenDecided(runs, watch[:0])
	}
	b.skipPairs, b.skipTies = pairs, ties
	return runs, watch
}

// tiedRuns is whether class and deficit leave runs a and c to their
// tokens (tokenDecided's test).
func tiedRuns(a, c *pendingKey) bool { return a.class == c.class && a.deficit == c.deficit }

// indexRuns lists each campaign's runs by index, for the skip's walks
// over a moved campaign's runs: skipRunFirst[c] is its first run and
// skipRunNext[i] the next run of run i's campaign (−1: none), in list
// order. Only the campaigns of the runs are touched (skipRunCamps, reset
// at the next call), so that a call costs the runs, not the campaigns.
func (b *Broker) indexRuns(runs []pendingKey) {
	if b.counting {
		b.work.RunsRead += int64(len(runs))
	}
	first := b.skipRunFirst
	for len(first) < len(b.camps) {
		first = append(first, -1)
	}
	for _, c := range b.skipRunCamps {
		first[c] = -1
	}
	listed := b.skipRunCamps[:0]
	next := slices.Grow(b.skipRunNext[:0], len(runs))[:len(runs)]
	for i := len(runs) - 1; i >= 0; i-- {
		c := runs[i].camp
		if first[c] < 0 {
			listed = append(listed, c)
		}
		next[i], first[c] = first[c], int32(i)
	}
	b.skipRunFirst, b.skipRunNext, b.skipRunCamps, b.skipIdxOK = first, next, listed, true
}

// tokenSegment is watchThrough without moving the buckets: the segment of
// tokenLines, its slopes kept in skipSeg. Over the segment a bucket's
// fill j ticks on is its fill now plus j·skipSeg[c] (segTokens); syncSeg
// writes it back.
func (b *Broker) tokenSegment(toks []int32, runs []pendingKey, watch []int32, limit int) int {
	if len(b.skipSeg) < len(b.camps) {
		b.skipSeg = make([]float64, len(b.camps))
	}
	return b.tokenLines(b.skipSeg, toks, runs, watch, limit)
}

// segTokens is campaign c's GPU tokens at Now, within an open segment
// too.
func (b *Broker) segTokens(c CampaignID) float64 {
	cp := &b.camps[c]
	if b.skipSegOK {
		return cp.tokens + float64(b.now-b.skipSegStart)*b.skipSeg[c]
	}
	return cp.tokens
}

// syncSeg closes an open segment at Now: the pending campaigns' buckets
// hold their fills of this tick again.
func (b *Broker) syncSeg(toks []int32) { b.syncSegTo(toks, b.now) }

// syncSegTo closes an open segment at tick to (within it).
func (b *Broker) syncSegTo(toks []int32, to int) {
	if !b.skipSegOK {
		return
	}
	j := float64(to - b.skipSegStart)
	for _, i := range toks {
		if d := b.skipSeg[i]; d != 0 {
			b.camps[i].tokens += j * d
			b.skipSeg[i] = 0
		}
	}
	b.skipSegOK = false
}
