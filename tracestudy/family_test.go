package tracestudy

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/trace"
)

// A family tested by hand. Five windows; fifo's mean wait is 100 s in
// each, fairshare's 50, 200, 25, 100, 80: log ratios −0.693, +0.693,
// −1.386, 0, −0.223. Pratt ranks the zero first (rank 1), then 0.223 (2),
// the tied 0.693s (3.5 each) and 1.386 (5), and drops the zero: W+ = 3.5
// against a null mean of 7. Doubled, the ranks are 4, 7, 7, 10 (total
// 28) and W+ 7; of the 16 subset sums 0 4 7 7 10 11 11 14 14 17 17 18 21
// 21 24 28, those at least 14 from 14 are 0 4 7 7 21 21 24 28: p = 1/2.
// quota did not run, so its contrast is no member of the family; the
// denied difference is 0 in every window, p = 1. Holm over (1/2, 1): 2 ×
// 1/2 = 1, then max(1, 1) = 1.
func TestFamilyWorked(t *testing.T) {
	fifo, fs := []float64{100, 100, 100, 100, 100}, []float64{50, 200, 25, 100, 80}
	st := &Study{Specs: TraceSpecs([]string{"fifo", "fairshare"}), Windows: make([]Window, 5)}
	var rs []Result
	for _, waits := range [][]float64{fifo, fs} {
		for k, w := range waits {
			rs = append(rs, Result{Window: k, Summary: trace.Summary{All: trace.Stats{MeanWait: w}, Converged: k != 2}})
		}
	}
	fam := []Contrast{
		{Policy: "fairshare", Metric: "mean_wait", Ratio: true},
		{Policy: "quota", Metric: "mean_wait", Ratio: true},
		{Policy: "fairshare", Metric: "denied"},
	}
	got := TestedFamily(st, rs, fam)
	require.Len(t, got, 2)
	w := got[0]
	assert.Equal(t, "fairshare", w.Policy)
	assert.InDeltaSlice(t, []float64{math.Log(0.5), math.Log(2), math.Log(0.25), 0, math.Log(0.8)}, w.Values, 1e-15)
	assert.Equal(t, 4, w.Test.N)
	assert.Equal(t, 1, w.Test.Zeros)
	assert.Equal(t, 3.5, w.Test.WPlus)
	assert.Equal(t, 0.5, w.Test.P)
	assert.Equal(t, 4, w.Converged, "window 3 did not converge")
	assert.Equal(t, 1.0, w.PHolm)
	d := got[1]
	assert.Equal(t, "denied", d.Metric)
	assert.Equal(t, 5, d.Test.Zeros)
	assert.Equal(t, 1.0, d.Test.P)
	assert.Equal(t, 1.0, d.PHolm)
	// A zero wait gives no ratio: left out of the test.
	rs[0].Summary.All.MeanWait = 0
	assert.True(t, math.IsNaN(TestedFamily(st, rs, fam[:1])[0].Values[0]))
	assert.Nil(t, TestedFamily(&Study{Specs: st.Specs, Windows: make([]Window, 1)}, rs[:2], fam), "one window: no family")
}

// Holm's adjustment across the family, by hand. Five windows: fifo
// waits 100 s in each, fairshare 50 (log ratio −0.693 in every window)
// and budget 200 (+0.693 in every window). Each has five tied values of
// one sign: midrank 3 each, W+ = 0 or 15 of 15, the two extremes of 32
// sign assignments, p = 2/32 = 0.0625; the denied difference is 0
// everywhere, p = 1. Holm over (0.0625, 0.0625, 1): 3 × 0.0625 = 0.1875,
// then max(0.1875, 2 × 0.0625) = 0.1875, then 1. (Benjamini–Hochberg
// would give 0.09375 to the first two.)
func TestFamilyHolm(t *testing.T) {
	st := &Study{Specs: TraceSpecs([]string{"fifo", "fairshare", "budget"}), Windows: make([]Window, 5)}
	var rs []Result
	for _, w := range []float64{100, 50, 200} {
		for k := range 5 {
			rs = append(rs, Result{Window: k, Summary: trace.Summary{All: trace.Stats{MeanWait: w}, Converged: true}})
		}
	}
	fam := TestedFamily(st, rs, []Contrast{
		{Policy: "fairshare", Metric: "mean_wait", Ratio: true},
		{Policy: "budget", Metric: "mean_wait", Ratio: true},
		{Policy: "budget", Metric: "denied"},
	})
	require.Len(t, fam, 3)
	for i, want := range []struct{ w, p, holm float64 }{{0, 0.0625, 0.1875}, {15, 0.0625, 0.1875}, {0, 1, 1}} {
		assert.Equal(t, want.w, fam[i].Test.WPlus, "contrast %d", i)
		assert.InDelta(t, want.p, fam[i].Test.P, 1e-15, "contrast %d", i)
		assert.InDelta(t, want.holm, fam[i].PHolm, 1e-15, "contrast %d", i)
	}
}

// budget-knobs' family compares two cells: by hand, five windows, the
// reference cell (W = 7 d, m = 1 h, checkpoint) waits 100 s in each and
// the zero-restart cell 300 s (log 3 in every window: W+ = 15 of 15,
// p = 2/32); its Hodges–Lehmann ratio is exactly 3. A family member
// whose cells did not run is left out.
func TestFamilyVersusACell(t *testing.T) {
	specs, err := BudgetKnobSpecs([]int{7}, []int{3600}, BudgetRestarts)
	require.NoError(t, err)
	st := &Study{Specs: specs, Windows: make([]Window, 5)}
	var rs []Result
	for _, sp := range specs {
		w := 100.0
		if sp.Restart == "zero" {
			w = 300
		}
		for k := range 5 {
			rs = append(rs, Result{Window: k, Summary: trace.Summary{All: trace.Stats{MeanWait: w}, Converged: true}})
		}
	}
	fam := TestedFamily(st, rs, BudgetKnobsFamily)
	require.Len(t, fam, 1, "only the restart contrast's cells ran")
	c := fam[0]
	assert.Equal(t, "budget W=7d m=3600s zero", c.Policy)
	assert.Equal(t, "budget W=7d m=3600s checkpoint:3600", c.Against())
	assert.Equal(t, 15.0, c.Test.WPlus)
	assert.InDelta(t, 0.0625, c.Test.P, 1e-15)
	assert.InDelta(t, 3, math.Exp(c.Shift.Estimate), 1e-12)
	assert.InDelta(t, 0.0625, c.PHolm, 1e-15, "a family of one")
}

// Every member of budget-knobs' family names two cells of the default
// grid, so that none drops out of the committed run for a misspelt label.
func TestBudgetKnobsFamilyNamesCellsOfTheGrid(t *testing.T) {
	specs, err := BudgetKnobSpecs(BudgetWindows, BudgetMinRuntimes, BudgetRestarts)
	require.NoError(t, err)
	require.LessOrEqual(t, len(BudgetKnobsFamily), 10, "at most ten, so that Holm leaves power")
	for _, c := range BudgetKnobsFamily {
		assert.GreaterOrEqual(t, specByLabel(specs, c.Policy), 0, c.Policy)
		assert.GreaterOrEqual(t, specByLabel(specs, c.Against()), 0, c.Against())
		assert.NotNil(t, MetricByKey(c.Metric), c.Metric)
		assert.NotEqual(t, c.Policy, c.Against())
	}
}
