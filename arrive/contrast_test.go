package arrive

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/trace"
	"github.com/bursar-hpc/bursar/tracestudy"
)

// Contrasts by hand (docs/studies.md §5.1). fairshare on five windows,
// one seed, k ≤ 1: the users' mean bounded slowdown is 2 unmetered and 1
// metered in every window, so metered ÷ unmetered is log ½ in each: five
// tied values of one sign, W+ = 0, p = 2/32, a Hodges–Lehmann ratio of
// exactly ½. That contrast and the storm's GPU-hours (2 h unmetered, 1 h
// metered: −1 in every window, p = 2/32 too) are the primary family's
// members here, so Holm gives 2 × 1/16 = 0.125 to both (Benjamini–Hochberg
// would give 0.0625); every other contrast is adjusted by
// Benjamini–Hochberg and says so. A window
// where a wait is 0 gives no ratio and is left out.
func TestContrastsWorked(t *testing.T) {
	st := &Study{Policies: []string{"fairshare"}, MaxK: 1, Seeds: []int64{1}, Windows: make([]tracestudy.Window, 5)}
	for i := range st.Windows {
		st.Windows[i].Index = i
	}
	st.Plan()
	rs := make([]Result, len(st.Specs))
	for i, sp := range st.Specs {
		bsld, held := 2.0, int64(7200)
		if sp.Mode == ModeMetered {
			bsld, held = 1, 3600
		}
		u := Users{Stats: trace.Stats{MeanBSLD: bsld, P95Wait: 3600}}
		rs[i] = Result{Policy: sp.Policy, Mode: sp.Mode, K: sp.K, Seed: sp.Seed, Window: sp.Window, Users: u,
			During: []During{{Seed: 1, Users: u}}, Converged: true}
		if sp.K > 0 {
			rs[i].Agents = []AgentResult{{GPUSeconds: held}}
		}
	}
	rs[0].Users.Stats.P95Wait = 0 // k = 0, window 0
	cs := Contrasts(st, rs)
	find := func(a, b string, k int, key string) *Contrast {
		for i := range cs {
			if c := &cs[i]; c.A == a && c.B == b && c.K == k && c.Metric == key {
				return c
			}
		}
		t.Fatalf("no contrast %s vs %s k=%d %s", a, b, k, key)
		return nil
	}
	c := find(ModeMetered, ModeUnmetered, 1, "users_mean_bsld")
	require.True(t, c.Ratio)
	assert.InDeltaSlice(t, []float64{math.Log(0.5), math.Log(0.5), math.Log(0.5), math.Log(0.5), math.Log(0.5)}, c.Values, 1e-15)
	assert.Equal(t, 5, c.Below)
	assert.Equal(t, 0.0, c.Test.WPlus)
	assert.InDelta(t, 0.0625, c.P, 1e-15)
	assert.InDelta(t, 0.5, math.Exp(c.Shift.Estimate), 1e-15)
	assert.Equal(t, AdjustHolm, c.Adjustment)
	assert.InDelta(t, 0.125, c.PAdj, 1e-15)
	g := find(ModeMetered, ModeUnmetered, 1, "agent_gpu_hours")
	assert.False(t, g.Ratio, "GPU-hours are compared as a difference")
	assert.Equal(t, []float64{-1, -1, -1, -1, -1}, g.Values)
	assert.Equal(t, AdjustHolm, g.Adjustment)
	assert.InDelta(t, 0.125, g.PAdj, 1e-15)
	w := find(ModeUnmetered, "k=0", 1, "users_p95_wait")
	assert.Equal(t, AdjustBH, w.Adjustment)
	assert.False(t, w.Primary())
	assert.True(t, math.IsNaN(w.Values[0]), "a zero wait gives no ratio")
	assert.Equal(t, 4, w.Shift.N)
	primary := 0
	for i := range cs {
		if cs[i].Primary() {
			primary++
		}
	}
	assert.Equal(t, 2, primary)
}

// Every member of the primary family names a contrast the default study
// computes, so that none drops out for a misspelt line; at most ten.
func TestPrimaryFamilyIsInTheDefaultStudy(t *testing.T) {
	require.LessOrEqual(t, len(PrimaryFamily), 10)
	st := NewStudy()
	st.Windows = make([]tracestudy.Window, 2)
	for i := range st.Windows {
		st.Windows[i].Index = i
	}
	st.Plan()
	rs := make([]Result, len(st.Specs))
	for i := range rs {
		rs[i].During = make([]During, len(st.Seeds))
	}
	cs := Contrasts(st, rs)
	n := 0
	for i := range cs {
		if cs[i].Primary() {
			n++
		}
	}
	assert.Equal(t, len(PrimaryFamily), n)
}
