package trace

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// A hand-worked model against the log over the interval [0, 100):
//
//	job  submit  recorded wait  simulated start  error (sim − recorded start)
//	A    0       100            50               −50
//	B    10      0              40               +30
//	C    20      200            320              +100
//	D    30      unknown        35               left out (unrecorded)
//	E    40      10             never            left out (unstarted)
//	F    1000    5              1005             outside the interval
//
// |error| sorted 30, 50, 100: median (rank ⌊0.5·3⌋ = 1) 50, p90 (rank
// ⌊0.9·3⌋ = 2) 100; signed mean 80/3. Simulated waits 50, 30, 300 against
// recorded 100, 0, 200: Σdxdy = 27000, Σdx² = 45266.67, Σdy² = 20000,
// Pearson 27000/√(45266.67·20000) = 0.89735; both rank 2, 1, 3: Spearman 1.
func TestCompareToLogHandWorked(t *testing.T) {
	rec := func(submit int64, starts ...int64) JobRecord {
		return JobRecord{Submit: submit, Starts: starts}
	}
	w, run := logged([]JobRecord{
		rec(0, 50), rec(10, 40), rec(20, 320), rec(30, 35), rec(40), rec(1000, 1005),
	}, 100, 0, 200, -1, 10, 5)
	m := CompareToLog(w, run, Interval{From: 0, To: 100})
	assert.Equal(t, 3, m.Jobs)
	assert.Equal(t, 1, m.Unrecorded)
	assert.Equal(t, 1, m.Unstarted)
	assert.Equal(t, 50.0, m.MedianAbs)
	assert.Equal(t, 100.0, m.P90Abs)
	assert.InDelta(t, 80.0/3, m.SignedMean, 1e-12)
	assert.InDelta(t, 0.89735, m.Pearson, 1e-5)
	assert.InDelta(t, 1.0, m.Spearman, 1e-12)
}

// A model that starts every job when the machine did is exact: no
// error, correlation 1; a constant wait has no correlation (NaN), and no
// recorded job leaves every figure NaN.
func TestCompareToLogExactAndEmpty(t *testing.T) {
	w, run := logged([]JobRecord{
		{Submit: 0, Starts: []int64{5}},
		{Submit: 1, Starts: []int64{10}},
		{Submit: 2, Starts: []int64{2}},
	}, 5, 9, 0)
	m := CompareToLog(w, run, Interval{From: 0, To: 10})
	assert.Equal(t, 0.0, m.MedianAbs)
	assert.Equal(t, 0.0, m.P90Abs)
	assert.Equal(t, 0.0, m.SignedMean)
	assert.InDelta(t, 1.0, m.Pearson, 1e-12)
	assert.InDelta(t, 1.0, m.Spearman, 1e-12)

	wf, flat := logged([]JobRecord{{Submit: 0, Starts: []int64{3}}, {Submit: 1, Starts: []int64{9}}}, 0, 0)
	m = CompareToLog(wf, flat, Interval{From: 0, To: 10})
	assert.True(t, math.IsNaN(m.Pearson), "recorded waits all 0: no correlation")
	assert.Equal(t, 5.5, m.SignedMean, "waits 3 and 8 against 0 and 0")

	wn, rn := logged([]JobRecord{{Submit: 0, Starts: []int64{0}}}, -1)
	none := CompareToLog(wn, rn, Interval{From: 0, To: 10})
	require.Equal(t, 0, none.Jobs)
	for _, x := range []float64{none.MedianAbs, none.P90Abs, none.SignedMean, none.Pearson, none.Spearman} {
		assert.True(t, math.IsNaN(x))
	}
}

// logged is a run of recs and a workload whose jobs recorded the waits
// logWaits, one a record.
func logged(recs []JobRecord, logWaits ...int64) (*Workload, *Run) {
	w := &Workload{Jobs: make([]Job, len(recs))}
	for i := range recs {
		w.Jobs[i].LogWait = logWaits[i]
	}
	return w, &Run{Records: recs}
}

// Ranks tie at their mean rank.
func TestRanksTies(t *testing.T) {
	assert.Equal(t, []float64{2.5, 1, 2.5, 4}, ranks([]float64{7, 1, 7, 9}))
}

// Every value's rank is 1 + the values below it + half the others equal
// to it, whatever the order of the ties.
func TestRanksAreMeanRanks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Whole seconds (packed and radix-sorted, below and above
		// radixSort's switch to slices.Sort), negative ones and halves
		// (sorted as pairs).
		kind := rapid.IntRange(0, 2).Draw(t, "kind")
		ints := rapid.SliceOfN(rapid.IntRange(-5*(kind%2), 1<<uint(rapid.IntRange(1, 40).Draw(t, "bits"))), 0, 3*radixMin).Draw(t, "xs")
		xs := make([]float64, len(ints))
		for i, v := range ints {
			xs[i] = float64(v)
			if kind == 2 {
				xs[i] /= 2
			}
		}
		got := ranks(xs)
		for i, x := range xs {
			below, equal := 0, 0
			for _, y := range xs {
				switch {
				case y < x:
					below++
				case y == x:
					equal++
				}
			}
			if want := float64(below) + float64(equal+1)/2; got[i] != want {
				t.Fatalf("xs[%d] = %v: rank %v, want %v", i, x, got[i], want)
			}
		}
	})
}

// sortWholeFloats sorts as slices.Sort does: whole numbers (radix-sorted)
// and anything else, −0 and fractions among them (left to slices.Sort).
func TestSortWholeFloatsIsASort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		xs := rapid.SliceOfN(rapid.SampledFrom([]float64{0, 1, 2, 3, 7, 1e6, 1 << 40, 1 << 62, math.Copysign(0, -1), 0.5, -1, 1 << 63}), 0, 3*radixMin).Draw(t, "xs")
		want := slices.Clone(xs)
		slices.Sort(want)
		sortWholeFloats(xs)
		for i := range xs {
			if math.Float64bits(xs[i]) != math.Float64bits(want[i]) && !(xs[i] == 0 && want[i] == 0) {
				t.Fatalf("at %d: %v, slices.Sort %v", i, xs[i], want[i])
			}
		}
		if !slices.Equal(xs, want) {
			t.Fatalf("%v, slices.Sort %v", xs, want)
		}
	})
}
