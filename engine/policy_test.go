package engine

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// Naming the Bursar policy only adds the study metrics: every model
// metric and the journal, byte for byte, are the unnamed run's.
func TestNamingBursarChangesNothingButAddsTheStudyMetrics(t *testing.T) {
	plain := DefaultScenario()
	named := plain
	named.Policy = "bursar"
	a, err := Run(plain, Options{Journal: true})
	require.NoError(t, err)
	b, err := Run(named, Options{Journal: true})
	require.NoError(t, err)
	require.Nil(t, a.Metrics.Study)
	require.NotNil(t, b.Metrics.Study)
	require.Equal(t, string(a.Journal), string(b.Journal))
	require.Equal(t, a.Metrics.Scalars(), b.Metrics.Scalars())
}

// Every policy runs the paper's scenario deterministically, keeps the
// run invariant, and measures study metrics in range.
func TestEveryPolicyRunsThePaperScenario(t *testing.T) {
	for _, name := range Policies {
		t.Run(name, func(t *testing.T) {
			s := DefaultScenario()
			s.Policy = name
			a, err := Run(s, Options{Journal: true})
			require.NoError(t, err)
			b, err := Run(s, Options{Journal: true})
			require.NoError(t, err)
			require.Equal(t, string(a.Journal), string(b.Journal), "same seed, same journal")
			require.NoError(t, a.CheckInvariants())
			st := a.Metrics.Study
			require.NotNil(t, st)
			require.Greater(t, st.JainStorm, 0.0)
			require.LessOrEqual(t, st.JainStorm, 1+1e-12)
			require.GreaterOrEqual(t, st.VictimP95InCensored, a.Metrics.VictimP95In)
			require.GreaterOrEqual(t, st.VictimViolationsInCensored, a.Metrics.VictimViolationsIn)
			require.GreaterOrEqual(t, st.Preemptions, st.AgentPreemptions)
			require.InDelta(t, 0.5, a.Metrics.Utilization, 0.5)
			require.NotEmpty(t, a.Grants)
		})
	}
}

// Worked example of the fair allocation behind Jain's index: a pool of 10
// with shares ½, ¼, ¼ and demands 2, 10, 10. The first split offers 5,
// 2.5, 2.5; the first campaign needs only 2 and is capped; the 8 left go
// ¼ : ¼, so 4 and 4.
func TestMaxMinSplitWorkedExample(t *testing.T) {
	alloc := make([]float64, 3)
	maxMinSplit(10, []float64{0.5, 0.25, 0.25}, []float64{2, 10, 10}, alloc)
	require.InDeltaSlice(t, []float64{2, 4, 4}, alloc, 1e-12)
	// Demand below the pool: everyone gets its demand.
	maxMinSplit(10, []float64{0.5, 0.25, 0.25}, []float64{1, 2, 3}, alloc)
	require.InDeltaSlice(t, []float64{1, 2, 3}, alloc, 1e-12)
	// Weight 0 gets nothing.
	maxMinSplit(10, []float64{1, 0}, []float64{4, 10}, alloc[:2])
	require.InDeltaSlice(t, []float64{4, 0}, alloc[:2], 1e-12)
}

// Jain's index of x = (1, ½): (1.5)² / (2 · 1.25) = 0.9.
func TestJainWorkedExample(t *testing.T) {
	require.InDelta(t, 0.9, jain([]float64{4, 2}, []float64{4, 4}), 1e-12)
	require.Equal(t, 1.0, jain([]float64{3, 6, 0}, []float64{1, 2, 0}))
	require.True(t, math.IsNaN(jain([]float64{1}, []float64{0})))
}

// The split never gives more than the pool or than a demand, and gives
// away the whole pool whenever the positive-weight demand exceeds it.
func TestPropertyMaxMinSplit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 8).Draw(t, "n")
		pool := float64(rapid.IntRange(0, 1000).Draw(t, "pool"))
		w := make([]float64, n)
		d := make([]float64, n)
		wanted := 0.0
		for i := range w {
			w[i] = float64(rapid.IntRange(0, 10).Draw(t, "w"))
			d[i] = float64(rapid.IntRange(0, 600).Draw(t, "d"))
			if w[i] > 0 {
				wanted += d[i]
			}
		}
		alloc := make([]float64, n)
		maxMinSplit(pool, w, d, alloc)
		sum := 0.0
		for i := range alloc {
			if alloc[i] < -1e-9 || alloc[i] > d[i]+1e-6 {
				t.Fatalf("campaign %d: %v of demand %v", i, alloc[i], d[i])
			}
			if w[i] == 0 && alloc[i] != 0 {
				t.Fatalf("campaign %d of weight 0 got %v", i, alloc[i])
			}
			sum += alloc[i]
		}
		if sum > pool+1e-6 {
			t.Fatalf("gave %v of a pool of %v", sum, pool)
		}
		if want := math.Min(pool, wanted); math.Abs(sum-want) > 1e-6 {
			t.Fatalf("gave %v, want min(pool, demand) = %v", sum, want)
		}
	})
}
