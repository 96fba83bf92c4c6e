package sweep

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/figures"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBandByHand(t *testing.T) {
	// Seeds 7, 11, 13 gave 0.80, 0.95, 0.86: mean 2.61/3 = 0.87.
	b := BandOf([]float64{0.80, 0.95, 0.86})
	assert.InDelta(t, 0.87, b.Mean, 1e-12)
	assert.Equal(t, 0.80, b.Min)
	assert.Equal(t, 0.95, b.Max)

	assert.Equal(t, figures.Band{Mean: 5, Min: 5, Max: 5}, BandOf([]float64{5}))
	assert.Equal(t, figures.Band{Mean: 0, Min: -3, Max: 3}, BandOf([]float64{-3, 3}))
}

func TestBandWithNaNIsNaN(t *testing.T) {
	for _, xs := range [][]float64{nil, {1, math.NaN(), 3}, {math.NaN()}} {
		b := BandOf(xs)
		assert.True(t, math.IsNaN(b.Mean) && math.IsNaN(b.Min) && math.IsNaN(b.Max), "%v → %+v", xs, b)
	}
}

func TestPooledByHand(t *testing.T) {
	// Seeds give [62, 61, 590], [63], [] → pooled [62 61 590 63], sorted
	// [61 62 63 590]: p50 is element trunc(0.5·4) = 2 → 63; p95 element
	// min(3, trunc(3.8)) = 3 → 590; p0 → 61.
	a, b, c := []int{62, 61, 590}, []int{63}, []int{}
	lists := [][]int{a, b, c}
	assert.Equal(t, 63.0, Pooled(lists, 50))
	assert.Equal(t, 590.0, Pooled(lists, 95))
	assert.Equal(t, 61.0, Pooled(lists, 0))
	assert.Equal(t, []int{62, 61, 590}, a, "the runs' lists stay in observation order")

	// Pooling is not the mean of per-seed percentiles: per seed p50s are
	// 62 and 63 (mean 62.5), the pooled p50 is 63.
	assert.True(t, math.IsNaN(Pooled([][]int{{}, nil}, 50)))
	assert.True(t, math.IsNaN(Pooled(nil, 50)))
	// A single observation is every percentile.
	assert.Equal(t, 7.0, Pooled([][]int{{7}}, 95))
}

func TestPhiMatchesThePublishedFormula(t *testing.T) {
	s := engine.DefaultScenario()
	for storms := 1; storms <= 6; storms++ {
		s.Storms = storms
		want := (64 + 2*384 + 384*float64(storms) + 512) / 512
		assert.Equal(t, want, Phi(&s))
	}
	s.Storms = 6
	assert.InDelta(t, 7.125, Phi(&s), 1e-12, "Σ burst ceilings up to 7.1× the pool")
}

// handResults builds Results for a config with metrics given per run, so
// that the reductions can be checked against hand-worked numbers.
func handResults(t *testing.T, src string, fill func(run int, m *engine.Metrics)) *Results {
	t.Helper()
	c, err := configs.Parse("hand.yaml", []byte(src))
	require.NoError(t, err)
	p, err := c.Plan(false, nil)
	require.NoError(t, err)
	r := &Results{Plan: p, Metrics: make([]engine.Metrics, p.NumRuns())}
	for i := range r.Metrics {
		m := &r.Metrics[i]
		m.VictimP50In, m.VictimP95In, m.VictimP50Out, m.VictimP95Out = math.NaN(), math.NaN(), math.NaN(), math.NaN()
		m.SciBurstP50, m.SciBurstP95, m.SciBurstP95In = math.NaN(), math.NaN(), math.NaN()
		fill(i, m)
	}
	return r
}

