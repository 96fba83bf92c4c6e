package policy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Worked examples of model.md §5. Every expected number below is computed
// from the rules by hand; the comments show the arithmetic.

// A request that waits more than 900 s is dropped with a request-expired
// record; at exactly 900 s it is still tried.
func TestAdmissionExpiresRequestsAfterTTL(t *testing.T) {
	b, j := newBroker(t, 100)
	holder := mustRegister(t, b, filler("holder", 100, AgentBurst))
	waiter := mustRegister(t, b, env("waiter", 0, 100, 100, 1000, AgentBurst))
	mustRequest(t, b, holder, 100, 5000, AnyClass)
	mustRequest(t, b, waiter, 10, 60, AnyClass) // submitted at 0

	// The holder sorts first (same class and deficit, more tokens) and takes
	// the whole pool; the waiter finds nothing grantable and no
	// opportunistic lease to preempt.
	ticks(b, 900)
	require.Equal(t, 10, b.Outstanding(waiter, AnyClass), "900 − 0 is not > 900: still pending")
	require.Empty(t, j.of(EventRequestExpired))

	j.reset()
	b.Tick() // now 901: 901 − 0 > 900
	require.Equal(t, []string{
		`{"t": 901, "event": "request-expired", "campaign": "waiter", "gpus": 10, "cls": "agent-burst"}`,
	}, j.lines())
	require.Zero(t, b.Outstanding(waiter, AnyClass))
	require.Empty(t, b.Pending())
	require.Zero(t, b.pendingDemand, "expired demand no longer counts as unmet demand")
}

// A request over its rate cap stays pending; its throttle record is written
// the first time only, however many passes it waits.
func TestAdmissionThrottleJournalsOncePerRequest(t *testing.T) {
	b, j := newBroker(t, 100)
	// B = 0: tokens are always 0, so the prepaid cap is
	// max(min(50, trunc(4 + 0/d)), 0) = 4.
	c := mustRegister(t, b, env("c", 0, 4, 50, 0, AgentBurst))
	mustRequest(t, b, c, 4, 100, AnyClass) // id 1
	b.Tick()                               // granted 4 (lease 1, expires 101)
	require.Equal(t, 4, b.Held(c, AnyClass))

	j.reset()
	mustRequest(t, b, c, 10, 60, AnyClass)   // id 2, at now 1
	ticks(b, 4)                              // now 5; headroom 4 − 4 = 0 every pass
	mustRequest(t, b, c, 7, 60, Interactive) // id 3, at now 5
	ticks(b, 5)                              // now 10
	require.Equal(t, []string{
		`{"t": 2, "event": "throttle", "campaign": "c", "gpus": 10, "cls": "agent-burst", "tokens": 0, "cap": 4}`,
		`{"t": 6, "event": "throttle", "campaign": "c", "gpus": 7, "cls": "interactive", "tokens": 0, "cap": 4}`,
	}, j.lines())
	require.Equal(t, 4+10+7, b.Outstanding(c, AnyClass))

	// At 101 lease 1 expires; the interactive request sorts first and gets
	// min(7, 4 − 0) = 4 (a whole grant of its headroom: the request is
	// finished). The agent-burst one is throttled again but not journaled
	// again.
	ticks(b, 90)
	j.reset()
	b.Tick()
	require.Equal(t, []string{
		`{"t": 101, "event": "release", "lease": 1, "campaign": "c", "gpus": 4, "reason": "expired"}`,
		`{"t": 101, "event": "grant", "lease": 3, "campaign": "c", "gpus": 4, "cls": "interactive", "latency": 96, "path": "cold", "rule": {"class_rank": 1, "fair_deficit": -1, "tokens": 0}}`,
	}, j.lines(), "deficit 0/1 − U_c/U = −1: c is the only user")
	require.Equal(t, []int{2}, []int{b.Pending()[0].ID})
}

