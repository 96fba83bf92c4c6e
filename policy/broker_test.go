package policy

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// Worked examples of model.md §3–4.

// A lease granted at tick s with duration d is held after ticks s … s+d−1
// and released (reason expired) at tick s+d, before the buckets refill: the
// bucket is debited by held − R at ticks s+1 … s+d−1, d − 1 times.
func TestLeaseLifetimeAndGPUBucket(t *testing.T) {
	b, j := newBroker(t, 100)
	c := mustRegister(t, b, env("c", 0, 10, 100, 1000, AgentBurst))
	mustRequest(t, b, c, 40, 5, AnyClass)
	var held []int
	var tokens []float64
	for range 10 {
		b.Tick()
		held = append(held, b.Held(c, AnyClass))
		tokens = append(tokens, b.Tokens(c))
	}
	require.Equal(t, []int{40, 40, 40, 40, 40, 0, 0, 0, 0, 0}, held)
	// 1000 (grant tick) → −30 per tick at 2..5 → 880 → +10 from tick 6,
	// clamped at B.
	require.Equal(t, []float64{1000, 970, 940, 910, 880, 890, 900, 910, 920, 930}, tokens)
	rel := j.of(EventRelease)
	require.Len(t, rel, 1)
	require.Equal(t, 6, rel[0].T)
	require.Equal(t, ReasonExpired, rel[0].Reason)

	// The bucket never goes below 0 nor above B.
	b2, _ := newBroker(t, 100)
	c2 := mustRegister(t, b2, env("c", 0, 10, 100, 50, AgentBurst))
	mustRequest(t, b2, c2, 40, 0, AnyClass) // d = 0: expires at the next tick
	b2.Tick()
	require.Equal(t, 40, b2.Held(c2, AnyClass))
	b2.Tick()
	require.Zero(t, b2.Held(c2, AnyClass))
	require.Equal(t, 50.0, b2.Tokens(c2), "a lease of duration 0 is never debited")
	mustRequest(t, b2, c2, 40, 1000, Deadline)
	// Cap for d = 1000 is trunc(10 + 50/1000) = 10 → grant 10 = R: flat.
	require.Equal(t, []float64{50, 50, 50, 50}, tokensOverTicks(b2, c2, 4))
}

func TestGPUBucketClampsAtZero(t *testing.T) {
	b, _ := newBroker(t, 100)
	// g = 40 lets it hold 40 with a bucket of 50 and R = 10: −30 a tick.
	c := mustRegister(t, b, env("c", 40, 10, 40, 50, AgentBurst))
	mustRequest(t, b, c, 40, 1000, AnyClass)
	require.Equal(t, []float64{50, 20, 0, 0}, tokensOverTicks(b, c, 4))
}

// tokensOverTicks ticks the broker n times and records c's GPU tokens after
// each tick.
func tokensOverTicks(b *Broker, c CampaignID, n int) []float64 {
	tokens := make([]float64, 0, n)
	for range n {
		b.Tick()
		tokens = append(tokens, b.Tokens(c))
	}
	return tokens
}

