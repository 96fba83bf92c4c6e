package policy

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// Property tests over random envelopes and random operation sequences. The
// scenario is drawn first, as data, so that the same operations can be
// replayed on a second broker for the determinism check.

type opKind uint8

const (
	opRequest opKind = iota
	opReleaseAll
	opReleaseLease
	opConsume
	opTick
	opTicks
	opRegister
	// opAdmit is an admission pass between ticks (Broker.Admit), as the
	// service runs after a request with admission on request.
	opAdmit
)

type op struct {
	kind     opKind
	c        int // campaign, modulo the campaigns registered so far
	gpus     int
	duration int
	class    Class
	io, inf  float64
	n        int // ticks for opTicks, lease pick for opReleaseLease
}

func (o op) String() string {
	return fmt.Sprintf("%d{c%d %d GPUs %d s %v io %.3g inf %.3g n %d}", o.kind, o.c, o.gpus, o.duration, o.class, o.io, o.inf, o.n)
}

type scenario struct {
	cfg   Config
	envs  []Envelope // registered before anything else
	late  []Envelope // registered by opRegister, in order
	ops   []op
	bound bool // envelopes have g ≤ R: the prepaid bound applies
}

var anyOrClass = []Class{AnyClass, Deadline, Interactive, AgentBurst, Opportunistic}

func drawFlow(t *rapid.T, label string) *Flow {
	if rapid.Bool().Draw(t, label+"-unmetered") {
		return nil
	}
	return &Flow{
		Rate:    rapid.Float64Range(0, 20).Draw(t, label+"-rate"),
		Bucket:  rapid.Float64Range(0, 200).Draw(t, label+"-bucket"),
		Ceiling: rapid.Float64Range(0, 40).Draw(t, label+"-ceiling"),
	}
}

// drawEnvelope draws a valid envelope whose guarantee is at most gMax. With
// gLeR the sustained rate is at least the guarantee (assumption A1 of the
// bound).
func drawEnvelope(t *rapid.T, name string, gMax int, gLeR bool) Envelope {
	g := rapid.IntRange(0, gMax).Draw(t, name+"-g")
	r := rapid.Float64Range(0, 64).Draw(t, name+"-R")
	if rapid.Bool().Draw(t, name+"-integral-R") {
		r = math.Trunc(r)
	}
	if gLeR {
		r += float64(g)
	}
	return Envelope{
		Name:         name,
		Budget:       rapid.SampledFrom([]float64{1e9, 50, 0.5, 0}).Draw(t, name+"-budget"),
		Guaranteed:   g,
		Sustained:    r,
		BurstCeiling: g + rapid.IntRange(0, 200).Draw(t, name+"-burst-over-g"),
		Bucket:       rapid.SampledFrom([]float64{500, 50, 3000, 1, 0, 1e6}).Draw(t, name+"-B"),
		Class:        rapid.SampledFrom([]Class{Deadline, Interactive, AgentBurst, Opportunistic}).Draw(t, name+"-class"),
		IO:           drawFlow(t, name+"-io"),
		Inference:    drawFlow(t, name+"-inf"),
	}
}

func drawOp(t *rapid.T, maxDur int, allowLate bool) op {
	kinds := []opKind{opRequest, opRequest, opRequest, opReleaseAll, opReleaseLease, opConsume, opTick, opTick, opTick, opTicks, opAdmit, opAdmit}
	if allowLate {
		kinds = append(kinds, opRegister)
	}
	o := op{kind: rapid.SampledFrom(kinds).Draw(t, "op")}
	o.c = rapid.IntRange(0, 7).Draw(t, "campaign")
	switch o.kind {
	case opRequest:
		o.gpus = rapid.IntRange(1, 160).Draw(t, "gpus")
		o.duration = rapid.IntRange(0, maxDur).Draw(t, "duration")
		o.class = rapid.SampledFrom(anyOrClass).Draw(t, "class")
	case opReleaseAll:
		o.class = rapid.SampledFrom(anyOrClass).Draw(t, "class")
	case opReleaseLease:
		o.n = rapid.IntRange(0, 1000).Draw(t, "lease")
	case opConsume:
		o.io = rapid.Float64Range(0, 30).Draw(t, "io")
		o.inf = rapid.Float64Range(0, 30).Draw(t, "inf")
	case opTicks:
		// Long enough now and then to reach the 900-s request TTL.
		o.n = rapid.SampledFrom([]int{30, 5, 200, 950}).Draw(t, "ticks")
	}
	return o
}

