package sweep

import (
	"math"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/figures"
	"github.com/bursar-hpc/bursar/internal/stats"
)

// BandOf is band(xs) of experiments.md: the mean over seeds with the
// smallest and largest value. The sum runs in seed order, so the mean is
// the same bit for bit on every run. An empty list, or one holding a NaN (a
// percentile of no observations), gives NaN throughout: a mean over the
// seeds that did observe something would silently be over fewer seeds than
// the others.
func BandOf(xs []float64) figures.Band {
	if len(xs) == 0 {
		return figures.Band{Mean: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	sum, lo, hi := 0.0, math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		if math.IsNaN(x) {
			return figures.Band{Mean: math.NaN(), Min: math.NaN(), Max: math.NaN()}
		}
		sum += x
		lo, hi = min(lo, x), max(hi, x)
	}
	return figures.Band{Mean: sum / float64(len(xs)), Min: lo, Max: hi}
}

// Pooled is pooled(p) of experiments.md: the lists concatenated in the
// order given (seed order) and percentile p taken as stats.Percentile
// does (model.md §8). The lists themselves are left unsorted.
func Pooled(lists [][]int, p float64) float64 {
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	all := make([]int, 0, n)
	for _, l := range lists {
		all = append(all, l...)
	}
	return stats.Percentile(all, p)
}

// scalars gathers scalar metric key over the seeds of one grid point, in
// seed order.
func scalars(ms []engine.Metrics, key string) []float64 {
	xs := make([]float64, len(ms))
	for i := range ms {
		v, ok := ms[i].Scalar(key)
		if !ok {
			panic("sweep: unknown scalar metric " + key)
		}
		xs[i] = v
	}
	return xs
}

// probeLats and probeLatsIn gather one point's probe lists in seed order.
func probeLats(ms []engine.Metrics) [][]int {
	out := make([][]int, len(ms))
	for i := range ms {
		out[i] = ms[i].ProbeLats
	}
	return out
}

func probeLatsIn(ms []engine.Metrics) [][]int {
	out := make([][]int, len(ms))
	for i := range ms {
		out[i] = ms[i].ProbeLatsIn
	}
	return out
}

// Phi is the sum of burst ceilings over the pool (experiments.md §2):
// victim, both science campaigns, every storm and the backfill (whose
// ceiling is the pool). The probe's ceiling is left out, as in the
// published formula (64 + 2·384 + 384·storms + 512)/512.
func Phi(s *engine.Scenario) float64 {
	sum := engine.VictimBurstCeiling + 2*s.SciBurst + s.Storms*s.StormBurst + s.Pool
	return float64(sum) / float64(s.Pool)
}