// Expiry walks the lease list in order; a lease past its expiry is expired
// even while under notice, and a lease whose notice ran out is preempted.
func TestExpireOrderAndReasons(t *testing.T) {
	b, j := newBroker(t, 100)
	bf := mustRegister(t, b, filler("backfill", 100, Opportunistic))
	r := mustRegister(t, b, filler("r", 100, AgentBurst))
	mustRequest(t, b, bf, 50, 30, AnyClass) // lease 1, expires 31
	mustRequest(t, b, bf, 40, 90, AnyClass) // lease 2, expires 91
	b.Tick()
	mustRequest(t, b, r, 95, 600, AnyClass) // needs 85: both go under notice at 2
	b.Tick()
	require.Len(t, j.of(EventPreemptNotice), 2)
	require.Equal(t, 62, leaseByID(t, b, 1).PreemptAt)
	j.reset()
	ticks(b, 29) // now 31: lease 1 expires before its notice runs out
	require.Equal(t, []string{
		`{"t": 31, "event": "release", "lease": 1, "campaign": "backfill", "gpus": 50, "reason": "expired"}`,
		`{"t": 31, "event": "grant", "lease": 3, "campaign": "r", "gpus": 60, "cls": "agent-burst", "latency": 30, "path": "reclaim", "rule": {"class_rank": 2, "fair_deficit": 0, "tokens": 1000000000000}}`,
	}, j.lines(), "free 60 ≥ min(95, 16): a partial grant")
	j.reset()
	ticks(b, 31) // now 62
	require.Equal(t, []string{
		`{"t": 62, "event": "release", "lease": 2, "campaign": "backfill", "gpus": 40, "reason": "preempted"}`,
	}, j.lines())
}

// Every lease is charged gpus × base price × m / 3600 a tick, where m is the
// congestion multiplier for agent-burst and interactive and 1 otherwise.
func TestAccountingByClass(t *testing.T) {
	b, _ := newBroker(t, 1000)
	prices := map[Class]float64{Deadline: 4, Interactive: 2, AgentBurst: 3, Opportunistic: 0.25}
	ids := map[Class]CampaignID{}
	for _, cls := range []Class{Deadline, Interactive, AgentBurst, Opportunistic} {
		e := filler(cls.String(), 1000, cls)
		e.Budget = 1000
		ids[cls] = mustRegister(t, b, e)
		mustRequest(t, b, ids[cls], 36, 100, AnyClass)
	}
	b.Tick() // granted after this tick's accounting: nothing charged yet
	for _, c := range ids {
		require.Zero(t, b.Spent(c))
	}
	ticks(b, 10) // ticks 2..11, no unmet demand: m = 1
	for cls, c := range ids {
		// 36 GPUs × price / 3600 × 10 ticks = price / 10.
		require.InDelta(t, prices[cls]/10, b.Spent(c), 1e-12, cls.String())
		require.InDelta(t, 1000-prices[cls]/10, b.Credits(c), 1e-12)
	}
}

func TestMultiplierTable(t *testing.T) {
	for _, tc := range []struct{ index, want float64 }{
		{0, 1}, {0.4999, 1}, {0.5, 1.5}, {0.999, 1.5}, {1, 2.25}, {1.999, 2.25}, {2, 3}, {9.5, 3}, {10, 3},
	} {
		require.Equal(t, tc.want, MultiplierFor(tc.index), "index %v", tc.index)
	}
}

// The congestion index is Σ unmet priced demand / max(Σ free, 1) over the
// last 60 ticks, capped at 10; opportunistic demand is not priced.
func TestCongestionIndexAndCharge(t *testing.T) {
	for _, tc := range []struct {
		demand    int
		index, m  float64
		holderCls Class
	}{
		{1, 0.25, 1, AgentBurst},
		{2, 0.5, 1.5, AgentBurst},
		{3, 0.75, 1.5, Interactive},
		{4, 1, 2.25, AgentBurst},
		{7, 1.75, 2.25, AgentBurst},
		{8, 2, 3, AgentBurst},
		{3, 0.75, 1.5, Deadline},
	} {
		b, _ := newBroker(t, 10)
		he := filler("holder", 10, tc.holderCls)
		he.Budget = 1 // small, so that Spent = budget − credits is exact enough
		h := mustRegister(t, b, he)
		// R = 0 and B = 0: a cap of 0, so its requests wait for ever.
		w := mustRegister(t, b, env("waiter", 0, 0, 10, 0, AgentBurst))
		mustRequest(t, b, h, 6, 1000, AnyClass) // free 4
		mustRequest(t, b, w, tc.demand, 60, AnyClass)
		mustRequest(t, b, w, 100, 60, Opportunistic) // not priced
		require.Zero(t, b.CongestionIndex(), "no history yet")
		require.Equal(t, 1.0, b.Multiplier())
		b.Tick() // history: (demand, 4)
		require.Equal(t, tc.index, b.CongestionIndex())
		require.Equal(t, tc.m, b.Multiplier())
		b.Tick() // charged with the multiplier of the history before this tick
		m := tc.m
		if tc.holderCls == Deadline {
			m = 1
		}
		require.InDelta(t, 6*tc.holderCls.BasePrice()*m/3600, b.Spent(h), 1e-16)
	}
}

