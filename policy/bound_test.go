package policy

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// The prepaid-lease bound of docs/prepaid-bound.md, its tightness, and what
// grant-time-only enforcement does instead. Notation as in the note: D_u is
// what c holds at the refill of tick u (the GPUs the bucket sees), R⁺ =
// max(R, g) the baseline, e_u = D_u − R⁺ what it holds above the baseline,
// T the tokens at the admission pass before a busy period.

// countedAtRefill is D_u for the tick just run: the GPUs of c's leases that
// were there at its refill. Admission only appends leases (granted now), so
// they are the leases granted before now. It also returns the longest
// duration among those granted at or after tick since, and the youngest.
func countedAtRefill(b *Broker, c CampaignID, since int) (gpus, maxDur int, youngest *Lease) {
	for i := range b.leases {
		l := &b.leases[i]
		if l.Campaign == c && l.Granted < b.now {
			gpus += l.GPUs
			if l.Granted >= since {
				maxDur = max(maxDur, l.Expires-l.Granted)
			}
			youngest = l
		}
	}
	return gpus, maxDur, youngest
}

// harmonicBound is T + Σ_{k=2}^{D} min(Δ, T/k), the theorem's bound on
// the GPU-seconds held above R⁺ in a busy period opened with T tokens, D
// being the longest lease granted from the tick before the period on.
func harmonicBound(T, delta float64, D int) float64 {
	s := T
	for k := 2; k <= D; k++ {
		s += min(delta, T/float64(k))
	}
	return s
}

// busyPeriod is one maximal run of ticks with e_u > 0.
type busyPeriod struct {
	start, end int
	T          float64 // τ_{a−1}
	excess     float64 // Σ e_u so far
	// maxDur is the longest duration of the leases counted in D_u so far
	// that were granted at tick a − 1 or later: the D of the theorem.
	maxDur int
	dry    bool // the bucket ran dry during the period
	// clean: no lease was granted, from tick a−1 on, while a longer lease
	// of the campaign was held (the theorem's no-shortening case).
	clean bool
}

// excessTracker follows one campaign tick by tick: it checks Lemma 1 at
// every tick and the theorem on every busy period. Call afterTick after
// every Tick.
type excessTracker struct {
	c           CampaignID
	env         Envelope
	tokensAt    map[int]float64 // τ_u by tick (τ before registration: B)
	prevTick    int
	lastShorten int // last tick that granted a lease shorter than one held
	// seen holds the campaign's leases noteGrants has looked at: a lease
	// not in it is new, whether a tick or an Admit between ticks granted it.
	seen map[int]bool
	// prefix is Σ e_u since registration and minPrefix its least value, so
	// that prefix − minPrefix is the largest Σ e_u over a window ending now.
	prefix, minPrefix float64
	cur               *busyPeriod
	periods           []busyPeriod
}

func newExcessTracker(b *Broker, c CampaignID) *excessTracker {
	return &excessTracker{c: c, env: b.Envelope(c), tokensAt: map[int]float64{b.Now(): b.Tokens(c)}, prevTick: b.Now(), lastShorten: -1,
		seen: map[int]bool{}}
}

// noteGrants looks at the leases granted since it last looked: the
// campaign's leases before a new one in the list are exactly those it held
// when the new one was granted, and a new one shorter than one of them
// marks its grant time (Granted: the tick's, or Now at an Admit between
// ticks, which counts as that tick's pass). afterTick calls it; call it
// after Admit too, before anything can release a lease.
func (k *excessTracker) noteGrants(b *Broker) {
	longest := 0
	for i := range b.leases {
		l := &b.leases[i]
		if l.Campaign != k.c {
			continue
		}
		d := l.Expires - l.Granted
		if !k.seen[l.ID] {
			k.seen[l.ID] = true
			if d < longest {
				k.lastShorten = max(k.lastShorten, l.Granted)
			}
		}
		longest = max(longest, d)
	}
}