// drawConfig draws a broker's configuration: a pool from pools, a grace
// period, grant-time-only pricing where mayGrantTimeOnly (the prepaid
// bound's tests need it off), and the flows' capacities, unmetered to
// tight.
func drawConfig(t *rapid.T, pools []int, mayGrantTimeOnly bool) Config {
	return Config{
		Pool:              rapid.SampledFrom(pools).Draw(t, "pool"),
		Grace:             rapid.IntRange(0, 90).Draw(t, "grace"),
		GrantTimeOnly:     mayGrantTimeOnly && rapid.Bool().Draw(t, "grant-time-only"),
		IOCapacity:        rapid.SampledFrom([]float64{Unmetered, 0, 10, 28}).Draw(t, "io-capacity"),
		InferenceCapacity: rapid.SampledFrom([]float64{Unmetered, 0, 25, 5000}).Draw(t, "inference-capacity"),
	}
}

func drawScenario(t *rapid.T, bound bool) scenario {
	cfg := drawConfig(t, []int{64, 512, 16, 1}, !bound)
	pool := cfg.Pool
	n := rapid.IntRange(1, 6).Draw(t, "campaigns")
	sc := scenario{cfg: cfg, bound: bound}
	left := pool
	for i := range n {
		e := drawEnvelope(t, fmt.Sprintf("c%d", i), left, bound)
		left -= e.Guaranteed
		sc.envs = append(sc.envs, e)
	}
	allowLate := !bound && rapid.Bool().Draw(t, "late-registrations")
	if allowLate {
		for i := range rapid.IntRange(1, 3).Draw(t, "late") {
			// Late campaigns may ask for guarantees the pool has no room
			// for: Register must refuse those and change nothing.
			sc.late = append(sc.late, drawEnvelope(t, fmt.Sprintf("late%d", i), pool, false))
		}
	}
	maxDur := rapid.SampledFrom([]int{30, 300, 3}).Draw(t, "max-duration")
	// rapid keeps drawn slices short; a fixed count drawn up front gives the
	// broker time to fill up, expire and preempt.
	for range rapid.IntRange(30, 200).Draw(t, "op-count") {
		sc.ops = append(sc.ops, drawOp(t, maxDur, allowLate))
	}
	return sc
}

// runner applies a scenario's operations to a broker and checks the
// invariants after every one of them.
type runner struct {
	t    *rapid.T
	b    *Broker
	j    *journal
	sc   *scenario
	late int
	// lateTick: a campaign registered after the first admission pass (the
	// first tick, or an Admit before it), when leases may hold the GPUs
	// its guarantee needs.
	lateTick  bool
	admitted  bool // an admission pass has run
	trackers  []*excessTracker
	dryPeriod int // busy periods in which the bucket ran dry
	leaks     int // busy periods that took more than their opening tokens
}

