package slurmcheck

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// Worked by hand. Jobs 1–4 are submitted at 0 and all wait (every pair
// queued together); job 5 starts the second it comes, so it waited with
// no one. Reference starts 10, 20, 20, 30, 40; predicted 10, 30, 20, 20,
// 41.
//
// Pairs: (1,2) both earlier-first: concordant; (1,3), (1,4) concordant;
// (2,3) tied in the reference only; (2,4) 20 < 30 but 30 > 20:
// discordant; (3,4) tied in the prediction only. C = 3, D = 1, T_ref =
// T_pred = 1: τ-b = (3 − 1)/√((3+1+1)(3+1+1)) = 0.4 (the textbook form:
// n0 = 6, n1 = n2 = 1, (3 − 1)/√(5·5)).
//
// Errors |0|, |10|, |0|, |10|, |1|, sorted 0, 0, 1, 10, 10: the median
// is the element at ⌊0.5·5⌋ = 2, 1; p90 at ⌊0.9·5⌋ = 4, 10; MAE 21/5 =
// 4.2; waits 10 + 20 + 20 + 30 + 0 = 80, mean 16; MAE ÷ mean wait =
// 21/80.
func TestAgreementWorkedByHand(t *testing.T) {
	ref := []Times{{0, 10}, {0, 20}, {0, 20}, {0, 30}, {40, 40}}
	pred := []Times{{0, 10}, {0, 30}, {0, 20}, {0, 20}, {40, 41}}
	require.Equal(t, Counts{Concordant: 3, Discordant: 1, TiedRef: 1, TiedPred: 1, Pairs: 6}, TauCounts(ref, pred))
	a := Compare(ref, pred)
	require.Equal(t, 5, a.Jobs)
	require.Equal(t, 6, a.Pairs)
	require.InDelta(t, 0.4, a.TauB, 1e-12)
	require.Equal(t, 1.0, a.MedianAbs)
	require.Equal(t, 10.0, a.P90Abs)
	require.InDelta(t, 4.2, a.MAE, 1e-12)
	require.InDelta(t, 16, a.MeanWait, 1e-12)
	require.InDelta(t, 21.0/80, a.MAEOverWait, 1e-12)
}

// Queued together means both waiting at one instant: a job that left the
// queue the second the other came did not wait with it.
func TestQueuedTogether(t *testing.T) {
	require.True(t, QueuedTogether(Times{0, 5}, Times{4, 8}))
	require.False(t, QueuedTogether(Times{0, 5}, Times{5, 8}), "the first started as the second came")
	require.False(t, QueuedTogether(Times{3, 3}, Times{0, 10}), "a job that never waited")
	require.True(t, QueuedTogether(Times{0, 10}, Times{2, 3}))
}

// Pooling two replays is counting their pairs and errors together.
func TestAddPoolsReplays(t *testing.T) {
	ref := []Times{{0, 10}, {0, 20}, {0, 20}, {0, 30}, {40, 40}}
	pred := []Times{{0, 10}, {0, 30}, {0, 20}, {0, 20}, {40, 41}}
	var a Agreement
	a.Add(ref, pred)
	a.Add(ref, ref)
	require.Equal(t, 10, a.Jobs)
	require.Equal(t, 12, a.Pairs)
	// C = 3 + 5 (the second replay orders its 5 untied pairs as itself),
	// D = 1, T_ref = 1 + 1 (the second's tie is on both sides: neither),
	// T_pred = 1: (8 − 1)/√((9 + 1)(9 + 1)).
	require.InDelta(t, 7.0/10, a.TauB, 1e-12)
	require.InDelta(t, 21.0/10, a.MAE, 1e-12)
}

// tauBTextbook is τ-b by its textbook form over every pair:
// (n_c − n_d)/√((n0 − n1)(n0 − n2)), n1 and n2 the pairs tied in x and in
// y (tied in both counted in each).
func tauBTextbook(x, y []int64) float64 {
	var nc, nd, n0, n1, n2 float64
	for i := range x {
		for j := i + 1; j < len(x); j++ {
			n0++
			dx, dy := x[i]-x[j], y[i]-y[j]
			if dx == 0 {
				n1++
			}
			if dy == 0 {
				n2++
			}
			if dx*dy > 0 {
				nc++
			} else if dx*dy < 0 {
				nd++
			}
		}
	}
	return (nc - nd) / math.Sqrt((n0-n1)*(n0-n2))
}

