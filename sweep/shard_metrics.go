package sweep

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/bursar-hpc/bursar/engine"
)

// ExactFloat is a float64 that survives a trip through JSON bit for bit:
// a finite value as the shortest decimal that parses back to the same
// float64 (strconv's 'g', -1), NaN (a percentile of nothing) as null and
// an infinity as the string "+Inf" or "-Inf". Shard files and cache
// entries store metrics this way, so that a merged or cached sweep reduces
// exactly the numbers a single process would have.
type ExactFloat float64

func (f ExactFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return []byte("null"), nil
	case math.IsInf(v, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Inf"`), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

func (f *ExactFloat) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "null":
		*f = ExactFloat(math.NaN())
		return nil
	case `"+Inf"`:
		*f = ExactFloat(math.Inf(1))
		return nil
	case `"-Inf"`:
		*f = ExactFloat(math.Inf(-1))
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("%s is not a number, null, \"+Inf\" or \"-Inf\"", b)
	}
	*f = ExactFloat(v)
	return nil
}

// wireMetrics is engine.Metrics as stored in shard files and cache
// entries, keyed as in runs.csv (engine.ScalarKeys) so that a file reads
// without this program.
type wireMetrics struct {
	VictimP50In           ExactFloat `json:"victim_p50_in"`
	VictimP95In           ExactFloat `json:"victim_p95_in"`
	VictimP50Out          ExactFloat `json:"victim_p50_out"`
	VictimP95Out          ExactFloat `json:"victim_p95_out"`
	VictimViolationsIn    int        `json:"victim_violations_in"`
	SciBurstP50           ExactFloat `json:"sci_burst_p50"`
	SciBurstP95           ExactFloat `json:"sci_burst_p95"`
	SciBurstP95In         ExactFloat `json:"sci_burst_p95_in"`
	Warm                  int        `json:"warm"`
	Reclaim               int        `json:"reclaim"`
	Cold                  int        `json:"cold"`
	Utilization           ExactFloat `json:"utilization"`
	ProductiveUtilization ExactFloat `json:"productive_utilization"`
	StormMeanHeld         ExactFloat `json:"storm_mean_held"`
	StormPeakHeld         int        `json:"storm_peak_held"`
	StormExcessGPUSeconds ExactFloat `json:"storm_excess_gpu_s"`
	NaiveScience          ExactFloat `json:"naive_science"`
	NaiveSpent            ExactFloat `json:"naive_spent"`
	AdaptiveScience       ExactFloat `json:"adaptive_science"`
	AdaptiveSpent         ExactFloat `json:"adaptive_spent"`
	// The lists keep nil (null) apart from empty ([]), so that a decoded
	// run is the run that was encoded.
	ProbeLats   []int `json:"probe_lats"`
	ProbeLatsIn []int `json:"probe_lats_in"`
	// Study are the policy-study metrics (engine.StudyKeys), only for a
	// run whose scenario names its policy.
	Study map[string]ExactFloat `json:"study,omitempty"`
}

func toWire(m *engine.Metrics) wireMetrics {
	return wireMetrics{
		VictimP50In: ExactFloat(m.VictimP50In), VictimP95In: ExactFloat(m.VictimP95In),
		VictimP50Out: ExactFloat(m.VictimP50Out), VictimP95Out: ExactFloat(m.VictimP95Out),
		VictimViolationsIn: m.VictimViolationsIn,
		SciBurstP50:        ExactFloat(m.SciBurstP50), SciBurstP95: ExactFloat(m.SciBurstP95), SciBurstP95In: ExactFloat(m.SciBurstP95In),
		Warm: m.Warm, Reclaim: m.Reclaim, Cold: m.Cold,
		Utilization: ExactFloat(m.Utilization), ProductiveUtilization: ExactFloat(m.ProductiveUtilization),
		StormMeanHeld: ExactFloat(m.StormMeanHeld), StormPeakHeld: m.StormPeakHeld,
		StormExcessGPUSeconds: ExactFloat(m.StormExcessGPUSeconds),
		NaiveScience:          ExactFloat(m.NaiveScience), NaiveSpent: ExactFloat(m.NaiveSpent),
		AdaptiveScience: ExactFloat(m.AdaptiveScience), AdaptiveSpent: ExactFloat(m.AdaptiveSpent),
		ProbeLats: m.ProbeLats, ProbeLatsIn: m.ProbeLatsIn,
		Study: studyWire(m.Study),
	}
}

func studyWire(st *engine.StudyMetrics) map[string]ExactFloat {
	if st == nil {
		return nil
	}
	out := make(map[string]ExactFloat, len(engine.StudyKeys))
	for _, sc := range st.Scalars() {
		out[sc.Key] = ExactFloat(sc.Value)
	}
	return out
}

func (w *wireMetrics) metrics() engine.Metrics {
	var st *engine.StudyMetrics
	if w.Study != nil {
		st = new(engine.StudyMetrics)
		// Keys this program does not know (a newer writer's) are left
		// out; the program version in every entry keeps them apart.
		for _, key := range engine.StudyKeys {
			if v, ok := w.Study[key]; ok {
				st.SetScalar(key, float64(v))
			}
		}
	}
	return engine.Metrics{
		Study:       st,
		VictimP50In: float64(w.VictimP50In), VictimP95In: float64(w.VictimP95In),
		VictimP50Out: float64(w.VictimP50Out), VictimP95Out: float64(w.VictimP95Out),
		VictimViolationsIn: w.VictimViolationsIn,
		SciBurstP50:        float64(w.SciBurstP50), SciBurstP95: float64(w.SciBurstP95), SciBurstP95In: float64(w.SciBurstP95In),
		ProbeLats: w.ProbeLats, ProbeLatsIn: w.ProbeLatsIn,
		Warm: w.Warm, Reclaim: w.Reclaim, Cold: w.Cold,
		Utilization: float64(w.Utilization), ProductiveUtilization: float64(w.ProductiveUtilization),
		StormMeanHeld: float64(w.StormMeanHeld), StormPeakHeld: w.StormPeakHeld,
		StormExcessGPUSeconds: float64(w.StormExcessGPUSeconds),
		NaiveScience:          float64(w.NaiveScience), NaiveSpent: float64(w.NaiveSpent),
		AdaptiveScience: float64(w.AdaptiveScience), AdaptiveSpent: float64(w.AdaptiveSpent),
	}
}

// marshalWire is json.Marshal for the wire types, whose values always
// encode.
func marshalWire(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
