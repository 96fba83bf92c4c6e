package sweep

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/engine"
)

// The wire form of a run's metrics, worked by hand: the model's scalars
// in engine.ScalarMetrics' order (counts as integers, NaN as null), the
// probe's lists (nil as null, empty as []), the study metrics by key
// when measured; and it decodes to the run that was encoded.
func TestWireMetricsByHand(t *testing.T) {
	m := engine.Metrics{
		VictimP50In: 1.5, VictimP95In: math.NaN(), VictimP50Out: 3, VictimP95Out: 4, VictimViolationsIn: 5,
		SciBurstP50: 6, SciBurstP95: 7, SciBurstP95In: 8, Warm: 9, Reclaim: 10, Cold: 11,
		Utilization: 0.25, ProductiveUtilization: 0.125, StormMeanHeld: 14, StormPeakHeld: 15,
		StormExcessGPUSeconds: 16, NaiveScience: 17, NaiveSpent: 18, AdaptiveScience: 19, AdaptiveSpent: math.Inf(1),
		ProbeLatsIn: []int{},
	}
	want := `{"victim_p50_in":1.5,"victim_p95_in":null,"victim_p50_out":3,"victim_p95_out":4,"victim_violations_in":5,` +
		`"sci_burst_p50":6,"sci_burst_p95":7,"sci_burst_p95_in":8,"warm":9,"reclaim":10,"cold":11,` +
		`"utilization":0.25,"productive_utilization":0.125,"storm_mean_held":14,"storm_peak_held":15,` +
		`"storm_excess_gpu_s":16,"naive_science":17,"naive_spent":18,"adaptive_science":19,"adaptive_spent":"+Inf",` +
		`"probe_lats":null,"probe_lats_in":[]}`
	b, err := json.Marshal(toWire(&m))
	require.NoError(t, err)
	require.Equal(t, want, string(b))

	var w wireMetrics
	require.NoError(t, json.Unmarshal(b, &w))
	back := w.metrics()
	assert.True(t, math.IsNaN(back.VictimP95In))
	back.VictimP95In, m.VictimP95In = 0, 0
	assert.Equal(t, m, back)

	m.Study = &engine.StudyMetrics{VictimExpired: 2, JainStorm: 0.5}
	b, err = json.Marshal(toWire(&m))
	require.NoError(t, err)
	require.Contains(t, string(b), `"probe_lats_in":[],"study":{"adaptive_expired":0,`)
	require.NoError(t, json.Unmarshal(b, &w))
	assert.Equal(t, *m.Study, *w.metrics().Study)
}