func newRunner(t *rapid.T, sc *scenario) *runner {
	b, err := New(sc.cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	r := &runner{t: t, b: b, j: &journal{}, sc: sc}
	b.SetRecorder(r.j)
	for _, e := range sc.envs {
		c, err := b.Register(e)
		if err != nil {
			t.Fatalf("Register %s: %v", e.Name, err)
		}
		r.track(c)
	}
	return r
}

func (r *runner) track(c CampaignID) {
	// The bound holds for every campaign under prepaid leases, whatever
	// its guarantee (above max(R, g)) and whenever it registered.
	if !r.b.cfg.GrantTimeOnly {
		r.trackers = append(r.trackers, newExcessTracker(r.b, c))
	}
}

func (r *runner) campaign(i int) CampaignID { return CampaignID(i % r.b.NumCampaigns()) }

func (r *runner) tick() {
	// The usage sums the tick's admission pass reads are those before
	// its history step.
	sums, total := r.usageSums()
	r.b.Tick()
	r.checkOrder(sums, total)
	for _, k := range r.trackers {
		if msg := k.afterTick(r.b); msg != "" {
			r.t.Fatalf("t=%d campaign %s: prepaid bound: %s; periods %+v", r.b.Now(), k.env.Name, msg, k.all())
		}
	}
	r.check()
}

func (r *runner) usageSums() (sums []int, total int) {
	sums = make([]int, r.b.NumCampaigns())
	for i := range sums {
		sums[i] = r.b.camps[i].usage.sum
	}
	return sums, r.b.usageTotal
}

// checkOrder: an admission pass left the list in admission order (class,
// deficit descending, tokens descending, by the keys it read: the usage
// sums before the tick's history step, and the tokens of its refill).
func (r *runner) checkOrder(sums []int, total int) {
	key := func(x Request) pendingKey {
		cp := &r.b.camps[x.Campaign]
		return pendingKey{class: x.Class, deficit: cp.share - float64(sums[x.Campaign])/float64(max(total, 1)), tokens: cp.tokens}
	}
	if !slices.IsSortedFunc(r.b.Pending(), func(x, y Request) int { return comparePendingKeys(key(x), key(y)) }) {
		r.t.Fatalf("t=%d: the pending list is not in admission order", r.b.Now())
	}
}

func (r *runner) apply(o op) {
	b := r.b
	switch o.kind {
	case opRequest:
		c := r.campaign(o.c)
		before := b.nextID
		id, err := b.Request(c, o.gpus, o.duration, o.class)
		if err != nil && !errors.Is(err, ErrBudgetExhausted) {
			r.t.Fatalf("Request: %v", err)
		}
		if id != before || b.nextID != before+1 {
			r.t.Fatalf("request took id %d, counter %d → %d", id, before, b.nextID)
		}
	case opReleaseAll:
		if err := b.ReleaseAll(r.campaign(o.c), o.class); err != nil {
			r.t.Fatalf("ReleaseAll: %v", err)
		}
		c := r.campaign(o.c)
		if b.Held(c, o.class) != 0 || b.Outstanding(c, o.class) != 0 {
			r.t.Fatalf("ReleaseAll left GPUs behind")
		}
	case opReleaseLease:
		if n := len(b.Leases()); n > 0 {
			l := b.Leases()[o.n%n]
			if err := b.ReleaseLease(l.Campaign, l.ID); err != nil {
				r.t.Fatalf("ReleaseLease: %v", err)
			}
		}
	case opConsume:
		c := r.campaign(o.c)
		io, inf, err := b.Consume(c, o.io, o.inf)
		if err != nil || io < 0 || inf < 0 || io > o.io || inf > o.inf {
			r.t.Fatalf("Consume(%v, %v) = %v, %v, %v", o.io, o.inf, io, inf, err)
		}
	case opAdmit:
		before := b.Now()
		sums, total := r.usageSums()
		b.Admit()
		r.admitted = true
		if b.Now() != before {
			r.t.Fatalf("Admit moved the clock from %d to %d", before, b.Now())
		}
		r.checkOrder(sums, total)
		for _, l := range b.Leases() {
			if l.Granted > before {
				r.t.Fatalf("lease %d granted at %d, after Now %d", l.ID, l.Granted, before)
			}
		}
		for _, k := range r.trackers {
			k.noteGrants(b)
		}
	case opTick:
		r.tick()
	case opTicks:
		for range o.n {
			r.tick()
		}
	case opRegister:
		if r.late < len(r.sc.late) {
			e := r.sc.late[r.late]
			r.late++
			n := b.NumCampaigns()
			c, err := b.Register(e)
			if err != nil {
				if b.NumCampaigns() != n {
					r.t.Fatalf("a refused registration changed the broker")
				}
			} else {
				r.lateTick = r.lateTick || b.Now() > 0 || r.admitted
				r.track(c)
			}
		}
	}
	r.check()
}

// check is every invariant that must hold between operations.
func (r *runner) check() {
	t, b := r.t, r.b
	pool := b.cfg.Pool

	// The running counters agree with the lists they summarize.
	leased := 0
	held := make([][numClasses]int, b.NumCampaigns())
	for _, l := range b.Leases() {
		leased += l.GPUs
		held[l.Campaign][l.Class] += l.GPUs
	}
	pending := make([][numClasses]int, b.NumCampaigns())
	demand := 0
	for _, q := range b.Pending() {
		pending[q.Campaign][q.Class] += q.GPUs
		if q.Class != Opportunistic {
			demand += q.GPUs
		}
	}
	if leased != b.leased || demand != b.pendingDemand {
		t.Fatalf("counters drifted: leased %d vs %d, demand %d vs %d", leased, b.leased, demand, b.pendingDemand)
	}

	// Σ leased ≤ pool.
	if leased > pool || b.Free() != pool-leased {
		t.Fatalf("leased %d on a pool of %d (free %d)", leased, pool, b.Free())
	}

	unmet := 0
	for i := range b.camps {
		c := CampaignID(i)
		cp := &b.camps[i]
		e := cp.env
		if held[i] != cp.held || pending[i] != cp.pending {
			t.Fatalf("%s: per-class counters drifted", e.Name)
		}
		h := b.Held(c, AnyClass)
		unmet += max(0, e.Guaranteed-h)

		// Tokens within [0, B] in every dimension.
		if tok := b.Tokens(c); !(tok >= 0 && tok <= e.Bucket) {
			t.Fatalf("%s: GPU tokens %v outside [0, %v]", e.Name, tok, e.Bucket)
		}
		for _, d := range []Dimension{IO, Inference} {
			f := cp.flow(d)
			if tok := b.FlowTokens(c, d); !(tok >= 0 && tok <= f.Bucket) {
				t.Fatalf("%s: %v tokens %v outside [0, %v]", e.Name, d, tok, f.Bucket)
			}
		}
		// Prepaid caps never exceed the burst ceiling.
		if !b.cfg.GrantTimeOnly && h > e.BurstCeiling {
			t.Fatalf("%s holds %d over its burst ceiling %d", e.Name, h, e.BurstCeiling)
		}
	}
	checkThrottleFloors(t, b)
	checkBusy(t, b)
	checkRuns(t, b)
	if unmet != b.unmet {
		t.Fatalf("unmet guarantees drifted: %d vs %d", unmet, b.unmet)
	}
	// With every campaign registered before the first admission pass, the
	// free GPUs always cover every campaign's unmet guarantee.
	if !r.lateTick && b.Free() < unmet {
		t.Fatalf("free %d < unmet guarantees %d", b.Free(), unmet)
	}
	inFlight, reclaimable := 0, 0
	var cands []int
	for i, l := range b.Leases() {
		if l.deadline() < b.nextDeadline {
			t.Fatalf("lease %d ends at %d, before the broker's next deadline %d", l.ID, l.deadline(), b.nextDeadline)
		}
		if l.UnderNotice && l.Class != Opportunistic {
			t.Fatalf("lease %d of class %v under notice", l.ID, l.Class)
		}
		if l.UnderNotice {
			inFlight += l.GPUs
		} else if l.Class == Opportunistic {
			cands = append(cands, i)
			reclaimable += l.GPUs
		}
	}
	if inFlight != b.inFlight {
		t.Fatalf("GPUs in flight drifted: %d vs %d", inFlight, b.inFlight)
	}
	if reclaimable != b.reclaimable {
		t.Fatalf("reclaimable GPUs drifted: %d vs %d", reclaimable, b.reclaimable)
	}
	// The cached fair-share deficit is what the formula gives now.
	for i := range b.camps {
		cp := &b.camps[i]
		fresh := float64(cp.env.Guaranteed)/float64(max(b.guaranteed, 1)) - float64(cp.usage.sum)/float64(max(b.usageTotal, 1))
		if got := b.FairDeficit(CampaignID(i)); got != fresh {
			t.Fatalf("%s: cached fair deficit %v, formula %v", cp.env.Name, got, fresh)
		}
	}
	// While the cached preemption order is valid, what is left of it is
	// exactly what a fresh scan and stable sort would give.
	if b.candsValid {
		slices.SortStableFunc(cands, func(i, j int) int { return b.leases[j].GPUs - b.leases[i].GPUs })
		var cached []int
		for _, c := range b.cands[b.candPos:] {
			if c.gpus != b.leases[c.index].GPUs {
				t.Fatalf("cached size of lease %d is stale", b.leases[c.index].ID)
			}
			cached = append(cached, c.index)
		}
		if !slices.Equal(cands, cached) {
			t.Fatalf("stale preemption candidates: %v, want %v", cached, cands)
		}
	}
}

func (r *runner) run() []byte {
	r.check()
	for _, o := range r.sc.ops {
		r.apply(o)
	}
	for _, k := range r.trackers {
		for _, p := range k.all() {
			if p.dry {
				r.dryPeriod++
			}
			if p.excess > p.T+1e-9 {
				r.leaks++
			}
		}
	}
	return r.j.buf
}

// Σ leased ≤ pool; free ≥ Σ max(0, g − held) when every campaign registered
// before the first tick; tokens in [0, B] in every dimension; the counters
// match the lists; and the same operations give a byte-identical journal.
func TestPropertyBrokerInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := drawScenario(t, false)
		first := newRunner(t, &sc).run()
		second := newRunner(t, &sc).run()
		if !bytes.Equal(first, second) {
			t.Fatalf("the same operations gave two journals:\n%s\n----\n%s", first, second)
		}
	})
}

