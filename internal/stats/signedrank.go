package stats

import (
	"cmp"
	"math"
	"slices"
)

// SignedRank is the outcome of the exact Wilcoxon signed-rank test of
// paired differences against a zero shift (Wilcoxon 1945), with Pratt's
// treatment of zeros (Pratt 1959): every difference, zeros included, is
// ranked by its absolute value, tied values taking the mean of the ranks
// they span (midranks); the zeros' ranks are then dropped, and the test
// statistic is the sum of the ranks of the positive differences.
type SignedRank struct {
	// N is the differences left after the zeros are dropped; Zeros the
	// zeros dropped.
	N, Zeros int
	// WPlus is the sum of the (mid)ranks of the positive differences; its
	// null mean is half the sum of all N ranks.
	WPlus float64
	// P is the exact two-sided p-value: the null probability, over the 2^N
	// equally likely sign assignments of the N ranks, of a statistic at
	// least as far from the null mean as WPlus. 1 when N is 0.
	P float64
}

// SignedRankTest is the exact Wilcoxon signed-rank test of d, Pratt's
// zeros and midranks for ties (see SignedRank). NaN differences are left
// out. The null distribution is computed exactly for the ranks at hand
// (ties included): each rank is doubled to an integer, and the
// distribution of the sum of the positively signed doubled ranks is built
// by dynamic programming over the N ranks (O(N³) time, O(N²) memory), so
// no normal approximation or table is used.
func SignedRankTest(d []float64) SignedRank {
	ranks, zeros := prattRanks(d)
	var r SignedRank
	r.Zeros = zeros
	r.N = len(ranks)
	if r.N == 0 {
		r.P = 1
		return r
	}
	// Doubled ranks are integers: a midrank is an integer or a half.
	twice := make([]int, r.N)
	total, t := 0, 0
	for i, rk := range ranks {
		twice[i] = int(math.Round(2 * rk.rank))
		total += twice[i]
		if rk.positive {
			t += twice[i]
			r.WPlus += rk.rank
		}
	}
	dist := signSumDistribution(twice, total)
	// The null is symmetric about total/2; compare distances doubled
	// again so that they stay integers.
	far := abs(2*t - total)
	for s, pr := range dist {
		if abs(2*s-total) >= far {
			r.P += pr
		}
	}
	r.P = min(r.P, 1)
	return r
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// signSumDistribution is the probability of each sum s in [0, total] of a
// subset of ws, every subset equally likely (each weight signed + with
// probability ½, independently).
func signSumDistribution(ws []int, total int) []float64 {
	dist := make([]float64, total+1)
	dist[0] = 1
	top := 0
	for _, w := range ws {
		top += w
		for s := top; s >= 0; s-- {
			with := 0.0
			if s >= w {
				with = dist[s-w]
			}
			dist[s] = (dist[s] + with) / 2
		}
	}
	return dist
}

// rank is one nonzero difference's (mid)rank and sign.
type rank struct {
	rank     float64
	positive bool
}

// prattRanks ranks the absolute values of the non-NaN differences,
// zeros included, with midranks for ties, and returns the nonzero ones'
// ranks and the number of zeros.
func prattRanks(d []float64) (ranks []rank, zeros int) {
	var vals []float64
	for _, x := range d {
		if !math.IsNaN(x) {
			vals = append(vals, x)
		}
	}
	order := make([]int, len(vals))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(math.Abs(vals[a]), math.Abs(vals[b])) })
	for i := 0; i < len(order); {
		j := i
		for j < len(order) && math.Abs(vals[order[j]]) == math.Abs(vals[order[i]]) {
			j++
		}
		mid := float64(i+1+j) / 2 // the mean of ranks i+1 … j
		for _, k := range order[i:j] {
			if vals[k] == 0 {
				zeros++
				continue
			}
			ranks = append(ranks, rank{rank: mid, positive: vals[k] > 0})
		}
		i = j
	}
	return ranks, zeros
}

// Shift is a Hodges–Lehmann estimate of the centre of a symmetric
// distribution of paired differences, with its confidence interval.
type Shift struct {
	// Estimate is the median of the Walsh averages (d_i + d_j)/2, i ≤ j.
	Estimate float64
	// Interval runs from the k-th smallest to the k-th largest Walsh
	// average, k the largest for which the exact signed-rank null gives
	// coverage of at least Level. With too few differences for that
	// (fewer than six) it is the widest, [min, max], whose coverage is
	// 1 − 2^(1−n).
	Interval
	// Coverage is the interval's exact coverage under the null
	// distribution of the untied signed-rank statistic.
	Coverage float64
	// N is the differences used (NaN left out, zeros kept).
	N int
}

// HodgesLehmann is the Hodges–Lehmann estimate of d's centre (Hodges &
// Lehmann 1963) and its distribution-free interval (Hollander & Wolfe,
// Nonparametric Statistical Methods, §3.2–3.3): the n(n+1)/2 Walsh
// averages sorted, the interval [W_(k), W_(M+1−k)] with M their number
// and k − 1 the largest lower-tail value of the signed-rank statistic
// (ranks 1 … n) whose tail probability is at most (1 − Level)/2. NaN
// differences are left out; zeros are kept (they are observations of the
// shift). With none left, NaN and NoInterval. Every Walsh average lies
// between d's smallest and largest values, so the interval never leaves
// the range the differences live in.
func HodgesLehmann(d []float64) Shift {
	var v []float64
	for _, x := range d {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	n := len(v)
	if n == 0 {
		return Shift{Estimate: math.NaN(), Interval: NoInterval(), Coverage: math.NaN()}
	}
	walsh := make([]float64, 0, n*(n+1)/2)
	for i := range v {
		for j := i; j < n; j++ {
			walsh = append(walsh, (v[i]+v[j])/2)
		}
	}
	slices.Sort(walsh)
	m := len(walsh)
	est := walsh[m/2]
	if m%2 == 0 {
		est = (walsh[m/2-1] + walsh[m/2]) / 2
	}
	ones := make([]int, n)
	for i := range ones {
		ones[i] = i + 1
	}
	dist := signSumDistribution(ones, n*(n+1)/2)
	// k − 1 is the largest c with P(T ≤ c) ≤ α/2, k at least 1; the
	// interval misses the centre with probability 2 P(T ≤ k − 1).
	alpha := (1 - Level) / 2
	k, tail := 1, 0.0
	for c := 0; c < len(dist) && tail+dist[c] <= alpha; c++ {
		tail += dist[c]
		k = c + 2
	}
	if k == 1 {
		tail = dist[0]
	}
	return Shift{Estimate: est, Interval: Interval{Lo: walsh[k-1], Hi: walsh[m-k]}, Coverage: 1 - 2*tail, N: n}
}
