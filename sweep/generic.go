package sweep

import (
	"encoding/json"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/figures"
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
// grid: the experiment, whether it was the --quick variant, the seeds, the
// bootstrap behind the intervals, and per grid point (in plan order) its
// series, its swept knob values, n (its number of seeds), the pooled probe
// percentiles out of the window (probe_p50, probe_p95) and in it
// (probe_p50_in, probe_p95_in), each followed by its bootstrap interval
// (_lo, _hi) and _censored, with the pooled counts probe_n and probe_n_in,
// and band(key) = {mean, min, max, lo, hi} over seeds of every scalar
// metric (engine.ScalarKeys order; lo and hi the t interval of the mean).
// NaN is null.
func GenericSummary(r *Results) []byte {
	return genericJSON(r.Plan, ReduceGeneric(r))
}

// GenericPoint is one reduced grid point of any sweep.
type GenericPoint struct {
	Point *configs.Point
	// N is the number of seeds.
	N int
	// Probe are the pooled probe percentiles, in ProbeQuantities order,
	// with their bootstrap intervals; ProbeN and ProbeNIn count the pooled
	// observations out of and in the storm window.
	Probe    []Estimate
	ProbeN   int
	ProbeNIn int
	// Metrics are the bands of every scalar metric, engine.ScalarKeys
	// order.
	Metrics []figures.Band
	// Study are the bands of the policy-study metrics, engine.StudyKeys
	// order, when the point's runs measured them (nil otherwise).
	Study []figures.Band
}

// Estimate is a pooled percentile with its interval.
type Estimate struct {
	Value float64
	CI    figures.Interval
}

// ProbeQuantities are the pooled probe percentiles every point of a
// generic sweep reports: name, in-window or not, and percentile.
var ProbeQuantities = []struct {
	Name string
	In   bool
	P    float64
}{
	{"probe_p50", false, 50}, {"probe_p95", false, 95},
	{"probe_p50_in", true, 50}, {"probe_p95_in", true, 95},
}

// ReduceGeneric reduces every grid point of a plan, in plan order.
func ReduceGeneric(r *Results) []GenericPoint {
	p := r.Plan
	out := make([]GenericPoint, len(p.Points))
	for i := range p.Points {
		ms := r.seedsOf(i)
		gp := GenericPoint{Point: &p.Points[i], N: len(ms)}
		out0, in := probeLats(ms), probeLatsIn(ms)
		gp.ProbeN, gp.ProbeNIn = pooledCount(out0), pooledCount(in)
		for _, q := range ProbeQuantities {
			lists := out0
			if q.In {
				lists = in
			}
			gp.Probe = append(gp.Probe, Estimate{Value: Pooled(lists, q.P), CI: r.pooledCI(lists, q.P, i, q.Name)})
		}
		for _, key := range engine.ScalarKeys {
			gp.Metrics = append(gp.Metrics, bandCI(scalars(ms, key)))
		}
		if len(ms) > 0 && ms[0].Study != nil {
			for _, key := range engine.StudyKeys {
				gp.Study = append(gp.Study, bandCI(scalars(ms, key)))
			}
		}
		out[i] = gp
	}
	return out
}

func genericJSON(p *configs.Plan, pts []GenericPoint) []byte {
	points := make([]object, len(pts))
	for i, gp := range pts {
		pt := gp.Point
		metrics := make(object, 0, len(engine.ScalarKeys))
		for k, key := range engine.ScalarKeys {
			b := gp.Metrics[k]
			metrics = append(metrics, field{key, object{
				{"mean", Number(b.Mean)}, {"min", Number(b.Min)}, {"max", Number(b.Max)},
				{"lo", Number(b.CI.Lo)}, {"hi", Number(b.CI.Hi)},
			}})
		}
		for k, key := range engine.StudyKeys {
			if gp.Study == nil {
				break
			}
			b := gp.Study[k]
			metrics = append(metrics, field{key, object{
				{"mean", Number(b.Mean)}, {"min", Number(b.Min)}, {"max", Number(b.Max)},
				{"lo", Number(b.CI.Lo)}, {"hi", Number(b.CI.Hi)},
			}})
		}
		o := object{
			{"series", pt.Series},
		}
		if pt.Scenario.Policy != "" {
			o = append(o, field{"policy", pt.Scenario.Policy})
		}
		o = append(o, object{
			{"knobs", sweptObject(pt.Swept, &pt.Scenario)},
			{"n", gp.N},
		}...)
		for k, q := range ProbeQuantities {
			e := gp.Probe[k]
			o = append(o, field{q.Name, Number(e.Value)}, field{q.Name + "_lo", Number(e.CI.Lo)},
				field{q.Name + "_hi", Number(e.CI.Hi)}, field{q.Name + "_censored", Censored(e.Value)})
		}
		o = append(o, field{"probe_n", gp.ProbeN}, field{"probe_n_in", gp.ProbeNIn}, field{"metrics", metrics})
		points[i] = o
	}
	doc := object{
		{"experiment", p.Experiment},
		{"quick", p.Quick},
		{"seeds", p.Seeds},
		{"bootstrap", object{{"seed", p.Bootstrap.Seed}, {"resamples", p.Bootstrap.Resamples}}},
		{"points", points},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		// Every value here is a string, a bool, a Number or ints.
		panic(err)
	}
	return append(b, '\n')
}
