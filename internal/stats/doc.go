// Package stats holds the statistics every study reports with: the
// percentile by the model's rule (Percentile, Rank: element
// min(n − 1, ⌊p/100 · n⌋) of the sorted values, no interpolation;
// docs/metrics.md, docs/model.md §8), the Student t interval of a mean
// (MeanT), the percentile bootstrap interval (Bootstrap), Wilson's
// interval of a proportion (Wilson), and the one interval type they
// return (Interval), at the one coverage Level.
//
// The sweeps (docs/model.md §11), the trace study (docs/studies.md)
// and trace's fairness measures each summed their means and spreads in
// their own way before they shared this package, and their committed
// outputs were written so: a Method names the summation, so that each
// keeps its numbers to the last bit (see Method).
package stats
