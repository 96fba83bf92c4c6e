package policy

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// Event skipping is exact: two brokers get the same random operations; one
// ticks through every wait, the other jumps over it with SkipTo wherever
// NextChange allows. After every operation their journals, supplies,
// credits, buckets, deficits, utilization, lease and pending lists are
// identical.

type skipOpKind uint8

const (
	skipRequest skipOpKind = iota
	skipRigid
	skipReleaseAll
	skipReleaseLease
	skipConsume
	skipWait
	skipRegister
)

type skipOp struct {
	kind           skipOpKind
	c              int
	gpus, dur, run int
	class          Class
	next           bool // a rigid request submitted at the next tick
	io, inf        float64
	n              int
}

func drawSkipOp(t *rapid.T) skipOp {
	o := skipOp{kind: rapid.SampledFrom([]skipOpKind{
		skipRequest, skipRequest, skipRigid, skipRigid, skipRigid, skipReleaseAll, skipReleaseLease,
		skipConsume, skipWait, skipWait, skipWait, skipWait, skipRegister,
	}).Draw(t, "op")}
	o.c = rapid.IntRange(0, 7).Draw(t, "campaign")
	switch o.kind {
	case skipRequest:
		o.gpus = rapid.IntRange(1, 160).Draw(t, "gpus")
		o.dur = rapid.SampledFrom([]int{0, 1, 30, 300, 3000}).Draw(t, "duration")
		o.class = rapid.SampledFrom(anyOrClass).Draw(t, "class")
	case skipRigid:
		o.gpus = rapid.IntRange(1, 160).Draw(t, "gpus")
		o.run = rapid.IntRange(1, 4000).Draw(t, "run")
		o.dur = o.run + rapid.SampledFrom([]int{0, 0, 10, 600, 5000}).Draw(t, "over")
		o.class = rapid.SampledFrom([]Class{AnyClass, Interactive, AgentBurst, Opportunistic}).Draw(t, "class")
		o.next = rapid.Bool().Draw(t, "next-tick")
	case skipReleaseAll:
		o.class = rapid.SampledFrom(anyOrClass).Draw(t, "class")
	case skipReleaseLease:
		o.n = rapid.IntRange(0, 1000).Draw(t, "lease")
	case skipConsume:
		o.io = rapid.Float64Range(0, 30).Draw(t, "io")
		o.inf = rapid.Float64Range(0, 30).Draw(t, "inf")
	case skipWait:
		o.n = rapid.SampledFrom([]int{1, 2, 7, 61, 400, 950, 5000, 20000}).Draw(t, "ticks")
	}
	return o
}

type skipPair struct {
	t       *rapid.T
	tick    *Broker // ticks every second
	skip    *Broker // skips where it may
	tj, sj  journal
	skipped int // ticks the skipping broker jumped over
}

func (p *skipPair) both(f func(b *Broker) (int, error)) {
	i1, e1 := f(p.tick)
	i2, e2 := f(p.skip)
	if i1 != i2 || (e1 == nil) != (e2 == nil) || (e1 != nil && e1.Error() != e2.Error()) {
		p.t.Fatalf("t=%d: tick-by-tick gives %d, %v; skipping %d, %v", p.tick.now, i1, e1, i2, e2)
	}
}

// wait advances both brokers n ticks.
func (p *skipPair) wait(n int) {
	target := p.tick.now + n
	for p.tick.now < target {
		p.tick.Tick()
	}
	for p.skip.now < target {
		ref, fresh := nextChangeRef(p.skip)
		next := p.skip.NextChange()
		if fresh && next != ref {
			p.t.Fatalf("t=%d: NextChange %d, request by request %d", p.skip.now, next, ref)
		}
		if to := min(next-1, target); to > p.skip.now {
			p.skipped += to - p.skip.now - 1 // SkipTo's first tick is a real one
			p.skip.SkipTo(to)
			continue
		}
		p.skip.Tick()
	}
}

