package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Benchmarks of the broker (`go test -run '^$' -bench . -benchmem
// ./policy/`). The tick must not allocate in steady state, and an admission
// pass must cost no worse than n log n in pending requests.

// loadAgents drives a broker the way the default scenario loads it (model.md
// §6–7, without the task lists, which are the engine's), in a cycle of two
// simulated hours so that it can run for ever: a victim asking for 16 GPUs
// every 2 minutes; two science campaigns keeping agent-burst work asked for
// (and the adaptive one backfilling) for the first 5000 s of the cycle, then
// releasing everything while their buckets refill; two storms
// re-requesting every 20 s during [3600, 5400); a probe measuring every
// 5 minutes; and the backfill filling what is left, so that science, probe
// and victim preempt it. Science and backfill ask in pieces of 16 and 32
// GPUs. Over a cycle there are about 25 leases and 9 pending requests (most
// of them throttled) on average, and some 25 preemption notices.
type loadAgents struct {
	b                                             *Broker
	victim, adaptive, naive, storm, storm2, probe CampaignID
	backfill                                      CampaignID
	t, probeT0                                    int
	probing                                       bool
	// Σ over ticks of the lease and pending-list lengths, for the means.
	leaseTicks, pendingTicks int
}

// Budgets are the scenario's times a million: the benchmark runs for
// simulated days, and a campaign out of credits would stop asking and leave
// a quieter broker than the scenario's.
const benchBudget = 1e6

func newLoadAgents(tb testing.TB) *loadAgents {
	cfg := DefaultConfig(512)
	cfg.IOCapacity, cfg.InferenceCapacity = 28, 5000
	b, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	reg := func(e Envelope) CampaignID {
		c, err := b.Register(e)
		if err != nil {
			tb.Fatal(err)
		}
		return c
	}
	sci := func(name string) Envelope {
		e := Envelope{Name: name, Budget: 20000 * benchBudget, Guaranteed: 64, Sustained: 128, BurstCeiling: 384, Bucket: 300000, Class: AgentBurst}
		e.IO = &Flow{Rate: 6, Bucket: 3600, Ceiling: 16}
		e.Inference = &Flow{Rate: 500, Bucket: 100000, Ceiling: 2000}
		return e
	}
	storm := func(name string) Envelope {
		return Envelope{Name: name, Budget: 8000 * benchBudget, Guaranteed: 16, Sustained: 64, BurstCeiling: 384, Bucket: 150000, Class: AgentBurst,
			Inference: &Flow{Rate: 50, Bucket: 5000, Ceiling: 500}}
	}
	a := &loadAgents{b: b}
	a.victim = reg(Envelope{Name: "victim", Budget: 5000 * benchBudget, Guaranteed: 32, Sustained: 32, BurstCeiling: 64, Bucket: 60000, Class: Interactive})
	a.adaptive = reg(sci("adaptive-sci"))
	a.naive = reg(sci("naive-sci"))
	a.storm = reg(storm("storm"))
	a.storm2 = reg(storm("storm2"))
	a.probe = reg(Envelope{Name: "probe", Budget: 1e9, Sustained: 128, BurstCeiling: 128, Bucket: 1e9, Class: AgentBurst})
	a.backfill = reg(Envelope{Name: "backfill", Budget: 1e9, Sustained: 512, BurstCeiling: 512, Bucket: 1e9, Class: Opportunistic})
	return a
}

// topUp asks for the difference when the outstanding GPUs are below want,
// at most chunk at a time: agents that pipeline their work ask in pieces,
// which is what keeps tens of leases alive.
func (a *loadAgents) topUp(c CampaignID, filter Class, want, chunk, duration int, cls Class) {
	if out := a.b.Outstanding(c, filter); out < want {
		_, _ = a.b.Request(c, min(want-out, chunk), duration, cls)
	}
}

