package stats

import (
	"math"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Level is the coverage of every interval the studies report.
const Level = 0.95

// Interval is a confidence interval, as absolute bounds (not distances
// from its estimate). NaN bounds mean no interval (too few values).
type Interval struct {
	Lo, Hi float64
}

// NoInterval is the interval of too few values: NaN bounds.
func NoInterval() Interval { return Interval{Lo: math.NaN(), Hi: math.NaN()} }

// Sum is the order in which a mean's values are added.
type Sum uint8

const (
	// InOrder adds the values left to right from 0, in the order given
	// (seed order, job order).
	InOrder Sum = iota
	// Lanes is gonum's floats.Sum, as stat.Mean adds: in SIMD lanes
	// (pairs of partial sums) once there are four values or more, so its
	// last bits can differ from InOrder's.
	Lanes
)

// Spread is how the sample standard deviation s (n − 1 in the
// denominator) is computed.
type Spread uint8

const (
	// Corrected is gonum's stat.StdDev: the corrected two-pass formula
	// (Chan, Golub & LeVeque 1983, eq. 1.7) around stat.Mean.
	Corrected Spread = iota
	// Plain is √(Σ (x − mean)² / (n − 1)), around the mean as Sum adds
	// it.
	Plain
)

// Method is how MeanT sums. The studies' committed outputs were written
// with three: the sweeps' bands InOrder with the Corrected spread (the
// interval's centre is then the band's mean, summed in seed order), the
// trace study's windows Lanes and Corrected (gonum's stat.Mean and
// stat.StdDev), and trace's fairness means InOrder and Plain. They agree
// up to three values and differ in the last bits beyond (the trace
// study's four windows, trace's thousands of jobs), so each keeps its own.
type Method struct {
	Sum    Sum
	Spread Spread
}

// MeanT is the mean of xs and its Student t interval at Level:
// mean ± t(1 − α/2, n − 1) · s / √n, the quantile from gonum's
// distuv.StudentsT. With no value the mean is NaN; with fewer than two
// the interval is NoInterval (one value says nothing about the spread).
// A NaN among the values makes the mean and the bounds NaN, an infinite
// one the bounds: callers that leave values out (a window with no value)
// do so before.
func MeanT(xs []float64, m Method) (mean float64, iv Interval) {
	n := len(xs)
	if n == 0 {
		return math.NaN(), NoInterval()
	}
	mean = m.mean(xs)
	if n < 2 {
		return mean, NoInterval()
	}
	half := TQuantile(n-1) * m.stdDev(xs, mean) / math.Sqrt(float64(n))
	return mean, Interval{Lo: mean - half, Hi: mean + half}
}

// TQuantile is Student's t quantile at 1 − (1 − Level)/2 (0.975) with df
// degrees of freedom.
func TQuantile(df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(1 - (1-Level)/2)
}

func (m Method) mean(xs []float64) float64 {
	if m.Sum == Lanes {
		return stat.Mean(xs, nil)
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

func (m Method) stdDev(xs []float64, mean float64) float64 {
	if m.Spread == Corrected {
		return stat.StdDev(xs, nil)
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss / (float64(len(xs)) - 1))
}

// Within is iv intersected with [lo, hi], the values its quantity can
// take (a fraction's [0, 1], a count's [0, ∞)): a t interval over a few
// windows knows nothing of the range and can cross it. Intersecting
// keeps the coverage (a value in both lies in the intersection). NaN
// bounds stay NaN.
func (iv Interval) Within(lo, hi float64) Interval {
	if !math.IsNaN(iv.Lo) {
		iv.Lo = min(max(iv.Lo, lo), hi)
	}
	if !math.IsNaN(iv.Hi) {
		iv.Hi = max(min(iv.Hi, hi), lo)
	}
	return iv
}