// afterTick returns a description of the first broken claim, or "".
func (k *excessTracker) afterTick(b *Broker) string {
	u := b.Now()
	tau := b.Tokens(k.c)
	prev := k.tokensAt[k.prevTick]
	k.tokensAt[u] = tau
	k.prevTick = u
	// The baseline R⁺ = max(R, g): a campaign may always hold its
	// guarantee, bucket or not (docs/prepaid-bound.md, §1).
	R := max(k.env.Sustained, float64(k.env.Guaranteed))
	delta := float64(k.env.BurstCeiling) - R
	integralR := k.env.Sustained == math.Trunc(k.env.Sustained)

	k.noteGrants(b)

	since := u - 1 // a − 1 if this tick opens a busy period
	if k.cur != nil {
		since = k.cur.start - 1
	}
	du, maxDur, young := countedAtRefill(b, k.c, since)
	e := float64(du) - R
	broken := ""
	// The corollary: never having stacked a shorter lease on a longer one,
	// the campaign holds at most R⁺·L + B GPU-seconds at the refills of
	// any L ticks.
	k.prefix += e
	if k.lastShorten < 0 && k.prefix-k.minPrefix > k.env.Bucket+1e-6*(1+k.env.Bucket) {
		broken = "corollary: more than R⁺·L + B over a window"
	}
	k.minPrefix = min(k.minPrefix, k.prefix)
	if du > 0 {
		// Lemma 1: e_u ≤ min(Δ, τ_s / (u − s + 1)) for the youngest lease.
		s := young.Granted
		lim := min(delta, k.tokensAt[s]/float64(u-s+1))
		switch {
		case broken != "":
		case young.Expires-young.Granted < u-s+1:
			broken = "a lease counted after its expiry"
		case e > lim+1e-9*(1+math.Abs(lim)):
			broken = "lemma 1"
		case e > 0 && integralR && float64(young.Expires-young.Granted) > k.tokensAt[s]*(1+1e-9)+1e-9:
			// With integral R the cap exceeds R only for d ≤ τ_s, so D
			// may be taken as min(D, ⌈T⌉) (docs/prepaid-bound.md §4).
			broken = "integral R: the youngest lease at a busy tick is longer than its tokens"
		}
	}
	if e <= 0 {
		if k.cur != nil {
			k.periods = append(k.periods, *k.cur)
			k.cur = nil
		}
		return broken
	}
	if k.cur == nil {
		k.cur = &busyPeriod{start: u, T: prev}
	}
	p := k.cur
	p.end = u
	p.excess += e
	p.maxDur = max(p.maxDur, maxDur)
	p.dry = p.dry || tau == 0
	p.clean = k.lastShorten < p.start-1
	// Both claims hold for every prefix of a busy period, so they are
	// checked at every tick.
	switch {
	case broken != "":
	case p.excess > harmonicBound(p.T, delta, periodD(p, integralR))+1e-6*(1+p.T):
		broken = "theorem: harmonic bound"
	case p.clean && p.dry:
		broken = "theorem: ran dry without a shorter lease on top of a longer one"
	case p.clean && p.excess > p.T+1e-6*(1+p.T):
		broken = "theorem: beyond T without a shorter lease on top of a longer one"
	}
	return broken
}

// periodD is the D of the theorem for a period: the longest lease granted
// in it, and with integral R at most ⌈T⌉ (a lease longer than the tokens
// lifts the cap no higher than R; ⌈T⌉ rather than ⌊T⌋ leaves room for the
// float rounding of assumption A3).
func periodD(p *busyPeriod, integralR bool) int {
	if integralR && p.T < float64(p.maxDur) {
		return min(p.maxDur, int(math.Ceil(p.T)))
	}
	return p.maxDur
}

func (k *excessTracker) all() []busyPeriod {
	if k.cur != nil {
		return append(k.periods, *k.cur)
	}
	return k.periods
}