// second is one simulated second: every agent steps, then the broker ticks.
func (a *loadAgents) second() {
	b := a.b
	a.t++
	t := a.t
	phase := t % 7200
	if t%120 == 0 && b.Outstanding(a.victim, AnyClass) == 0 {
		_, _ = b.Request(a.victim, 16, 60, Interactive)
	}
	for _, c := range []CampaignID{a.adaptive, a.naive} {
		if phase >= 5000 {
			if phase == 5000 {
				_ = b.ReleaseAll(c, AnyClass)
			}
			continue
		}
		held := b.Held(c, AnyClass)
		s := b.Supply(c)
		_, _, _ = b.Consume(c, float64(held)*0.05, 20+0.5*float64(held))
		a.topUp(c, AgentBurst, 256, 16, 600, AgentBurst)
		if c == a.adaptive && s.Free > 96 {
			a.topUp(c, Opportunistic, min(96, s.Free-64), 32, 300, Opportunistic)
		}
	}
	for _, c := range []CampaignID{a.storm, a.storm2} {
		switch {
		case phase == 5400:
			_ = b.ReleaseAll(c, AnyClass)
		case phase >= 3600 && phase < 5400:
			_, _, _ = b.Consume(c, 0, 200)
			if t%20 == 0 {
				a.topUp(c, AnyClass, 384, 384, 120, AgentBurst)
			}
		}
	}
	switch {
	case !a.probing && t%300 == 0:
		a.probing, a.probeT0 = true, t
		_, _ = b.Request(a.probe, 128, 180, AgentBurst)
	case a.probing && (b.Held(a.probe, AnyClass) >= 128 || t-a.probeT0 > 590):
		_ = b.ReleaseAll(a.probe, AnyClass)
		a.probing = false
	}
	if extra := b.Free() - 160; extra > 16 && b.Outstanding(a.backfill, AnyClass) == b.Held(a.backfill, AnyClass) {
		_, _ = b.Request(a.backfill, min(extra, 32), 300, Opportunistic)
	}
	b.Tick()
	a.leaseTicks += len(b.leases)
	a.pendingTicks += b.pendingLen()
}

// BenchmarkTickSteadyState is one simulated second under the default
// scenario's load, with no Recorder: the agents' calls (requests, supply,
// consumption, releases) and the tick (expiry, buckets, accounting,
// admission, history). Target: 0 allocations.
func BenchmarkTickSteadyState(b *testing.B) {
	a := newLoadAgents(b)
	// A cycle of warm-up fills the windows and grows every slice to its
	// working size.
	for range 7200 {
		a.second()
	}
	a.leaseTicks, a.pendingTicks = 0, 0
	b.ReportAllocs()
	for b.Loop() {
		a.second()
	}
	b.ReportMetric(float64(a.leaseTicks)/float64(b.N), "leases")
	b.ReportMetric(float64(a.pendingTicks)/float64(b.N), "pending")
}

// TestSteadyStateLoad checks that the benchmark's load is the one it claims
// (tens of leases, a few pending requests, preemptions and throttling
// happening) and that a steady-state second allocates nothing.
func TestSteadyStateLoad(t *testing.T) {
	a := newLoadAgents(t)
	for range 7200 {
		a.second()
	}
	j := &journal{}
	a.b.SetRecorder(j)
	a.leaseTicks, a.pendingTicks = 0, 0
	for range 7200 {
		a.second()
	}
	leases, pending := float64(a.leaseTicks)/7200, float64(a.pendingTicks)/7200
	if leases < 20 || leases > 80 || pending < 1 || pending > 40 {
		t.Fatalf("mean %.1f leases, %.1f pending: not the scenario's load", leases, pending)
	}
	for _, k := range []EventKind{EventGrant, EventThrottle, EventPreemptNotice, EventThrottleIO, EventRequestExpired} {
		if len(j.of(k)) == 0 {
			t.Fatalf("no %v in a cycle", k)
		}
	}
	t.Logf("mean %.1f leases, %.1f pending requests per tick; %d grants, %d preempt notices in a cycle",
		leases, pending, len(j.of(EventGrant)), len(j.of(EventPreemptNotice)))

	a.b.SetRecorder(nil)
	if allocs := testing.AllocsPerRun(7200, a.second); allocs != 0 {
		t.Fatalf("a steady-state second allocates %v times", allocs)
	}
}

// admissionState is a broker with n campaigns, each with one pending
// request (classes, sizes, durations, tokens and usage varied, some
// throttled, some needing preemption, some granted), and what is needed to
// put the pending list and the lease list back after a pass.
type admissionState struct {
	b       *Broker
	pending []Request
	// runs and runReqs are the pending list's runs and their requests
	// by slot, as the pass found them.
	runs      []pendingKey
	runReqs   [][]Request
	freeSlots []int32
	runSums   []runSummary
	nLeases   int
	leases    []Lease
}

func newAdmissionState(tb testing.TB, n int) *admissionState {
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	pool := 8 * n
	b, err := New(DefaultConfig(pool))
	if err != nil {
		tb.Fatal(err)
	}
	classes := []Class{Deadline, Interactive, AgentBurst, AgentBurst, Opportunistic}
	for i := range n {
		g := 0
		if i%4 == 0 {
			g = 4
		}
		e := Envelope{Name: fmt.Sprintf("c%d", i), Budget: 1e9, Guaranteed: g, Sustained: float64(4 + rng.IntN(8)),
			BurstCeiling: 64, Bucket: float64(rng.IntN(5000)), Class: classes[rng.IntN(len(classes))]}
		if _, err := b.Register(e); err != nil {
			tb.Fatal(err)
		}
	}
	// Usage history: a round of grants, held for a while, fills the
	// fair-share window unevenly; half of the pool then stays with
	// opportunistic backfill that later requests must preempt.
	for i := range n {
		_, _ = b.Request(CampaignID(i), 1+rng.IntN(12), 100000, Opportunistic)
	}
	for range 50 {
		b.Tick()
	}
	for i := range n {
		_, _ = b.Request(CampaignID(i), 1+rng.IntN(40), 30+rng.IntN(600), AnyClass)
	}
	s := &admissionState{b: b}
	s.pending = b.Pending()
	s.runs, s.freeSlots, s.runSums = slices.Clone(b.runs), slices.Clone(b.freeSlots), slices.Clone(b.runSums)
	for _, reqs := range b.runReqs {
		s.runReqs = append(s.runReqs, slices.Clone(reqs))
	}
	s.nLeases = len(b.leases)
	s.leases = append([]Lease(nil), b.leases...)
	return s
}

