package arrive

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/trace"
	"github.com/bursar-hpc/bursar/tracestudy"
)

// excerpt is a copy of testdata/traces/SDSC-SP2-1998-4.2-cln.days252-280.swf.
const excerpt = "testdata/SDSC-SP2-1998-4.2-cln.days252-280.swf"

func loadDays(t testing.TB, days int) *trace.Workload {
	t.Helper()
	w, err := trace.Load(excerpt, trace.Options{From: DefaultFrom, Until: DefaultFrom + int64(days)*86400})
	require.NoError(t, err)
	return w
}

// Hand-worked §6.14: q × pool / 512 rounded down, at least 1.
func TestScaleHandWorked(t *testing.T) {
	for _, c := range []struct{ q, pool, want int }{
		{384, 128, 96}, {16, 128, 4}, {64, 100, 12}, {1, 128, 1}, {3, 128, 1}, {384, 512, 384}, {384, 1024, 768}, {16, 8, 1},
	} {
		require.Equal(t, c.want, ScaleGPUs(c.q, c.pool), "ScaleGPUs(%d, %d)", c.q, c.pool)
	}
	for _, c := range []struct {
		x    float64
		pool int
		want float64
	}{{64, 128, 16}, {150000, 128, 37500}, {128, 100, 25}, {300000, 100, 58593}, {0.5, 512, 1}} {
		require.Equal(t, c.want, ScaleRate(c.x, c.pool), "ScaleRate(%g, %d)", c.x, c.pool)
	}
	// The SDSC-SP2 pool (128): the paper's storm (g 16, R 64, burst 384,
	// B 150000, target 384) becomes g 4, R 16, burst 96, B 37500, target 96.
	cast, err := Cast(4, 128, 3600)
	require.NoError(t, err)
	require.Equal(t, []string{"storm-1", "naive-sci-1", "adaptive-sci-1", "storm-2"},
		[]string{cast[0].Name, cast[1].Name, cast[2].Name, cast[3].Name})
	s := cast[0]
	require.Equal(t, []float64{4, 16, 96, 37500, 96}, []float64{float64(s.Guaranteed), s.Sustained, float64(s.BurstCeiling), s.Bucket, float64(s.GPUs)})
	require.Equal(t, engine.Window{Start: 1, End: 3600}, s.Window)
	// adaptive-sci: g 64 → 16, R 128 → 32, burst 384 → 96, B 300000 →
	// 75000, wants 384/64/32 → 96/16/8, opportunistic 96/64 → 24/16.
	a := cast[2]
	require.Equal(t, []int{16, 96, 96, 16, 8, 24, 16}, []int{a.Guaranteed, a.BurstCeiling, a.GPUs, a.MinGPUs, a.StarvedGPUs, a.OpportunisticMax, a.OpportunisticKeep})
	require.Equal(t, []float64{32, 75000}, []float64{a.Sustained, a.Bucket})
	require.Equal(t, 256/4, cast[1].GPUs)
	require.Equal(t, 2, a.Stream)
}

func TestScaleProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		q := rapid.IntRange(0, 100000).Draw(t, "q")
		pool := rapid.IntRange(1, 1<<20).Draw(t, "pool")
		got := ScaleGPUs(q, pool)
		if got < 1 {
			t.Fatalf("ScaleGPUs(%d, %d) = %d < 1", q, pool, got)
		}
		// Rounded down: never above the exact scaled value unless lifted to 1.
		if got > 1 && float64(got) > float64(q)*float64(pool)/PaperPool {
			t.Fatalf("ScaleGPUs(%d, %d) = %d rounds up", q, pool, got)
		}
		if float64(got+1) <= float64(q)*float64(pool)/PaperPool {
			t.Fatalf("ScaleGPUs(%d, %d) = %d drops a whole GPU", q, pool, got)
		}
		if r := ScaleRate(float64(q), pool); r != float64(got) {
			t.Fatalf("ScaleRate(%d, %d) = %g, ScaleGPUs %d", q, pool, r, got)
		}
	})
}

// k = 0 is the plain trace replay of the same window under the same
// policy: the same trace users' metrics, in both modes.
func TestNoAgentsIsThePlainReplay(t *testing.T) {
	w := loadDays(t, 2)
	for _, p := range policies.Names {
		plain, err := tracestudy.RunOne(w, tracestudy.Spec{Policy: p, Knobs: policies.TraceKnobs()})
		require.NoError(t, err)
		for _, m := range []string{ModeSite, ModeMetered} {
			r, err := RunOne(w, Spec{Policy: p, Mode: m, K: 0, Seed: 1}, Stay{Stay: 3600})
			require.NoError(t, err)
			all := plain.Summary.All
			require.Equal(t, trace.Stats{Jobs: all.Jobs - all.Censored, MeanWait: all.MeanWait, P50Wait: all.P50Wait, P95Wait: all.P95Wait,
				MeanBSLD: all.MeanBSLD, P95BSLD: all.P95BSLD}, r.Users, "%s %s", p, m)
			require.Equal(t, plain.Summary.Denied, r.Unserved, "%s %s", p, m)
			require.Equal(t, plain.Preemptions, r.Preemptions, "%s %s", p, m)
			require.Equal(t, plain.Ticks, r.Ticks, "%s %s: the agents' site must skip as the plain replay does", p, m)
			require.Zero(t, r.AgentGPUSeconds)
		}
	}
}

// The same specs give the same results with one worker or two.
func TestDeterministicAcrossWorkers(t *testing.T) {
	w := loadDays(t, 1)
	specs := Specs([]string{"fifo", "bursar", "quota"}, []string{ModeSite, ModeMetered}, 3, []int64{1, 2})
	one, err := Execute(context.Background(), w, specs, Stay{Stay: 1800}, 1, nil)
	require.NoError(t, err)
	two, err := Execute(context.Background(), w, specs, Stay{Stay: 1800}, 2, nil)
	require.NoError(t, err)
	require.Equal(t, one, two)
	again, err := Execute(context.Background(), w, specs, Stay{Stay: 1800}, 2, nil)
	require.NoError(t, err)
	require.Equal(t, one, again)
}

// Metering cuts what the agents take: with the same agents, the metered
// run's agents hold no more than the site run's under fifo (the meter only
// refuses or shrinks requests), and the meter refuses some requests.
func TestMeteredAgentsTakeLess(t *testing.T) {
	w := loadDays(t, 1)
	site, err := RunOne(w, Spec{Policy: "fifo", Mode: ModeSite, K: 3, Seed: 1}, Stay{Stay: 3600})
	require.NoError(t, err)
	met, err := RunOne(w, Spec{Policy: "fifo", Mode: ModeMetered, K: 3, Seed: 1}, Stay{Stay: 3600})
	require.NoError(t, err)
	require.Zero(t, site.MeterRefusals)
	require.Positive(t, met.MeterRefusals)
	require.Less(t, met.AgentGPUSeconds, site.AgentGPUSeconds)
	require.Positive(t, met.AgentGPUSeconds)
}

func TestBadSpecs(t *testing.T) {
	w := loadDays(t, 1)
	_, err := RunOne(w, Spec{Policy: "fifo", Mode: "both", K: 1}, Stay{Stay: 10})
	require.ErrorContains(t, err, `mode "both"`)
	_, err = RunOne(w, Spec{Policy: "fifo", Mode: ModeSite, K: -1}, Stay{Stay: 10})
	require.ErrorContains(t, err, "k -1")
	_, err = Execute(context.Background(), w, nil, Stay{Stay: 10}, 0, nil)
	require.ErrorContains(t, err, "workers")
}
