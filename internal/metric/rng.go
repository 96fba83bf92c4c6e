package metric

import (
	"math"
	"strings"
)

// Range is the values a quantity can take: a fraction lies in [0, 1], a
// count or a duration is at least 0. An interval of a quantity is
// intersected with its range (stats.Interval.Within): if the true value
// lies in both, it lies in their intersection, so the interval keeps its
// coverage and stops claiming values the quantity cannot take
// (docs/studies.md §5.1).
type Range struct{ Lo, Hi float64 }

// Unbounded is the range of a quantity with no bound, such as a
// difference of two counts.
var Unbounded = Range{Lo: math.Inf(-1), Hi: math.Inf(1)}

// bounded are docs/metrics.md's units with a range, by the unit's first
// word: fractions and indices in [0, 1], counts, durations and amounts
// at least 0.
var bounded = map[string]Range{
	"fraction": {0, 1}, "index": {0, 1}, "0": {0, 1}, // "0 or 1"
	"s": {0, math.Inf(1)}, "jobs": {0, math.Inf(1)}, "leases": {0, math.Inf(1)}, "GPU-s": {0, math.Inf(1)},
	"GPU-h": {0, math.Inf(1)}, "GPUs": {0, math.Inf(1)}, "requests": {0, math.Inf(1)}, "grants": {0, math.Inf(1)},
	"tasks": {0, math.Inf(1)}, "science": {0, math.Inf(1)}, "value": {0, math.Inf(1)}, "credits": {0, math.Inf(1)},
	"ratio": {0, math.Inf(1)}, "campaigns": {0, math.Inf(1)}, "measurements": {0, math.Inf(1)},
	"h": {0, math.Inf(1)}, "days": {0, math.Inf(1)}, "events": {0, math.Inf(1)},
}

// RangeOf is the range of a quantity in unit (docs/metrics.md's units,
// read by their first word: "index in (0, 1]" is an index, "0 or 1" a
// flag); Unbounded for a unit with none (a signed quantity).
func RangeOf(unit string) Range {
	first, _, _ := strings.Cut(strings.TrimSpace(unit), " ")
	if r, ok := bounded[first]; ok {
		return r
	}
	return Unbounded
}

// Diff is the range of a difference of two values in r: [Lo − Hi,
// Hi − Lo] (a difference of fractions lies in [−1, 1]).
func (r Range) Diff() Range { return Range{Lo: r.Lo - r.Hi, Hi: r.Hi - r.Lo} }
