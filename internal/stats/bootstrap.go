package stats

import (
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// Bootstrap is the percentile bootstrap interval at Level of a statistic
// over units (seeds, the independent unit: docs/model.md §11): each of
// resamples resamples draws len(pick) = units indices with replacement
// from rng and takes statistic(pick); a resample whose statistic is
// undefined (ok false) is left out. The bounds are the (1 − Level)/2 and
// 1 − (1 − Level)/2 quantiles of the resampled values by gonum's
// stat.Empirical rule, which returns one of them. The interval is widened,
// if need be, to contain est: with few units the bootstrap distribution
// is lumpy and can miss it, and a bar not covering its own point reads as
// an error. NoInterval when no resample is defined.
func Bootstrap(rng *rand.Rand, units, resamples int, est float64, statistic func(pick []int) (float64, bool)) Interval {
	vals := make([]float64, 0, resamples)
	pick := make([]int, units)
	for range resamples {
		for i := range pick {
			pick[i] = rng.IntN(units)
		}
		if v, ok := statistic(pick); ok {
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 {
		return NoInterval()
	}
	slices.Sort(vals)
	alpha := (1 - Level) / 2
	lo := stat.Quantile(alpha, stat.Empirical, vals, nil)
	hi := stat.Quantile(1-alpha, stat.Empirical, vals, nil)
	return Interval{Lo: min(lo, est), Hi: max(hi, est)}
}
