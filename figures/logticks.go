package figures

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// LogTicks labels a log axis; every figure's log axis uses it (and
// log1pTicks its part above one). It labels the powers of ten in the
// range; when those are fewer than MinLabels, 1, 2 and 5 times each power
// of ten (a mean wait over 0.5 … 150 h had only 1, 10 and 100; the
// compare figure's victim p95 had always been labelled so); when even
// those are too few (a range under a factor of about 25), 1, 2, 3 and 5
// times each; and under a factor of about 10, where a log axis is nearly
// linear, LinearTicks. Over more than maxLogLabels decades it labels
// every 2nd, 5th, 10th … power of ten. Every tick lies within [min, max]
// (gonum's LogTicks also returns the decade beyond each end, which
// plot.Align counts as overhang and so stretches the panel over its
// neighbours). The other multiples of each power of ten are unlabelled
// minor ticks.
//
// Labels never crowd: 1–2–5 labels are used only over fewer than four
// decades and are at least log10(2) of a decade apart, so at least a 14th
// of the axis; 1–2–3–5 labels only under a factor of 25, at least
// log10(1.5) apart, a 9th of the axis; strided powers of ten at least an
// 11th; LinearTicks over less than a decade at least a 16th
// (TestLogTicksAlwaysReadable checks a 16th for all of them).
type LogTicks struct{}

// maxLogLabels is the most powers of ten LogTicks labels; over more
// decades it labels every 2nd, 5th, 10th … of them.
const maxLogLabels = 10

// Ticks implements plot.Ticker. A range that does not lie above zero has
// no log ticks; it gets LinearTicks (a log scale cannot draw it anyway).
func (LogTicks) Ticks(min, max float64) []plot.Tick {
	if !(min > 0) || !(max > min) || math.IsInf(max, 0) {
		return shortestLabels(LinearTicks{N: MinLabels}.Ticks(min, max))
	}
	first := int(math.Floor(math.Log10(min)))
	last := int(math.Ceil(math.Log10(max)))
	in := func(v float64) bool { return v >= min*(1-1e-12) && v <= max*(1+1e-12) }

	// The powers of ten in range, every stride-th of them labelled.
	var decades []int
	for e := first; e <= last; e++ {
		if in(pow10(1, e)) {
			decades = append(decades, e)
		}
	}
	stride := 1
	for _, s := range []int{1, 2, 5, 10, 20, 50, 100} {
		stride = s
		if labelledDecades(decades, s) <= maxLogLabels {
			break
		}
	}
	labelled := func(m, e int) bool { return m == 1 && e%stride == 0 }
	if labelledDecades(decades, stride) < MinLabels {
		fits := func(ms ...int) bool {
			n := 0
			for e := first; e <= last; e++ {
				for _, m := range ms {
					if in(pow10(m, e)) {
						n++
					}
				}
			}
			return n >= MinLabels
		}
		switch {
		case fits(1, 2, 5):
			labelled = func(m, _ int) bool { return m == 1 || m == 2 || m == 5 }
		case fits(1, 2, 3, 5):
			labelled = func(m, _ int) bool { return m == 1 || m == 2 || m == 3 || m == 5 }
		default:
			return shortestLabels(LinearTicks{N: MinLabels}.Ticks(min, max))
		}
	}

	var ts []plot.Tick
	for e := first; e <= last; e++ {
		for m := 1; m <= 9; m++ {
			v := pow10(m, e)
			if !in(v) {
				continue
			}
			switch {
			case labelled(m, e):
				ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
			case stride == 1 || m == 1:
				// Minor ticks at every multiple of a power of ten, or at
				// the unlabelled powers of ten only when those are strided.
				ts = append(ts, plot.Tick{Value: v})
			}
		}
	}
	return ts
}

// labelledDecades counts the powers of ten among decades whose exponent is
// a multiple of stride.
func labelledDecades(decades []int, stride int) int {
	n := 0
	for _, e := range decades {
		if e%stride == 0 {
			n++
		}
	}
	return n
}

// shortestLabels relabels LinearTicks' ticks as the log labels are
// printed: the shortest decimal of the value rounded to 12 significant
// digits ("0.5", not "0.50"; "0.3", not "0.30000000000000004"; and
// "2.5e-07" where LinearTicks runs out of decimals).
func shortestLabels(ts []plot.Tick) []plot.Tick {
	for i := range ts {
		if ts[i].Label == "" {
			continue
		}
		v, _ := strconv.ParseFloat(strconv.FormatFloat(ts[i].Value, 'g', 12, 64), 64)
		ts[i].Label = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return ts
}

// pow10 is m × 10^e, correctly rounded (a division for negative e, so
// that 2 × 10⁻² is the float closest to 0.02 and prints as "0.02").
func pow10(m, e int) float64 {
	if e < 0 {
		return float64(m) / math.Pow10(-e)
	}
	return float64(m) * math.Pow10(e)
}
