package sweep

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/internal/stats"
)

// TestTIntervalHandWorked: xs = 1…5 has mean 3, sample standard deviation
// √2.5 = 1.581139 and standard error 1.581139/√5 = 0.707107; Student's t
// with 4 degrees of freedom has its 97.5 % quantile at 2.776445 (any t
// table), so the half-width is 1.963243 and the interval [1.036757,
// 4.963243].
func TestTIntervalHandWorked(t *testing.T) {
	iv := TInterval([]float64{1, 2, 3, 4, 5})
	assert.InDelta(t, 1.036757, iv.Lo, 1e-6)
	assert.InDelta(t, 4.963243, iv.Hi, 1e-6)

	// Two seeds: t(0.975, 1) = 12.706205; xs = {10, 12}: s = √2, se = 1.
	iv = TInterval([]float64{10, 12})
	assert.InDelta(t, 11-12.706205, iv.Lo, 1e-6)
	assert.InDelta(t, 11+12.706205, iv.Hi, 1e-6)

	// No spread, no width.
	iv = TInterval([]float64{4, 4, 4})
	assert.Equal(t, 4.0, iv.Lo)
	assert.Equal(t, 4.0, iv.Hi)
}

func TestTIntervalUndefined(t *testing.T) {
	for _, xs := range [][]float64{nil, {3}, {1, math.NaN(), 2}} {
		iv := TInterval(xs)
		assert.True(t, math.IsNaN(iv.Lo) && math.IsNaN(iv.Hi), "%v", xs)
	}
}

// The t interval is centred on BandOf's mean, bit for bit, and holds it.
func TestTIntervalContainsTheMean(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		xs := rapid.SliceOfN(rapid.Float64Range(-1e6, 1e6), 2, 40).Draw(t, "xs")
		b := bandCI(xs)
		if !(b.CI.Lo <= b.Mean && b.Mean <= b.CI.Hi) {
			t.Fatalf("interval [%v, %v] misses the mean %v", b.CI.Lo, b.CI.Hi, b.Mean)
		}
		if d := (b.CI.Hi - b.Mean) - (b.Mean - b.CI.Lo); math.Abs(d) > 1e-9*math.Max(1, math.Abs(b.CI.Hi-b.CI.Lo)) {
			t.Fatalf("interval not symmetric about the mean: %v", d)
		}
	})
}

// The resampling shortcut (counts.percentile) is engine.Percentile of the
// pooled lists of the picked seeds, for any lists and any pick.
func TestCountsPercentileIsEnginePercentile(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lists := rapid.SliceOfN(rapid.SliceOfN(rapid.IntRange(0, 700), 0, 30), 1, 8).Draw(t, "lists")
		pick := rapid.SliceOfN(rapid.IntRange(0, len(lists)-1), 1, 10).Draw(t, "pick")
		p := rapid.SampledFrom([]float64{0, 5, 25, 50, 95, 99, 100}).Draw(t, "p")
		var pool []int
		for _, s := range pick {
			pool = append(pool, lists[s]...)
		}
		want := stats.Percentile(pool, p)
		got, ok := newCounts(lists).percentile(pick, p)
		if math.IsNaN(want) {
			if ok {
				t.Fatalf("empty pool gave %v", got)
			}
			return
		}
		if !ok || got != want {
			t.Fatalf("percentile %v of %v: got %v (ok %v), want %v", p, pool, got, ok, want)
		}
	})
}

var bootLists = [][]int{
	{12, 40, 61, 62, 63, 80},
	{30, 61, 61, 70, 591},
	{5, 62, 62, 64, 65, 66, 300},
}

func TestPooledCIIsDeterministic(t *testing.T) {
	b := configs.Bootstrap{Seed: 9, Resamples: 500}
	s := Stream{Experiment: "e", Point: 3, Quantity: "probe_p50"}
	first := PooledCI(bootLists, 50, b, s)
	for range 5 {
		assert.Equal(t, first, PooledCI(bootLists, 50, b, s))
	}
	// The interval holds the estimate, and is made of observed values.
	est := Pooled(bootLists, 50)
	assert.LessOrEqual(t, first.Lo, est)
	assert.GreaterOrEqual(t, first.Hi, est)
	var all []int
	for _, l := range bootLists {
		all = append(all, l...)
	}
	assert.Contains(t, all, int(first.Lo))
	assert.Contains(t, all, int(first.Hi))

	// Another seed or another stream draws other resamples: at the 95th
	// percentile of these lists the bounds depend on whether a resample
	// misses the seed that saw 591, so 1000 resamples of two streams
	// differ in some bound for some stream among a few.
	differ := false
	for q := range 5 {
		s2 := Stream{Experiment: "e", Point: q, Quantity: "probe_p95"}
		a := PooledCI(bootLists, 95, configs.Bootstrap{Seed: 1, Resamples: 7}, s2)
		c := PooledCI(bootLists, 95, configs.Bootstrap{Seed: 2, Resamples: 7}, s2)
		differ = differ || a != c
	}
	assert.True(t, differ, "the bootstrap seed has no effect")
}