// The harmonic staircase: in one pass, with T = 120 tokens, R = 10, the
// campaign asks for leases of 120, 119, …, 2 s, each up to its own cap
// ⌊10 + 120/d⌋. At age k the running leases hold ⌊10 + 120/(k+1)⌋, so the
// period's excess is Σ_{j=2}^{120} ⌊120/j⌋ = 482 GPU-seconds (python3: sum(120
// // j for j in range(2, 121))) from a bucket of 120, within the bound
// 120 · H_120 ≈ 644.26 and 162.26 = 1.35 B below it.
func TestPrepaidBoundStaircase(t *testing.T) {
	b, _ := newBroker(t, 200)
	c := mustRegister(t, b, env("c", 0, 10, 130, 120, AgentBurst))
	k := newExcessTracker(b, c)
	held := 0
	for d := 120; d >= 2; d-- {
		// The attacker's plan: the cap prepaid leases give duration d.
		capD := min(130, int(10+120/float64(d)))
		if capD > held {
			mustRequest(t, b, c, capD-held, d, AnyClass)
			held = capD
		}
	}
	b.Tick()
	require.Empty(t, k.afterTick(b))
	require.Equal(t, 70, b.Held(c, AnyClass), "every request passed its own check")
	require.Empty(t, b.Pending())
	for b.Held(c, AnyClass) > 0 {
		b.Tick()
		require.Empty(t, k.afterTick(b))
	}
	periods := k.all()
	require.Len(t, periods, 1)
	p := periods[0]
	require.Equal(t, 120.0, p.T)
	require.Equal(t, 2, p.start)
	require.Equal(t, 120, p.end)
	require.Equal(t, 482.0, p.excess)
	require.True(t, p.dry)
	require.False(t, p.clean, "shorter leases on top of longer ones")
	require.Greater(t, p.excess, 4*120.0, "four buckets' worth from one bucket")
	hD := 0.0
	for i := 1; i <= 120; i++ {
		hD += 1 / float64(i)
	}
	require.InDelta(t, 120*hD, harmonicBound(120, 120, 120), 1e-9)
	require.InDelta(t, 644.26, harmonicBound(120, 120, 120), 0.01)
	require.LessOrEqual(t, p.excess, harmonicBound(120, 120, 120))
}

// The same request under both enforcements: one lease of 130 GPUs for
// 120 s with a bucket of 120 and R = 10.
func TestGrantTimeOnlyBreaksTheBound(t *testing.T) {
	run := func(grantTimeOnly bool) busyPeriod {
		cfg := DefaultConfig(200)
		cfg.GrantTimeOnly = grantTimeOnly
		b, _ := newBrokerCfg(t, cfg)
		c := mustRegister(t, b, env("c", 0, 10, 130, 120, AgentBurst))
		k := newExcessTracker(b, c)
		mustRequest(t, b, c, 130, 120, AnyClass)
		for range 130 {
			b.Tick()
			msg := k.afterTick(b)
			if !grantTimeOnly {
				require.Empty(t, msg)
			}
		}
		ps := k.all()
		require.Len(t, ps, 1)
		return ps[0]
	}
	bound := harmonicBound(120, 120, 120) // ≈ 644

	// Prepaid: cap ⌊10 + 120/120⌋ = 11, one GPU above R for 119 ticks.
	pre := run(false)
	require.Equal(t, 119.0, pre.excess)
	require.True(t, pre.clean)
	require.False(t, pre.dry)

	// Grant-time-only: any token opens the burst ceiling; 120 above R for
	// 119 ticks, the bucket dry after the first.
	leaky := run(true)
	require.Equal(t, 120.0*119, leaky.excess)
	require.Greater(t, leaky.excess, 20*bound)
}

// A storm-like campaign (experiment 3's idle storm: R = 64, burst 384, B =
// 25 000, topping up to 384 GPUs every 20 ticks with 120-s leases, for the
// 1800-s storm window). With one lease duration no busy period takes more
// than the tokens it opened with; grant-time-only takes many buckets.
func TestStormUnderBothEnforcements(t *testing.T) {
	run := func(grantTimeOnly bool) (total float64, k *excessTracker) {
		cfg := DefaultConfig(512)
		cfg.GrantTimeOnly = grantTimeOnly
		b, _ := newBrokerCfg(t, cfg)
		c := mustRegister(t, b, env("storm", 16, 64, 384, 25000, AgentBurst))
		k = newExcessTracker(b, c)
		for tick := 1; tick <= 1800; tick++ {
			if tick%20 == 0 {
				if out := b.Outstanding(c, AnyClass); out < 384 {
					mustRequest(t, b, c, 384-out, 120, AgentBurst)
				}
			}
			b.Tick()
			msg := k.afterTick(b)
			if !grantTimeOnly {
				require.Empty(t, msg, "tick %d", tick)
			}
		}
		for _, p := range k.all() {
			total += p.excess
		}
		return total, k
	}
	pre, k := run(false)
	periods := k.all()
	// The first grant, at tick 20 with a full bucket: ⌊64 + 25000/120⌋ =
	// 272 GPUs, debited 272 − 64 = 208 above R at ticks 21 … 139.
	require.Equal(t, 21, periods[0].start)
	require.Equal(t, 139, periods[0].end)
	require.Equal(t, 208.0*119, periods[0].excess)
	for _, p := range periods {
		require.True(t, p.clean)
		require.False(t, p.dry)
		require.LessOrEqual(t, p.excess, p.T)
	}
	// Over the window the campaign also spends what the bucket refills
	// between busy periods: a little over B, as the paper reports.
	require.Greater(t, pre, 25000.0)
	require.Less(t, pre, 1.05*25000)
	leaky, _ := run(true)
	require.Greater(t, leaky, 4*25000.0)
	t.Logf("GPU-seconds held above R at the refills of 1800 s: prepaid %.0f, grant-time-only %.0f (B = 25000)", pre, leaky)
}

