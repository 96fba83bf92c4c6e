package policy

import "math"

// A campaign's throttle floor: what lets an admission pass and NextChange
// pass a campaign's pending requests by without reading them, when every
// one of them is a trace job held back by its campaign's rate cap.
//
// On a full trace log thousands of jobs wait at once, nearly all of them
// throttled (their campaign's bucket has not yet paid for them), and a
// throttled job that has been journaled does nothing at an admission try:
// it is tried again only to be throttled again. A trace job r of a
// campaign holding H GPUs is throttled while the rate cap for its
// estimate is below K = H + r.GPUs, and with the campaign's fill T below
// throttleFloor(H, r) it is, certainly (the same bound NextChange's cap
// exits rest on: see capGap). The campaign's floor is the smallest of its
// pending trace jobs' floors: with the fill below it, every job of the
// campaign is throttled; and a rising fill's first cap exit among them is
// the one of that smallest floor, since the exit's gap is floor − T
// (rigidCapGap) and subtracting the same T keeps the order.
//
// A campaign is quiet (quietCampaign) when its fill is below its floor
// and none of its pending requests must be tried whatever the tokens
// (tries: a request that is not a trace job expires and takes partial
// grants; a trace job not yet journaled throttled writes its throttle
// record at its next try). Admission keeps a quiet campaign's requests as
// they are, and NextChange takes its exit from the floor. Neither answer
// moves: a quiet campaign's requests, tried one by one, would each do
// nothing, and the smallest of their gaps is the floor's.
//
// The floor depends on the campaign's held GPUs and on which jobs are
// pending, so it is kept valid (floorOK) only until either changes:
// addHeld and a dropped trace job clear floorOK, a filed trace job lowers
// a valid floor, and refreshFloors works the cleared ones out again from
// the pending list's runs (one walk of the runs, and of the requests of
// the campaigns it recomputes), at most once per change. tries is kept
// exact at every filing, journaling and drop. In the leaky mode
// (GrantTimeOnly) the cap does not depend on the estimate and no campaign
// is quiet: every request is read, as before.

// throttleFloor is the fill below which a trace job of gpus GPUs and the
// given estimate, of campaign cp at its held GPUs, is certainly throttled:
// the threshold rigidCapGap bounds a rising fill's cap exit by. −Inf where
// the guarantee alone admits the job (it is never throttled), +Inf where
// the burst ceiling never does (always throttled, and no cap exit).
func throttleFloor(cp *campaign, gpus, estimate int) float64 {
	env := &cp.env
	k := cp.heldAll + gpus
	switch {
	case env.Guaranteed >= k:
		return math.Inf(-1)
	case k > env.BurstCeiling:
		return math.Inf(1)
	}
	return risingCapThreshold(env, k, float64(max(estimate, 1)))
}

// risingCapThreshold is the fill at or below which the prepaid rate cap
// for an estimate of dur seconds is below k (capMargin covers the
// rounding of R + T/dur); rigidCapGap and throttleFloor both read it
// here, so that the floor is exactly the smallest of the gaps' ends.
func risingCapThreshold(env *Envelope, k int, dur float64) float64 {
	return float64((float64(k)-env.Sustained)*dur) - capMargin(env, k, dur)
}

// quietCampaign is whether every pending request of campaign cp does
// nothing when tried now (see above): none must be tried whatever the
// tokens, the floor is valid, and the fill is below it. It reads the
// campaign's state of the moment, so that a grant earlier in the same
// pass (which clears floorOK) makes it false.
func (b *Broker) quietCampaign(cp *campaign) bool {
	return cp.tries == 0 && cp.floorOK && cp.tokens < cp.floor && !b.cfg.GrantTimeOnly
}

// fileTried counts a newly filed request, which admission must try.
func (cp *campaign) fileTried() { cp.tries++ }

// fileRigid lowers a valid floor by the trace job just filed.
func (cp *campaign) fileRigid(r *Request) {
	if cp.floorOK {
		cp.floor = min(cp.floor, throttleFloor(cp, r.GPUs, r.Duration))
	}
}

// journaledThrottle counts request r's first throttle record: a trace job
// no longer has to be tried whatever the tokens.
func (cp *campaign) journaledThrottle(r *Request) {
	r.throttleJournaled = true
	if r.rigid {
		cp.tries--
	}
}

// dropTried uncounts request r as it leaves the pending list.
func (cp *campaign) dropTried(r *Request) {
	if !r.rigid || !r.throttleJournaled {
		cp.tries--
	}
	// The floor is the least of the pending trace jobs' floors at the
	// held GPUs it was worked out at (addHeld clears it when they
	// change): a job whose own floor is above it did not hold it, and
	// the others' least is the same without it. Only a job at the
	// floor may have held it; clearing the floor at any other drop had
	// refreshFloors walk the campaign's runs again for nothing (a few
	// hundredths of a request a job on 64 weeks of SDSC-SP2: most
	// floors are cleared by grants).
	if r.rigid && cp.floorOK && throttleFloor(cp, r.GPUs, r.Duration) <= cp.floor {
		cp.floorOK = false
	}
}

// refreshFloors works out again the floor of every campaign in the
// pending list whose floor was cleared, from the list's runs: a cleared
// campaign is reset at its first run and takes the floors of its trace
// jobs in each of its runs (floorEpoch tells the ones reset in this walk
// from those valid before it).
func (b *Broker) refreshFloors(runs []pendingKey) {
	if b.cfg.GrantTimeOnly || b.rigidPending == 0 {
		return // no floor is read (a campaign with a request to try is not quiet)
	}
	b.floorEpoch++
	for i := range runs {
		reqs := b.reqsOf(&runs[i])
		cp := &b.camps[runs[i].camp]
		switch {
		case !cp.floorOK:
			cp.floorOK, cp.floor, cp.floorEpoch = true, math.Inf(1), b.floorEpoch
		case cp.floorEpoch != b.floorEpoch:
			continue // valid before this walk
		}
		floor := cp.floor
		if b.counting {
			b.work.Walked += int64(len(reqs))
		}
		for j := range reqs {
			if r := &reqs[j]; r.rigid {
				floor = min(floor, throttleFloor(cp, r.GPUs, r.Duration))
			}
		}
		cp.floor = floor
	}
}
