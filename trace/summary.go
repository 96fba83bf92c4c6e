package trace

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/bursar-hpc/bursar/internal/stats"
)

// Default warm-up and cool-down of a measurement interval (docs/studies.md
// §4.5, §6.16): the first and last day of submits are replayed, not
// measured.
const (
	DefaultWarmup   = 86400
	DefaultCooldown = 86400
)

// Interval is a measurement interval in seconds of the log: the jobs
// submitted in [From, To) are measured, and GPU-seconds are clipped to it
// (docs/studies.md §4.2). Jobs outside it are replayed all the same: they
// load the machine, but their waits are not counted.
type Interval struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// Span is To − From, the seconds every utilization is a fraction of.
func (iv Interval) Span() int64 { return iv.To - iv.From }

// Contains reports whether t is in [From, To).
func (iv Interval) Contains(t int64) bool { return iv.From <= t && t < iv.To }

// clip is the length of [a, b) ∩ [From, To).
func (iv Interval) clip(a, b int64) int64 {
	return max(0, min(b, iv.To)-max(a, iv.From))
}

// MeasureInterval is the measurement interval of a window [from, until) of
// submits with its warm-up and cool-down left out: [from + warmup, until −
// cooldown). For a whole trace, from is its first submit and until its last
// submit + 1 (Workload.SubmitSpan). It is an error when nothing is left.
func MeasureInterval(from, until, warmup, cooldown int64) (Interval, error) {
	if warmup < 0 || cooldown < 0 {
		return Interval{}, fmt.Errorf("warm-up %d s, cool-down %d s: must not be negative", warmup, cooldown)
	}
	iv := Interval{From: from + warmup, To: until - cooldown}
	if iv.To <= iv.From {
		return Interval{}, fmt.Errorf("window [%d, %d) s: a warm-up of %d s and a cool-down of %d s leave nothing to measure", from, until, warmup, cooldown)
	}
	return iv, nil
}

// SubmitSpan is [first submit, last submit + 1): the whole trace as a
// window of submits.
func (w *Workload) SubmitSpan() (from, until int64) {
	if len(w.Jobs) == 0 {
		return 0, 0
	}
	return w.Jobs[0].Submit, w.Jobs[len(w.Jobs)-1].Submit + 1
}

// Stats are the wait and bounded-slowdown metrics of §4.1 over a set of
// jobs: every measured job that was not denied, an unfinished one at its
// censored wait (JobRecord.Wait). NaN where the set is empty. A *Lower
// flag says the value is only a lower bound ("≥"): the censored waits
// change it.
type Stats struct {
	Jobs     int     `json:"jobs"`     // non-denied jobs the statistics are over
	Denied   int     `json:"denied"`   // counted beside, not in the means
	Censored int     `json:"censored"` // unfinished jobs among Jobs
	MeanWait float64 `json:"mean_wait"`
	P50Wait  float64 `json:"p50_wait"`
	P95Wait  float64 `json:"p95_wait"`
	MeanBSLD float64 `json:"mean_bsld"`
	P95BSLD  float64 `json:"p95_bsld"`

	MeanWaitLower bool `json:"mean_wait_lower,omitempty"`
	P50WaitLower  bool `json:"p50_wait_lower,omitempty"`
	P95WaitLower  bool `json:"p95_wait_lower,omitempty"`
	MeanBSLDLower bool `json:"mean_bsld_lower,omitempty"`
	P95BSLDLower  bool `json:"p95_bsld_lower,omitempty"`
}

// LowerBounds names, by their output keys, the estimates that censored
// waits make lower bounds ("≥"), in a fixed order; nil when none is.
func (s Stats) LowerBounds() []string {
	var lower []string
	for _, l := range []struct {
		key   string
		lower bool
	}{{"mean_wait", s.MeanWaitLower}, {"p50_wait", s.P50WaitLower}, {"p95_wait", s.P95WaitLower},
		{"mean_bsld", s.MeanBSLDLower}, {"p95_bsld", s.P95BSLDLower}} {
		if l.lower {
			lower = append(lower, l.key)
		}
	}
	return lower
}

