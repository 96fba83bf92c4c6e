package engine

import (
	"math"
	"slices"
	"strconv"

	"github.com/bursar-hpc/bursar/internal/metric"
	"github.com/bursar-hpc/bursar/internal/stats"
	"github.com/bursar-hpc/bursar/policy"
)

// Metrics are the per-run measurements of model.md §8. Percentiles of an
// empty list are NaN (null in JSON).
type Metrics struct {
	VictimP50In        float64
	VictimP95In        float64
	VictimP50Out       float64
	VictimP95Out       float64
	VictimViolationsIn int
	SciBurstP50        float64
	SciBurstP95        float64
	SciBurstP95In      float64
	// ProbeLats and ProbeLatsIn are the probe's latencies out of and in the
	// storm window, in the order observed.
	ProbeLats             []int
	ProbeLatsIn           []int
	Warm, Reclaim, Cold   int
	Utilization           float64
	ProductiveUtilization float64
	StormMeanHeld         float64
	StormPeakHeld         int
	StormExcessGPUSeconds float64
	NaiveScience          float64
	NaiveSpent            float64
	AdaptiveScience       float64
	AdaptiveSpent         float64
	// Study are the policy-study metrics, measured only when the
	// scenario names its policy (nil otherwise: the paper's outputs stay
	// as they were).
	Study *StudyMetrics
}

// Scalar is one named scalar metric.
type Scalar struct {
	Key   string
	Value float64
}

// ScalarMetrics are the model's scalar metrics (docs/metrics.md), in
// output order: metrics.json (the probe's lists before warm), runs.csv's
// columns and the shards' wire metrics follow it.
var ScalarMetrics = metric.Table[Metrics]{
	metric.Float("victim_p50_in", "s", func(m *Metrics) *float64 { return &m.VictimP50In }),
	metric.Float("victim_p95_in", "s", func(m *Metrics) *float64 { return &m.VictimP95In }),
	metric.Float("victim_p50_out", "s", func(m *Metrics) *float64 { return &m.VictimP50Out }),
	metric.Float("victim_p95_out", "s", func(m *Metrics) *float64 { return &m.VictimP95Out }),
	metric.Int("victim_violations_in", "grants", func(m *Metrics) *int { return &m.VictimViolationsIn }),
	metric.Float("sci_burst_p50", "s", func(m *Metrics) *float64 { return &m.SciBurstP50 }),
	metric.Float("sci_burst_p95", "s", func(m *Metrics) *float64 { return &m.SciBurstP95 }),
	metric.Float("sci_burst_p95_in", "s", func(m *Metrics) *float64 { return &m.SciBurstP95In }),
	metric.Int("warm", "grants", func(m *Metrics) *int { return &m.Warm }),
	metric.Int("reclaim", "grants", func(m *Metrics) *int { return &m.Reclaim }),
	metric.Int("cold", "grants", func(m *Metrics) *int { return &m.Cold }),
	metric.Float("utilization", "fraction", func(m *Metrics) *float64 { return &m.Utilization }),
	metric.Float("productive_utilization", "fraction", func(m *Metrics) *float64 { return &m.ProductiveUtilization }),
	metric.Float("storm_mean_held", "GPUs", func(m *Metrics) *float64 { return &m.StormMeanHeld }),
	metric.Int("storm_peak_held", "GPUs", func(m *Metrics) *int { return &m.StormPeakHeld }),
	metric.Float("storm_excess_gpu_s", "GPU-s", func(m *Metrics) *float64 { return &m.StormExcessGPUSeconds }),
	metric.Float("naive_science", "value", func(m *Metrics) *float64 { return &m.NaiveScience }),
	metric.Float("naive_spent", "credits", func(m *Metrics) *float64 { return &m.NaiveSpent }),
	metric.Float("adaptive_science", "value", func(m *Metrics) *float64 { return &m.AdaptiveScience }),
	metric.Float("adaptive_spent", "credits", func(m *Metrics) *float64 { return &m.AdaptiveSpent }),
}

// ScalarKeys lists the scalar metric keys in output order (ScalarMetrics).
var ScalarKeys = ScalarMetrics.Keys()

// Scalars returns the scalar metrics, keyed as in every output, in the
// order of ScalarKeys.
func (m *Metrics) Scalars() []Scalar { return scalars(ScalarMetrics, m) }

// scalars is table t's metrics of run r as keyed values.
func scalars[R any](t metric.Table[R], r *R) []Scalar {
	out := make([]Scalar, len(t))
	for i := range t {
		out[i] = Scalar{t[i].Key, t[i].Get(r)}
	}
	return out
}

// Scalar looks one scalar metric up by key.
func (m *Metrics) Scalar(key string) (float64, bool) {
	for _, s := range m.Scalars() {
		if s.Key == key {
			return s.Value, true
		}
	}
	// A study metric of a run that did not measure them is NaN.
	if slices.Contains(StudyKeys, key) {
		if m.Study == nil {
			return math.NaN(), true
		}
		for _, s := range m.Study.Scalars() {
			if s.Key == key {
				return s.Value, true
			}
		}
	}
	return 0, false
}

