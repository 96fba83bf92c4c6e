package policy

import "math"

// runSummary is what admission and the site's scavenge step need to know
// of a run without reading its requests. It is kept by slot
// (Broker.runSums) and valid while ok: a filing, a merge and a
// withdrawal (withdrawn) keep it, admission redoes it for every run it
// walks, and the withdrawal of the last request at the narrowest width, a
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
	// atNarrowest are the requests of narrowest GPUs: a withdrawal
	// keeps narrowest exact while one is left (withdrawn).
	atNarrowest int32
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
	s.width(gpus)
	s.fresh++
	s.elastic++
}

// width counts a request of gpus GPUs into narrowest and atNarrowest.
func (s *runSummary) width(gpus int) {
	switch {
	case gpus < s.narrowest:
		s.narrowest, s.atNarrowest = gpus, 1
	case gpus == s.narrowest:
		s.atNarrowest++
	}
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
	switch {
	case o.narrowest < s.narrowest:
		s.narrowest, s.atNarrowest = o.narrowest, o.atNarrowest
	case o.narrowest == s.narrowest:
		s.atNarrowest += o.atNarrowest
	}
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
		s.width(r.GPUs)
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
	s.width(r.GPUs)
}

// withdrawn takes request r, withdrawn from the run (Broker.Withdraw),
// out of its summary, which stays a safe one for runInert: fresh never
// below the requests to try whatever the state, and fresh + waiting never
// below those and the trace jobs under their caps at the last walk. The
// summary does not tell which of the two a trace job not journaled
// throttled was: it is taken out of waiting while any is counted, else
// out of fresh. Either way both bounds hold (were it fresh, waiting may
// fall below the true count only while fresh is above it, and a run with
// fresh above 0 is not inert). A trace job journaled throttled is in
// neither. narrowest stays exact while a request of its width is left;
// with the last one gone the summary is left to be redone (ok false),
// as every withdrawal left it before (issue 32: on 64 weeks of SDSC-SP2
// with fair starts, the scavenge step's withdrawals had
// PendingRunNarrowest read 0.9 requests a job again).
func (s *runSummary) withdrawn(r *Request) {
	switch {
	case !r.rigid:
		s.fresh--
		s.elastic--
	case r.throttleJournaled:
	case s.waiting > 0:
		s.waiting--
	default:
		s.fresh--
	}
	switch {
	case r.GPUs > s.narrowest:
	case r.GPUs == s.narrowest && s.atNarrowest > 1:
		s.atNarrowest--
	default:
		s.ok = false
	}
	if s.fresh < 0 || s.elastic < 0 {
		s.ok = false // not a summary of this run: redo it
	}
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