// Summary is the metrics of one replay over one measurement interval
// (docs/studies.md §4), computed from the per-job records alone.
type Summary struct {
	Interval Interval `json:"interval"`
	Pool     int      `json:"pool"`

	// The measured jobs (submitted in the interval) by state, and the
	// served fraction of their work (Σ GPUs × run).
	Jobs       int     `json:"jobs"`
	Served     int     `json:"served"`
	Denied     int     `json:"denied"`
	Unfinished int     `json:"unfinished"`
	ServedWork float64 `json:"served_work"`

	All     Stats    `json:"all"`
	ByClass [3]Stats `json:"by_class"` // Classes order
	// No statistics per campaign: no output reads them (summary.json
	// gives the classes'), and the hundreds of campaigns' selections
	// were 3 % of a `trace --policy fifo` process on a 300k-job log.
	// The users' waits enter the summary through NUWT.

	// GPU-seconds inside the interval, of every job (measured or not), as
	// fractions of Pool × Interval.Span(): the same denominator for every
	// policy (§4.2). Held = Useful + Lost; a run still going at the stop
	// counts as useful so far.
	Useful float64 `json:"useful"`
	Lost   float64 `json:"lost"`
	Held   float64 `json:"held"`
	// IdleWhileWaiting is the GPU-seconds inside the interval in which
	// GPUs stood idle while queued jobs would have fit in them, as a
	// fraction of the same pool × span: at each instant, min(free GPUs, Σ
	// GPUs of the queued jobs no wider than the free GPUs).
	IdleWhileWaiting float64 `json:"idle_while_waiting"`

	// Makespan is the last end (or the stop) − the first submit; Drain the
	// last end (or the stop) − the last submit. Reported beside, never
	// denominators.
	Makespan int64 `json:"makespan"`
	Drain    int64 `json:"drain"`
	// Converged is false when the replay stopped at its horizon with jobs
	// unfinished: every number is then a lower bound (§4.3).
	Converged bool `json:"converged"`

	// Log is the waits the log itself recorded (SWF field 3) for the
	// measured jobs that have one, and LogSim the simulated waits of the
	// same jobs (§4.5): how far the model is from the machine.
	Log    Stats `json:"log"`
	LogSim Stats `json:"log_sim"`

	// Fairness (§4.4): fair-start-time unfairness on the run's sample (nil
	// when the replay computed no fair start), the users' normalised-wait
	// dispersion, and, set by the caller from a fifo control
	// (Shares), the share-based daily Jain index.
	FairStart *FairStartStats `json:"fair_start,omitempty"`
	NUWT      NUWT            `json:"nuwt"`
	Shares    *ShareFairness  `json:"shares,omitempty"`
	// Harm is what preemptions and requeues did to the measured jobs.
	Harm Harm `json:"harm"`

	// BSLD is the bounded slowdown of every measured job, ascending, the
	// denied ones at +Inf: the CDF of §5, which tops out at the served
	// (and unfinished) fraction.
	BSLD []float64 `json:"-"`
}

