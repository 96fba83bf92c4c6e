package policy

import "fmt"

var (
	_ RigidRequester = (*Broker)(nil)
	_ EventSkipper   = (*Broker)(nil)
)

// RequestRigid files a trace job under Bursar (RigidRequester). The job's
// campaign envelope meters it as any request: the prepaid rate cap for
// its estimate (model.md §5), then the guarantee reserve. A job larger
// than its campaign can ever hold is denied at once (reason
// exceeds-limit, §6.1), since it would wait for ever: larger than the cap
// with a full bucket (tokens never exceed the bucket), or than the pool
// less the other campaigns' guarantees (grantable keeps their unmet
// guarantees free, and a campaign holds at least its guarantee or leaves
// the rest of it reserved). The check is made when the job is filed: a
// guarantee registered later can still strand a job that is waiting.
func (b *Broker) RequestRigid(c CampaignID, gpus, estimate, run int, cls Class, submitted int) (int, error) {
	if err := b.check(c); err != nil {
		return -1, err
	}
	if run < 1 || estimate < run {
		return -1, fmt.Errorf("rigid request: need 1 ≤ run ≤ estimate, got run %d, estimate %d", run, estimate)
	}
	if submitted > b.now+1 {
		return -1, fmt.Errorf("rigid request: submitted at %d, after the next tick %d", submitted, b.now+1)
	}
	cp := &b.camps[c]
	if capFull := b.rateCapFull(cp, estimate); gpus > capFull {
		if cls == AnyClass {
			cls = cp.env.Class
		}
		id := b.nextID
		b.nextID++
		if b.rec != nil {
			b.record(Event{Kind: EventDeny, Campaign: cp.env.Name, CampaignID: c, GPUs: gpus, Class: cls, Reason: ReasonExceedsLimit})
		}
		return id, ErrExceedsLimit
	}
	id, err := b.Request(c, gpus, estimate, cls)
	if err != nil {
		return id, err
	}
	k := &b.runs[len(b.runs)-1]
	last := b.reqsOf(k)
	r := &last[len(last)-1]
	r.rigid, r.run, r.Submitted = true, run, submitted
	b.sumOf(k.slot).rigidFiled()
	cp.fileRigid(r)
	b.rigidPending++
	return id, nil
}

// rateCapFull is rateCap with the bucket full, within the pool less the
// other campaigns' guarantees: the most a request of that duration can
// ever be granted.
func (b *Broker) rateCapFull(cp *campaign, duration int) int {
	saved := cp.tokens
	cp.tokens = cp.env.Bucket
	c := b.rateCap(cp, duration)
	cp.tokens = saved
	return min(c, b.cfg.Pool-(b.guaranteed-cp.env.Guaranteed))
}

// admitRigid is admitOne for a trace job: no expiry, no partial grant.
// The job starts whole when its cap and the guarantee reserve allow it;
// otherwise a non-opportunistic job reclaims opportunistic leases as any
// request does, but only when that lets it start: when it would fit once
// every lease under notice and every opportunistic lease not yet under
// notice were gone (docs/studies.md §6.6, "only if the request then
// fits"). An elastic request takes whatever a reclaim frees (a partial
// grant); a whole-or-nothing job that a reclaim cannot seat would only
// have its victims requeued and re-granted the GPUs it freed, and noticed
// again a grace period later, for as long as it waits (docs/traces.md).
func (b *Broker) admitRigid(r *Request) (keep bool) {
	cp := &b.camps[r.Campaign]
	limit := b.rateCap(cp, r.Duration)
	if limit-cp.heldAll < r.GPUs {
		if !r.throttleJournaled {
			cp.journaledThrottle(r)
			b.changedAt = b.now
			if b.rec != nil {
				b.record(Event{Kind: EventThrottle, Campaign: cp.env.Name, CampaignID: r.Campaign, GPUs: r.GPUs, Class: r.Class, Tokens: cp.tokens, Cap: limit})
			}
		}
		return true
	}
	x := b.seatable(b.grantable(cp, r.GPUs))
	if x >= r.GPUs {
		// The lease lasts the job's real run; the request's Duration (the
		// estimate) has done its work in the rate cap.
		r.Duration = r.run
		b.grant(cp, r, r.GPUs)
		b.leases[len(b.leases)-1].rigid = true
		return false
	}
	if r.Class != Opportunistic && b.fitsAfterReclaim(cp, r.GPUs) {
		b.preemptFor(r.GPUs - x)
	}
	return true
}

// fitsAfterReclaim is whether grantable(cp, n) would reach n with the GPUs
// of every lease under notice and of every opportunistic lease not under
// notice free as well.
func (b *Broker) fitsAfterReclaim(cp *campaign, n int) bool {
	free := b.Free() + b.inFlight + b.reclaimable
	own := unmetOf(cp)
	guar := min(n, own, free)
	extra := max(0, free-(b.unmet-own)-guar)
	return guar+min(n-guar, extra) >= n
}

// RateCap is the most GPUs campaign c may hold now for a request of the
// given duration: the prepaid rate cap of model.md §5 at the campaign's
// current tokens, as admission reads it. A pending trace job of c is held
// back by its meter (not by a lack of free GPUs) when RateCap − Held(c,
// AnyClass) is below its GPUs: what the site metering of a trace reads
// (sitemeter, docs/traces.md). It changes nothing.
func (b *Broker) RateCap(c CampaignID, duration int) int {
	return b.rateCap(&b.camps[c], duration)
}

// MostEver is the most GPUs campaign c can ever be granted for a request
// of the given duration: its cap with a full bucket, within the pool less
// the other campaigns' guarantees. RequestRigid denies a trace job wider
// than that at once; the site metering of a trace (sitemeter) files such
// a job on its group's scavenger instead. It changes nothing.
func (b *Broker) MostEver(c CampaignID, duration int) int {
	return b.rateCapFull(&b.camps[c], duration)
}
