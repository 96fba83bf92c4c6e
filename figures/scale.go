package figures

import (
	"math"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
)

// niceStep returns the smallest step from the 1–2–2.5–5 sequence (times a
// power of ten) that is at least raw.
func niceStep(raw float64) float64 {
	if !(raw > 0) || math.IsInf(raw, 0) {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if s := m * mag; s >= raw*(1-1e-9) {
			return s
		}
	}
	return 10 * mag
}

// decimals is the number of decimals needed to print multiples of step
// exactly (0 for integer steps and for zero, which sweepTicks asks about
// a grid value). A nonzero value that rounds to zero is not printed
// exactly: 5e-7 is not a whole number, though it is within 1e-6 of one.
func decimals(step float64) int {
	if step == 0 {
		return 0
	}
	for d := 0; d < 8; d++ {
		s := step * math.Pow(10, float64(d))
		if r := math.Round(s); r != 0 && math.Abs(s-r) < 1e-6*math.Max(1, s) {
			return d
		}
	}
	return 8
}

// formatTick prints v with d decimals; zero is always a bare "0" (never
// "-0" or "0.0"), as axes in papers are usually labelled.
func formatTick(v float64, d int) string {
	if math.Abs(v) < math.Pow(10, -float64(d))/2 {
		return "0"
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}

// LinearTicks labels a linear axis at round values (steps of 1, 2, 2.5 or
// 5 times a power of ten), about N intervals over the range but never
// fewer than MinLabels labels: gonum's DefaultTicks aims at three labels,
// and a step rounded up from just over a round value (a range of 4.2 in 4
// intervals is 1.05 each, rounded up to 2) leaves two, too few to read a
// value off a panel. The step then shrinks to the next round one until
// MinLabels fit.
type LinearTicks struct{ N int }

// MinLabels is the fewest labelled ticks LinearTicks puts on an axis.
const MinLabels = 4

// Ticks implements plot.Ticker.
func (t LinearTicks) Ticks(min, max float64) []plot.Tick {
	n := t.N
	if n < 1 {
		n = MinLabels
	}
	step := niceStep((max - min) / float64(n))
	for i := 0; i < 8 && max > min && labelsIn(min, max, step) < MinLabels; i++ {
		step = niceStepBelow(step)
	}
	d := decimals(step)
	var ts []plot.Tick
	for k := math.Ceil(min/step - 1e-9); k*step <= max+1e-9*step; k++ {
		v := k * step
		if v == 0 {
			v = 0 // not −0 (math.Ceil(−1e-9) is −0)
		}
		ts = append(ts, plot.Tick{Value: v, Label: formatTick(v, d)})
	}
	return ts
}

// labelsIn counts the multiples of step in [min, max], as Ticks places
// them.
func labelsIn(min, max, step float64) int {
	return int(math.Floor(max/step+1e-9) - math.Ceil(min/step-1e-9) + 1)
}

// niceStepBelow is the largest step of the 1–2–2.5–5 sequence below the
// sequence's step s.
func niceStepBelow(s float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(s)+1e-9))
	switch m := s / mag; {
	case m > 4.5:
		return 2.5 * mag
	case m > 2.25:
		return 2 * mag
	case m > 1.5:
		return mag
	}
	return mag / 2
}

// sweepTicks labels an axis at the sweep's own grid values, so a reader
// sees exactly where the runs were made. It returns nil when two grid
// values would sit closer than minGap (a fraction of the axis) and their
// labels could collide; the caller then falls back to round ticks.
func sweepTicks(xs []float64, norm func(float64) float64, minGap float64) plot.ConstantTicks {
	vs := distinctFinite(xs)
	if len(vs) == 0 || len(vs) > 10 {
		return nil
	}
	for i := 1; i < len(vs); i++ {
		if norm(vs[i])-norm(vs[i-1]) < minGap {
			return nil
		}
	}
	d := 0
	for _, v := range vs {
		d = max(d, decimals(v))
	}
	d = min(d, 2)
	ts := make(plot.ConstantTicks, len(vs))
	for i, v := range vs {
		ts[i] = plot.Tick{Value: v, Label: formatTick(v, d)}
	}
	return ts
}

func distinctFinite(xs []float64) []float64 {
	var vs []float64
	for _, x := range xs {
		if finite(x) {
			vs = append(vs, x)
		}
	}
	sort.Float64s(vs)
	out := vs[:0]
	for i, v := range vs {
		if i == 0 || v != vs[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// log1pScale maps v to log(1 + v). It reads like a log scale wherever the
// values are well above one (the latencies and bucket sizes drawn here) but,
// unlike gonum's LogScale, it also places zero, which a p95 latency or a
// storm excess can legitimately be, instead of panicking on it.
type log1pScale struct{}

func (log1pScale) Normalize(min, max, x float64) float64 {
	lo, hi := math.Log1p(min), math.Log1p(max)
	return (math.Log1p(x) - lo) / (hi - lo)
}

// log1pTicks labels a log1p axis with LogTicks over its part above one:
// below one, log(1 + v) is nearly linear and crushed against zero, so
// decades under one would only pile labels onto the zero tick. Never
// zero, even when the range reaches it: a reader takes a log axis to run
// on below its lowest label, and a "0" tick a decade below "1" would
// contradict that. A figure whose values can be zero shows its floor
// another way (see overbookingFloor). A range that stays below one gets
// LinearTicks.
type log1pTicks struct{}

func (log1pTicks) Ticks(min, max float64) []plot.Tick {
	lo := math.Max(min, 1)
	if max <= lo {
		return LinearTicks{N: 4}.Ticks(min, max)
	}
	return LogTicks{}.Ticks(lo, max)
}

// padLinear widens [lo, hi] by frac of its span on each side (or by one
// unit around a single value) so markers and error-bar caps at the
// extremes are not cut by the axes.
func padLinear(lo, hi, frac float64) (float64, float64) {
	if hi <= lo {
		d := math.Max(math.Abs(lo)*0.1, 1)
		return lo - d, hi + d
	}
	s := (hi - lo) * frac
	return lo - s, hi + s
}

// padLog1p is padLinear in log(1 + v) space. The result stays above -1,
// where log1p is defined: a zero value then sits just above the axis
// instead of on it.
func padLog1p(lo, hi, frac float64) (float64, float64) {
	a, b := math.Log1p(math.Max(lo, 0)), math.Log1p(math.Max(hi, 0))
	if b <= a {
		a, b = a-0.2, b+0.2
	} else {
		s := (b - a) * frac
		a, b = a-s, b+s
	}
	return math.Max(math.Expm1(a), -0.5), math.Expm1(b)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// finiteRange is the smallest and largest finite value over all lists;
// ok is false when there is none.
func finiteRange(lists ...[]float64) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, l := range lists {
		for _, v := range l {
			if finite(v) {
				lo, hi, ok = math.Min(lo, v), math.Max(hi, v), true
			}
		}
	}
	return lo, hi, ok
}
