package sweep

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/figures"
	"github.com/bursar-hpc/bursar/internal/stats"
)

// Level is the coverage of every interval the reductions report.
const Level = stats.Level

// TInterval is the Student t interval of the mean of xs at Level
// (stats.MeanT): mean ± t(1 − α/2, n − 1)·s/√n, with s the sample
// standard deviation (gonum's stat.StdDev). The mean is BandOf's, summed
// in seed order, so that the interval's centre is exactly the mean
// written beside it. Fewer than two values, or a NaN among them, give NaN
// bounds: one seed says nothing about the spread between seeds.
func TInterval(xs []float64) figures.Interval {
	_, iv := stats.MeanT(xs, stats.Method{Sum: stats.InOrder, Spread: stats.Corrected})
	return iv
}

// bandCI is band with its t interval.
func bandCI(xs []float64) figures.Band {
	b := BandOf(xs)
	b.CI = TInterval(xs)
	return b
}

// Stream names the random stream of one bootstrap: the experiment, the
// grid point (its index in the plan) and the quantity (probe_p50_in, …).
// Each interval draws from its own stream, derived from the config's
// bootstrap seed and this name alone, so it does not depend on which other
// intervals were computed, in which order, or on how many workers ran the
// sweep.
type Stream struct {
	Experiment string
	Point      int
	Quantity   string
}

func (s Stream) id() uint64 {
	h := fnv.New64a()
	h.Write([]byte(s.Experiment))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, int64(s.Point), 10))
	h.Write([]byte{0})
	h.Write([]byte(s.Quantity))
	return h.Sum64()
}

// PooledCI is the 95 % percentile-bootstrap interval (stats.Bootstrap)
// of pooled(p) over seeds: each of b.Resamples resamples draws len(lists) seeds with
// replacement (the seed, not the single observation, is the independent
// unit: observations within one run are correlated), pools their lists
// and takes percentile p by stats.Percentile's rule, the rule of the
// estimate itself (model.md §8), so that estimate and interval agree on
// what a percentile is. The bounds are the 2.5 % and 97.5 % quantiles of
// the resampled values with gonum's stat.Empirical rule, which returns one
// of them: a latency interval is then made of observed latencies.
//
// Resamples whose seeds observed nothing are left out (the percentile of
// nothing is undefined). The interval is widened, if need be, to contain
// the estimate: with few seeds the bootstrap distribution is lumpy and
// can miss it, and a bar not covering its own point reads as an error.
// Fewer than two seeds, or an estimate of NaN, give NaN bounds.
func PooledCI(lists [][]int, p float64, b configs.Bootstrap, s Stream) figures.Interval {
	est := Pooled(lists, p)
	if len(lists) < 2 || math.IsNaN(est) || b.Resamples < 1 {
		return stats.NoInterval()
	}
	c := newCounts(lists)
	rng := rand.New(rand.NewPCG(b.Seed, s.id()))
	return stats.Bootstrap(rng, len(lists), b.Resamples, est, func(pick []int) (float64, bool) { return c.percentile(pick, p) })
}

// counts holds, for each seed's list, how many of its values are ≤ each
// distinct value of all lists. A resample's pooled percentile is then a
// binary search over the distinct values instead of a sort of the pooled
// list: the same number (stats.Percentile picks the element at a rank of
// the sorted pool), at a cost that does not grow with the lists.
type counts struct {
	values []int   // distinct values of all lists, ascending
	cum    [][]int // cum[s][j]: values of list s that are ≤ values[j]
	total  []int   // total[s]: length of list s
}

func newCounts(lists [][]int) *counts {
	var all []int
	for _, l := range lists {
		all = append(all, l...)
	}
	slices.Sort(all)
	c := &counts{values: slices.Compact(all), cum: make([][]int, len(lists)), total: make([]int, len(lists))}
	for s, l := range lists {
		sorted := slices.Clone(l)
		slices.Sort(sorted)
		cum := make([]int, len(c.values))
		k := 0
		for j, v := range c.values {
			for k < len(sorted) && sorted[k] <= v {
				k++
			}
			cum[j] = k
		}
		c.cum[s], c.total[s] = cum, len(l)
	}
	return c
}

// percentile is stats.Percentile of the pooled lists of the picked seeds
// (with repetition): the element at rank min(N − 1, ⌊p/100·N⌋) of the
// sorted pool. ok is false when the pool is empty.
func (c *counts) percentile(pick []int, p float64) (float64, bool) {
	n := 0
	for _, s := range pick {
		n += c.total[s]
	}
	if n == 0 {
		return 0, false
	}
	rank := stats.Rank(n, p)
	// The smallest j with more than rank pooled values ≤ values[j].
	lo, hi := 0, len(c.values)-1
	for lo < hi {
		mid := (lo + hi) / 2
		k := 0
		for _, s := range pick {
			k += c.cum[s][mid]
		}
		if k > rank {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return float64(c.values[lo]), true
}

// pooledCount is the number of observations pooled over the lists.
func pooledCount(lists [][]int) int {
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	return n
}

// Censored reports whether a latency estimate sits at the probe's censor
// (model.md §7): the probe stops waiting after 590 s and records 591, so
// such a value only says that the true latency is at least that long.
func Censored(v float64) bool { return v >= ProbeCensor }
