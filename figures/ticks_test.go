package figures

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"
)

// The compare figure's science-per-credit panel spans about −0.29 … 3.9
// once padded: 4.2 ÷ 4 intervals is 1.05, rounded up to a step of 2, and
// only 0 and 2 were labelled. Its preemptions panel (−7 … 97: a step of
// 26 rounded up to 50) had 0 and 50. Each now gets at least four labels.
func TestLinearTicksLabelTheComparePanels(t *testing.T) {
	assert.Equal(t, []string{"0", "1", "2", "3"}, labels(LinearTicks{N: 4}.Ticks(-0.29, 3.9)))
	assert.Equal(t, []string{"0", "25", "50", "75"}, labels(LinearTicks{N: 4}.Ticks(-7, 97)))
	// A range that already had enough keeps its ticks.
	assert.Equal(t, []string{"0", "0.1", "0.2", "0.3"}, labels(LinearTicks{N: 4}.Ticks(-0.01, 0.35)))
}

func TestNiceStepBelow(t *testing.T) {
	for s, want := range map[float64]float64{1: 0.5, 2: 1, 2.5: 2, 5: 2.5, 10: 5, 0.25: 0.2, 50: 25, 0.001: 0.0005} {
		assert.InDelta(t, want, niceStepBelow(s), 1e-12*want, "niceStepBelow(%g)", s)
	}
}

// Over any range of any magnitude: at least MinLabels labelled ticks,
// inside the range, evenly spaced on a round step, and not crowded (at
// most 12).
func TestLinearTicksAlwaysReadable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		scale := math.Pow(10, float64(rapid.IntRange(-4, 6).Draw(t, "decade")))
		lo := rapid.Float64Range(-10, 10).Draw(t, "lo") * scale
		span := rapid.Float64Range(0.01, 20).Draw(t, "span") * scale
		n := rapid.IntRange(3, 6).Draw(t, "n")
		hi := lo + span
		ts := LinearTicks{N: n}.Ticks(lo, hi)
		if len(ts) < MinLabels || len(ts) > 12 {
			t.Fatalf("[%g, %g] n=%d: %d ticks %v", lo, hi, n, len(ts), labels(ts))
		}
		step := ts[1].Value - ts[0].Value
		if niceStep(step) != step && math.Abs(niceStep(step)-step) > 1e-9*step {
			t.Fatalf("[%g, %g]: step %g is not round", lo, hi, step)
		}
		for i, tk := range ts {
			if tk.Label == "" || tk.Value < lo-1e-9*span || tk.Value > hi+1e-9*span {
				t.Fatalf("[%g, %g]: tick %v", lo, hi, tk)
			}
			if i > 0 && math.Abs(tk.Value-ts[i-1].Value-step) > 1e-6*step {
				t.Fatalf("[%g, %g]: uneven ticks %v", lo, hi, labels(ts))
			}
		}
	})
}
