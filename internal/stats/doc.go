// Package stats holds the statistics every study reports with: the
// percentile by the model's rule (Percentile, Rank: element
// min(n − 1, ⌊p/100 · n⌋) of the sorted values, no interpolation;
// docs/metrics.md, docs/model.md §8), the Student t interval of a mean
// (MeanT), the percentile bootstrap interval (Bootstrap), Wilson's
// interval of a proportion (Wilson), and the one interval type they
// return (Interval), at the one coverage Level.
//
// The paired contrasts of the studies over windows (docs/studies.md §5) are
// tested here too, by rules with no table or approximation in
// them:
//   - SignedRankTest, the exact Wilcoxon signed-rank test (Wilcoxon 1945)
//     with Pratt's treatment of zero differences (J. W. Pratt, "Remarks
//     on zeros and ties in the Wilcoxon signed rank procedures", JASA 54,
//     1959: zeros are ranked with the rest, then their ranks dropped),
//     midranks for ties, and the exact null distribution of the ranks at
//     hand, so that ties and zeros change the distribution, not only the
//     statistic;
//   - HodgesLehmann, the median of the Walsh averages and its exact
//     distribution-free interval (M. Hollander and D. A. Wolfe,
//     Nonparametric Statistical Methods, 2nd ed., Wiley 1999, §3.2 and
//     §3.3);
//   - Holm, Holm's step-down adjustment for a family-wise error rate
//     (S. Holm, Scand. J. Statist. 6, 1979), and BenjaminiHochberg, the
//     step-up adjustment for a false discovery rate (Y. Benjamini and
//     Y. Hochberg, JRSS B 57, 1995).
//
// gonum has none of these.
//
// The sweeps (docs/model.md §11), the trace study (docs/studies.md)
// and trace's fairness measures each summed their means and spreads in
// their own way before they shared this package, and their committed
// outputs were written so: a Method names the summation, so that each
// keeps its numbers to the last bit (see Method).
package stats