func sameFloat(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

// compare checks every observable of the two brokers.
func (p *skipPair) compare(after string) {
	a, b := p.tick, p.skip
	fail := func(format string, args ...any) {
		p.t.Fatalf("t=%d after %s: "+format, append([]any{a.now, after}, args...)...)
	}
	if a.now != b.now {
		fail("clocks %d and %d", a.now, b.now)
	}
	if !bytes.Equal(p.tj.buf, p.sj.buf) {
		x, y := p.tj.lines(), p.sj.lines()
		for i := range min(len(x), len(y)) {
			if x[i] != y[i] {
				fail("journal line %d:\n tick-by-tick %s\n skipping     %s", i+1, x[i], y[i])
			}
		}
		fail("journals of %d and %d lines", len(x), len(y))
	}
	if math.Float64bits(a.utilSum) != math.Float64bits(b.utilSum) || a.utilN != b.utilN {
		fail("utilization sums %v/%v over %d/%d ticks", a.utilSum, b.utilSum, a.utilN, b.utilN)
	}
	if !sameFloat(a.Utilization(), b.Utilization()) || a.CongestionIndex() != b.CongestionIndex() || a.Free() != b.Free() {
		fail("utilization %v/%v, congestion %v/%v", a.Utilization(), b.Utilization(), a.CongestionIndex(), b.CongestionIndex())
	}
	for c := range a.NumCampaigns() {
		id := CampaignID(c)
		if sa, sb := a.Supply(id), b.Supply(id); sa != sb {
			fail("campaign %d supply\n %+v\n %+v", c, sa, sb)
		}
		if a.Credits(id) != b.Credits(id) || a.Tokens(id) != b.Tokens(id) || a.FairDeficit(id) != b.FairDeficit(id) {
			fail("campaign %d: credits %v/%v tokens %v/%v deficit %v/%v", c, a.Credits(id), b.Credits(id),
				a.Tokens(id), b.Tokens(id), a.FairDeficit(id), b.FairDeficit(id))
		}
		for _, d := range []Dimension{IO, Inference} {
			if a.FlowTokens(id, d) != b.FlowTokens(id, d) || a.FlowUsedLastTick(id, d) != b.FlowUsedLastTick(id, d) {
				fail("campaign %d %v: tokens %v/%v", c, d, a.FlowTokens(id, d), b.FlowTokens(id, d))
			}
		}
		if a.camps[c].usage.buf != b.camps[c].usage.buf || a.camps[c].usage.sum != b.camps[c].usage.sum {
			fail("campaign %d: usage windows differ", c)
		}
	}
	if a.cong != b.cong || a.usagePos != b.usagePos || a.usageTotal != b.usageTotal {
		fail("congestion or usage windows differ")
	}
	if !reflect.DeepEqual(a.Leases(), b.Leases()) {
		fail("leases\n %+v\n %+v", a.Leases(), b.Leases())
	}
	if !reflect.DeepEqual(a.Pending(), b.Pending()) {
		fail("pending\n %+v\n %+v", a.Pending(), b.Pending())
	}
	checkThrottleFloors(p.t, a)
	checkThrottleFloors(p.t, b)
	checkBusy(p.t, a)
	checkBusy(p.t, b)
	checkRuns(p.t, a)
	checkRuns(p.t, b)
}

func TestSkipToMatchesTicks(t *testing.T) {
	total, skipped := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		cfg := drawConfig(t, []int{64, 512, 16, 1, 128}, true)
		pool := cfg.Pool
		p := &skipPair{t: t}
		var err error
		if p.tick, err = New(cfg); err != nil {
			t.Fatal(err)
		}
		p.skip, _ = New(cfg)
		p.tick.SetTickByTick(true) // the oracle tries every request every tick
		p.tick.SetRecorder(&p.tj)
		p.skip.SetRecorder(&p.sj)
		register := func(e Envelope) {
			p.both(func(b *Broker) (int, error) { c, err := b.Register(e); return int(c), err })
		}
		for i := range rapid.IntRange(1, 5).Draw(t, "campaigns") {
			register(drawEnvelope(t, fmt.Sprintf("c%d", i), pool/2, false))
		}
		late := 0
		for range rapid.IntRange(20, 120).Draw(t, "op-count") {
			o := drawSkipOp(t)
			c := CampaignID(o.c % p.tick.NumCampaigns())
			switch o.kind {
			case skipRequest:
				p.both(func(b *Broker) (int, error) { return b.Request(c, o.gpus, o.dur, o.class) })
			case skipRigid:
				sub := p.tick.now
				if o.next {
					sub++
				}
				p.both(func(b *Broker) (int, error) { return b.RequestRigid(c, o.gpus, o.dur, o.run, o.class, sub) })
			case skipReleaseAll:
				p.both(func(b *Broker) (int, error) { return 0, b.ReleaseAll(c, o.class) })
			case skipReleaseLease:
				if n := len(p.tick.leases); n > 0 {
					l := p.tick.leases[o.n%n]
					p.both(func(b *Broker) (int, error) { return 0, b.ReleaseLease(l.Campaign, l.ID) })
				}
			case skipConsume:
				p.both(func(b *Broker) (int, error) {
					io, inf, err := b.Consume(c, o.io, o.inf)
					if errors.Is(err, ErrUnknownCampaign) {
						return 0, err
					}
					return int(math.Float64bits(io) ^ math.Float64bits(inf)), err
				})
			case skipWait:
				p.wait(o.n)
			case skipRegister:
				late++
				register(drawEnvelope(t, fmt.Sprintf("late%d", late), pool, false))
			}
			p.compare(fmt.Sprintf("op %+v", o))
		}
		// What is left pending or leased runs out.
		p.wait(20000)
		p.compare("the final wait")
		total += p.tick.now
		skipped += p.skipped
	})
	t.Logf("%d of %d ticks skipped", skipped, total)
	if skipped < total/2 {
		t.Fatalf("only %d of %d ticks skipped", skipped, total)
	}
}

