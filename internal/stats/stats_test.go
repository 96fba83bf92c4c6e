package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

var methods = []Method{
	{Sum: InOrder, Spread: Corrected}, // the sweeps
	{Sum: Lanes, Spread: Corrected},   // the trace study
	{Sum: InOrder, Spread: Plain},     // trace's fairness
}

// A t interval worked by hand: 1, 2, 3, 4, 5 have mean 3 and s = √(10/4);
// t(0.975, 4) = 2.776445105 (any t table), so the half-width is
// 2.776445105 · √2.5 / √5 = 1.963243161 and the interval
// [1.036756839, 4.963243161]. Two values 0 and 2: s = √2, t(0.975, 1) =
// 12.70620474, half-width 12.70620474.
func TestMeanTWorked(t *testing.T) {
	for _, m := range methods {
		mean, iv := MeanT([]float64{1, 2, 3, 4, 5}, m)
		require.Equal(t, 3.0, mean, "%+v", m)
		assert.InDelta(t, 1.036756839, iv.Lo, 1e-9, "%+v", m)
		assert.InDelta(t, 4.963243161, iv.Hi, 1e-9, "%+v", m)
		mean, iv = MeanT([]float64{0, 2}, m)
		require.Equal(t, 1.0, mean)
		assert.InDelta(t, 1-12.70620474, iv.Lo, 1e-8, "%+v", m)
		assert.InDelta(t, 1+12.70620474, iv.Hi, 1e-8, "%+v", m)
	}
	assert.InDelta(t, 2.776445105, TQuantile(4), 1e-9)
}

// Too few values give no interval; a NaN makes the bounds NaN, and so
// does an infinite value (the trace study's rule, once explicit).
func TestMeanTFewAndNonFinite(t *testing.T) {
	for _, m := range methods {
		mean, iv := MeanT(nil, m)
		assert.True(t, math.IsNaN(mean) && math.IsNaN(iv.Lo) && math.IsNaN(iv.Hi), "%+v", m)
		mean, iv = MeanT([]float64{7}, m)
		assert.Equal(t, 7.0, mean)
		assert.True(t, math.IsNaN(iv.Lo) && math.IsNaN(iv.Hi), "%+v", m)
		for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			_, iv = MeanT([]float64{1, bad, 2}, m)
			assert.True(t, math.IsNaN(iv.Lo) && math.IsNaN(iv.Hi), "%+v with %v: %+v", m, bad, iv)
		}
	}
}

// Up to three values the two sums add in the same order (gonum's lanes
// start pairing at four), so the sweeps' seeds (three) and the trace
// study's means agree to the bit there; the interval is centred on the
// mean and contains it.
func TestMeanTSumsAgreeUpToThree(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		xs := rapid.SliceOfN(rapid.Float64Range(-1e6, 1e6), 1, 3).Draw(t, "xs")
		a, ia := MeanT(xs, Method{Sum: InOrder})
		b, ib := MeanT(xs, Method{Sum: Lanes})
		if math.Float64bits(a) != math.Float64bits(b) || ia != ib && len(xs) > 1 {
			t.Fatalf("%v: in order %v %+v, in lanes %v %+v", xs, a, ia, b, ib)
		}
		if len(xs) > 1 && !(ia.Lo <= a && a <= ia.Hi) {
			t.Fatalf("%v: mean %v outside %+v", xs, a, ia)
		}
	})
}

// The model's percentile: element min(n − 1, ⌊p/100 · n⌋) of the sorted
// values, no interpolation. Of 5, 1, 3, 2, 4: p50 is element ⌊2.5⌋ = 2
// (3), p95 element ⌊4.75⌋ = 4 (5), p100 capped at n − 1 (5); of 1, 2 p50
// is element 1 (2, not 1.5).
func TestPercentileWorked(t *testing.T) {
	assert.True(t, math.IsNaN(Percentile([]int(nil), 50)))
	assert.Equal(t, 3.0, Percentile([]int{5, 1, 3, 2, 4}, 50))
	assert.Equal(t, 5.0, Percentile([]int{5, 1, 3, 2, 4}, 95))
	assert.Equal(t, 5.0, Percentile([]int{5, 1, 3, 2, 4}, 100))
	assert.Equal(t, 7.0, Percentile([]int{7}, 50))
	assert.Equal(t, 2.0, Percentile([]int{1, 2}, 50))
	assert.Equal(t, 0.25, Percentile([]float64{0.5, 0.25, 0.125}, 50))
	assert.Equal(t, 19, Rank(20, 95), "p95 of 20 values is the largest")
	assert.Equal(t, 9, Rank(19, 50))
}

// Wilson's interval worked by hand: 5 of 10 with z = 1.959964 gives
// centre 0.5 and half-width z/(1 + z²/10) · √(0.025 + z²/400) = 0.2634069.
func TestWilsonWorked(t *testing.T) {
	p, iv := Wilson(5, 10)
	assert.Equal(t, 0.5, p)
	assert.InDelta(t, 0.2365931, iv.Lo, 1e-7)
	assert.InDelta(t, 0.7634069, iv.Hi, 1e-7)
	_, iv = Wilson(0, 4)
	assert.Equal(t, 0.0, iv.Lo, "clipped at 0")
	p, iv = Wilson(0, 0)
	assert.True(t, math.IsNaN(p) && math.IsNaN(iv.Lo) && math.IsNaN(iv.Hi))
}

// A bootstrap interval is made of resampled values, widened to hold the
// estimate; resamples without a value are left out.
func TestBootstrap(t *testing.T) {
	vals := []float64{0, 10}
	first := func(pick []int) (float64, bool) { return vals[pick[0]], true }
	iv := Bootstrap(rand.New(rand.NewPCG(1, 2)), 2, 1000, 5, first)
	assert.Equal(t, Interval{Lo: 0, Hi: 10}, iv)
	iv = Bootstrap(rand.New(rand.NewPCG(1, 2)), 2, 1000, 20, func([]int) (float64, bool) { return 3, true })
	assert.Equal(t, Interval{Lo: 3, Hi: 20}, iv, "widened to the estimate")
	iv = Bootstrap(rand.New(rand.NewPCG(1, 2)), 2, 10, 1, func([]int) (float64, bool) { return 0, false })
	assert.True(t, math.IsNaN(iv.Lo) && math.IsNaN(iv.Hi))
}