func TestCongestionIndexCapAndWindow(t *testing.T) {
	b, _ := newBroker(t, 10)
	h := mustRegister(t, b, filler("holder", 10, AgentBurst))
	w := mustRegister(t, b, env("waiter", 0, 0, 10, 0, AgentBurst))
	mustRequest(t, b, h, 10, 10000, AnyClass)
	mustRequest(t, b, w, 50, 10000, AnyClass)
	b.Tick()
	require.Equal(t, 10.0, b.CongestionIndex(), "min(10, 50 / max(0, 1))")
	require.NoError(t, b.ReleaseAll(h, AnyClass))
	require.NoError(t, b.ReleaseAll(w, AnyClass))
	mustRequest(t, b, h, 6, 10000, AnyClass)
	mustRequest(t, b, w, 3, 10000, AnyClass)
	ticks(b, 59) // now 60: (50, 0) and 59 × (3, 4)
	require.Equal(t, float64(50+3*59)/float64(4*59), b.CongestionIndex())
	b.Tick() // the (50, 0) entry leaves the window
	require.Equal(t, 0.75, b.CongestionIndex())
	require.NoError(t, b.ReleaseAll(w, AnyClass))
	ticks(b, 59) // one (3, 4) entry left
	require.Equal(t, 3.0/240, b.CongestionIndex())
	b.Tick()
	require.Zero(t, b.CongestionIndex())
}