// A whole grant: the lease takes the request's id, and the record carries
// the rule inputs read at sort time.
func TestAdmissionFullGrant(t *testing.T) {
	b, j := newBroker(t, 100)
	a := mustRegister(t, b, env("a", 10, 20, 40, 500, AgentBurst))
	mustRegister(t, b, env("b", 30, 30, 30, 1, Interactive))
	j.reset()
	id := mustRequest(t, b, a, 20, 60, AnyClass)
	require.Equal(t, 1, id, "the first id is 1")
	b.Tick()
	// tokens = min(500, 500 + 20 − 0) = 500; cap = max(min(40, trunc(20 +
	// 500/60 = 28.3)), 10) = 28; want = min(20, 28) = 20. grantable: free
	// 100, own 10, reserve 30, guar 10, extra 100 − 30 − 10 = 60 → 20.
	// deficit = 10/40 − 0/1 = 0.25.
	require.Equal(t, []Lease{{ID: 1, Campaign: a, GPUs: 20, Class: AgentBurst, Submitted: 0, Granted: 1, Expires: 61}}, b.Leases())
	require.Equal(t, []string{
		`{"t": 1, "event": "grant", "lease": 1, "campaign": "a", "gpus": 20, "cls": "agent-burst", "latency": 1, "path": "warm", "rule": {"class_rank": 2, "fair_deficit": 0.25, "tokens": 500}}`,
	}, j.lines())
	require.Equal(t, 80, b.Free())
	require.Empty(t, b.Pending())
}

// A grant smaller than asked finishes the request when it is at least
// min(want, 16) GPUs; below that nothing is granted.
func TestAdmissionPartialGrantAndMinimum(t *testing.T) {
	t.Run("partial grant finishes the request", func(t *testing.T) {
		b, j := newBroker(t, 100)
		h := mustRegister(t, b, filler("holder", 100, AgentBurst))
		w := mustRegister(t, b, env("w", 0, 100, 100, 1e6, AgentBurst))
		mustRequest(t, b, h, 70, 1000, AnyClass)
		b.Tick()
		mustRequest(t, b, w, 50, 100, AnyClass)
		j.reset()
		b.Tick() // free 30 ≥ min(50, 16): grant 30
		require.Equal(t, 30, b.Held(w, AnyClass))
		require.Equal(t, 30, b.Outstanding(w, AnyClass), "the rest is not kept pending")
		require.Len(t, j.of(EventGrant), 1)
		require.Equal(t, 30, j.of(EventGrant)[0].GPUs)
	})
	for _, tc := range []struct {
		name      string
		free, ask int
		granted   int
	}{
		{"exactly 16 of 40", 16, 40, 16},
		{"15 of 40 is below the minimum", 15, 40, 0},
		{"10 of 12: min(12, 16) = 12 > 10", 10, 12, 0},
		{"8 of 8 is whole", 10, 8, 8},
		{"14 of 14 is whole", 14, 14, 14},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newBroker(t, 100)
			h := mustRegister(t, b, filler("holder", 100, AgentBurst))
			w := mustRegister(t, b, env("w", 0, 100, 100, 1e6, AgentBurst))
			mustRequest(t, b, h, 100-tc.free, 1000, AnyClass)
			b.Tick()
			mustRequest(t, b, w, tc.ask, 100, AnyClass)
			b.Tick()
			require.Equal(t, tc.granted, b.Held(w, AnyClass))
			// Granted (a partial grant drops the rest) or still pending,
			// never both.
			out := tc.ask
			if tc.granted > 0 {
				out = tc.granted
			}
			require.Equal(t, out, b.Outstanding(w, AnyClass))
		})
	}
}

// Beyond its own guarantee a campaign may not eat into another campaign's
// unmet guarantee; within it, it is served on demand.
func TestAdmissionProtectsOtherGuarantees(t *testing.T) {
	b, _ := newBroker(t, 100)
	a := mustRegister(t, b, env("a", 30, 30, 30, 1, Interactive))
	c := mustRegister(t, b, env("c", 20, 100, 100, 1e6, AgentBurst))
	mustRequest(t, b, c, 100, 600, AnyClass)
	b.Tick()
	// c: own 20, reserve 30 (a's unmet), guar = min(100, 20, 100) = 20,
	// extra = 100 − 30 − 20 = 50 → 70, a partial grant.
	require.Equal(t, 70, b.Held(c, AnyClass))
	require.Zero(t, b.Grantable(c, 100))
	require.Equal(t, 30, b.Grantable(a, 100), "a's guarantee is still free")

	mustRequest(t, b, a, 30, 60, AnyClass)
	b.Tick()
	require.Equal(t, 30, b.Held(a, AnyClass))
	require.Zero(t, b.Free())
}