// docs/prepaid-bound.md: with prepaid leases, Lemma 1 holds at every tick,
// every busy period's GPU-seconds held above R⁺ = max(R, g) stay within
// T + Σ_{k=2}^{D} min(Δ⁺, T/k), a period in which no lease shorter than one
// held was granted never runs the bucket dry and takes at most T, and a
// campaign that never did so holds at most R⁺·L + B over any L ticks.
// Checked at every tick inside tick(), for every campaign of every prepaid
// run (this one draws g ≤ R; TestPropertyBrokerInvariants draws any g and
// late registrations).
func TestPropertyPrepaidBound(t *testing.T) {
	var runs, dry, leaks int
	rapid.Check(t, func(t *rapid.T) {
		sc := drawScenario(t, true)
		r := newRunner(t, &sc)
		r.run()
		runs++
		dry += r.dryPeriod
		leaks += r.leaks
	})
	t.Logf("%d runs, %d busy periods ran dry, %d took more than their opening tokens", runs, dry, leaks)
}

// The same bound under attack: one campaign on an ample pool, requests of
// mixed durations (the staircase's ingredients) filed in bursts, releases and
// ticks. Leaks beyond the opening tokens must happen here, or the property
// above would be vacuous.
func TestPropertyPrepaidBoundUnderAttack(t *testing.T) {
	var runs, leaks int
	rapid.Check(t, func(t *rapid.T) {
		// rapid leans towards small numbers and the first element of a
		// list; the lists put an aggressive case first.
		R := rapid.SampledFrom([]float64{10, 0, 2.5, 64}).Draw(t, "R")
		e := Envelope{
			Name: "attacker", Budget: 1e9, Sustained: R,
			BurstCeiling: int(R) + rapid.SampledFrom([]int{120, 1, 30, 400}).Draw(t, "delta"),
			Bucket:       rapid.SampledFrom([]float64{120, 1, 1000, 25000}).Draw(t, "B"),
			Class:        AgentBurst,
		}
		e.Guaranteed = rapid.IntRange(0, int(R)).Draw(t, "g")
		b, c, k := trackedCampaign(t, 1000, e)
		// With admission on request (the service's option) each request
		// is decided between ticks.
		onRequest := rapid.Bool().Draw(t, "admit-on-request")
		for range 25 {
			switch rapid.IntRange(0, 5).Draw(t, "action") {
			case 0, 1, 2:
				// A burst of requests, longest first, as the staircase does.
				n := rapid.SampledFrom([]int{8, 1, 3, 20}).Draw(t, "burst")
				d := rapid.SampledFrom([]int{200, 2, 30, 600}).Draw(t, "longest")
				for range n {
					_, _ = b.Request(c, rapid.SampledFrom([]int{60, 1, 16, 400}).Draw(t, "gpus"), d, AnyClass)
					if onRequest {
						b.Admit()
						k.noteGrants(b)
					}
					d = max(1, d-rapid.IntRange(0, d).Draw(t, "shorter-by"))
				}
			case 3:
				_ = b.ReleaseAll(c, AnyClass)
			}
			for range rapid.SampledFrom([]int{20, 1, 200, 600}).Draw(t, "ticks") {
				b.Tick()
				if msg := k.afterTick(b); msg != "" {
					t.Fatalf("t=%d: %s; periods %+v", b.Now(), msg, k.all())
				}
			}
		}
		runs++
		for _, p := range k.all() {
			if p.excess > p.T+1e-9 {
				leaks++
			}
		}
	})
	t.Logf("%d runs, %d busy periods took more than their opening tokens", runs, leaks)
	require.Positive(t, leaks, "the generator never made a campaign overdraw its bucket")
}

