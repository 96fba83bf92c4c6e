package policy

import (
	"math"
	mathbits "math/bits"
)

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
	bits := math.Float64bits(x)
	// x zero, subnormal, near the subnormals (below 2^−1000: not worth
	// the care), infinite or NaN: its biased exponent below 23, or all
	// ones.
	if e := bits >> 52 & 0x7ff; limit < 1 || e < 1023-1000 || e == 0x7ff {
		return 0, 0
	}
	neg := x < 0
	X, u := binade(bits)
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
		n = within(n, bandHi-hi-X, s)
	case s < 0:
		n = within(n, X+lo-bandLo, -s)
	}
	d = float64(s) * u
	if neg {
		d = -d
	}
	return int(n), d
}

// binade is the significand X of the normal float64 whose bits are bits,
// an integer in [2^52, 2^53), and its unit in the last place u, a power
// of two: |x| = X·u exactly. It is what math.Frexp and math.Ldexp give
// (X = |x| / u with u = 2^(exp−53)), read off the bits: the two calls
// were a quarter of a skip's closed form, which a replay on a 300k-job
// log evaluates 13.6 million times (each campaign holding GPUs, at each
// skip).
func binade(bits uint64) (X int64, u float64) {
	e := bits >> 52 & 0x7ff // x = X · 2^(e−1075)
	X = int64(bits&(1<<52-1) | 1<<52)
	if e > 52 {
		return X, math.Float64frombits((e - 52) << 52)
	}
	return X, math.Float64frombits(1 << (e - 1)) // 2^(e−1075) is subnormal
}

// within is min(n, room/step + 1) for room ≥ 0 and step > 0, without the
// division when n binds (room ≥ (n − 1)·step): a 64-bit division is
// slow, and n, the ticks skipped, binds in most skips.
func within(n, room, step int64) int64 {
	if hi, lo := mathbits.Mul64(uint64(n-1), uint64(step)); hi == 0 && lo <= uint64(room) {
		return n
	}
	return min(n, room/step+1)
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
