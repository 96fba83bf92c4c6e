package stats

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// No ties, no zeros: 1, −2, 3, 4 rank 1, 2, 3, 4 and W+ = 1 + 3 + 4 = 8,
// the null mean 10/2 = 5. The 16 subsets of {1, 2, 3, 4} have sums
// 0 1 2 3 3 4 4 5 5 6 6 7 7 8 9 10; six are at least 3 from 5
// (0 1 2 8 9 10), so p = 6/16.
func TestSignedRankWorkedUntied(t *testing.T) {
	r := SignedRankTest([]float64{1, -2, 3, 4})
	assert.Equal(t, SignedRank{N: 4, WPlus: 8, P: 6.0 / 16}, r)
}

// Every difference of one sign: the two extreme sums of 2^n, p = 2/2^n.
// Four windows cannot do better than 0.125, five 0.0625, twelve 1/2048.
func TestSignedRankSmallestP(t *testing.T) {
	assert.Equal(t, 0.125, SignedRankTest([]float64{1, 2, 3, 4}).P)
	assert.Equal(t, 0.0625, SignedRankTest([]float64{-5, -1, -2, -3, -4}).P)
	twelve := make([]float64, 12)
	for i := range twelve {
		twelve[i] = float64(i + 1)
	}
	assert.Equal(t, 1.0/2048, SignedRankTest(twelve).P)
}

// A zero and a tie: |0, 2, −2, 3, 5| rank 1, 2.5, 2.5, 4, 5 (the two 2s
// share ranks 2 and 3); Pratt drops the zero's rank 1, leaving 2.5+,
// 2.5−, 4+, 5+, so W+ = 11.5 and the null mean 14/2 = 7. Doubled, the
// ranks are 5, 5, 8, 10 (total 28) and W+ is 23; the subset sums are
// 0 5 5 8 10 10 13 13 15 15 18 18 20 23 23 28, and those at least
// |23 − 14| = 9 from 14 are 0 5 5 23 23 28: p = 6/16.
func TestSignedRankWorkedZeroAndTie(t *testing.T) {
	r := SignedRankTest([]float64{0, 2, -2, 3, 5})
	assert.Equal(t, SignedRank{N: 4, Zeros: 1, WPlus: 11.5, P: 6.0 / 16}, r)
}

// Pratt is not "drop the zeros, then rank": with three zeros before
// −1, −2, 3, 4 the zeros take ranks 1–3 (midrank 2) and the rest 4, 5,
// 6, 7. W+ = 13, null mean 11; the sums of subsets of {4, 5, 6, 7} are
// 0 4 5 6 7 9 10 11 11 12 13 15 16 17 18 22, twelve at least 2 from 11:
// p = 12/16. Dropping the zeros first would rank 1, 2, 3, 4, W+ = 7
// against mean 5, and give 10/16.
func TestSignedRankPrattZeros(t *testing.T) {
	r := SignedRankTest([]float64{0, 0, 0, -1, -2, 3, 4})
	assert.Equal(t, SignedRank{N: 4, Zeros: 3, WPlus: 13, P: 12.0 / 16}, r)
	assert.Equal(t, 10.0/16, SignedRankTest([]float64{-1, -2, 3, 4}).P)
}

// Nothing to test: no difference, all zeros, NaN left out.
func TestSignedRankEmpty(t *testing.T) {
	assert.Equal(t, SignedRank{P: 1}, SignedRankTest(nil))
	assert.Equal(t, SignedRank{Zeros: 3, P: 1}, SignedRankTest([]float64{0, 0, 0}))
	assert.Equal(t, SignedRankTest([]float64{1, -2, 3, 4}), SignedRankTest([]float64{1, math.NaN(), -2, 3, 4}))
}

// The Hodges–Lehmann estimate of 1, 2, 4: the Walsh averages are 1, 1.5,
// 2.5, 2, 3, 4; sorted 1 1.5 2 2.5 3 4, median (2 + 2.5)/2 = 2.25. Three
// differences cannot reach 95 %: the widest interval [1, 4] covers with
// 1 − 2/8 = 0.75.
func TestHodgesLehmannWorkedThree(t *testing.T) {
	s := HodgesLehmann([]float64{4, 1, 2})
	assert.Equal(t, Shift{Estimate: 2.25, Interval: Interval{Lo: 1, Hi: 4}, Coverage: 0.75, N: 3}, s)
}