func TestLatencyPriceSummaryByHand(t *testing.T) {
	r := handResults(t, `
experiment: latency-price
seeds: [7, 11]
fixed: {probe: true}
series:
  - name: headroom
    grid: {headroom: [16, 256]}
  - name: grace
    grid: {grace: [15]}
`, func(run int, m *engine.Metrics) {
		// Runs: 0,1 headroom 16 (seeds 7, 11); 2,3 headroom 256; 4,5 grace 15.
		m.Utilization = []float64{0.875, 0.625, 0.75, 0.80, 0.5, 0.5}[run]
		m.ProbeLats = [][]int{{60, 64}, {62}, {}, {}, {17, 17, 16}, {18}}[run]
	})
	p, err := ReducePaper([]*Results{r})
	require.NoError(t, err)
	// headroom 16: utilization (0.875+0.625)/2 = 0.75; pooled [60 64 62] → 62.
	// headroom 256: no probe observation → null. grace 15: [16 17 17 18] → 17.
	assert.JSONEq(t, `{
		"headroom": [
			{"headroom": 16, "utilization": 0.75, "probe_p50": 62},
			{"headroom": 256, "utilization": 0.775, "probe_p50": null}
		],
		"grace": [{"grace": 15, "probe_p50": 17}]
	}`, publishedOnly(t, p.Summary.JSON()))
	require.NotNil(t, p.LatencyPrice)
	h := p.LatencyPrice.Headroom[0]
	assert.Equal(t, 0.625, h.Utilization.Min)
	assert.Equal(t, 0.875, h.Utilization.Max)
	assert.Equal(t, 64.0, h.ProbeP95)
	assert.Nil(t, p.Overbooking)

	// The intervals. Utilization at headroom 16: s = 0.125·√2, se = 0.125,
	// t(0.975, 1) = 12.706205, so 0.75 ± 1.588276. The probe's p50 over
	// seeds {60, 64} and {62}: a resample of seed 7 twice pools
	// [60 60 64 64] → 64, seed 11 twice [62 62] → 62, one of each
	// [60 62 64] → 62; 64 comes up in a quarter of the resamples, so the
	// 2.5 % and 97.5 % quantiles are 62 and 64. Headroom 256 saw nothing.
	// Grace 15, {16 17 17} and {18}: 17, 18 and 17, so [17, 18].
	rows := p.Summary.Headroom
	assert.InDelta(t, 0.75-1.588276, float64(rows[0].UtilizationLo), 1e-6)
	assert.InDelta(t, 0.75+1.588276, float64(rows[0].UtilizationHi), 1e-6)
	assert.Equal(t, Number(62), rows[0].ProbeP50Lo)
	assert.Equal(t, Number(64), rows[0].ProbeP50Hi)
	assert.Equal(t, 3, rows[0].ProbeN)
	assert.Equal(t, 2, rows[0].N)
	assert.True(t, math.IsNaN(float64(rows[1].ProbeP50Lo)) && math.IsNaN(float64(rows[1].ProbeP50Hi)))
	assert.Equal(t, 0, rows[1].ProbeN)
	assert.False(t, rows[1].ProbeP50Censored)
	g := p.Summary.Grace[0]
	assert.Equal(t, Number(17), g.ProbeP50Lo)
	assert.Equal(t, Number(18), g.ProbeP50Hi)
	assert.Equal(t, 4, g.ProbeN)
	assert.Equal(t, float64(ProbeCensor), p.LatencyPrice.Censor)
	assert.Nil(t, p.Bucket)
}