// consume: cap = ceiling while the dimension has tokens, else its rate;
// room is what is left of the cap this tick; the facility capacity is
// shared; throttle records are at most one per 60 ticks per (dimension,
// campaign).
func TestConsumeFlowThrottling(t *testing.T) {
	cfg := DefaultConfig(10)
	cfg.IOCapacity = 28
	cfg.InferenceCapacity = 5000
	b, j := newBrokerCfg(t, cfg)
	ea := env("a", 0, 1, 1, 1, AgentBurst)
	ea.Budget = 100
	ea.IO = &Flow{Rate: 6, Bucket: 10, Ceiling: 16}
	ea.Inference = &Flow{Rate: 500, Bucket: 1000, Ceiling: 2000}
	a := mustRegister(t, b, ea)
	eb := env("b", 0, 1, 1, 1, AgentBurst)
	eb.IO = &Flow{Rate: 100, Bucket: 100, Ceiling: 100}
	bb := mustRegister(t, b, eb)
	j.reset()

	io, inf, err := b.Consume(a, 20, 0) // tokens 10 > 0: cap 16
	require.NoError(t, err)
	require.Equal(t, 16.0, io)
	require.Zero(t, inf)
	require.Equal(t, 12.0, b.FacilityLeft(IO))
	require.Equal(t, 16.0, b.FlowUsedThisTick(a, IO))
	io, _, _ = b.Consume(a, 5, 0) // room 16 − 16 = 0
	require.Zero(t, io)
	io, _, _ = b.Consume(bb, 16, 0) // its cap 100, but the facility has 12
	require.Equal(t, 12.0, io)
	require.Zero(t, b.FacilityLeft(IO))
	require.Equal(t, 2, b.FlowThrottled(a, IO))
	require.Equal(t, 1, b.FlowThrottled(bb, IO))
	require.Zero(t, b.FlowThrottled(a, Inference), "desired 0: nothing happens")
	require.Equal(t, []string{
		`{"t": 0, "event": "throttle-io", "campaign": "a", "desired": 20, "allowed": 16, "tokens": 10}`,
		`{"t": 0, "event": "throttle-io", "campaign": "b", "desired": 16, "allowed": 12, "tokens": 100}`,
	}, j.lines())

	b.Tick() // a: io tokens = clamp(10 + 6 − 16, 0, 10) = 0
	require.Zero(t, b.FlowTokens(a, IO))
	require.Equal(t, 16.0, b.FlowUsedLastTick(a, IO))
	require.Zero(t, b.FlowUsedThisTick(a, IO))
	require.Equal(t, 28.0, b.FacilityLeft(IO))
	require.Equal(t, 100.0, b.FlowTokens(bb, IO), "clamp(100 + 100 − 12, 0, 100)")

	// From now on a asks 10 a tick and gets its rate, 6; its tokens stay
	// at 0 + 6 − 6 = 0.
	j.reset()
	for now := 1; now <= 120; now++ {
		require.Equal(t, now, b.Now())
		io, _, _ := b.Consume(a, 10, 0)
		require.Equal(t, 6.0, io)
		if now == 30 {
			// Another dimension is another pair: journaled at once.
			_, inf, _ := b.Consume(a, 0, 3000)
			require.Equal(t, 2000.0, inf)
		}
		b.Tick()
	}
	require.Equal(t, []string{
		`{"t": 30, "event": "throttle-inference", "campaign": "a", "desired": 3000, "allowed": 2000, "tokens": 1000}`,
		`{"t": 60, "event": "throttle-io", "campaign": "a", "desired": 10, "allowed": 6, "tokens": 0}`,
		`{"t": 120, "event": "throttle-io", "campaign": "a", "desired": 10, "allowed": 6, "tokens": 0}`,
	}, j.lines())
	require.Equal(t, 2+120, b.FlowThrottled(a, IO))
	// The inference: 2000 tokens at 0.02 credits per 1000.
	require.InDelta(t, 0.04, b.Spent(a), 1e-12) // budget 100 − 0.04
	require.Zero(t, b.Spent(bb))
}

// A grant within 1e-9 of the desire is whole.
func TestConsumeSlack(t *testing.T) {
	b, _ := newBroker(t, 10)
	e := env("a", 0, 1, 1, 1, AgentBurst)
	e.IO = &Flow{Rate: 5, Bucket: 5, Ceiling: 5}
	a := mustRegister(t, b, e)
	io, _, _ := b.Consume(a, 5+5e-10, 0)
	require.Equal(t, 5.0, io)
	require.Zero(t, b.FlowThrottled(a, IO))
	b.Tick()
	_, _, _ = b.Consume(a, 5+2e-9, 0)
	require.Equal(t, 1, b.FlowThrottled(a, IO))
}

func TestConsumeRefusesBadAmounts(t *testing.T) {
	b, _ := newBroker(t, 10)
	a := mustRegister(t, b, env("a", 0, 1, 1, 1, AgentBurst))
	for _, v := range [][2]float64{{-1, 0}, {0, -1}, {nan(), 0}, {0, inf()}} {
		_, _, err := b.Consume(a, v[0], v[1])
		require.Error(t, err, "%v", v)
	}
	require.Zero(t, b.FlowUsedThisTick(a, IO))
}