// docs/prepaid-bound.md §7: a lease expires before the refill and the
// accounting of the tick that ends it, so a lease of one second is never
// debited nor charged. A campaign re-asking every tick holds its burst
// ceiling at every step with a full bucket. This pins the model's rule (the
// golden outputs depend on the order of expiry and refill); it is not a
// guarantee anyone should build on.
func TestOneSecondLeasesAreNeverDebited(t *testing.T) {
	b, _ := newBroker(t, 200)
	e := env("c", 0, 10, 130, 120, AgentBurst)
	e.Budget = 100
	c := mustRegister(t, b, e)
	for range 1000 {
		mustRequest(t, b, c, 130, 1, AnyClass)
		b.Tick()
		require.Equal(t, 130, b.Held(c, AnyClass))
	}
	require.Equal(t, 120.0, b.Tokens(c))
	require.Zero(t, b.Spent(c))
	require.False(t, math.IsNaN(b.Tokens(c)))
}

// docs/prepaid-bound.md §1: without assumption g ≤ R the guarantee is an
// allowance the bucket does not meter (the demo's envelope: g = 16, R = 8),
// and the bound holds above R⁺ = max(R, g). The campaign holds 16 GPUs with
// an empty bucket for ever, and above 16 it is bounded as any other.
func TestGuaranteeAboveRIsUnmetered(t *testing.T) {
	b, _ := newBroker(t, 200)
	c := mustRegister(t, b, env("demo", 16, 8, 64, 100, AgentBurst))
	k := newExcessTracker(b, c)
	for tick := 1; tick <= 2000; tick++ {
		// Top up to the burst ceiling every tick with 30-s leases.
		if out := b.Outstanding(c, AnyClass); out < 64 {
			mustRequest(t, b, c, 64-out, 30, AnyClass)
		}
		b.Tick()
		require.Empty(t, k.afterTick(b), "tick %d", tick)
	}
	require.Zero(t, b.Tokens(c), "the bucket is empty")
	require.GreaterOrEqual(t, b.Held(c, AnyClass), 16, "yet the guarantee is held")
	total := 0.0
	for _, p := range k.all() {
		total += p.excess
	}
	// Above g the campaign got no more than its one bucket: it never
	// stacked, so the corollary bounds it by B over the whole run.
	require.LessOrEqual(t, total, 100.0)
}

// docs/prepaid-bound.md §4: with one lease duration d the bucket is charged
// within R·L + B, yet the campaign holds R·d/(d − 1) GPUs at every agent
// step for ever: each lease is counted at d − 1 refills but held for d
// steps, and it is renewed in the tick that ends it.
func TestOneDurationHoldsRdOverDMinusOne(t *testing.T) {
	for _, tc := range []struct {
		d, hold int
	}{{2, 20}, {3, 15}, {6, 12}, {11, 11}} {
		b, _ := newBroker(t, 200)
		c := mustRegister(t, b, env("c", 0, 10, 100, 60, AgentBurst))
		k := newExcessTracker(b, c)
		for tick := 1; tick <= 3000; tick++ {
			// Renew in the tick that ends the running lease: the request
			// is filed while it is held, and admitted after its expiry.
			if (tick-1)%tc.d == 0 {
				mustRequest(t, b, c, tc.hold, tc.d, AnyClass)
			}
			b.Tick()
			require.Empty(t, k.afterTick(b), "d=%d tick %d", tc.d, tick)
			// What the agent holds at its next step.
			require.Equal(t, tc.hold, b.Held(c, AnyClass), "d=%d tick %d", tc.d, tick)
		}
		require.Positive(t, b.Tokens(c), "d=%d: the bucket never runs dry", tc.d)
		require.Equal(t, tc.hold*(tc.d-1), 10*tc.d, "R·d/(d−1)")
	}
}