// preempt_for: opportunistic leases of every campaign go under notice,
// largest first, ties in lease order, until the GPUs already on their way
// back cover the need; they are reclaimed after the grace period.
func TestAdmissionPreemptsLargestFirst(t *testing.T) {
	b, j := newBroker(t, 100)
	bf := mustRegister(t, b, filler("backfill", 100, Opportunistic))
	r := mustRegister(t, b, env("r", 0, 100, 100, 1e6, AgentBurst))
	for _, n := range []int{10, 30, 20, 30} { // ids 1..4, granted in this order
		mustRequest(t, b, bf, n, 300, AnyClass)
	}
	b.Tick()
	require.Equal(t, []int{1, 2, 3, 4}, leaseIDs(b))
	require.Equal(t, 10, b.Free())
	require.Equal(t, 90, b.Supply(r).Reclaimable)

	mustRequest(t, b, r, 45, 600, AnyClass) // id 5 at now 1
	j.reset()
	b.Tick() // now 2: want 45, x = 10 < 16 → preempt_for(35)
	// Candidates by size: 30 (lease 2), 30 (lease 4), 20, 10. After lease 2,
	// in flight 30 < 35; after lease 4, 60 ≥ 35: stop.
	require.Equal(t, []string{
		`{"t": 2, "event": "preempt-notice", "lease": 2, "campaign": "backfill", "gpus": 30, "grace": 60}`,
		`{"t": 2, "event": "preempt-notice", "lease": 4, "campaign": "backfill", "gpus": 30, "grace": 60}`,
	}, j.lines())
	require.Equal(t, 62, leaseByID(t, b, 2).PreemptAt)
	require.True(t, leaseByID(t, b, 4).UnderNotice)
	require.False(t, leaseByID(t, b, 1).UnderNotice)
	require.False(t, leaseByID(t, b, 3).UnderNotice)
	require.Equal(t, 30, b.Supply(r).Reclaimable, "leases under notice are no longer reclaimable")

	// The request keeps failing until the grace ends, but the 60 GPUs in
	// flight already cover it: no further notices.
	j.reset()
	ticks(b, 59) // now 61
	require.Empty(t, j.events)
	require.Equal(t, 45, b.Outstanding(r, AnyClass)-b.Held(r, AnyClass))

	b.Tick() // now 62: preempt_at ≤ now; then the request is granted
	require.Equal(t, []string{
		`{"t": 62, "event": "release", "lease": 2, "campaign": "backfill", "gpus": 30, "reason": "preempted"}`,
		`{"t": 62, "event": "release", "lease": 4, "campaign": "backfill", "gpus": 30, "reason": "preempted"}`,
		`{"t": 62, "event": "grant", "lease": 5, "campaign": "r", "gpus": 45, "cls": "agent-burst", "latency": 61, "path": "reclaim", "rule": {"class_rank": 2, "fair_deficit": 0, "tokens": 1000000}}`,
	}, j.lines())
	require.Equal(t, []int{1, 3, 5}, leaseIDs(b))
}

func TestAdmissionPreemptTieGoesToEarlierLease(t *testing.T) {
	b, j := newBroker(t, 100)
	bf := mustRegister(t, b, filler("backfill", 100, Opportunistic))
	r := mustRegister(t, b, env("r", 0, 100, 100, 1e6, Interactive))
	for _, n := range []int{10, 30, 20, 30} {
		mustRequest(t, b, bf, n, 300, AnyClass)
	}
	b.Tick()
	mustRequest(t, b, r, 35, 60, AnyClass) // needs 35 − 10 = 25: one 30 will do
	j.reset()
	b.Tick()
	notices := j.of(EventPreemptNotice)
	require.Len(t, notices, 1)
	require.Equal(t, 2, notices[0].Lease, "of the two 30s, the one granted first")
}

// GPUs already under notice count for every later request of the same pass.
func TestAdmissionPreemptCountsInFlight(t *testing.T) {
	b, j := newBroker(t, 100)
	bf := mustRegister(t, b, filler("backfill", 100, Opportunistic))
	x := mustRegister(t, b, env("x", 0, 100, 100, 2e6, AgentBurst))
	y := mustRegister(t, b, env("y", 0, 100, 100, 1e6, AgentBurst))
	for _, n := range []int{30, 30, 20, 10} {
		mustRequest(t, b, bf, n, 300, AnyClass)
	}
	b.Tick()                               // free 10
	mustRequest(t, b, x, 40, 60, AnyClass) // sorts first (more tokens): needs 30
	mustRequest(t, b, y, 25, 60, AnyClass) // needs 15; 30 already in flight
	j.reset()
	b.Tick()
	notices := j.of(EventPreemptNotice)
	require.Len(t, notices, 1)
	require.Equal(t, 1, notices[0].Lease)
}

