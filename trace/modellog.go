package trace

import (
	"cmp"
	"math"
	"slices"

	"github.com/bursar-hpc/bursar/internal/stats"
)

// ModelVsLog holds the model against the log (docs/studies.md §4.8): for
// the measured jobs of a replay that the log gives a recorded wait (SWF
// field 3) and the replay started, each job's start-time error, the
// replay's first start − the recorded start (submit + recorded wait), and
// how well the replay's waits follow the recorded ones. A positive error
// is a job the model starts later than the machine did. Errors and waits
// are in seconds; every figure is NaN when there are no such jobs (the
// correlations too when either wait is constant).
type ModelVsLog struct {
	// Jobs is how many jobs the figures are over; Unrecorded the measured
	// jobs the log gives no wait, Unstarted those the replay never started
	// (denied or still queued at its stop): both left out.
	Jobs, Unrecorded, Unstarted int
	// MedianAbs and P90Abs are the median and the 90th percentile of the
	// absolute error (stats.Percentile's rank rule); SignedMean the mean of
	// the signed error, which says which way the model leans.
	MedianAbs, P90Abs, SignedMean float64
	// Pearson is the correlation of the simulated with the recorded waits;
	// Spearman the same over their ranks (ties at their mean rank), which
	// the few very long waits of a log cannot dominate.
	Pearson, Spearman float64
}

// CompareToLog is the model against the log over run's jobs submitted
// in iv (run is a replay of w).
func CompareToLog(w *Workload, run *Run, iv Interval) ModelVsLog {
	var m ModelVsLog
	// The jobs compared, counted first: the three arrays at their
	// length, not grown by appending (their copies were a third of this
	// on the full SDSC-SP2 log).
	n := 0
	for i := range run.Records {
		if r := &run.Records[i]; iv.Contains(r.Submit) && w.Jobs[i].LogWait >= 0 && len(r.Starts) > 0 {
			n++
		}
	}
	sim, logged, abs := make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n)
	var sum float64
	for i := range run.Records {
		r := &run.Records[i]
		if !iv.Contains(r.Submit) {
			continue
		}
		logWait := w.Jobs[i].LogWait
		switch {
		case logWait < 0:
			m.Unrecorded++
			continue
		case len(r.Starts) == 0:
			m.Unstarted++
			continue
		}
		ws := float64(r.Starts[0] - r.Submit)
		wl := float64(logWait)
		sim, logged = append(sim, ws), append(logged, wl)
		abs = append(abs, math.Abs(ws-wl))
		sum += ws - wl
	}
	m.Jobs = len(sim)
	m.MedianAbs, m.P90Abs, m.SignedMean = math.NaN(), math.NaN(), math.NaN()
	m.Pearson, m.Spearman = math.NaN(), math.NaN()
	if m.Jobs == 0 {
		return m
	}
	m.SignedMean = sum / float64(m.Jobs)
	// Sorted here, so that Percentile's own sort finds them in order.
	sortWholeFloats(abs)
	m.MedianAbs = stats.Percentile(abs, 50)
	m.P90Abs = stats.Percentile(abs, 90)
	m.Pearson = pearson(sim, logged)
	m.Spearman = pearson(ranks(sim), ranks(logged))
	return m
}

// pearson is the sample correlation of xs and ys (equal lengths), NaN
// when either is constant.
func pearson(xs, ys []float64) float64 {
	n := float64(len(xs))
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}

// ranks is each value's rank among xs, 1-based, tied values at the mean
// of their ranks.
func ranks(xs []float64) []float64 {
	order := ascending(xs)
	rk := make([]float64, len(xs))
	for i := 0; i < len(order); {
		j := i
		for j+1 < len(order) && xs[order[j+1]] == xs[order[i]] {
			j++
		}
		mean := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			rk[order[k]] = mean
		}
		i = j + 1
	}
	return rk
}

// ascending is the indices of xs in the ascending order of their values,
// ties in any order: every tie gets the same mean rank, so that their
// order does not matter. Whole seconds (every wait) are packed above
// their index and radix-sorted, as sortByTime's times are, several times
// faster than a comparison sort (a stable sort of indices through xs was
// a tenth of `trace --policy fifo` on SDSC-SP2, docs/traces.md); other
// values sort as (value, index) pairs.
func ascending(xs []float64) []int32 {
	order := make([]int32, len(xs))
	shift := uint(bitsLen(len(xs)))
	if hi, ok := wholeBelow(xs, 63-shift); ok {
		keys := make([]uint64, len(xs))
		for i, x := range xs {
			keys[i] = uint64(x)<<shift | uint64(i)
		}
		radixSort(keys, bitsLen(int(hi))+int(shift))
		mask := uint64(1)<<shift - 1
		for k, key := range keys {
			order[k] = int32(key & mask)
		}
		return order
	}
	type pair struct {
		x float64
		i int32
	}
	ps := make([]pair, len(xs))
	for i, x := range xs {
		ps[i] = pair{x, int32(i)}
	}
	slices.SortFunc(ps, func(a, b pair) int { return cmp.Compare(a.x, b.x) })
	for k, p := range ps {
		order[k] = p.i
	}
	return order
}

// wholeBelow reports whether every value of xs is a whole number in [0,
// 2^bits), −0 not among them (it would come back as +0), and the largest.
func wholeBelow(xs []float64, bits uint) (hi uint64, ok bool) {
	limit := math.Ldexp(1, int(bits))
	for _, x := range xs {
		if !(x >= 0 && x < limit && x == math.Trunc(x)) || (x == 0 && math.Signbit(x)) {
			return 0, false
		}
		hi = max(hi, uint64(x))
	}
	return hi, true
}

// sortWholeFloats sorts xs ascending: by a radix sort where they are whole
// numbers in [0, 2^63) (the model's errors against the log, whole
// seconds), by slices.Sort otherwise.
func sortWholeFloats(xs []float64) {
	hi, ok := wholeBelow(xs, 63)
	if !ok {
		slices.Sort(xs)
		return
	}
	keys := make([]uint64, len(xs))
	for i, x := range xs {
		keys[i] = uint64(x)
	}
	radixSort(keys, bitsLen(int(hi)))
	for i, k := range keys {
		xs[i] = float64(k)
	}
}