// Measure computes the summary of a replay of w over iv from its records.
func Measure(w *Workload, run *Run, iv Interval) (*Summary, error) {
	if len(run.Records) != len(w.Jobs) {
		return nil, fmt.Errorf("measure: %d records for %d jobs", len(run.Records), len(w.Jobs))
	}
	if iv.Span() <= 0 {
		return nil, errors.New("measure: empty interval")
	}
	if len(w.Jobs) == 0 {
		return nil, errors.New("measure: no jobs")
	}
	recs := run.Records
	stop := run.Stop
	s := &Summary{Interval: iv, Pool: w.Pool, Converged: run.Converged}
	// At most every record: one allocation of 4 bytes a job, not a slice
	// grown by appending.
	measured := make([]int32, 0, len(recs))
	var work, servedWork float64
	for i := range recs {
		r := &recs[i]
		if !iv.Contains(r.Submit) {
			continue
		}
		measured = append(measured, int32(i))
		s.Jobs++
		gs := float64(w.Jobs[i].GPUs) * float64(r.Run)
		work += gs
		switch r.State {
		case Served:
			s.Served++
			servedWork += gs
		case Denied:
			s.Denied++
		case Unfinished:
			s.Unfinished++
		}
	}
	s.ServedWork = math.NaN()
	if work > 0 {
		s.ServedWork = servedWork / work
	}
	sc := newStatsScratch(w.Jobs, len(measured))
	s.All = sc.stats(recs, measured, stop, false)
	// The statistics of each class over its measured jobs in record
	// order, their values gathered in one pass (grouped).
	copy(s.ByClass[:], sc.grouped(recs, measured, stop, len(Classes), func(i int32) int {
		k := slices.Index(Classes[:], w.Jobs[i].Class)
		if k < 0 {
			k = 1 // unreachable: Read admits no other class
		}
		return k
	}))
	var logged []int32
	for _, i := range measured {
		if w.Jobs[i].LogWait >= 0 && recs[i].State != Denied {
			logged = append(logged, i)
		}
	}
	s.NUWT = nuwt(w.Jobs, recs, measured, stop)
	s.Harm = harmOf(recs, measured, stop)
	if run.FairSample != nil {
		fs := FairStarts(run, run.FairSample, run.FairStart, run.FairSeed)
		s.FairStart = &fs
	}
	s.Log = sc.stats(recs, logged, stop, true)
	s.LogSim = sc.stats(recs, logged, stop, false)

	// GPU-seconds clipped to the interval, makespan and drain.
	var useful, lost float64
	last := int64(math.MinInt64)
	for i := range recs {
		r, g := &recs[i], w.Jobs[i].GPUs
		r.runs(stop, func(a, b int64, aborted bool) {
			d := float64(g) * float64(iv.clip(a, b))
			if aborted {
				lost += d
			} else {
				useful += d
			}
			last = max(last, b)
		})
	}
	if last == math.MinInt64 {
		last = w.Jobs[len(w.Jobs)-1].Submit
	}
	s.Makespan = last - w.Jobs[0].Submit
	s.Drain = max(0, last-w.Jobs[len(w.Jobs)-1].Submit)
	den := float64(w.Pool) * float64(iv.Span())
	s.Useful, s.Lost, s.Held = useful/den, lost/den, (useful+lost)/den
	idle, keys := idleWhileWaitingKeys(w.Jobs, recs, w.Pool, stop, iv)
	s.IdleWhileWaiting = idle / den

	// In the statistics' scratch, done with by now: it holds len(measured)
	// values, and a second array would be 8 bytes a job more at the
	// measures' peak of memory.
	s.BSLD = sc.bslds[:0]
	for _, i := range measured {
		if recs[i].State == Denied {
			s.BSLD = append(s.BSLD, math.Inf(1))
		} else {
			s.BSLD = append(s.BSLD, recs[i].BSLD(stop))
		}
	}
	sortBSLD(s.BSLD, keys)
	return s, nil
}

// sortBSLD sorts the bounded slowdowns xs ascending, as slices.Sort
// would: as their bits, radix-sorted in keys (idleWhileWaiting's, done
// with by then: no array more at the measures' peak) where keys holds
// them and every value is +0 or more (+Inf included), whose bits are
// then in the values' order. A bounded slowdown is at least 1; anything
// else, or keys too short, is left to slices.Sort. The comparison sort
// was 2 % of trace --policy fifo on a 300k-job log.
func sortBSLD(xs []float64, keys []uint64) {
	if cap(keys) < len(xs) {
		slices.Sort(xs)
		return
	}
	keys = keys[:len(xs)]
	for k, x := range xs {
		// At most +Inf's bits: the sign bit clear (−0 too is left to
		// slices.Sort) and no NaN.
		if keys[k] = math.Float64bits(x); keys[k] > 0x7ff0000000000000 {
			slices.Sort(xs)
			return
		}
	}
	radixSort(keys, 64)
	for k := range xs {
		xs[k] = math.Float64frombits(keys[k])
	}
}

// statsScratch holds the buffers of the statistics so that the per-class
// ones allocate nothing more.
type statsScratch struct {
	waits, bslds []float64
	wCens, bCens []float64 // the censored jobs' values
	unfinished   []bool    // grouped's: whether the job at each place of waits is unfinished
	jobs         []Job     // the workload's, for the waits the log recorded
}