// A campaign's own opportunistic leases are candidates too, and the grace is
// the broker's knob.
func TestAdmissionPreemptsOwnBackfillWithConfiguredGrace(t *testing.T) {
	cfg := DefaultConfig(50)
	cfg.Grace = 15
	b, j := newBrokerCfg(t, cfg)
	h := mustRegister(t, b, filler("holder", 50, Deadline))
	x := mustRegister(t, b, env("x", 0, 100, 100, 1e6, AgentBurst))
	mustRequest(t, b, h, 10, 1000, AnyClass)
	mustRequest(t, b, x, 40, 1000, Opportunistic)
	b.Tick()
	require.Zero(t, b.Free())
	mustRequest(t, b, x, 20, 600, AgentBurst) // at now 1
	j.reset()
	b.Tick()
	require.Equal(t, []string{
		`{"t": 2, "event": "preempt-notice", "lease": 2, "campaign": "x", "gpus": 40, "grace": 15}`,
	}, j.lines())
	require.Equal(t, 17, leaseByID(t, b, 2).PreemptAt)
	ticks(b, 15) // now 17
	require.Equal(t, 20, b.Held(x, AnyClass))
	require.Equal(t, 20, b.Held(x, AgentBurst))
	g := j.of(EventGrant)
	require.Len(t, g, 1)
	require.Equal(t, 16, g[0].Latency)
	require.Equal(t, Reclaim, g[0].Path, "16 ≤ grace 15 + 10")
}

// Opportunistic requests wait for free GPUs; they never preempt.
func TestAdmissionOpportunisticNeverPreempts(t *testing.T) {
	b, j := newBroker(t, 40)
	bf := mustRegister(t, b, filler("backfill", 40, Opportunistic))
	o := mustRegister(t, b, env("o", 0, 40, 40, 1e6, Opportunistic))
	mustRequest(t, b, bf, 40, 300, AnyClass)
	b.Tick()
	mustRequest(t, b, o, 20, 300, AnyClass)
	j.reset()
	ticks(b, 10)
	require.Empty(t, j.events)
	require.Zero(t, b.Held(o, AnyClass))
}

// Prepaid leases: cap = max(min(burst, trunc(R + tokens/max(d, 1))), g).
// Each case asks for far more than the cap on an empty pool, so the grant
// is the cap.
func TestPrepaidRateCap(t *testing.T) {
	for _, tc := range []struct {
		name     string
		g        int
		r        float64
		burst    int
		bucket   float64
		duration int
		want     int
	}{
		{"10 + 1000/50 = 30", 5, 10, 100, 1000, 50, 30},
		{"10 + 1000/300 = 13.3 → 13", 5, 10, 100, 1000, 300, 13},
		{"10 + 1000/1000 = 11", 5, 10, 100, 1000, 1000, 11},
		{"10 + 1000/1e5 = 10.01 → 10", 5, 10, 100, 1000, 100000, 10},
		{"the guarantee is a floor", 15, 10, 100, 1000, 100000, 15},
		{"duration 1: min(100, 1010)", 5, 10, 100, 1000, 1, 100},
		{"duration 0 counts as 1", 5, 10, 100, 1000, 0, 100},
		{"10 + 200/10 = 30 exactly", 0, 10, 100, 200, 10, 30},
		{"no tokens, fractional R: trunc(2.5)", 0, 2.5, 100, 0, 10, 2},
		{"burst binds", 0, 10, 25, 1000, 10, 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newBroker(t, 1000)
			c := mustRegister(t, b, env("c", tc.g, tc.r, tc.burst, tc.bucket, AgentBurst))
			mustRequest(t, b, c, 1000, tc.duration, AnyClass)
			b.Tick() // tokens = min(B, B + R − 0) = B at the pass
			require.Equal(t, tc.want, b.Held(c, AnyClass))
		})
	}

	t.Run("zero cap throttles", func(t *testing.T) {
		b, j := newBroker(t, 1000)
		c := mustRegister(t, b, env("c", 0, 0, 10, 0, AgentBurst))
		mustRequest(t, b, c, 5, 10, AnyClass)
		b.Tick()
		require.Zero(t, b.Held(c, AnyClass))
		th := j.of(EventThrottle)
		require.Len(t, th, 1)
		require.Zero(t, th[0].Cap)
	})
}