// startsGen draws n start times with many ties (a few distinct values).
func startsGen(n int) *rapid.Generator[[]int64] {
	return rapid.SliceOfN(rapid.Int64Range(1, 6), n, n)
}

// Where every job was submitted at 0 and started later, every pair
// queued together and τ-b is the textbook one, ties and all.
func TestTauBMatchesTextbookWhenAllQueuedTogether(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 12).Draw(t, "n")
		x, y := startsGen(n).Draw(t, "ref"), startsGen(n).Draw(t, "pred")
		ref, pred := make([]Times, n), make([]Times, n)
		for i := range n {
			ref[i], pred[i] = Times{0, x[i]}, Times{0, y[i]}
		}
		want := tauBTextbook(x, y)
		got := Compare(ref, pred).TauB
		if math.IsNaN(want) {
			if !math.IsNaN(got) {
				t.Fatalf("τ-b %v, want NaN", got)
			}
			return
		}
		if math.Abs(got-want) > 1e-12 {
			t.Fatalf("τ-b %v, textbook %v", got, want)
		}
		if got < -1-1e-12 || got > 1+1e-12 {
			t.Fatalf("τ-b %v outside [−1, 1]", got)
		}
	})
}

// A prediction that shifts every start by the same k is in perfect order
// (τ-b 1 wherever it is defined) and off by |k| for every job; the
// reference against itself is off by nothing.
func TestShiftedPredictionKeepsOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 15).Draw(t, "n")
		k := rapid.Int64Range(-20, 20).Draw(t, "k")
		ref, pred := make([]Times, n), make([]Times, n)
		for i := range n {
			s := rapid.Int64Range(0, 50).Draw(t, "submit")
			w := rapid.Int64Range(0, 30).Draw(t, "wait")
			ref[i] = Times{s, s + w}
			pred[i] = Times{s, s + w + k}
		}
		a := Compare(ref, pred)
		if a.MAE != math.Abs(float64(k)) || a.MedianAbs != math.Abs(float64(k)) || a.P90Abs != math.Abs(float64(k)) {
			t.Fatalf("errors %v %v %v, want all %d", a.MedianAbs, a.P90Abs, a.MAE, k)
		}
		if !math.IsNaN(a.TauB) && a.TauB != 1 {
			t.Fatalf("τ-b %v of a shifted prediction, want 1", a.TauB)
		}
		self := Compare(ref, ref)
		if self.MAE != 0 || (!math.IsNaN(self.TauB) && self.TauB != 1) {
			t.Fatalf("the reference against itself: MAE %v τ-b %v", self.MAE, self.TauB)
		}
	})
}

// Reversing the prediction's order of the untied pairs negates τ-b, and
// the two tie counts play the same part.
func TestTauBSymmetries(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := rapid.IntRange(0, 50).Draw(t, "c")
		d := rapid.IntRange(0, 50).Draw(t, "d")
		tr := rapid.IntRange(0, 50).Draw(t, "tr")
		tp := rapid.IntRange(0, 50).Draw(t, "tp")
		a, b := TauB(c, d, tr, tp), TauB(d, c, tr, tp)
		if math.IsNaN(a) {
			return
		}
		if math.Abs(a+b) > 1e-12 || TauB(c, d, tp, tr) != a || a < -1 || a > 1 {
			t.Fatalf("τ-b(%d,%d,%d,%d) = %v, swapped %v", c, d, tr, tp, a, b)
		}
	})
}

// summary.json names its figures, and writes a figure with nothing to
// measure as null.
func TestAgreementJSON(t *testing.T) {
	b, err := json.Marshal(Compare([]Times{{0, 10}, {0, 20}}, []Times{{0, 10}, {0, 25}}))
	require.NoError(t, err)
	require.JSONEq(t, `{"jobs":2,"median_abs_error_s":5,"p90_abs_error_s":5,"mean_abs_error_s":2.5,"mean_wait_s":15,
		"mae_over_mean_wait":0.16666666666666666,"tau_b":1,"pairs_queued_together":1,"concordant":1,"discordant":0}`, string(b))
	b, err = json.Marshal(Compare([]Times{{0, 0}}, []Times{{0, 0}}))
	require.NoError(t, err)
	require.Contains(t, string(b), `"tau_b":null`)
	require.Contains(t, string(b), `"mae_over_mean_wait":null`)
}