// docs/prepaid-bound.md §5: how far the bound T + Σ_{k=2}^{D} min(Δ, T/k)
// is above the best attack Σ_{k=2}^{D} min(Δ, ⌊T/k⌋) (Δ ≥ T/2, so the
// ceiling cuts nothing): T plus the fractional parts of T/k, 1.35 T in the
// note's example and towards (2 − γ) T as T = D grows.
func TestStaircaseGap(t *testing.T) {
	gap := func(T, D int) float64 {
		return (harmonicBound(float64(T), float64(T), D) - float64(staircase(T, T, D))) / float64(T)
	}
	require.Equal(t, 482, staircase(120, 120, 120))
	require.InDelta(t, 162.26, harmonicBound(120, 120, 120)-482, 0.005)
	require.InDelta(t, 1.352, gap(120, 120), 0.0005)
	const eulerGamma = 0.5772156649015329
	require.InDelta(t, 2-eulerGamma, gap(100000, 100000), 0.002)
	// Fewer terms only shrink the gap, so D = T is the worst case of
	// D ≤ T; over T ≤ 3000 it peaks at T = 179.
	worst, worstT := 0.0, 0
	for T := 2; T <= 3000; T++ {
		if g := gap(T, T); g > worst {
			worst, worstT = g, T
		}
	}
	require.Equal(t, 179, worstT)
	require.InDelta(t, 1.4434, worst, 0.0001)
	for _, c := range [][2]int{{10, 10}, {100, 100}, {1000, 1000}, {120, 20}, {120, 600}} {
		g := gap(c[0], c[1])
		require.Greater(t, g, 1.0)
		require.Less(t, g, 1.0+float64(c[1]-1)/float64(c[0]))
		t.Logf("T=%d D=%d: bound − staircase = %.3f T", c[0], c[1], g)
	}
}

// docs/prepaid-bound.md §5: repeating the staircase whenever the bucket is
// full again. With the note's example (R = 10, B = 120, D = 120) the
// campaign averages 12.7 GPUs at the refills, not R·(H_D − 1) ≈ 43.7; that
// long-run rate needs B ≫ R·D (B = 100·R·D gives 43.35).
func TestRepeatedStaircase(t *testing.T) {
	// mean is the average of D_u over whole cycles (staircase, then refill).
	mean := func(B float64, burst, cycles int) float64 {
		b, _ := newBroker(t, 1000000)
		c := mustRegister(t, b, env("c", 0, 10, burst, B, AgentBurst))
		total, n, started := 0, 0, 0
		for {
			if b.Held(c, AnyClass) == 0 && b.Tokens(c) >= B {
				if started == cycles {
					break
				}
				started++
				held := 0
				for d := 120; d >= 2; d-- {
					capD := min(burst, int(10+B/float64(d)))
					if capD > held {
						mustRequest(t, b, c, capD-held, d, AnyClass)
						held = capD
					}
				}
			}
			b.Tick()
			if started > 0 {
				gpus, _, _ := countedAtRefill(b, c, 0)
				total += gpus
				n++
			}
		}
		return float64(total) / float64(n)
	}
	hD := 0.0
	for i := 1; i <= 120; i++ {
		hD += 1 / float64(i)
	}
	small, large := mean(120, 130, 50), mean(120000, 100000, 3)
	t.Logf("mean held: B = 120: %.3f; B = 120000: %.3f; R·(H_D − 1) = %.3f", small, large, 10*(hD-1))
	require.InDelta(t, 12.67, small, 0.005)
	require.InDelta(t, 43.35, large, 0.001)
	require.Less(t, large, 10*(hD-1))
}