// The headroom is over every class and counts grants made earlier in the
// same pass.
func TestRateCapCountsEveryClassAndEarlierGrants(t *testing.T) {
	b, _ := newBroker(t, 1000)
	// cap for d = 50: trunc(10 + 1000/50) = 30.
	c := mustRegister(t, b, env("c", 0, 10, 100, 1000, AgentBurst))
	mustRequest(t, b, c, 12, 50, Opportunistic)
	mustRequest(t, b, c, 20, 50, AgentBurst)
	mustRequest(t, b, c, 20, 50, AgentBurst)
	b.Tick()
	// agent-burst first: 20, then min(20, 30 − 20) = 10, then the
	// opportunistic request finds headroom 0.
	require.Equal(t, 30, b.Held(c, AgentBurst))
	require.Zero(t, b.Held(c, Opportunistic))
	require.Equal(t, 42, b.Outstanding(c, AnyClass))
}

// Grant-time-only: cap = max(burst if tokens > 0 else R, g), whatever the
// duration.
func TestGrantTimeOnlyRateCap(t *testing.T) {
	for _, tc := range []struct {
		name   string
		g      int
		r      float64
		bucket float64
		want   int
	}{
		{"any tokens open the burst ceiling", 0, 10, 1000, 100},
		{"even a thousandth of a token", 0, 10, 0.001, 100},
		{"no tokens: R", 0, 10, 0, 10},
		{"no tokens, fractional R: trunc(2.5)", 0, 2.5, 0, 2},
		{"no tokens, guarantee above R", 15, 10, 0, 15},
		// R beyond the range of int must not wrap around to a negative cap
		// (Go leaves such conversions to the implementation; amd64 gives
		// math.MinInt64, which max(·, g) turned into g = 0).
		{"no tokens, R beyond int", 0, 1e19, 0, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig(1000)
			cfg.GrantTimeOnly = true
			b, _ := newBrokerCfg(t, cfg)
			c := mustRegister(t, b, env("c", tc.g, tc.r, 100, tc.bucket, AgentBurst))
			mustRequest(t, b, c, 1000, 100000, AnyClass)
			b.Tick()
			require.Equal(t, tc.want, b.Held(c, AnyClass))
		})
	}
}

// Admission order: class rank, then fair-share deficit (highest first), then
// GPU tokens (most first), stable; the pending list keeps that order and new
// requests queue behind it.
func TestAdmissionOrder(t *testing.T) {
	t.Run("class rank first", func(t *testing.T) {
		b, j := newBroker(t, 10)
		o := mustRegister(t, b, filler("o", 10, Opportunistic))
		a := mustRegister(t, b, filler("a", 10, AgentBurst))
		i := mustRegister(t, b, filler("i", 10, Interactive))
		d := mustRegister(t, b, filler("d", 10, Deadline))
		idO := mustRequest(t, b, o, 10, 60, AnyClass)
		idA := mustRequest(t, b, a, 10, 60, AnyClass)
		mustRequest(t, b, i, 10, 60, AnyClass)
		b.Tick()
		g := j.of(EventGrant)
		require.Len(t, g, 1)
		require.Equal(t, "i", g[0].Campaign)
		pend := b.Pending()
		require.Equal(t, []int{idA, idO}, []int{pend[0].ID, pend[1].ID}, "the list keeps its sorted order")
		idD := mustRequest(t, b, d, 5, 60, AnyClass)
		pend = b.Pending()
		require.Equal(t, []int{idA, idO, idD}, []int{pend[0].ID, pend[1].ID, pend[2].ID}, "new requests queue behind")
	})
	t.Run("deficit, then tokens, then submission", func(t *testing.T) {
		b, j := newBroker(t, 100)
		// G = 40: deficits 10/40 = 0.25 and 30/40 = 0.75 with no usage.
		lo := mustRegister(t, b, env("lo", 10, 100, 100, 1e6, AgentBurst))
		hi := mustRegister(t, b, env("hi", 30, 100, 100, 1e6, AgentBurst))
		poor := mustRegister(t, b, env("poor", 0, 100, 100, 500, AgentBurst))
		rich := mustRegister(t, b, env("rich", 0, 100, 100, 800, AgentBurst))
		mustRequest(t, b, poor, 1, 60, AnyClass)
		mustRequest(t, b, poor, 2, 60, AnyClass)
		mustRequest(t, b, rich, 1, 60, AnyClass)
		mustRequest(t, b, lo, 1, 60, AnyClass)
		mustRequest(t, b, hi, 1, 60, AnyClass)
		b.Tick()
		var order []string
		var gpus []int
		for _, e := range j.of(EventGrant) {
			order = append(order, e.Campaign)
			gpus = append(gpus, e.GPUs)
		}
		require.Equal(t, []string{"hi", "lo", "rich", "poor", "poor"}, order)
		require.Equal(t, []int{1, 1, 1, 1, 2}, gpus)
	})
}

