package policy

import "math"

// runSummary is what admission and the site's scavenge step need to know
// of a run without reading its requests. It is kept by slot
// (Broker.runSums) and valid while ok: a filing and a merge keep it,
// admission redoes it for every run it walks, and a withdrawal, a
// restored state or a copy's fresh slot leave it to be redone (sumOf's
// zero value is not ok).
//
// A run does nothing when tried (runInert) where every request is a
// trace job wider than the GPUs a grant or a reclaim could reach and none
// would write its first throttle record: each is then either throttled
// and journaled already, or under its cap with nothing free to take.
// Admission passes such a run by, and so does the scavenge step where no
// idle GPU can seat its narrowest job. On a long trace log most of the
// queue is such runs: jobs waiting for GPUs that the machine, fragmented
// by the jobs it runs, does not have free (issue 32: on 64 weeks of
// SDSC-SP2 three requests in four that admission tried were trace jobs
// under their caps, never journaled, wider than the free GPUs).
type runSummary struct {
	narrowest int
	// fresh are the requests to try whatever the state: those that are
	// not trace jobs (they expire, take partial grants) and the trace
	// jobs filed since the run was last walked (or not known tried).
	fresh int32
	// waiting are the trace jobs that the last walk found under their
	// caps, never journaled throttled. A try journals one once it finds
	// it throttled; none is while the campaign's fill is at least fill
	// and its held GPUs at most held (the walk's): the prepaid cap only
	// grows with the fill, and the headroom only shrinks as held GPUs
	// grow (rateCap, admitRigid).
	waiting int32
	fill    float64
	held    int
	// elastic are the requests that are not trace jobs: with none, a
	// campaign whose fill is at a fixed point gives NextChange nothing
	// from the run (no request expires, no cap moves).
	elastic int32
	ok      bool
}

// empty is the summary of an empty run.
func (s *runSummary) empty() { *s = runSummary{narrowest: math.MaxInt, ok: true} }

// filed counts a request of gpus GPUs filed into the run: one to try,
// not a trace job until RequestRigid makes it one (rigidFiled).
func (s *runSummary) filed(gpus int) {
	s.narrowest = min(s.narrowest, gpus)
	s.fresh++
	s.elastic++
}

// rigidFiled counts the request just filed as a trace job.
func (s *runSummary) rigidFiled() { s.elastic-- }

// merge takes run o's requests into s's (keepRun): both of one campaign,
// whose fill and held GPUs bound both runs' waiting jobs where they bound
// each.
func (s *runSummary) merge(o *runSummary) {
	switch {
	case o.waiting == 0:
	case s.waiting == 0:
		s.fill, s.held = o.fill, o.held
	default:
		s.fill, s.held = max(s.fill, o.fill), min(s.held, o.held)
	}
	s.ok = s.ok && o.ok
	s.narrowest = min(s.narrowest, o.narrowest)
	s.fresh += o.fresh
	s.waiting += o.waiting
	s.elastic += o.elastic
}

// sumOf is slot s's summary, the slice grown as the slots are.
func (b *Broker) sumOf(s int32) *runSummary {
	for int(s) >= len(b.runSums) {
		b.runSums = append(b.runSums, runSummary{})
	}
	return &b.runSums[s]
}

// summarize redoes run reqs's summary into s without trying it: every
// trace job not journaled throttled counts fresh (whether it is under
// its cap is not known).
func summarize(s *runSummary, reqs []Request) {
	s.empty()
	for j := range reqs {
		r := &reqs[j]
		if !r.rigid || !r.throttleJournaled {
			s.fresh++
		}
		if !r.rigid {
			s.elastic++
		}
		s.narrowest = min(s.narrowest, r.GPUs)
	}
}

// tried takes request r, kept pending by its try in a walk, into the
// run's summary: a trace job the try did not journal was under its cap.
func (s *runSummary) tried(r *Request) {
	switch {
	case !r.rigid:
		s.fresh++
		s.elastic++
	case !r.throttleJournaled:
		s.waiting++
	}
	s.narrowest = min(s.narrowest, r.GPUs)
}

// reach is the most GPUs a request of class cls could be granted or
// reclaim for now: the free GPUs bound every grant (grantable, seatable),
// and a reclaim needs the request to fit once every lease under notice
// and every opportunistic lease not under notice were gone
// (fitsAfterReclaim); an opportunistic request reclaims nothing, nor does
// any where no opportunistic lease is left to notice (preemptFor finds no
// candidate).
func (b *Broker) reach(cls Class) int {
	if cls == Opportunistic || b.reclaimable == 0 {
		return b.Free()
	}
	return b.Free() + b.inFlight + b.reclaimable
}

// runRigid is whether run k holds only trace jobs (its summary
// valid): NextChange passes such a run of a campaign whose fill is at a
// fixed point by unread, since none of its requests expires or sees its
// cap move. (On 64 weeks of SDSC-SP2 every request NextChange read was in
// such a campaign: a long queue has drained its bucket to 0.)
func (b *Broker) runRigid(k *pendingKey) bool {
	s := b.sumOf(k.slot)
	return s.ok && s.elastic == 0
}

// runInert is whether trying run k's requests now would do nothing (its
// summary valid): none fresh, none narrow enough for a grant or a
// reclaim, and every waiting job still under its cap. admitRigid then
// finds each either throttled, with nothing to journal, or under its cap
// with x < GPUs and no reclaim that fits.
func (b *Broker) runInert(k *pendingKey) bool {
	s := b.sumOf(k.slot)
	if !s.ok || s.fresh != 0 || s.narrowest <= b.reach(k.class) {
		return false
	}
	cp := &b.camps[k.camp]
	return s.waiting == 0 || cp.tokens >= s.fill && cp.heldAll <= s.held
}