// The trace regime (docs/traces.md, the Bursar envelope): no guarantees,
// so every idle campaign's deficit is 0 and its pending jobs are ordered
// by tokens alone; rates a small fraction of a GPU and buckets deep
// enough for a wide job's estimate, which refill over long waits; rigid
// jobs that wait for tokens, overtake each other in the pending list and
// reclaim opportunistic ones. SkipTo's closed forms (repeat.go), its jumps
// from one change of order to the next (watchThrough) and its reordering of
// runs (reorderRuns) against ticking.
func TestSkipToMatchesTicksTraceEnvelopes(t *testing.T) {
	total, skipped := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.SampledFrom([]int{16, 64, 128}).Draw(t, "pool")
		cfg := DefaultConfig(pool)
		p := &skipPair{t: t}
		p.tick, _ = New(cfg)
		p.skip, _ = New(cfg)
		p.tick.SetTickByTick(true) // the oracle tries every request every tick
		p.tick.SetRecorder(&p.tj)
		p.skip.SetRecorder(&p.sj)
		nc := rapid.IntRange(2, 8).Draw(t, "campaigns")
		// Each campaign's largest job (G GPUs for an estimate of E) sizes
		// its bucket as the trace mapping does: B = (G − R + 1) × E.
		widest, longest := make([]int, nc), make([]int, nc)
		for i := range nc {
			r := math.Ldexp(rapid.Float64Range(1, 2).Draw(t, "R-mantissa"), rapid.IntRange(-3, 1).Draw(t, "R-exp"))
			if rapid.Bool().Draw(t, "same-R") {
				r = 0.375 // equal rates: campaigns of one group
			}
			widest[i] = rapid.IntRange(1, pool).Draw(t, "G")
			longest[i] = rapid.IntRange(50, 2000).Draw(t, "E")
			e := Envelope{Name: fmt.Sprintf("c%d", i), Budget: 1e9, Sustained: r, BurstCeiling: pool,
				Bucket: max(0, (float64(widest[i])-r+1)*float64(longest[i])), Class: AgentBurst}
			p.both(func(b *Broker) (int, error) { c, err := b.Register(e); return int(c), err })
		}
		for range rapid.IntRange(10, 60).Draw(t, "op-count") {
			ci := rapid.IntRange(0, nc-1).Draw(t, "campaign")
			c := CampaignID(ci)
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0, 1:
				// A few jobs at once, most of them wide and long for
				// their campaign: the later ones wait for tokens.
				for range rapid.IntRange(1, 4).Draw(t, "jobs") {
					gpus := rapid.IntRange(max(1, widest[ci]/2), widest[ci]).Draw(t, "gpus")
					est := rapid.IntRange(longest[ci]/2, longest[ci]).Draw(t, "estimate")
					run := rapid.IntRange(1, est).Draw(t, "run")
					cls := rapid.SampledFrom([]Class{AgentBurst, AgentBurst, Interactive, Opportunistic}).Draw(t, "class")
					sub := p.tick.now + 1
					p.both(func(b *Broker) (int, error) { return b.RequestRigid(c, gpus, est, run, cls, sub) })
				}
			default:
				p.wait(rapid.SampledFrom([]int{1, 61, 700, 5000, 40000}).Draw(t, "ticks"))
			}
			p.compare("op")
		}
		p.wait(40000)
		p.compare("the final wait")
		total += p.tick.now
		skipped += p.skipped
	})
	t.Logf("%d of %d ticks skipped", skipped, total)
}