// With a single lease duration per campaign no lease is ever shorter than
// one already held, so by the theorem's second part no busy period runs dry
// or takes more than the tokens it opened with. The campaign tops up to a
// target every few ticks, as the scenario's storms do; the tracker checks
// the claim at every tick.
func TestPropertyPrepaidBoundOneDuration(t *testing.T) {
	var runs, periods, nearT int
	rapid.Check(t, func(t *rapid.T) {
		d := rapid.SampledFrom([]int{120, 2, 30, 600, 1}).Draw(t, "duration")
		R := rapid.SampledFrom([]float64{64, 0, 2.5, 10}).Draw(t, "R")
		e := Envelope{
			Name: "c", Budget: 1e9, Sustained: R,
			BurstCeiling: rapid.SampledFrom([]int{384, 64, 16, 1000}).Draw(t, "burst"),
			Bucket:       rapid.SampledFrom([]float64{25000, 0, 100, 150000}).Draw(t, "B"),
			Class:        AgentBurst,
		}
		e.Guaranteed = rapid.IntRange(0, min(e.BurstCeiling, int(R))).Draw(t, "g")
		b, c, k := trackedCampaign(t, 1024, e)
		period := rapid.SampledFrom([]int{20, 1, 7, 200}).Draw(t, "period")
		target := rapid.SampledFrom([]int{384, 16, 100, 1024}).Draw(t, "target")
		release := rapid.SampledFrom([]int{0, 50, 333}).Draw(t, "release-every")
		onRequest := rapid.Bool().Draw(t, "admit-on-request")
		for tick := 1; tick <= 1800; tick++ {
			if release > 0 && tick%release == 0 {
				_ = b.ReleaseAll(c, AnyClass)
			}
			if tick%period == 0 {
				if out := b.Outstanding(c, AnyClass); out < target {
					_, _ = b.Request(c, target-out, d, AnyClass)
					if onRequest {
						b.Admit()
						k.noteGrants(b)
					}
				}
			}
			b.Tick()
			if msg := k.afterTick(b); msg != "" {
				t.Fatalf("t=%d: %s; periods %+v", b.Now(), msg, k.all())
			}
		}
		runs++
		for _, p := range k.all() {
			if !p.clean {
				t.Fatalf("one duration, yet a shorter lease: %+v", p)
			}
			periods++
			if p.excess >= 0.9*p.T {
				nearT++
			}
		}
	})
	t.Logf("%d runs, %d busy periods, %d of them took at least 90%% of their opening tokens", runs, periods, nearT)
	require.Positive(t, nearT, "the generator never came near the bound")
}

// trackedCampaign is a broker with one campaign whose excess above R is
// being tracked.
func trackedCampaign(t *rapid.T, pool int, e Envelope) (*Broker, CampaignID, *excessTracker) {
	b, err := New(DefaultConfig(pool))
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.Register(e)
	if err != nil {
		t.Fatal(err)
	}
	return b, c, newExcessTracker(b, c)
}