// reset undoes one admission pass: the grants it made, the notices it gave,
// the requests it removed and the order it left. It allocates nothing.
func (s *admissionState) reset() {
	b := s.b
	for i := s.nLeases; i < len(b.leases); i++ {
		l := &b.leases[i]
		b.addHeld(l.Campaign, l.Class, -l.GPUs)
	}
	b.leases = append(b.leases[:0], s.leases...)
	b.leasesRemoved()
	for i := range b.runs {
		reqs := b.reqsOf(&b.runs[i])
		for j := range reqs {
			r := &reqs[j]
			b.dropPending(&b.camps[r.Campaign], r)
		}
	}
	b.runs = append(b.runs[:0], s.runs...)
	b.runReqs = b.runReqs[:len(s.runReqs)]
	for slot, reqs := range s.runReqs {
		b.runReqs[slot] = append(b.runReqs[slot][:0], reqs...)
	}
	b.freeSlots = append(b.freeSlots[:0], s.freeSlots...)
	b.runSums = append(b.runSums[:0], s.runSums...)
	for i := range s.pending {
		r := &s.pending[i]
		cp := &b.camps[r.Campaign]
		b.addPending(cp, r.Class, r.GPUs)
		cp.fileTried()
		if r.throttleJournaled {
			cp.journaledThrottle(r)
		}
	}
	b.resetPreemptState()
}

// BenchmarkAdmission is one admission pass over n campaigns with n pending
// requests, plus the O(n) reset that puts the state back (it is part of
// the measured time; ns/op / (n·log2 n) should stay flat or fall as n
// grows).
func BenchmarkAdmission(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("campaigns=%d", n), func(b *testing.B) {
			s := newAdmissionState(b, n)
			// One pass grows the broker's sort buffers to their size.
			s.reset()
			s.b.admit()
			b.ReportAllocs()
			for b.Loop() {
				s.reset()
				s.b.admit()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(float64(n)*log2(n)), "ns/(n·log2n)")
		})
	}
}

func log2(n int) float64 {
	l := 0.0
	for x := float64(n); x > 1; x /= 2 {
		l++
	}
	return l
}

// The admission benchmark's state exercises every branch, and reset really
// restores it: two passes after a reset do the same thing. At 512
// campaigns the pass walks more than touchMinRuns runs, and so reads
// the lines ahead (touchRuns) as it goes.
func TestAdmissionBenchmarkState(t *testing.T) {
	for _, n := range []int{100, 4 * touchMinRuns} {
		t.Run(fmt.Sprintf("campaigns=%d", n), func(t *testing.T) {
			s := newAdmissionState(t, n)
			if n > 100 && len(s.runs) < touchMinRuns {
				t.Fatalf("%d runs: the pass does not read ahead", len(s.runs))
			}
			j := &journal{}
			s.b.SetRecorder(j)
			s.b.admit()
			first := string(j.buf)
			for _, k := range []EventKind{EventGrant, EventThrottle, EventPreemptNotice} {
				if len(j.of(k)) == 0 {
					t.Fatalf("no %v in a pass", k)
				}
			}
			j.reset()
			s.reset()
			// The throttle records are written once per request; the copies in
			// s.pending were taken before the first pass, so they write again.
			s.b.admit()
			if string(j.buf) != first {
				t.Fatalf("a pass after reset differs:\n%s\n---\n%s", first, j.buf)
			}
			s.b.SetRecorder(nil)
			if allocs := testing.AllocsPerRun(50, func() { s.reset(); s.b.admit() }); allocs != 0 {
				t.Fatalf("an admission pass allocates %v times", allocs)
			}
		})
	}
}

// resetPreemptState recomputes the broker's preemption bookkeeping after
// reset has copied the lease list back.
func (b *Broker) resetPreemptState() {
	b.inFlight, b.reclaimable, b.nextDeadline = 0, 0, math.MaxInt
	for i := range b.leases {
		l := &b.leases[i]
		if l.UnderNotice {
			b.inFlight += l.GPUs
		} else if l.Class == Opportunistic {
			b.reclaimable += l.GPUs
		}
		b.nextDeadline = min(b.nextDeadline, l.deadline())
	}
	b.candsValid = false
}