// Two jobs waiting for tokens change places in the pending list during a
// skip, by hand. Pool 64. c0 (R = 0.5, B = (16 − 0.5 + 1) × 1,000 =
// 16,500) and c1 (R = 2, B = (12 − 2 + 1) × 1,000 = 11,000) each run a
// 10-GPU job for 1,000 s from tick 1, which leaves them 7,000 and 3,000
// tokens. At tick 1,001 c0 asks twice for 16 GPUs and c1 once for 12, all
// estimated at 1,000 s: c0 needs 15,500 tokens (17,000 s away), c1 10,000
// (3,500 s away). Idle, they tie on deficit and their tokens order them:
// c0's two jobs first, until c1's line (3,000 + 2s) crosses c0's
// (7,000 + 0.5s) at s = 2,667, when c1's job moves ahead of both of c0's;
// it starts at s = 3,500. The skipping broker jumps to the crossing
// (watchThrough), reorders the runs there and matches the
// ticking one throughout.
func TestSkipToReordersCrossingRuns(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := &skipPair{t: t}
		p.tick, p.skip = bareBroker(t, 64), bareBroker(t, 64)
		p.tick.SetRecorder(&p.tj)
		p.skip.SetRecorder(&p.sj)
		for i, e := range []Envelope{
			{Name: "c0", Budget: 1e9, Sustained: 0.5, BurstCeiling: 64, Bucket: 16500, Class: AgentBurst},
			{Name: "c1", Budget: 1e9, Sustained: 2, BurstCeiling: 64, Bucket: 11000, Class: AgentBurst},
		} {
			p.both(func(b *Broker) (int, error) { c, err := b.Register(e); return int(c) - i, err })
			p.both(func(b *Broker) (int, error) { return b.RequestRigid(CampaignID(i), 10, 1000, 1000, AgentBurst, 1) })
		}
		p.wait(1000)
		for _, j := range []struct{ c, gpus int }{{0, 16}, {0, 16}, {1, 12}} {
			p.both(func(b *Broker) (int, error) {
				return b.RequestRigid(CampaignID(j.c), j.gpus, 1000, 1000, AgentBurst, b.now+1)
			})
		}
		p.wait(2660)
		p.compare("before the crossing")
		if c := p.skip.Pending()[0].Campaign; c != 0 {
			t.Fatalf("before the crossing, campaign %d's job is first", c)
		}
		p.wait(20)
		p.compare("after the crossing")
		if c := p.skip.Pending()[0].Campaign; c != 1 {
			t.Fatalf("after the crossing, campaign %d's job is first", c)
		}
		p.wait(20000)
		p.compare("the end")
		if p.skipped < 15000 {
			t.Fatalf("only %d ticks skipped", p.skipped)
		}
	})
}

// nextChangeRef is NextChange worked out request by request, each
// request's cap exit on its own (capExitRef), as it was before the
// smallest gap per campaign; fresh is false when NextChange will answer
// from its cache instead.
func nextChangeRef(b *Broker) (next int, fresh bool) {
	if b.changedAt >= b.now {
		return b.now + 1, true
	}
	if (b.quietFrom == b.admittedAt && b.changedAt < b.quietFrom) || b.nextChangeNow == b.now {
		return 0, false
	}
	next = b.nextDeadline
	pend := b.Pending()
	for i := range pend {
		r := &pend[i]
		if !r.rigid {
			next = min(next, r.Submitted+RequestTTL+1)
		}
		next = min(next, capExitRef(b, r))
	}
	return max(next, b.now+1), true
}

// capExitRef is request r's cap exit on its own: the first tick after Now
// at which its rate cap may leave the interval that keeps its outcome
// (math.MaxInt: never).
func capExitRef(b *Broker, r *Request) int {
	cp := &b.camps[r.Campaign]
	env := &cp.env
	held := float64(cp.heldAll)
	t0 := cp.tokens
	t1 := clamp(t0+env.Sustained-held, 0, env.Bucket)
	if t1 == t0 {
		return math.MaxInt
	}
	up := t1 > t0
	e := 0x1p-51 * (env.Bucket + env.Sustained + held)
	d := env.Sustained - held
	if b.cfg.GrantTimeOnly {
		switch {
		case up && t0 > 0:
			return math.MaxInt
		case up:
			return b.now + 1
		}
		return b.now + 1 + safeSteps(t0, e-d)
	}
	lo, hi := b.outcomeInterval(cp, r)
	dur := float64(max(r.Duration, 1))
	margin := func(k int) float64 {
		return 1e-12 * ((math.Abs(float64(k))+env.Sustained)*dur + env.Bucket + 1)
	}
	if up {
		if hi == math.MaxInt || hi+1 > env.BurstCeiling {
			return math.MaxInt
		}
		thr := (float64(hi+1)-env.Sustained)*dur - margin(hi+1)
		if thr > env.Bucket {
			return math.MaxInt
		}
		return b.now + 1 + safeSteps(thr-t0, d+e)
	}
	if lo == math.MinInt || env.Guaranteed >= lo {
		return math.MaxInt
	}
	thr := (float64(lo)-env.Sustained)*dur + margin(lo)
	if thr < 0 {
		return math.MaxInt
	}
	return b.now + 1 + safeSteps(t0-thr, e-d)
}