// Allowed inference costs 0.02 credits per 1000 tokens; a throttled call
// pays for what it got.
func TestInferenceCharging(t *testing.T) {
	cfg := DefaultConfig(10)
	cfg.InferenceCapacity = 5000
	b, _ := newBrokerCfg(t, cfg)
	e := env("a", 0, 1, 1, 1, AgentBurst)
	e.Budget = 10
	a := mustRegister(t, b, e)
	_, inf, err := b.Consume(a, 0, 5000)
	require.NoError(t, err)
	require.Equal(t, 5000.0, inf)
	require.InDelta(t, 0.1, b.Spent(a), 1e-15)
	_, inf, _ = b.Consume(a, 0, 1000) // the facility has nothing left
	require.Zero(t, inf)
	require.InDelta(t, 0.1, b.Spent(a), 1e-15)
	b.Tick()
	_, inf, _ = b.Consume(a, 0, 250)
	require.Equal(t, 250.0, inf)
	require.InDelta(t, 0.105, b.Spent(a), 1e-15)
	require.InDelta(t, 10-0.105, b.Credits(a), 1e-12)
}

// With no credits left a campaign's requests are denied (and journaled)
// except opportunistic ones; the id counter advances regardless.
func TestBudgetExhaustion(t *testing.T) {
	b, j := newBroker(t, 100)
	e := env("c", 0, 100, 100, 1e6, AgentBurst)
	e.Budget = 0.1
	c := mustRegister(t, b, e)
	other := mustRegister(t, b, env("other", 0, 100, 100, 1e6, AgentBurst))
	_, _, err := b.Consume(c, 0, 10000) // 0.2 credits: 0.1 − 0.2 < 0
	require.NoError(t, err)
	require.InDelta(t, -0.1, b.Credits(c), 1e-15)
	j.reset()

	id, err := b.Request(c, 8, 60, AnyClass)
	require.ErrorIs(t, err, ErrBudgetExhausted)
	require.Equal(t, 1, id, "the denied request still took an id")
	_, err = b.Request(c, 4, 60, Deadline)
	require.ErrorIs(t, err, ErrBudgetExhausted)
	require.Equal(t, []string{
		`{"t": 0, "event": "deny", "campaign": "c", "gpus": 8, "cls": "agent-burst", "reason": "budget-exhausted"}`,
		`{"t": 0, "event": "deny", "campaign": "c", "gpus": 4, "cls": "deadline", "reason": "budget-exhausted"}`,
	}, j.lines())
	require.Zero(t, b.Outstanding(c, AnyClass), "nothing queued")
	require.Empty(t, b.Pending())

	opp := mustRequest(t, b, c, 6, 60, Opportunistic)
	require.Equal(t, 3, opp)
	require.Equal(t, 4, mustRequest(t, b, other, 1, 60, AnyClass))
	b.Tick()
	require.Equal(t, 6, b.Held(c, Opportunistic))
	require.Equal(t, []int{4, 3}, leaseIDs(b), "agent-burst sorts before opportunistic; leases keep the ids")
}

// "Credits ≤ 0": a budget of exactly 0 is exhausted from the start.
func TestBudgetExactlyZeroIsExhausted(t *testing.T) {
	b, j := newBroker(t, 100)
	e := env("c", 0, 100, 100, 1e6, Interactive)
	e.Budget = 0
	c := mustRegister(t, b, e)
	j.reset()
	_, err := b.Request(c, 1, 1, AnyClass)
	require.ErrorIs(t, err, ErrBudgetExhausted)
	require.Equal(t, []string{
		`{"t": 0, "event": "deny", "campaign": "c", "gpus": 1, "cls": "interactive", "reason": "budget-exhausted"}`,
	}, j.lines())
}

func TestRequestRefusesBadArguments(t *testing.T) {
	b, _ := newBroker(t, 100)
	c := mustRegister(t, b, env("c", 0, 100, 100, 1e6, Interactive))
	for _, tc := range []struct {
		gpus, duration int
		cls            Class
	}{{0, 10, AnyClass}, {-3, 10, AnyClass}, {1, -1, AnyClass}, {1, 1, Class(4)}} {
		_, err := b.Request(c, tc.gpus, tc.duration, tc.cls)
		require.Error(t, err)
		require.False(t, errors.Is(err, ErrBudgetExhausted))
	}
	require.Empty(t, b.Pending())
	require.Equal(t, 1, mustRequest(t, b, c, 1, 1, AnyClass), "refused arguments take no id")
	require.Equal(t, Interactive, b.Pending()[0].Class, "AnyClass is the envelope's class")
}