// TestPaperSummaryRecordsTheBootstrap: summary.json names each
// experiment's resampling (seed, resamples), in the order the experiments
// ran, so that its intervals can be recomputed from the file alone.
func TestPaperSummaryRecordsTheBootstrap(t *testing.T) {
	lp := handResults(t, `
experiment: latency-price
seeds: [7, 11]
bootstrap: {seed: 42, resamples: 300}
series:
  - name: headroom
    grid: {headroom: [16]}
  - name: grace
    grid: {grace: [15]}
`, func(run int, m *engine.Metrics) { m.ProbeLats = [][]int{{60, 64}, {62}, {17}, {18}}[run] })
	ob := handResults(t, "experiment: overbooking\nseeds: [7]\ngrid: {storms: [1]}\n", func(int, *engine.Metrics) {})
	p, err := ReducePaper([]*Results{ob, lp})
	require.NoError(t, err)
	var doc struct {
		Bootstrap []map[string]any `json:"bootstrap"`
	}
	require.NoError(t, json.Unmarshal(p.Summary.JSON(), &doc))
	assert.Equal(t, []map[string]any{
		{"experiment": "overbooking", "seed": 1.0, "resamples": 2000.0},
		{"experiment": "latency-price", "seed": 42.0, "resamples": 300.0},
	}, doc.Bootstrap)
	// The recorded parameters redraw the published interval exactly.
	want := PooledCI([][]int{{60, 64}, {62}}, 50, configs.Bootstrap{Seed: 42, Resamples: 300},
		Stream{Experiment: "latency-price", Point: 0, Quantity: "probe_p50"})
	assert.Equal(t, Number(want.Lo), p.Summary.Headroom[0].ProbeP50Lo)
	assert.Equal(t, Number(want.Hi), p.Summary.Headroom[0].ProbeP50Hi)
}

func TestOverbookingSummaryByHand(t *testing.T) {
	r := handResults(t, `
experiment: overbooking
seeds: [7, 11, 13]
fixed: {probe: true}
grid: {storms: [1, 6]}
`, func(run int, m *engine.Metrics) {
		m.VictimP95In = []float64{1, 1, 4, 2, 1, 3}[run]
		m.VictimViolationsIn = []int{0, 0, 0, 1, 0, 2}[run]
		m.ProbeLatsIn = [][]int{{41}, {40, 42}, {50}, {591}, {591, 591}, {300}}[run]
	})
	p, err := ReducePaper([]*Results{r})
	require.NoError(t, err)
	assert.JSONEq(t, `{"overbooking": [
		{"n_storms": 1, "phi": 3.375, "victim_p95_in": 2, "victim_violations": 0, "probe_p50_in": 42},
		{"n_storms": 6, "phi": 7.125, "victim_p95_in": 2, "victim_violations": 1, "probe_p50_in": 591}
	]}`, publishedOnly(t, p.Summary.JSON()))
	d := p.Overbooking
	assert.Equal(t, 3, d.Violations, "total over every point and seed")
	// Victim p95 {1, 1, 4}: s = √3, se = 1, t(0.975, 2) = 4.302653.
	// Violations {1, 0, 2}: s = 1, se = 1/√3, half-width 2.484138.
	assert.Equal(t, 2.0, d.Points[0].VictimP95In.Mean)
	assert.Equal(t, 1.0, d.Points[0].VictimP95In.Min)
	assert.Equal(t, 4.0, d.Points[0].VictimP95In.Max)
	assert.InDelta(t, 2-4.302653, d.Points[0].VictimP95In.CI.Lo, 1e-6)
	assert.InDelta(t, 2+4.302653, d.Points[0].VictimP95In.CI.Hi, 1e-6)
	rows := p.Summary.Overbooking
	assert.Equal(t, Number(0), rows[0].VictimViolationsLo)
	assert.Equal(t, Number(0), rows[0].VictimViolationsHi)
	assert.InDelta(t, 1-2.484138, float64(rows[1].VictimViolationsLo), 1e-6)
	assert.InDelta(t, 1+2.484138, float64(rows[1].VictimViolationsHi), 1e-6)
	// storms 6 pools [591 591 591 300]: p50 is 591, the censor, a lower
	// bound; storms 1 pools [41 40 42 50] → 42, not censored.
	assert.True(t, rows[1].ProbeP50InCensored)
	assert.False(t, rows[0].ProbeP50InCensored)
	assert.Equal(t, 4, rows[1].ProbeNIn)
	assert.Equal(t, 3, rows[1].N)
	assert.Equal(t, Number(591), rows[1].ProbeP50InHi)
	assert.Equal(t, 50.0, d.Points[0].ProbeP95In)
	assert.Equal(t, float64(ProbeCensor), d.Censor)
	assert.Equal(t, float64(VictimBound), d.VictimBound)
}