func newStatsScratch(jobs []Job, n int) *statsScratch {
	return &statsScratch{waits: make([]float64, 0, n), bslds: make([]float64, 0, n), jobs: jobs}
}

// stats summarizes the jobs idx (denied ones counted beside); logged takes
// the wait the log recorded instead of the replay's.
func (sc *statsScratch) stats(recs []JobRecord, idx []int32, stop int64, logged bool) Stats {
	waits, bslds := sc.waits[:0], sc.bslds[:0]
	wc, bc := sc.wCens[:0], sc.bCens[:0]
	denied := 0
	for _, i := range idx {
		r := &recs[i]
		if r.State == Denied {
			denied++
			continue
		}
		var wt, b float64
		if logged {
			wt = float64(sc.jobs[i].LogWait)
			b = max(1, (wt+float64(r.Run))/float64(max(r.Run, BSLDTau)))
		} else {
			wt = float64(r.Wait(stop))
			b = r.BSLD(stop)
		}
		waits = append(waits, wt)
		bslds = append(bslds, b)
		if !logged && r.State == Unfinished {
			wc = append(wc, wt)
			bc = append(bc, b)
		}
	}
	sc.waits, sc.bslds, sc.wCens, sc.bCens = waits, bslds, wc, bc
	return summarize(waits, bslds, wc, bc, denied)
}

// grouped is stats of the measured jobs of each of groups groups, key(i)
// the group of job i: the values of every group's jobs in record order,
// as stats would gather them, but gathered in one pass over measured
// into each group's own run of the scratch (a counting sort of the
// values, not of the indices). Gathering each group's values from a
// partition of the indices read the records out of order, a cache miss
// a job: most of the statistics' time on a 300k-job log.
func (sc *statsScratch) grouped(recs []JobRecord, measured []int32, stop int64, groups int, key func(i int32) int) []Stats {
	start := make([]int, groups+1)
	denied := make([]int, groups)
	for _, i := range measured {
		if g := key(i); recs[i].State == Denied {
			denied[g]++
		} else {
			start[g+1]++
		}
	}
	for g := range groups {
		start[g+1] += start[g]
	}
	n := start[groups]
	waits, bslds := sc.waits[:n], sc.bslds[:n]
	if cap(sc.unfinished) < n {
		sc.unfinished = make([]bool, n)
	}
	unf := sc.unfinished[:n]
	next := slices.Clone(start[:groups])
	for _, i := range measured {
		r := &recs[i]
		if r.State == Denied {
			continue
		}
		g := key(i)
		p := next[g]
		next[g]++
		waits[p], bslds[p], unf[p] = float64(r.Wait(stop)), r.BSLD(stop), r.State == Unfinished
	}
	out := make([]Stats, groups)
	for g := range groups {
		a, b := start[g], start[g+1]
		wc, bc := sc.wCens[:0], sc.bCens[:0]
		for p := a; p < b; p++ {
			if unf[p] {
				wc = append(wc, waits[p])
				bc = append(bc, bslds[p])
			}
		}
		sc.wCens, sc.bCens = wc, bc
		out[g] = summarize(waits[a:b], bslds[a:b], wc, bc, denied[g])
	}
	return out
}

// summarize is the statistics of the non-denied jobs' waits and bounded
// slowdowns, in record order, denied jobs counted beside and the
// censored (unfinished) jobs' values wc and bc. It reorders waits and
// bslds.
func summarize(waits, bslds, wc, bc []float64, denied int) Stats {
	s := Stats{Denied: denied, Censored: len(wc)}
	var sw, sb float64
	for k := range waits {
		sw += waits[k]
		sb += bslds[k]
	}
	s.Jobs = len(waits)
	if s.Jobs == 0 {
		nan := math.NaN()
		s.MeanWait, s.P50Wait, s.P95Wait, s.MeanBSLD, s.P95BSLD = nan, nan, nan, nan, nan
		return s
	}
	n := float64(s.Jobs)
	s.MeanWait, s.MeanBSLD = sw/n, sb/n
	// stats.Percentile's elements, found by selection rather than sorting: the
	// 95th first, then the 50th among the values at or below it.
	k95, k50 := stats.Rank(len(waits), 95), stats.Rank(len(waits), 50)
	s.P95Wait = selectK(waits, k95)
	s.P50Wait = selectK(waits[:k95+1], k50)
	s.P95BSLD = selectK(bslds, k95)
	if s.Censored > 0 {
		// A censored value can only grow. The mean then grows; a
		// percentile can grow only if some censored value sits at or
		// below it (one above it stays above it).
		s.MeanWaitLower, s.MeanBSLDLower = true, true
		s.P50WaitLower = slices.Min(wc) <= s.P50Wait
		s.P95WaitLower = slices.Min(wc) <= s.P95Wait
		s.P95BSLDLower = slices.Min(bc) <= s.P95BSLD
	}
	return s
}