// release_all releases the campaign's leases of the class (or all) in lease
// order with a record each, and silently drops its pending requests of that
// class.
func TestReleaseAllWithClassFilter(t *testing.T) {
	b, j := newBroker(t, 100)
	c := mustRegister(t, b, filler("c", 100, AgentBurst))
	o := mustRegister(t, b, filler("other", 100, AgentBurst))
	mustRequest(t, b, c, 10, 600, AgentBurst)    // 1
	mustRequest(t, b, c, 20, 600, Opportunistic) // 2
	mustRequest(t, b, c, 5, 600, AgentBurst)     // 3
	mustRequest(t, b, o, 7, 600, Opportunistic)  // 4
	b.Tick()
	require.Equal(t, []int{1, 3, 2, 4}, leaseIDs(b))
	mustRequest(t, b, c, 30, 300, Opportunistic) // 5, pending
	mustRequest(t, b, c, 9, 600, AgentBurst)     // 6, pending
	j.reset()

	require.NoError(t, b.ReleaseAll(c, Opportunistic))
	require.Equal(t, []string{
		`{"t": 1, "event": "release", "lease": 2, "campaign": "c", "gpus": 20, "reason": "released-by-agent"}`,
	}, j.lines(), "the dropped request is not journaled")
	require.Equal(t, []int{1, 3, 4}, leaseIDs(b))
	require.Zero(t, b.Held(c, Opportunistic))
	require.Zero(t, b.Outstanding(c, Opportunistic))
	require.Equal(t, 15, b.Held(c, AgentBurst))
	require.Equal(t, 24, b.Outstanding(c, AnyClass))
	require.Equal(t, 7, b.Held(o, AnyClass))
	require.Equal(t, 100-22, b.Free())

	j.reset()
	require.NoError(t, b.ReleaseAll(c, AnyClass))
	require.Equal(t, []string{
		`{"t": 1, "event": "release", "lease": 1, "campaign": "c", "gpus": 10, "reason": "released-by-agent"}`,
		`{"t": 1, "event": "release", "lease": 3, "campaign": "c", "gpus": 5, "reason": "released-by-agent"}`,
	}, j.lines())
	require.Zero(t, b.Outstanding(c, AnyClass))
	require.Equal(t, []int{4}, leaseIDs(b))
	require.Len(t, b.Pending(), 0)
}

func TestReleaseLease(t *testing.T) {
	b, j := newBroker(t, 100)
	c := mustRegister(t, b, filler("c", 100, AgentBurst))
	o := mustRegister(t, b, filler("o", 100, AgentBurst))
	mustRequest(t, b, c, 10, 600, AnyClass)
	mustRequest(t, b, c, 20, 600, AnyClass)
	mustRequest(t, b, o, 30, 600, AnyClass)
	b.Tick()
	j.reset()
	require.Error(t, b.ReleaseLease(c, 3), "lease 3 is o's")
	require.NoError(t, b.ReleaseLease(c, 1))
	require.Equal(t, []int{2, 3}, leaseIDs(b))
	require.Equal(t, 20, b.Held(c, AnyClass))
	require.Equal(t, []string{
		`{"t": 1, "event": "release", "lease": 1, "campaign": "c", "gpus": 10, "reason": "released-by-agent"}`,
	}, j.lines())
}

