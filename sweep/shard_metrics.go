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
// entries, keyed as in runs.csv so that a file reads without this
// program: one object of engine.ScalarMetrics' keys in its order (each
// value an ExactFloat; a count's is its integer), then the probe's lists
// (nil as null apart from empty as [], so that a decoded run is the run
// that was encoded), then, only for a run whose scenario names its
// policy, the study metrics (engine.StudyKeys) as an object by key.
type wireMetrics struct {
	Scalars                []ExactFloat // engine.ScalarMetrics order
	ProbeLats, ProbeLatsIn []int
	Study                  map[string]ExactFloat
}

func toWire(m *engine.Metrics) wireMetrics {
	w := wireMetrics{ProbeLats: m.ProbeLats, ProbeLatsIn: m.ProbeLatsIn, Study: studyWire(m.Study)}
	for i := range engine.ScalarMetrics {
		w.Scalars = append(w.Scalars, ExactFloat(engine.ScalarMetrics[i].Get(m)))
	}
	return w
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
	var m engine.Metrics
	if w.Study != nil {
		m.Study = new(engine.StudyMetrics)
		// Keys this program does not know (a newer writer's) are left
		// out; the program version in every entry keeps them apart.
		for _, key := range engine.StudyKeys {
			if v, ok := w.Study[key]; ok {
				m.Study.SetScalar(key, float64(v))
			}
		}
	}
	for i, v := range w.Scalars {
		engine.ScalarMetrics[i].Set(&m, float64(v))
	}
	m.ProbeLats, m.ProbeLatsIn = w.ProbeLats, w.ProbeLatsIn
	return m
}

// MarshalJSON writes the object in the order above.
func (w wireMetrics) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	field := func(key string, v []byte) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, key)
		b = append(b, ':')
		b = append(b, v...)
	}
	for i, v := range w.Scalars {
		f, _ := v.MarshalJSON()
		field(engine.ScalarMetrics[i].Key, f)
	}
	field("probe_lats", marshalWire(w.ProbeLats))
	field("probe_lats_in", marshalWire(w.ProbeLatsIn))
	if len(w.Study) > 0 {
		field("study", marshalWire(w.Study))
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads the object by key: a scalar it lacks is 0, a key
// it does not know is left out.
func (w *wireMetrics) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	*w = wireMetrics{Scalars: make([]ExactFloat, len(engine.ScalarMetrics))}
	for i := range engine.ScalarMetrics {
		if raw, ok := fields[engine.ScalarMetrics[i].Key]; ok {
			if err := json.Unmarshal(raw, &w.Scalars[i]); err != nil {
				return fmt.Errorf("%s: %w", engine.ScalarMetrics[i].Key, err)
			}
		}
	}
	for _, f := range []struct {
		key string
		dst any
	}{{"probe_lats", &w.ProbeLats}, {"probe_lats_in", &w.ProbeLatsIn}, {"study", &w.Study}} {
		if raw, ok := fields[f.key]; ok {
			if err := json.Unmarshal(raw, f.dst); err != nil {
				return fmt.Errorf("%s: %w", f.key, err)
			}
		}
	}
	return nil
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