// selectK is the k-th smallest of xs (0-based), what xs[k] would be once
// sorted; it reorders xs so that xs[:k] ≤ xs[k] ≤ xs[k+1:]. Quickselect
// with a median-of-three pivot, falling back to a sort if it partitions
// more than a few times log n (no input can make it quadratic).
func selectK(xs []float64, k int) float64 {
	lo, hi := 0, len(xs)-1
	for budget := 4 * (bitsLen(len(xs)) + 1); lo < hi; budget-- {
		if budget == 0 {
			slices.Sort(xs[lo : hi+1])
			return xs[k]
		}
		m := lo + (hi-lo)/2
		if xs[m] < xs[lo] {
			xs[m], xs[lo] = xs[lo], xs[m]
		}
		if xs[hi] < xs[lo] {
			xs[hi], xs[lo] = xs[lo], xs[hi]
		}
		if xs[hi] < xs[m] {
			xs[hi], xs[m] = xs[m], xs[hi]
		}
		pivot := xs[m]
		i, j := lo, hi
		for i <= j {
			for xs[i] < pivot {
				i++
			}
			for xs[j] > pivot {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	return xs[k]
}

func bitsLen(n int) int {
	b := 0
	for ; n > 0; n >>= 1 {
		b++
	}
	return b
}

// idleWhileWaiting sweeps the replay's starts, ends and queue changes in
// time order. Between two consecutive event times the free GPUs and the
// queue are constant; the GPUs a queued job would have fit in are min(free,
// Σ GPUs of the queued jobs no wider than free), read from a Fenwick tree
// of the queue's GPUs by width. It returns the GPU-seconds inside iv.
//
// Each change is packed in one word, (t − the earliest t) above its kind
// and the job's width, and the words are radix-sorted: 8 bytes a change
// at the measures' peak of memory rather than a 16-byte change and an
// 8-byte sort key (≈ 14 MB less on a 300k-job log, docs/traces.md). Their
// order at one time is then by kind and width, not by job, which changes
// nothing: the sweep adds all of a time's changes, integers, before it
// reads. Where the times span too much to pack, idleWhileWaitingWide.
func idleWhileWaiting(jobs []Job, recs []JobRecord, pool int, stop int64, iv Interval) float64 {
	idle, _ := idleWhileWaitingKeys(jobs, recs, pool, stop, iv)
	return idle
}

// idleWhileWaitingKeys is idleWhileWaiting and its array of packed
// changes, for the caller to reuse (nil where it had none).
//
// The Fenwick tree is over the jobs' distinct widths, not over every
// width up to the pool: a change packs its width's rank among them
// (widthRanks), and the GPUs the queue's jobs no wider than f GPUs hold
// are the prefix up to the rank of the widest width ≤ f. The sums are
// the same integers. A log has a few hundred distinct widths at most
// (99 on the 300k-job log of 93,056 processors), so the tree fits a
// few cache lines, where one over the pool (744 KB there) cost a cache
// miss at most of its steps: half of the sweep's time.
func idleWhileWaitingKeys(jobs []Job, recs []JobRecord, pool int, stop int64, iv Interval) (float64, []uint64) {
	n, widest := 0, 0
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	// Each width seen, marked in the same pass (widthRanks ranks them).
	seen := make([]int32, pool+1)
	for i := range recs {
		r, g := &recs[i], jobs[i].GPUs
		if r.State == Denied && len(r.Starts) == 0 {
			continue // never queued
		}
		n += 1 + 2*len(r.Starts)
		widest = max(widest, g)
		if g >= 0 && g <= pool {
			seen[g] = 1
		}
		lo, hi = min(lo, r.Submit), max(hi, r.Submit)
		for _, st := range r.Starts {
			lo, hi = min(lo, st), max(hi, st)
		}
		for _, a := range r.Aborted() {
			lo, hi = min(lo, a), max(hi, a)
		}
		if r.State == Served {
			lo, hi = min(lo, r.End), max(hi, r.End)
		}
		if g < 0 {
			widest = math.MaxInt // not packed
		}
	}
	if n == 0 {
		return 0, nil
	}
	span := uint64(hi) - uint64(lo)
	// A job wider than the pool (only in a workload built by hand: Read
	// drops them) is left to the wide sweep too, so that the ranks'
	// table is never longer than the pool.
	if widest > pool || widest > math.MaxInt32 || uint(bitsLen(widest))+2+uint(bits.Len64(span)) > 64 {
		return idleWhileWaitingWide(jobs, recs, pool, stop, iv), nil
	}
	rank, width := widthRanks(seen[:widest+1])
	gb := uint(bitsLen(len(width) - 1))
	low := gb + 2
	const (
		submit  = iota // joins the queue
		start          // takes its GPUs, leaves the queue
		requeue        // frees its GPUs, joins the queue again (preempted)
		leave          // frees its GPUs (ended, or preempted and refused)
	)
	keys := make([]uint64, 0, n)
	put := func(t int64, kind int, r int32) {
		keys = append(keys, (uint64(t)-uint64(lo))<<low|uint64(kind)<<gb|uint64(r))
	}
	for i := range recs {
		r := &recs[i]
		if r.State == Denied && len(r.Starts) == 0 {
			continue
		}
		g := rank[jobs[i].GPUs]
		put(r.Submit, submit, g)
		for k, st := range r.Starts {
			put(st, start, g)
			switch {
			case k < len(r.Aborted()) && r.State == Denied && k == len(r.Aborted())-1:
				put(r.Aborted()[k], leave, g)
			case k < len(r.Aborted()):
				put(r.Aborted()[k], requeue, g)
			case r.State == Served:
				put(r.End, leave, g)
			}
		}
	}
	// Ranks rise with the widths, so the keys sort as the widths' keys
	// did: by time, kind and width.
	radixSort(keys, int(low)+bits.Len64(span))
	fw := newFenwick(len(width) - 1)
	free := int64(pool)
	var idle float64
	gmask := uint64(1)<<gb - 1
	for k := 0; k < len(keys); {
		at := keys[k] >> low
		t := int64(uint64(lo) + at)
		for ; k < len(keys) && keys[k]>>low == at; k++ {
			r := int(keys[k] & gmask)
			g := width[r]
			switch keys[k] >> gb & 3 {
			case submit:
				fw.addRank(r, g)
			case start:
				free -= g
				fw.addRank(r, -g)
			case requeue:
				free += g
				fw.addRank(r, g)
			case leave:
				free += g
			}
		}
		next := stop
		if k < len(keys) {
			next = int64(uint64(lo) + keys[k]>>low)
		}
		if next <= t || free <= 0 {
			continue
		}
		// The jobs no wider than free GPUs (none is wider than the
		// pool): those of the ranks up to the widest such width.
		fit := fw.prefix(int(rank[min(free, int64(widest))]))
		if d := iv.clip(t, next); d > 0 && fit > 0 {
			idle += float64(min(free, fit)) * float64(d)
		}
	}
	return idle, keys
}

// widthRanks ranks the widths of the jobs idleWhileWaitingKeys sweeps:
// seen[g] is 1 where a job of g GPUs is among them, 0 elsewhere, up to
// the widest. It turns seen into rank: rank[g] is how many of the
// distinct positive widths are at most g (a job's own width's rank
// among them, from 1; 0 for no GPUs); width[r] is the width of rank r
// (width[0] = 0).
func widthRanks(seen []int32) (rank []int32, width []int64) {
	rank = seen
	width = []int64{0}
	for g := 1; g < len(rank); g++ {
		if rank[g] != 0 {
			width = append(width, int64(g))
		}
		rank[g] = int32(len(width) - 1)
	}
	if len(rank) > 0 {
		rank[0] = 0
	}
	return rank, width
}

// idleWhileWaitingWide is idleWhileWaiting with a 16-byte change a job's
// submit, start and end, sorted by sortByTime: where its packed words
// would not hold the times' span, and the plain computation its tests
// compare with.
func idleWhileWaitingWide(jobs []Job, recs []JobRecord, pool int, stop int64, iv Interval) float64 {
	type change struct {
		t     int64
		free  int32 // GPUs freed (+) or taken (−)
		width int32 // a job of this width joins (+) or leaves (−) the queue
	}
	ch := make([]change, 0, 3*len(recs))
	for i := range recs {
		r := &recs[i]
		if r.State == Denied && len(r.Starts) == 0 {
			continue // never queued
		}
		g := int32(jobs[i].GPUs)
		ch = append(ch, change{t: r.Submit, width: g})
		for k, st := range r.Starts {
			ch = append(ch, change{t: st, free: -g, width: -g})
			switch {
			case k < len(r.Aborted()) && r.State == Denied && k == len(r.Aborted())-1:
				// Preempted, then refused when requeued: it leaves.
				ch = append(ch, change{t: r.Aborted()[k], free: g})
			case k < len(r.Aborted()):
				ch = append(ch, change{t: r.Aborted()[k], free: g, width: g})
			case r.State == Served:
				ch = append(ch, change{t: r.End, free: g})
			}
		}
	}
	ch = sortByTime(ch, func(c change) int64 { return c.t })
	fw := newFenwick(pool)
	free := int64(pool)
	var idle float64
	for k := 0; k < len(ch); {
		t := ch[k].t
		for k < len(ch) && ch[k].t == t {
			c := &ch[k]
			free += int64(c.free)
			if c.width > 0 {
				fw.add(int(c.width), int64(c.width))
			} else if c.width < 0 {
				fw.add(int(-c.width), int64(c.width))
			}
			k++
		}
		next := stop
		if k < len(ch) {
			next = ch[k].t
		}
		if next <= t || free <= 0 {
			continue
		}
		fit := fw.prefix(int(min(free, int64(pool))))
		if d := iv.clip(t, next); d > 0 && fit > 0 {
			idle += float64(min(free, fit)) * float64(d)
		}
	}
	return idle
}

// sortByTime sorts xs by time, in place (the order of equal times is any:
// the sweeps apply every change at one time before reading). It sorts packed keys,
// (t − the earliest t) above the element's index, as integers — several
// times faster than a comparison sort of the structs — and falls back to
// one where the times span too much to pack.
func sortByTime[T any](xs []T, time func(T) int64) []T {
	if len(xs) < 2 {
		return xs
	}
	lo, hi := time(xs[0]), time(xs[0])
	for _, x := range xs {
		lo, hi = min(lo, time(x)), max(hi, time(x))
	}
	shift := uint(bitsLen(len(xs)))
	if uint64(hi-lo) >= 1<<(63-shift) {
		slices.SortStableFunc(xs, func(a, b T) int { return cmpInt(time(a), time(b)) })
		return xs
	}
	keys := make([]uint64, len(xs))
	for i, x := range xs {
		keys[i] = uint64(time(x)-lo)<<shift | uint64(i)
	}
	radixSort(keys, bitsLen(int(hi-lo))+int(shift))
	// xs in the keys' order, in place, one cycle of the permutation at a
	// time: position i takes the element at keys[i]'s index, and a
	// position done points at itself. No second array of the elements:
	// 16 bytes a change less at the measures' peak (docs/traces.md).
	mask := uint64(1)<<shift - 1
	for i := range keys {
		keys[i] &= mask
	}
	for i := range xs {
		if keys[i] == uint64(i) {
			continue
		}
		first := xs[i]
		j := i
		for {
			k := int(keys[j])
			keys[j] = uint64(j)
			if k == i {
				xs[j] = first
				break
			}
			xs[j] = xs[k]
			j = k
		}
	}
	return xs
}

// radixSort sorts keys ascending, every key below 1<<bits, in place: by
// their top digit (an American flag sort: counted, then moved into their
// buckets by swaps), then each bucket by the next digit, down to buckets
// too small for a table of counts, which slices.Sort sorts. On the
// measures' hundreds of thousands of packed keys of a 300k-job log it
// does a fraction of a comparison sort's work, with no second array at
// the measures' peak of memory. The keys are distinct (their index is in
// their low bits), or equal only where they are the same value, so that
// the order is the same as slices.Sort's.
//
// A digit is as wide as the keys are many (radixDigit, at most 11 bits):
// buckets of a few keys after one level or two, where a digit of 8 bits
// on the 300k-job log's 900,000 keys left buckets of thousands for a
// second level and buckets of tens for slices.Sort, whose pivots and
// insertion sorts were a third of the sort. A digit
// that every key shares moves nothing: the next one is taken at once.
func radixSort(keys []uint64, bits int) {
	if len(keys) < radixMin || bits <= 0 {
		slices.Sort(keys)
		return
	}
	var c radixCounts
	c.sort(keys, bits, 0)
}

// radixCounts are radixSort's tables of counts, one for each level of
// its recursion (a level's table is read while the levels below it
// sort its buckets), each made anew only where a digit needs it wider.
type radixCounts [][]int

func (c *radixCounts) sort(keys []uint64, bits, level int) {
	for len(keys) >= radixLeaf && bits > 0 {
		d := radixDigit(len(keys), bits)
		shift := uint(bits - d)
		nb := 1 << d
		mask := uint64(nb - 1)
		for len(*c) <= level {
			*c = append(*c, nil)
		}
		t := (*c)[level]
		if len(t) < 3*nb {
			t = make([]int, 3*nb)
			(*c)[level] = t
		}
		count, next, end := t[:nb], t[nb:2*nb], t[2*nb:3*nb]
		clear(count)
		for _, k := range keys {
			count[k>>shift&mask]++
		}
		if count[keys[0]>>shift&mask] == len(keys) {
			bits = int(shift) // one bucket: nothing to move
			continue
		}
		sum := 0
		for b, n := range count {
			next[b] = sum
			sum += n
			end[b] = sum
		}
		for b := range count {
			for next[b] < end[b] {
				k := keys[next[b]]
				x := int(k >> shift & mask)
				if x == b {
					next[b]++
					continue
				}
				keys[next[b]], keys[next[x]] = keys[next[x]], k
				next[x]++
			}
		}
		lo := 0
		for _, n := range count {
			if n > 1 {
				c.sort(keys[lo:lo+n], int(shift), level+1)
			}
			lo += n
		}
		return
	}
	if len(keys) > 1 {
		slices.Sort(keys)
	}
}

// radixDigit is the bits of the digit radixSort sorts n keys by, left
// bits of them still to sort: log2(n) − 1 rounded down, so that a bucket
// holds two to four keys on average, at most radixMaxDigit (three tables
// of 2,048 counts, 48 KB, near the first-level cache) and at most left.
func radixDigit(n, left int) int {
	return min(max(bits.Len(uint(n))-2, 1), radixMaxDigit, left)
}

// radixMin is the fewest keys radixSort counts rather than leaves to
// slices.Sort, radixLeaf the fewest a bucket is counted again at, and
// radixMaxDigit the widest digit.
const (
	radixMin      = 256
	radixLeaf     = 24
	radixMaxDigit = 11
)

// fenwick is a binary indexed tree over widths 1…n of sums.
type fenwick []int64

func newFenwick(n int) fenwick { return make(fenwick, n+1) }

func (f fenwick) add(i int, v int64) {
	for ; i < len(f); i += i & -i {
		f[i] += v
	}
}

// addRank adds a job of g GPUs (or with −g takes it out) at rank r of
// a tree over ranks (idleWhileWaitingKeys); rank 0 is no GPUs, no job.
func (f fenwick) addRank(r int, g int64) {
	if r > 0 {
		f.add(r, g)
	}
}

// prefix is the sum over widths (or ranks) 1…i.
func (f fenwick) prefix(i int) int64 {
	var s int64
	for ; i > 0; i -= i & -i {
		s += f[i]
	}
	return s
}