func TestFairDeficit(t *testing.T) {
	b, _ := newBroker(t, 100)
	a := mustRegister(t, b, env("a", 10, 20, 40, 500, AgentBurst))
	c := mustRegister(t, b, env("c", 30, 30, 30, 1, Interactive))
	z := mustRegister(t, b, env("z", 0, 1, 1, 1, Opportunistic))
	// No usage: U counts as 1.
	require.Equal(t, 0.25, b.FairDeficit(a))
	require.Equal(t, 0.75, b.FairDeficit(c))
	require.Zero(t, b.FairDeficit(z))
	mustRequest(t, b, a, 20, 1000, AnyClass)
	ticks(b, 3)
	// U_a = 3 × 20 = 60 = U.
	require.Equal(t, 0.25-1, b.FairDeficit(a))
	require.Equal(t, 0.75, b.FairDeficit(c))
	mustRequest(t, b, z, 1, 1000, AnyClass)
	b.Tick()
	// U_a = 80, U_z = 1, U = 81.
	require.InDelta(t, 0.25-80.0/81, b.FairDeficit(a), 1e-15)
	require.InDelta(t, -1.0/81, b.FairDeficit(z), 1e-15)
}

// The usage history is a window of the last 600 ticks.
func TestFairShareWindow(t *testing.T) {
	b, _ := newBroker(t, 100)
	a := mustRegister(t, b, env("a", 50, 50, 50, 1, AgentBurst))
	z := mustRegister(t, b, env("z", 50, 50, 50, 1, AgentBurst))
	mustRequest(t, b, a, 10, 100, AnyClass) // held during ticks 1..100
	ticks(b, 100)
	mustRequest(t, b, z, 10, 10000, AnyClass)
	ticks(b, 500) // now 600
	// a held 10 after ticks 1..100 (granted at 1, expires at 101): U_a =
	// 1000; z held 10 after ticks 101..600: U_z = 5000.
	require.InDelta(t, 0.5-1000.0/6000, b.FairDeficit(a), 1e-15)
	ticks(b, 99) // now 699: the window is ticks 100..699
	require.InDelta(t, 0.5-10.0/6000, b.FairDeficit(a), 1e-15)
	b.Tick() // now 700: ticks 101..700, a held nothing there
	require.Equal(t, 0.5, b.FairDeficit(a))
	require.Equal(t, -0.5, b.FairDeficit(z))
}

func TestPathFor(t *testing.T) {
	for _, tc := range []struct {
		latency, grace int
		want           Path
	}{
		{0, 60, Warm}, {1, 60, Warm}, {2, 60, Reclaim}, {70, 60, Reclaim}, {71, 60, Cold},
		{25, 15, Reclaim}, {26, 15, Cold}, {11, 0, Cold}, {10, 0, Reclaim},
	} {
		require.Equal(t, tc.want, PathFor(tc.latency, tc.grace), "latency %d grace %d", tc.latency, tc.grace)
	}
	require.Equal(t, "warm", Warm.String())
	require.Equal(t, "reclaim", Reclaim.String())
	require.Equal(t, "cold", Cold.String())
	require.Equal(t, "path(7)", Path(7).String())
}

// Supply's expected path: warm while GPUs are free, reclaim while backfill
// could be preempted, cold otherwise.
func TestSupplyExpectedPath(t *testing.T) {
	b, _ := newBroker(t, 40)
	bf := mustRegister(t, b, filler("backfill", 40, Opportunistic))
	h := mustRegister(t, b, filler("holder", 40, Deadline))
	w := mustRegister(t, b, env("w", 0, 40, 40, 1e6, Interactive))
	require.Equal(t, Warm, b.Supply(w).ExpectedPath)
	mustRequest(t, b, h, 10, 1000, AnyClass)
	mustRequest(t, b, bf, 30, 1000, AnyClass)
	b.Tick()
	s := b.Supply(w)
	require.Equal(t, 0, s.Free)
	require.Equal(t, 30, s.Reclaimable)
	require.Equal(t, Reclaim, s.ExpectedPath)
	mustRequest(t, b, w, 20, 60, AnyClass)
	b.Tick() // the lease of 30 goes under notice
	s = b.Supply(w)
	require.Equal(t, 0, s.Reclaimable)
	require.Equal(t, Cold, s.ExpectedPath)
}
