package policy

import "math"

// Exact closed forms for the per-tick sums that SkipTo replays: a bucket's
// refill T ← clamp(T + R − held, 0, B), a campaign's credits
// C ← C − c₁ − c₂ − … (one charge per lease), the utilization sum
// U ← U + u. Each tick of such a sum performs the same floating-point
// additions, each rounded; n ticks of them must give, bit for bit, what
// n ticks give, and stepping them one by one is what made a full-log
// replay cost minutes (a deep bucket with a small R refills for months).
//
// Why a stretch of ticks is exact in closed form. Let x lie in the binade
// [2ᵉ, 2ᵉ⁺¹) (or its mirror image below zero), where the floats are
// exactly the multiples of u = 2ᵉ⁻⁵², and let y be any multiple of u in
// it. For an addend a, let ā be a rounded to the nearest multiple of u,
// and suppose a is not halfway between two multiples (no tie). If the
// value y + ā lies in [2ᵉ + u, 2ᵉ⁺¹ − u], then the exact sum y + a lies
// within u/2 of it, inside the binade, and the rounded sum fl(y + a), the
// multiple of u nearest to y + a, is y + ā. So as long as every partial
// sum of a tick stays inside that band, one tick adds exactly
// D = Σ āᵢ (an integer number of u), and k ticks add k·D: x + k·D is
// exact in floating point (k·D is an integer multiple of u below 2ᵉ⁺¹,
// and so is the sum). repeatRun finds how many ticks keep every partial
// sum inside the band, in integer arithmetic on multiples of u; the
// callers step one tick at a time where it finds none (at a binade's
// edge, at zero, at a bucket's top, at a tie) and jump elsewhere. The
// property tests (repeat_test.go) compare each closed form with stepping
// on random values and spans, across binades and at the clamps.

// repeatRun is the number k ≤ limit of ticks, starting from x, over which
// the tick x ← fl(…fl(fl(x + a₀) + a₁)… + aₘ₋₁) provably adds the
// constant d each time (after k ticks x is exactly x + k·d, computed as
// x + float64(k)*d); 0 where that cannot be shown (x zero, subnormal or
// not finite, an addend tied between two multiples of x's ulp or larger
// than x's binade, a partial sum that would leave the binade).
func repeatRun(x float64, adds []float64, limit int) (k int, d float64) {
	if limit < 1 || x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return 0, 0
	}
	neg := x < 0
	ax := math.Abs(x)
	if ax < 0x1p-1000 {
		return 0, 0 // near the subnormals: not worth the care
	}
	_, exp := math.Frexp(ax) // ax in [2^(exp−1), 2^exp)
	u := math.Ldexp(1, exp-53)
	X := int64(ax / u) // exact: an integer in [2^52, 2^53)
	var s int64
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, a := range adds {
		if neg {
			a = -a
		}
		q := a / u // exact: u is a power of two (tiny a: rounds to 0 either way)
		if !(math.Abs(q) <= 1<<52) {
			return 0, 0 // as large as the binade, or NaN
		}
		r := math.RoundToEven(q)
		if math.Abs(q-r) == 0.5 {
			return 0, 0 // a tie: how it rounds depends on x's last bit
		}
		s += int64(r)
		lo, hi = min(lo, s), max(hi, s)
	}
	// Every partial sum X + j·s + (sum of the first i addends), over the
	// ticks j < k and the addends i ≥ 1, within [2^52 + 1, 2^53 − 1].
	const bandLo, bandHi = 1<<52 + 1, 1<<53 - 1
	if X+lo < bandLo || X+hi > bandHi {
		return 0, 0
	}
	n := int64(limit)
	switch {
	case s > 0:
		n = min(n, (bandHi-hi-X)/s+1)
	case s < 0:
		n = min(n, (X+lo-bandLo)/(-s)+1)
	}
	d = float64(s) * u
	if neg {
		d = -d
	}
	return int(n), d
}

// sameBits is bit equality: a tick that returns x's very bits is a fixed
// point (the same map every tick), and −0 is not +0.
func sameBits(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// SumSteps is n ticks of x ← fl(…fl(x + a₀)… + aₘ₋₁), exactly: for the
// baselines' skips (baseline.Core.SkipTo), whose credits and utilization
// sum are the same kind of per-tick sums.
func SumSteps(x float64, adds []float64, n int) float64 { return sumSteps(x, adds, n) }

// sumSteps is n ticks of x ← fl(…fl(x + a₀)… + aₘ₋₁), exactly.
func sumSteps(x float64, adds []float64, n int) float64 {
	for n > 0 {
		k, d := repeatRun(x, adds, n)
		if k >= 2 {
			x += float64(k) * d
			n -= k
			continue
		}
		next := x
		for _, a := range adds {
			next += a
		}
		if sameBits(next, x) {
			return x
		}
		x = next
		n--
	}
	return x
}