func TestBucketSummaryByHand(t *testing.T) {
	r := handResults(t, `
experiment: bucket
seeds: [7, 11]
grid: {storm_bucket: [25000, 50000]}
series:
  - name: contended
  - name: idle-prepaid
    fixed: {tasks: 0}
  - name: idle-leaky
    fixed: {tasks: 0, leaky: true}
`, func(run int, m *engine.Metrics) {
		m.StormExcessGPUSeconds = []float64{26000, 26100, 51000, 51200, 25000, 25050, 50000, 50500, 166000, 167000, 179000, 180000}[run]
	})
	p, err := ReducePaper([]*Results{r})
	require.NoError(t, err)
	assert.JSONEq(t, `{"bucket": [
		{"storm_B": 25000, "excess_contended": 26050, "excess_idle_prepaid": 25025, "excess_idle_leaky": 166500},
		{"storm_B": 50000, "excess_contended": 51100, "excess_idle_prepaid": 50250, "excess_idle_leaky": 179500}
	]}`, publishedOnly(t, p.Summary.JSON()))
	assert.Equal(t, 64.0, p.Bucket.StormRate)
	assert.Equal(t, 1800.0, p.Bucket.Window)
	// {166000, 167000}: s = 707.107, se = 500, t(0.975, 1) = 12.706205.
	leaky := p.Bucket.Points[0].IdleLeaky
	assert.Equal(t, 166500.0, leaky.Mean)
	assert.Equal(t, 166000.0, leaky.Min)
	assert.Equal(t, 167000.0, leaky.Max)
	assert.InDelta(t, 166500-6353.1025, leaky.CI.Lo, 1e-3)
	assert.InDelta(t, 166500+6353.1025, leaky.CI.Hi, 1e-3)
	assert.Equal(t, Number(leaky.CI.Lo), p.Summary.Bucket[0].ExcessIdleLeakyLo)
	assert.Equal(t, 2, p.Summary.Bucket[1].N)
}

// publishedOnly is a summary with only the keys of experiments.md: the
// hand-worked tests check those exactly and the added intervals, counts
// and flags one by one.
func publishedOnly(t *testing.T, js []byte) string {
	t.Helper()
	var doc map[string][]map[string]any
	require.NoError(t, json.Unmarshal(js, &doc))
	delete(doc, "bootstrap") // how the intervals were drawn, not a published key
	for _, rows := range doc {
		for _, row := range rows {
			for k := range row {
				if k == "n" || k == "probe_n" || k == "probe_n_in" || strings.HasSuffix(k, "_lo") ||
					strings.HasSuffix(k, "_hi") || strings.HasSuffix(k, "_censored") {
					delete(row, k)
				}
			}
		}
	}
	out, err := json.Marshal(doc)
	require.NoError(t, err)
	return string(out)
}

func TestPaperShapeErrors(t *testing.T) {
	cases := map[string]string{
		"latency-price without grace": "experiment: latency-price\nseeds: [7]\nseries:\n  - name: headroom\n    grid: {headroom: [16]}\n",
		"headroom sweeping two knobs": "experiment: latency-price\nseeds: [7]\nseries:\n  - name: headroom\n    grid: {headroom: [16], grace: [15]}\n  - name: grace\n    grid: {grace: [15]}\n",
		"overbooking with two series": "experiment: overbooking\nseeds: [7]\ngrid: {storms: [1]}\nseries: [{name: a}, {name: b}]\n",
		"bucket misaligned":           "experiment: bucket\nseeds: [7]\nseries:\n  - {name: contended, grid: {storm_bucket: [1, 2]}}\n  - {name: idle-prepaid, grid: {storm_bucket: [1, 3]}}\n  - {name: idle-leaky, grid: {storm_bucket: [1, 2]}}\n",
		"not a paper experiment":      "experiment: mine\nseeds: [7]\n",
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := configs.Parse("shape.yaml", []byte(src))
			require.NoError(t, err)
			p, err := c.Plan(false, nil)
			require.NoError(t, err)
			err = CheckPaperPlan(p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "shape.yaml")
		})
	}
}
