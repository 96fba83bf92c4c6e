package figures

import (
	"math"
	"strconv"
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

// Hand-worked log axes. Four or more powers of ten in range: only those
// are labelled. Fewer: 1, 2 and 5 times each (the trace figures' mean
// wait, 0.5 … 150 h, had only 1, 10 and 100; agents-arrive's p95 wait,
// 2 … 500 h, only 10 and 100). Fewer still: 1, 2, 3 and 5 times each;
// under a factor of 10, round linear steps. Over 16 decades, every 2nd
// power of ten.
func TestLogTicksHandWorked(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   []string
	}{
		{0.67, 1650, []string{"1", "10", "100", "1000"}},
		{0.5, 150, []string{"0.5", "1", "2", "5", "10", "20", "50", "100"}},
		{2, 500, []string{"2", "5", "10", "20", "50", "100", "200", "500"}},
		{0.77, 480, []string{"1", "2", "5", "10", "20", "50", "100", "200"}},
		{0.013, 0.9, []string{"0.02", "0.05", "0.1", "0.2", "0.5"}},
		{3, 40, []string{"3", "5", "10", "20", "30"}},
		{0.2009, 1.9989, []string{"0.25", "0.5", "0.75", "1", "1.25", "1.5", "1.75"}},
		{95, 310, []string{"100", "150", "200", "250", "300"}},
		{1e-3, 1e12, []string{"0.01", "1", "100", "10000", "1e+06", "1e+08", "1e+10", "1e+12"}},
	} {
		assert.Equal(t, c.want, labels(nonMinor(LogTicks{}.Ticks(c.lo, c.hi))), "[%g, %g]", c.lo, c.hi)
	}
	// The unlabelled multiples of each power of ten are minor ticks.
	var minor []float64
	for _, tk := range (LogTicks{}).Ticks(1, 100) {
		if tk.IsMinor() {
			minor = append(minor, tk.Value)
		}
	}
	assert.Equal(t, []float64{3, 4, 6, 7, 8, 9, 30, 40, 60, 70, 80, 90}, minor)
}

// Over any positive range of any magnitude (a factor of 1.001 to 10¹²):
// at least MinLabels labels, each printing its own value, increasing and
// within the range, at most 11 of them and never closer than a 16th of
// the axis (in log distance), so that no two overlap on a panel.
func TestLogTicksAlwaysReadable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lo := math.Pow(10, rapid.Float64Range(-6, 6).Draw(t, "log10_lo"))
		hi := lo * math.Pow(10, rapid.Float64Range(0.0005, 12).Draw(t, "log10_factor"))
		ts := LogTicks{}.Ticks(lo, hi)
		span := math.Log10(hi / lo)
		var prev float64
		n := 0
		for i, tk := range ts {
			if tk.Value < lo*(1-1e-9) || tk.Value > hi*(1+1e-9) {
				t.Fatalf("[%g, %g]: tick %v outside the range", lo, hi, tk)
			}
			if i > 0 && tk.Value <= ts[i-1].Value {
				t.Fatalf("[%g, %g]: ticks not increasing %v", lo, hi, ts)
			}
			if tk.IsMinor() {
				continue
			}
			v, err := strconv.ParseFloat(tk.Label, 64)
			if err != nil || math.Abs(v-tk.Value) > 1e-9*tk.Value {
				t.Fatalf("[%g, %g]: tick at %g labelled %q", lo, hi, tk.Value, tk.Label)
			}
			if n > 0 && math.Log10(tk.Value/prev) < span/16 {
				t.Fatalf("[%g, %g]: labels %g and %g crowd: %v", lo, hi, prev, tk.Value, labels(nonMinor(ts)))
			}
			prev = tk.Value
			n++
		}
		if n < MinLabels || n > 11 {
			t.Fatalf("[%g, %g]: %d labels %v", lo, hi, n, labels(nonMinor(ts)))
		}
	})
}

// decimals: none for whole numbers and zero (a sweep grid that starts at
// 0 s of grace is labelled 0, 15, 30, …, not 0, 15.00, 30.00), one for
// halves, and a step under 1e-6 is not taken for a whole number.
func TestDecimals(t *testing.T) {
	for v, want := range map[float64]int{0: 0, 15: 0, 120: 0, 0.5: 1, 2.5: 1, 0.25: 2, 5e-7: 7, 2.5e-7: 8} {
		assert.Equal(t, want, decimals(v), "decimals(%g)", v)
	}
	assert.Equal(t, []string{"0", "15", "30", "60", "90", "120"},
		labels(sweepTicks([]float64{0, 15, 30, 60, 90, 120}, func(v float64) float64 { return v / 120 }, 0.06)))
}