// FormatNumber writes a metric value for JSON and CSV: shortest round-trip
// digits, integral values without a fraction, NaN as null.
func FormatNumber(dst []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(dst, "null"...)
	}
	return strconv.AppendFloat(dst, v, 'f', -1, 64)
}

func appendIntList(dst []byte, xs []int, indent string) []byte {
	if len(xs) == 0 {
		return append(dst, "[]"...)
	}
	dst = append(dst, '[')
	for i, x := range xs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '\n')
		dst = append(dst, indent...)
		dst = strconv.AppendInt(dst, int64(x), 10)
	}
	dst = append(dst, '\n')
	dst = append(dst, indent[:len(indent)-1]...)
	return append(dst, ']')
}

// MarshalJSON writes the metrics as one object with the model's keys, in
// the model's order (the layout of the prototype's metrics file).
func (m *Metrics) MarshalJSON() ([]byte, error) { return m.AppendJSON(nil, ""), nil }

// AppendJSON appends the metrics object indented by one space per level,
// starting at indent.
func (m *Metrics) AppendJSON(dst []byte, indent string) []byte {
	in := indent + " "
	dst = append(dst, '{')
	first := true
	field := func(key string) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '\n')
		dst = append(dst, in...)
		dst = strconv.AppendQuote(dst, key)
		dst = append(dst, ": "...)
	}
	sc := m.Scalars()
	for i, s := range sc {
		if s.Key == "warm" {
			field("probe_lats")
			dst = appendIntList(dst, m.ProbeLats, in+" ")
			field("probe_lats_in")
			dst = appendIntList(dst, m.ProbeLatsIn, in+" ")
		}
		field(sc[i].Key)
		dst = FormatNumber(dst, s.Value)
	}
	if m.Study != nil {
		for _, s := range m.Study.Scalars() {
			field(s.Key)
			dst = FormatNumber(dst, s.Value)
		}
	}
	dst = append(dst, '\n')
	dst = append(dst, indent...)
	return append(dst, '}')
}

func computeMetrics(w *world) Metrics {
	s := &w.s
	res := w.res
	lo, hi := s.StormStart, s.StormEnd
	inWindow := func(t int) bool { return t >= lo && t < hi+60 }
	var m Metrics
	var vIn, vOut, sci, sciIn []int
	for i := range res.Grants {
		g := &res.Grants[i]
		switch g.Path {
		case policy.Warm:
			m.Warm++
		case policy.Reclaim:
			m.Reclaim++
		default:
			m.Cold++
		}
		switch kind := w.camps[g.Campaign].kind; {
		case kind == kindVictim:
			if inWindow(g.T) {
				vIn = append(vIn, g.Latency)
				if g.Latency > 60 {
					m.VictimViolationsIn++
				}
			} else {
				vOut = append(vOut, g.Latency)
			}
		case (kind == kindAdaptive || kind == kindNaive) && g.Class == policy.AgentBurst:
			sci = append(sci, g.Latency)
			if inWindow(g.T) {
				sciIn = append(sciIn, g.Latency)
			}
		}
	}
	m.VictimP50In, m.VictimP95In = stats.Percentile(vIn, 50), stats.Percentile(vIn, 95)
	m.VictimP50Out, m.VictimP95Out = stats.Percentile(vOut, 50), stats.Percentile(vOut, 95)
	m.SciBurstP50, m.SciBurstP95 = stats.Percentile(sci, 50), stats.Percentile(sci, 95)
	m.SciBurstP95In = stats.Percentile(sciIn, 95)
	m.ProbeLats, m.ProbeLatsIn = []int{}, []int{}
	for _, o := range res.Probe {
		if inWindow(o.T) {
			m.ProbeLatsIn = append(m.ProbeLatsIn, o.Latency)
		} else {
			m.ProbeLats = append(m.ProbeLats, o.Latency)
		}
	}
	m.Utilization = w.b.a.Utilization()

	st := &w.stats
	m.ProductiveUtilization = st.mean(st.productive)
	m.StormPeakHeld = st.stormPeak
	m.StormMeanHeld = math.NaN()
	if st.stormN > 0 {
		m.StormMeanHeld = float64(st.stormSum) / float64(st.stormN)
	}
	m.StormExcessGPUSeconds = st.stormExcess
	// Summed over every naive and every adaptive campaign (the paper has
	// one of each).
	for i, sc := range w.sciences {
		c := &res.Science[i]
		if w.camps[sc.id].kind == kindNaive {
			m.NaiveScience += c.Science
			m.NaiveSpent += c.Spent
		} else {
			m.AdaptiveScience += c.Science
			m.AdaptiveSpent += c.Spent
		}
	}
	if w.study != nil {
		sm := w.study.finish(w, &m, vIn)
		m.Study = &sm
	}
	return m
}
