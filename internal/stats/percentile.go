package stats

import (
	"math"
	"slices"
)

// Rank is the index the model's percentile p takes in n sorted values:
// min(n − 1, ⌊p/100 · n⌋), no interpolation (docs/metrics.md).
func Rank(n int, p float64) int { return min(n-1, int(p/100*float64(n))) }

// Percentile is percentile p of xs by the model's rule, the element at
// Rank(len(xs), p) of the sorted values; NaN when xs is empty. It sorts
// xs in place.
func Percentile[T int | float64](xs []T, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	return float64(xs[Rank(len(xs), p)])
}
