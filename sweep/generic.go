package sweep

import (
	"encoding/json"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/engine"
)

// sweptObject is a point's grid values as a JSON object, in axis order:
// booleans as true/false, other knobs as numbers.
func sweptObject(swept []configs.Setting, s *engine.Scenario) object {
	o := object{}
	for _, sw := range swept {
		if sw.Knob.Kind == "bool" {
			o = append(o, field{sw.Knob.Name, sw.Knob.Get(s) != 0})
		} else {
			o = append(o, field{sw.Knob.Name, Number(sw.Knob.Get(s))})
		}
	}
	return o
}

// GenericSummary is the summary.json of `bursar-sweep sweep`, for any
// grid: the experiment, whether it was the --quick variant, the seeds,
// and per grid point (in plan order) its series, its swept knob values, the
// pooled probe percentiles out of the window (probe_p50, probe_p95) and in
// it (probe_p50_in, probe_p95_in), and band(key) = {mean, min, max} over
// seeds of every scalar metric (engine.ScalarKeys order). NaN is null.
func GenericSummary(r *Results) []byte {
	p := r.Plan
	points := make([]object, len(p.Points))
	for i := range p.Points {
		pt := &p.Points[i]
		ms := r.seedsOf(i)
		metrics := make(object, 0, len(engine.ScalarKeys))
		for _, key := range engine.ScalarKeys {
			b := band(ms, key)
			metrics = append(metrics, field{key, object{{"mean", Number(b.Mean)}, {"min", Number(b.Min)}, {"max", Number(b.Max)}}})
		}
		out, in := probeLats(ms), probeLatsIn(ms)
		points[i] = object{
			{"series", pt.Series},
			{"knobs", sweptObject(pt.Swept, &pt.Scenario)},
			{"probe_p50", Number(Pooled(out, 50))},
			{"probe_p95", Number(Pooled(out, 95))},
			{"probe_p50_in", Number(Pooled(in, 50))},
			{"probe_p95_in", Number(Pooled(in, 95))},
			{"metrics", metrics},
		}
	}
	doc := object{
		{"experiment", p.Experiment},
		{"quick", p.Quick},
		{"seeds", p.Seeds},
		{"points", points},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		// Every value here is a string, a bool, a Number or ints.
		panic(err)
	}
	return append(b, '\n')
}