// Six differences 1 … 6: 21 Walsh averages (i + j)/2, symmetric about
// 3.5, so the median is 3.5. P(T ≤ 0) = 1/64 ≤ 0.025 < P(T ≤ 1) = 2/64,
// so k = 2: the second smallest (1.5) to the second largest (5.5),
// coverage 1 − 2/64.
func TestHodgesLehmannWorkedSix(t *testing.T) {
	s := HodgesLehmann([]float64{6, 5, 4, 3, 2, 1})
	assert.Equal(t, Shift{Estimate: 3.5, Interval: Interval{Lo: 1.5, Hi: 5.5}, Coverage: 1 - 2.0/64, N: 6}, s)
}

// Twelve windows, the default: the signed-rank table's lower 0.025
// critical value for n = 12 is 13 (P(T ≤ 13) = 87/4096 = 0.0212,
// P(T ≤ 14) = 107/4096 = 0.0261), so k = 14: the 14th smallest and the
// 14th largest of the 78 Walsh averages, coverage 1 − 174/4096. For
// 1 … 12 the Walsh averages (i + j)/2 are 1 (×1), 1.5 (×1), 2 (×2),
// 2.5 (×2), 3 (×3), 3.5 (×3), 4 (×4): the 14th is 4, and by symmetry about
// 6.5 the 14th largest is 9.
func TestHodgesLehmannTwelve(t *testing.T) {
	d := make([]float64, 12)
	for i := range d {
		d[i] = float64(i + 1)
	}
	s := HodgesLehmann(d)
	assert.Equal(t, 6.5, s.Estimate)
	assert.Equal(t, Interval{Lo: 4, Hi: 9}, s.Interval)
	assert.InDelta(t, 1-174.0/4096, s.Coverage, 1e-15)
}

func TestHodgesLehmannEmpty(t *testing.T) {
	s := HodgesLehmann([]float64{math.NaN()})
	assert.True(t, math.IsNaN(s.Estimate) && math.IsNaN(s.Lo) && math.IsNaN(s.Hi))
	s = HodgesLehmann([]float64{-3})
	assert.Equal(t, Shift{Estimate: -3, Interval: Interval{Lo: -3, Hi: -3}, Coverage: 0, N: 1}, s)
}

// Holm worked by hand: p = 0.01, 0.04, 0.03, 0.5 (m = 4). Sorted 0.01,
// 0.03, 0.04, 0.5 times 4, 3, 2, 1: 0.04, 0.09, 0.08, 0.5; the running
// maximum makes the third 0.09. BH: m/j · p = 0.04, 0.06, 0.0533…, 0.5,
// the running minimum from the top makes the second 0.0533….
func TestAdjustWorked(t *testing.T) {
	ps := []float64{0.01, 0.04, 0.03, 0.5}
	assert.InDeltaSlice(t, []float64{0.04, 0.09, 0.09, 0.5}, Holm(ps), 1e-15)
	assert.InDeltaSlice(t, []float64{0.04, 0.16 / 3, 0.16 / 3, 0.5}, BenjaminiHochberg(ps), 1e-15)
	// Capped at 1; NaN is not a member of the family (m = 2 here).
	h := Holm([]float64{0.6, math.NaN(), 0.2})
	assert.Equal(t, 0.4, h[2], "2 · 0.2")
	assert.Equal(t, 0.6, h[0], "1 · 0.6")
	assert.True(t, math.IsNaN(h[1]))
	h = Holm([]float64{0.7, 0.6})
	assert.Equal(t, []float64{1, 1}, h, "2 · 0.6 capped at 1, and 0.7 not below it")
	assert.Empty(t, Holm(nil))
}