func TestSupplyFields(t *testing.T) {
	cfg := DefaultConfig(100)
	cfg.IOCapacity = 28
	b, _ := newBrokerCfg(t, cfg)
	e := env("c", 10, 32, 64, 600, Interactive)
	e.Budget = 50
	e.IO = &Flow{Rate: 6, Bucket: 3600, Ceiling: 16}
	c := mustRegister(t, b, e)
	mustRequest(t, b, c, 20, 100, AnyClass)
	b.Tick()
	_, _, _ = b.Consume(c, 4, 0)
	s := b.Supply(c)
	require.Equal(t, 80, s.Free)
	require.Zero(t, s.Reclaimable)
	require.Equal(t, 600.0, s.Tokens)
	require.Equal(t, 600.0, s.Bucket)
	require.Equal(t, 32.0, s.Sustained)
	require.Equal(t, 50.0, s.Credits)
	require.Equal(t, Warm, s.ExpectedPath)
	require.Equal(t, FlowSupply{Tokens: 3600, Bucket: 3600, Rate: 6, Ceiling: 16, FacilityLeft: 24}, s.IO)
	require.Equal(t, FlowSupply{Tokens: Unmetered, Bucket: Unmetered, Rate: Unmetered, Ceiling: Unmetered, FacilityLeft: Unmetered}, s.Inference)
}

func TestUtilization(t *testing.T) {
	b, _ := newBroker(t, 100)
	require.True(t, math.IsNaN(b.Utilization()), "NaN before the first tick")
	c := mustRegister(t, b, filler("c", 100, AgentBurst))
	mustRequest(t, b, c, 50, 2, AnyClass)
	ticks(b, 4) // 0.5, 0.5, 0, 0
	require.Equal(t, 0.25, b.Utilization())
}

// ConsumeIO and ConsumeInference are Consume with the other amount 0:
// two brokers given the same calls, one through Consume and one through
// them, allow the same amounts, write the same journal and reach the
// same state, refused calls (an unknown campaign, a negative, infinite
// or NaN amount) included.
func TestConsumeOneDimensionIsConsume(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := DefaultConfig(64)
		cfg.IOCapacity = rapid.Float64Range(0, 40).Draw(t, "io-capacity")
		cfg.InferenceCapacity = rapid.Float64Range(0, 5000).Draw(t, "inference-capacity")
		var bs [2]*Broker
		var js [2]*journal
		for k := range bs {
			b, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			bs[k], js[k] = b, &journal{}
			b.SetRecorder(js[k])
		}
		n := rapid.IntRange(1, 3).Draw(t, "campaigns")
		for i := range n {
			e := env(string(rune('a'+i)), 0, 4, 16, 100, AgentBurst)
			e.Budget = rapid.Float64Range(0, 1).Draw(t, "budget")
			e.IO, e.Inference = drawFlow(t, "io"), drawFlow(t, "inference")
			for _, b := range bs {
				if _, err := b.Register(e); err != nil {
					t.Fatal(err)
				}
			}
		}
		amounts := rapid.SampledFrom([]float64{-1, 0, 1e-12, 0.5, 3, 17, 250, 4000, math.NaN(), math.Inf(1), math.MaxFloat64})
		for step := range rapid.IntRange(1, 60).Draw(t, "steps") {
			c := CampaignID(rapid.IntRange(-1, n).Draw(t, "campaign"))
			x := amounts.Draw(t, "amount")
			var want, got float64
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				want, _, _ = bs[0].Consume(c, x, 0)
				got = bs[1].ConsumeIO(c, x)
			case 1:
				_, want, _ = bs[0].Consume(c, 0, x)
				got = bs[1].ConsumeInference(c, x)
			default:
				for _, b := range bs {
					b.Tick()
				}
			}
			if math.Float64bits(want) != math.Float64bits(got) {
				t.Fatalf("step %d: campaign %d, amount %v: Consume allows %v, the one-dimension call %v", step, c, x, want, got)
			}
		}
		if string(js[0].buf) != string(js[1].buf) {
			t.Fatalf("journals differ:\n%s\n---\n%s", js[0].buf, js[1].buf)
		}
		if !reflect.DeepEqual(bs[0].Dump(), bs[1].Dump()) {
			t.Fatalf("the brokers' states differ")
		}
	})
}
