// Package metric is the one pattern by which a run's scalar metrics are
// declared: a Table of Metric rows (key, unit, getter, setter for
// decoders, lower-bound flag), in output order, from which a study
// derives its keys, its CSV columns, its JSON objects and its decoders
// instead of listing them again (docs/metrics.md lists every key with its
// unit). The engine's model and study metrics and the trace study's
// per-replay metrics are tables of it.
package metric

// Metric is one number a run of type R reports.
type Metric[R any] struct {
	// Key names it in every output (metrics.json, runs.csv, shards).
	Key string
	// Unit is docs/metrics.md's unit of the value.
	Unit string
	// Get reads it from a run; NaN where the run has none.
	Get func(r *R) float64
	// Set writes a decoded value back (an integer metric truncates it);
	// nil for a metric nothing decodes.
	Set func(r *R, v float64)
	// Lower reports whether the value is only a lower bound (a censored
	// wait); nil: never.
	Lower func(r *R) bool
}

// Table is a run's metrics in output order.
type Table[R any] []Metric[R]

// Keys are the metrics' keys in output order.
func (t Table[R]) Keys() []string {
	keys := make([]string, len(t))
	for i := range t {
		keys[i] = t[i].Key
	}
	return keys
}

// Index is the position of the metric key, −1 for none.
func (t Table[R]) Index(key string) int {
	for i := range t {
		if t[i].Key == key {
			return i
		}
	}
	return -1
}

// ByKey is the metric key, nil for none.
func (t Table[R]) ByKey(key string) *Metric[R] {
	if i := t.Index(key); i >= 0 {
		return &t[i]
	}
	return nil
}

// Values are run r's metrics in output order.
func (t Table[R]) Values(r *R) []float64 {
	v := make([]float64, len(t))
	for i := range t {
		v[i] = t[i].Get(r)
	}
	return v
}

// Set writes the metric key's value into r; it reports whether key is a
// metric of the table that can be set.
func (t Table[R]) Set(r *R, key string, v float64) bool {
	m := t.ByKey(key)
	if m == nil || m.Set == nil {
		return false
	}
	m.Set(r, v)
	return true
}

// Float is a metric read from a float64 field: get and set.
func Float[R any](key, unit string, field func(r *R) *float64) Metric[R] {
	return Metric[R]{Key: key, Unit: unit,
		Get: func(r *R) float64 { return *field(r) },
		Set: func(r *R, v float64) { *field(r) = v }}
}

// Int is a metric read from an int field (a count): get as float64, set
// truncated.
func Int[R any](key, unit string, field func(r *R) *int) Metric[R] {
	return Metric[R]{Key: key, Unit: unit,
		Get: func(r *R) float64 { return float64(*field(r)) },
		Set: func(r *R, v float64) { *field(r) = int(v) }}
}