// Properties a reader relies on: a p-value is a probability; a test of
// mirrored data gives the same p and the mirrored statistic; the exact
// null puts the p of a sample's own statistic at no less than 2/2^N.
func TestSignedRankProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Small integers, so that ties and zeros are common.
		d := rapid.SliceOfN(rapid.IntRange(-4, 4), 0, 14).Draw(t, "d")
		xs := make([]float64, len(d))
		neg := make([]float64, len(d))
		for i, v := range d {
			xs[i], neg[i] = float64(v), -float64(v)
		}
		r, m := SignedRankTest(xs), SignedRankTest(neg)
		if !(r.P >= 0 && r.P <= 1) {
			t.Fatalf("%v: p %v", xs, r.P)
		}
		if r.N > 0 && r.P < 2/math.Pow(2, float64(r.N))-1e-12 {
			t.Fatalf("%v: p %v below 2/2^%d", xs, r.P, r.N)
		}
		if math.Abs(r.P-m.P) > 1e-12 || r.N != m.N || r.Zeros != m.Zeros {
			t.Fatalf("%v: %+v, mirrored %+v", xs, r, m)
		}
		var all float64
		ranks, _ := prattRanks(xs)
		for _, rk := range ranks {
			all += rk.rank
		}
		if math.Abs(r.WPlus+m.WPlus-all) > 1e-9 {
			t.Fatalf("%v: W+ %v and mirrored %v do not sum to %v", xs, r.WPlus, m.WPlus, all)
		}
		// Symmetric data (each value with its mirror) sits at the null
		// mean: p = 1.
		sym := append(slices.Clone(xs), neg...)
		if p := SignedRankTest(sym).P; math.Abs(p-1) > 1e-12 {
			t.Fatalf("%v: symmetric p %v", sym, p)
		}
		s := HodgesLehmann(xs)
		if len(xs) > 0 {
			lo, hi := slices.Min(xs), slices.Max(xs)
			if !(lo <= s.Lo && s.Lo <= s.Estimate && s.Estimate <= s.Hi && s.Hi <= hi) {
				t.Fatalf("%v: %+v not nested in [%v, %v]", xs, s, lo, hi)
			}
		}
	})
}

// Holm is never below the raw p, keeps the raw order, and is at least
// Benjamini–Hochberg's, which is itself at least the raw p.
func TestAdjustProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ps := rapid.SliceOfN(rapid.Float64Range(0, 1), 0, 20).Draw(t, "ps")
		h, b := Holm(ps), BenjaminiHochberg(ps)
		require.Len(t, h, len(ps))
		for i := range ps {
			if !(ps[i] <= h[i] && h[i] <= 1 && ps[i] <= b[i] && b[i] <= h[i]+1e-15) {
				t.Fatalf("p %v: Holm %v, BH %v", ps[i], h[i], b[i])
			}
			for j := range ps {
				if ps[i] < ps[j] && (h[i] > h[j] || b[i] > b[j]) {
					t.Fatalf("%v < %v but adjusted Holm %v, %v; BH %v, %v", ps[i], ps[j], h[i], h[j], b[i], b[j])
				}
			}
		}
	})
}

// Any input, however odd, gives a p in [0, 1] and no panic.
func FuzzSignedRank(f *testing.F) {
	f.Add(1.0, -2.0, 0.0, 2.0, 1e300)
	f.Add(math.Inf(1), math.NaN(), 0.0, math.Copysign(0, -1), math.Inf(-1))
	f.Fuzz(func(t *testing.T, a, b, c, d, e float64) {
		xs := []float64{a, b, c, d, e, a, -b}
		r := SignedRankTest(xs)
		if !(r.P >= 0 && r.P <= 1) || r.N+r.Zeros > len(xs) {
			t.Fatalf("%v: %+v", xs, r)
		}
		s := HodgesLehmann(xs)
		if s.N > 0 && !math.IsNaN(s.Lo) && s.Lo > s.Hi {
			t.Fatalf("%v: %+v", xs, s)
		}
		// Not p-values at all (negative, infinite): no panic, a result
		// per input.
		if len(Holm(xs)) != len(xs) || len(BenjaminiHochberg(xs)) != len(xs) {
			t.Fatalf("%v: lengths", xs)
		}
	})
}