func TestPooledCIUndefined(t *testing.T) {
	b := configs.DefaultBootstrap
	for _, lists := range [][][]int{nil, {{1, 2, 3}}, {{}, {}}} {
		iv := PooledCI(lists, 50, b, Stream{})
		assert.True(t, math.IsNaN(iv.Lo) && math.IsNaN(iv.Hi), "%v", lists)
	}
	// A seed without observations is resampled too; resamples of only
	// such seeds are left out.
	iv := PooledCI([][]int{{}, {5, 6, 7}}, 50, b, Stream{})
	assert.Equal(t, 6.0, iv.Lo)
	assert.Equal(t, 6.0, iv.Hi)
}

// Every seed at the probe's censor: the estimate and both bounds sit at
// 591, and the summary flags the estimate as a lower bound.
func TestCensoredPooledPercentile(t *testing.T) {
	lists := [][]int{{591, 591}, {591}, {400, 591, 591}}
	est := Pooled(lists, 50)
	assert.Equal(t, float64(ProbeCensor), est)
	assert.True(t, Censored(est))
	assert.False(t, Censored(590))
	iv := PooledCI(lists, 50, configs.DefaultBootstrap, Stream{})
	assert.Equal(t, float64(ProbeCensor), iv.Hi)
	assert.True(t, Censored(iv.Hi))
}

// Intervals are reduced after the runs, from streams named by experiment,
// point and quantity: the summary of a grid is identical at 1 and 3
// workers, and changes with the config's bootstrap seed.
func TestGenericIntervalsDoNotDependOnWorkers(t *testing.T) {
	c, err := configs.Parse("g.yaml", []byte(`
experiment: tiny
seeds: [7, 11, 13]
fixed: {probe: true, ticks: 2400}
grid: {grace: [30, 60]}
`))
	require.NoError(t, err)
	p, err := c.Plan(false, nil)
	require.NoError(t, err)
	var out [][]byte
	for _, w := range []int{1, 3} {
		results, err := Execute(context.Background(), []*configs.Plan{p}, Options{Workers: w})
		require.NoError(t, err)
		out = append(out, GenericSummary(results[0]))
	}
	assert.Equal(t, string(out[0]), string(out[1]))

	results, err := Execute(context.Background(), []*configs.Plan{p}, Options{Workers: 2})
	require.NoError(t, err)
	pts := ReduceGeneric(results[0])
	for _, gp := range pts {
		assert.Equal(t, 3, gp.N)
		for k, e := range gp.Probe {
			if math.IsNaN(e.Value) {
				continue
			}
			assert.LessOrEqual(t, e.CI.Lo, e.Value, ProbeQuantities[k].Name)
			assert.GreaterOrEqual(t, e.CI.Hi, e.Value, ProbeQuantities[k].Name)
		}
		u := gp.Metrics[slices.Index(engine.ScalarKeys, "utilization")]
		assert.LessOrEqual(t, u.CI.Lo, u.Mean)
		assert.GreaterOrEqual(t, u.CI.Hi, u.Mean)
	}
}

// BenchmarkPooledCI: one interval over 30 seeds of 40 latencies each, the
// size of a `--nseeds 30` grid point, with the default 2000 resamples.
func BenchmarkPooledCI(b *testing.B) {
	lists := make([][]int, 30)
	for s := range lists {
		for i := range 40 {
			lists[s] = append(lists[s], (s*37+i*53)%600)
		}
	}
	st := Stream{Experiment: "bench", Point: 1, Quantity: "probe_p50"}
	b.ReportAllocs()
	for b.Loop() {
		_ = PooledCI(lists, 50, configs.DefaultBootstrap, st)
	}
}
