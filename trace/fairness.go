package trace

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"

	"github.com/bursar-hpc/bursar/internal/stats"
)

// DefaultFairSample is the number of jobs whose fair start times are
// computed (docs/studies.md §4.4), and DefaultFairSeed the seed that draws
// them.
const (
	DefaultFairSample        = 1000
	DefaultFairSeed   uint64 = 1
)

// MinNUWTJobs is the number of measured jobs a user needs to enter the
// dispersion of normalised waits (§4.4).
const MinNUWTJobs = 5

// FairSample draws the jobs whose fair start times are computed: n of the
// jobs submitted in iv (all of them if there are fewer; none for n ≤ 0), uniformly without
// replacement from a PCG generator seeded with seed, as indices into
// w.Jobs in ascending order. It depends on the workload, the interval and
// the seed only, so every policy gets the same jobs.
func FairSample(w *Workload, iv Interval, n int, seed uint64) []int {
	if n <= 0 {
		return nil
	}
	// Counted first, so that the candidates are one exact allocation, not
	// a slice grown by appending (13 MB allocated for 2.4 MB on a
	// 300k-job log).
	count := 0
	for i := range w.Jobs {
		if iv.Contains(w.Jobs[i].Submit) {
			count++
		}
	}
	if count == 0 {
		return nil
	}
	in := make([]int, 0, count)
	for i := range w.Jobs {
		if iv.Contains(w.Jobs[i].Submit) {
			in = append(in, i)
		}
	}
	if n >= len(in) {
		return in
	}
	rng := rand.New(rand.NewPCG(seed, 0xfa1257a7))
	// A partial Fisher–Yates shuffle: the first n places.
	for k := range n {
		m := k + rng.IntN(len(in)-k)
		in[k], in[m] = in[m], in[k]
	}
	// A copy of the n, so that the sample a study keeps does not hold
	// every candidate's place.
	out := slices.Clone(in[:n])
	slices.Sort(out)
	return out
}

// ExactFairStarts are the fair start times of the sampled jobs (FairSample)
// under the exact FCFS + EASY (ReplayExact): at each sampled job's submit
// time a copy of the replay's state runs on with every later submit
// withheld until the job starts (docs/studies.md §6.17).
func ExactFairStarts(w *Workload, sample []int) []int64 {
	if len(sample) == 0 {
		return make([]int64, 0)
	}
	_, fair := exactStartsFair(w, sample)
	return fair
}

// exactStartsFair is ReplayEASY's start times and ExactFairStarts' fair
// start times from one replay: the forks leave the replay they are taken
// from as it was (unfork), so its starts are ReplayEASY's, and a study of
// fifo need not replay the log a second time for its sample.
func exactStartsFair(w *Workload, sample []int) (start, fair []int64) {
	fair = make([]int64, len(sample))
	for i := range fair {
		fair[i] = -1
	}
	if len(w.Jobs) == 0 {
		return make([]int64, 0), fair
	}
	e := newEasyRun(w)
	if len(sample) == 0 {
		e.advance(nil, nil)
		return e.start, fair
	}
	p := 0
	// Up to the next submit after a sampled job's, the replay is its
	// withheld one: the fork is taken only then, and only if the job has
	// not started yet.
	e.advance(nil, func(next int) {
		for p < len(sample) && sample[p] < next {
			s := w.Jobs[sample[p]].Submit
			q := p
			for q < len(sample) && w.Jobs[sample[q]].Submit == s {
				q++
			}
			group := sample[p:q]
			waiting := false
			for k, j := range group {
				fair[p+k] = e.start[j]
				waiting = waiting || e.start[j] < 0
			}
			if waiting {
				c := e.fork(next)
				c.advance(func() bool {
					for _, j := range group {
						if c.start[j] < 0 {
							return false
						}
					}
					return true
				}, nil)
				for k, j := range group {
					fair[p+k] = c.start[j]
				}
				e.unfork(c)
			}
			p = q
		}
	})
	// The sampled jobs after the last submit: the replay was theirs.
	for ; p < len(sample); p++ {
		fair[p] = e.start[sample[p]]
	}
	return e.start, fair
}

// FairStartStats is fair-start-time unfairness (Sabin & Sadayappan, JSSPP
// 2005; docs/studies.md §4.4): of the sampled jobs, the fraction that
// started (first start) after their fair start time, with a 95 % Wilson
// interval, and over those late jobs the mean amount by which they missed
// it, with a 95 % Student t interval; and Last, the same by each job's
// last start, the one its served run began at, so that a job started on
// time and then preempted and requeued is late there. A job still
// unstarted at the stop is late at its censored miss (stop − fair start,
// or 0 where its fair start lies beyond the horizon too: Unknown), never
// on time. Denied jobs, and started jobs whose copy reached the horizon
// without starting them, have no fair start and are left out.
type FairStartStats struct {
	Seed     uint64  `json:"seed"`
	Sampled  int     `json:"sampled"`
	N        int     `json:"n"` // sampled jobs with a fair start (or never started)
	Late     int     `json:"late"`
	LateFrac float64 `json:"late_fraction"`
	LateLo   float64 `json:"late_fraction_lo"`
	LateHi   float64 `json:"late_fraction_hi"`
	MeanMiss float64 `json:"mean_miss"` // seconds
	MissLo   float64 `json:"mean_miss_lo"`
	MissHi   float64 `json:"mean_miss_hi"`
	Censored int     `json:"censored"` // late jobs never started by the stop
	// Unknown counts the censored jobs whose fair start the copy did not
	// reach either: late at a miss of 0, a lower bound.
	Unknown int `json:"unknown"`
	// Last is the same measure by the last start.
	Last Lateness `json:"last"`
}

// Lateness is how many of N jobs started after their fair start time, and
// by how much: FairStartStats by one kind of start.
type Lateness struct {
	Late     int     `json:"late"`
	LateFrac float64 `json:"late_fraction"`
	LateLo   float64 `json:"late_fraction_lo"`
	LateHi   float64 `json:"late_fraction_hi"`
	MeanMiss float64 `json:"mean_miss"`
	MissLo   float64 `json:"mean_miss_lo"`
	MissHi   float64 `json:"mean_miss_hi"`
	Censored int     `json:"censored"`
}

// lateness summarizes the misses of the late jobs among n.
func lateness(miss []float64, n, censored int) Lateness {
	l := Lateness{Late: len(miss), Censored: censored}
	var late, missed stats.Interval
	l.LateFrac, late = stats.Wilson(l.Late, n)
	l.MeanMiss, missed = stats.MeanT(miss, byJob)
	missed = missed.Within(0, math.Inf(1)) // a miss is positive (docs/studies.md §5.1)
	l.LateLo, l.LateHi, l.MissLo, l.MissHi = late.Lo, late.Hi, missed.Lo, missed.Hi
	return l
}

// FairStarts summarizes the fair start times fair of the jobs sample (as
// ReplayOptions.FairStart and Run.FairStart, or ExactFairStarts).
func FairStarts(run *Run, sample []int, fair []int64, seed uint64) FairStartStats {
	s := FairStartStats{Seed: seed, Sampled: len(sample)}
	var firstMiss, lastMiss []float64
	for k, j := range sample {
		r := &run.Records[j]
		never := len(r.Starts) == 0 && r.State != Denied
		switch {
		case fair[k] >= 0:
		case never:
			// The copy did not start it by the horizon either: late, by at
			// least nothing.
			s.N++
			s.Censored++
			s.Unknown++
			firstMiss, lastMiss = append(firstMiss, 0), append(lastMiss, 0)
			continue
		default:
			continue
		}
		s.N++
		if never {
			s.Censored++
			m := float64(max(run.Stop-fair[k], 0))
			firstMiss, lastMiss = append(firstMiss, m), append(lastMiss, m)
			continue
		}
		if first := r.Starts[0]; first > fair[k] {
			firstMiss = append(firstMiss, float64(first-fair[k]))
		}
		if last := r.LastStart(); last > fair[k] {
			lastMiss = append(lastMiss, float64(last-fair[k]))
		}
	}
	first := lateness(firstMiss, s.N, s.Censored)
	s.Late, s.LateFrac, s.LateLo, s.LateHi = first.Late, first.LateFrac, first.LateLo, first.LateHi
	s.MeanMiss, s.MissLo, s.MissHi = first.MeanMiss, first.MissLo, first.MissHi
	s.Last = lateness(lastMiss, s.N, s.Censored)
	return s
}

// Harm is what preemption and requeueing did to a replay's measured jobs
// that were not denied (docs/studies.md §4.4): their mean wait to the
// first start (never started: the stop − submit, a lower bound), beside
// the summary's mean wait, which is the total (response − run: the
// requeued waits and the aborted runs included); and the preemptions per
// job, their mean and maximum and the fraction of jobs preempted at least
// once and at least ten times.
type Harm struct {
	Jobs           int     `json:"jobs"`
	FirstWait      float64 `json:"first_wait"`
	FirstWaitLower bool    `json:"first_wait_lower,omitempty"`
	MeanPreempt    float64 `json:"mean_preemptions"`
	MaxPreempt     int     `json:"max_preemptions"`
	Preempted      float64 `json:"preempted"`    // fraction preempted ≥ 1 time
	Preempted10    float64 `json:"preempted_10"` // fraction preempted ≥ 10 times
}

// harmOf is the Harm of the measured jobs.
func harmOf(recs []JobRecord, measured []int32, stop int64) Harm {
	var h Harm
	var wait, pre float64
	var once, ten int
	for _, i := range measured {
		r := &recs[i]
		if r.State == Denied {
			continue
		}
		h.Jobs++
		if len(r.Starts) == 0 {
			wait += float64(max(stop-r.Submit, 0))
			h.FirstWaitLower = true
		} else {
			wait += float64(r.Starts[0] - r.Submit)
		}
		pre += float64(r.Preemptions)
		h.MaxPreempt = max(h.MaxPreempt, r.Preemptions)
		if r.Preemptions >= 1 {
			once++
		}
		if r.Preemptions >= 10 {
			ten++
		}
	}
	if h.Jobs == 0 {
		nan := math.NaN()
		h.FirstWait, h.MeanPreempt, h.Preempted, h.Preempted10 = nan, nan, nan, nan
		return h
	}
	n := float64(h.Jobs)
	h.FirstWait, h.MeanPreempt = wait/n, pre/n
	h.Preempted, h.Preempted10 = float64(once)/n, float64(ten)/n
	return h
}

// byJob is how trace's fairness means sum (stats.Method): in the order of
// the jobs (or days), with the plain two-pass spread, as the committed
// results were written.
var byJob = stats.Method{Sum: stats.InOrder, Spread: stats.Plain}

// NUWT is the dispersion of users' normalised waits (Klusáček & Rudová
// 2012; docs/studies.md §4.4): each user's Σ wait ÷ Σ (GPUs × run) over
// its measured jobs that were not denied (unfinished ones at their
// censored wait), and the coefficient of variation (population standard
// deviation ÷ mean) of that over the users with at least MinNUWTJobs such
// jobs; 0 when every wait is 0, NaN with no such user.
type NUWT struct {
	CV    float64 `json:"cv"`
	Users int     `json:"users"`
	Lower bool    `json:"censored,omitempty"` // some wait is censored
}

func nuwt(jobs []Job, recs []JobRecord, measured []int32, stop int64) NUWT {
	type acc struct {
		user       int
		wait, work float64
		jobs       int
	}
	var byUser []acc
	var out NUWT
	// Each user's place in byUser, found in a table by user id where the
	// ids are small (as a log's are), by a binary search of byUser kept
	// in user order otherwise: a search a job was most of this on a
	// 300k-job log, whose users' jobs interleave. Either way each user's
	// sums add its jobs in record order.
	lo, hi := 0, -1
	for _, i := range measured {
		lo, hi = min(lo, jobs[i].User), max(hi, jobs[i].User)
	}
	var slot []int32
	if lo >= 0 && hi < 4*len(measured)+1024 {
		slot = make([]int32, hi+1)
	}
	for _, i := range measured {
		r := &recs[i]
		if r.State == Denied {
			continue
		}
		user := jobs[i].User
		var k int
		if slot != nil {
			if slot[user] == 0 {
				byUser = append(byUser, acc{user: user})
				slot[user] = int32(len(byUser))
			}
			k = int(slot[user]) - 1
		} else {
			var found bool
			k, found = slices.BinarySearchFunc(byUser, user, func(a acc, u int) int { return a.user - u })
			if !found {
				byUser = slices.Insert(byUser, k, acc{user: user})
			}
		}
		byUser[k].wait += float64(r.Wait(stop))
		byUser[k].work += float64(jobs[i].GPUs) * float64(r.Run)
		byUser[k].jobs++
		out.Lower = out.Lower || r.State == Unfinished
	}
	// In user order, as the search keeps them: the order cv adds them in.
	slices.SortFunc(byUser, func(a, b acc) int { return a.user - b.user })
	var xs []float64
	for _, a := range byUser {
		if a.jobs >= MinNUWTJobs {
			xs = append(xs, a.wait/a.work)
		}
	}
	out.Users = len(xs)
	out.CV = cv(xs)
	return out
}

// cv is the population coefficient of variation, 0 when every value is 0.
func cv(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var m float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	if m == 0 {
		return 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss/float64(len(xs))) / m
}

// Day is the length of the periods of the share-based measure.
const Day = 86400

// demandChanges are the changes of each campaign's demand (GPUs of its jobs
// queued or running: from submit to the served end, or to the stop; a job
// preempted and then refused, to its preemption) in a replay, sorted by
// time.
type demandChange struct {
	t        int64
	campaign int32
	gpus     int32
}

// demandEnd is when record r's demand ends, false if it has none: denied
// at once, or ended no later than its submit.
func demandEnd(r *JobRecord, stop int64) (int64, bool) {
	end := stop
	switch {
	case r.State == Served:
		end = r.End
	case r.State == Denied && len(r.Aborted()) > 0:
		end = r.Aborted()[len(r.Aborted())-1] // preempted, then refused
	case r.State == Denied:
		return 0, false
	}
	return end, end > r.Submit
}

func demandChanges(jobs []Job, recs []JobRecord, stop int64) []demandChange {
	ch := make([]demandChange, 0, 2*len(recs))
	for i := range recs {
		r, j := &recs[i], &jobs[i]
		end, ok := demandEnd(r, stop)
		if !ok {
			continue
		}
		ch = append(ch, demandChange{r.Submit, int32(j.Campaign), int32(j.GPUs)}, demandChange{end, int32(j.Campaign), -int32(j.GPUs)})
	}
	// In time order; the order of one time's changes is any: both readers
	// apply all of a time's changes before they read the demands (Shares'
	// fair split keeps the busy campaigns sorted by demand ÷ share and
	// index, whatever order they changed in).
	return sortByTime(ch, func(c demandChange) int64 { return c.t })
}

// demandList is demandChanges in the same order, each change packed in
// one word, (t − the earliest t) above its record's index and whether it
// is the demand's end, and radix-sorted, with each record's campaign and
// GPUs beside: 8 bytes a change and 8 a record rather than a 16-byte
// change and an 8-byte sort key (≈ 7 MB less on a 300k-job log while the
// share measure runs, docs/traces.md). The order of one time's changes is
// the record order, as demandChanges' is: Shares' fair split takes it as
// it comes, and with a campaign entitled to nothing (a ratio of 0 ÷ 0)
// the order of its moves can matter. Where the words would not hold the
// times' span, wide holds demandChanges.
type demandList struct {
	keys []uint64
	lo   int64
	ib   uint       // bits of the record index
	who  [][2]int32 // record → campaign, GPUs
	wide []demandChange
}

func demandKeys(jobs []Job, recs []JobRecord, stop int64) demandList {
	n := 0
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range recs {
		r := &recs[i]
		end, ok := demandEnd(r, stop)
		if !ok {
			continue
		}
		n += 2
		lo, hi = min(lo, r.Submit), max(hi, end)
	}
	if n == 0 {
		return demandList{}
	}
	l := demandList{lo: lo, ib: uint(bitsLen(len(recs) - 1))}
	low := l.ib + 1
	span := uint64(hi) - uint64(lo)
	if low+uint(bits.Len64(span)) > 64 {
		return demandList{wide: demandChanges(jobs, recs, stop)}
	}
	l.keys = make([]uint64, 0, n)
	l.who = make([][2]int32, len(recs))
	for i := range recs {
		r := &recs[i]
		end, ok := demandEnd(r, stop)
		if !ok {
			continue
		}
		l.who[i] = [2]int32{int32(jobs[i].Campaign), int32(jobs[i].GPUs)}
		l.keys = append(l.keys, (uint64(r.Submit)-uint64(lo))<<low|uint64(i)<<1, (uint64(end)-uint64(lo))<<low|uint64(i)<<1|1)
	}
	radixSort(l.keys, int(low)+bits.Len64(span))
	return l
}

func (l *demandList) len() int {
	if l.wide != nil {
		return len(l.wide)
	}
	return len(l.keys)
}

// at is the k-th change in time order.
func (l *demandList) at(k int) demandChange {
	if l.wide != nil {
		return l.wide[k]
	}
	x := l.keys[k]
	w := l.who[x>>1&(1<<l.ib-1)]
	g := w[1]
	if x&1 != 0 {
		g = -g
	}
	return demandChange{t: int64(uint64(l.lo) + x>>(l.ib+1)), campaign: w[0], gpus: g}
}

// ShareControl is the control set of the share-based measure: for each
// whole day of the interval, the campaigns that had work waiting or
// running throughout that day under fifo (docs/studies.md §4.4), so that
// the set does not depend on the policy under test.
type ShareControl struct {
	Interval Interval
	Days     [][]int32 // day d is [From + d·Length, From + (d+1)·Length); its campaigns ascending
	Length   int64     // the day's length: Day (a test shortens it)
	// fifo and changes are the fifo replay the set was drawn from and its
	// demand changes, which Shares reuses when it measures that very
	// replay (the fifo run of a study) instead of sorting them again.
	fifo    *Run
	changes demandList
}

// FifoControl is the control set from a fifo replay of w (ReplayExact).
func FifoControl(w *Workload, fifo *Run, iv Interval) ShareControl {
	return fifoControl(w, fifo, iv, Day)
}

func fifoControl(w *Workload, fifo *Run, iv Interval, dayLength int64) ShareControl {
	ctl := ShareControl{Interval: iv, Days: make([][]int32, iv.Span()/dayLength), Length: dayLength}
	busy := make([]int64, len(w.Campaigns)) // demand > 0 since; −1 idle
	demand := make([]int64, len(w.Campaigns))
	for c := range busy {
		busy[c] = -1
	}
	mark := func(c int, a, b int64) {
		first := (a - iv.From + dayLength - 1) / dayLength
		if a <= iv.From {
			first = 0
		}
		for d := max(first, 0); d < int64(len(ctl.Days)) && iv.From+(d+1)*dayLength <= b; d++ {
			ctl.Days[d] = append(ctl.Days[d], int32(c))
		}
	}
	ch := demandKeys(w.Jobs, fifo.Records, fifo.Stop)
	ctl.fifo, ctl.changes = fifo, ch
	for k, n := 0, ch.len(); k < n; {
		t := ch.at(k).t
		k0 := k
		for ; k < n; k++ {
			x := ch.at(k)
			if x.t != t {
				break
			}
			demand[x.campaign] += int64(x.gpus)
		}
		// Only the campaigns whose demand changed at t can start or end
		// a busy stretch (the net change is read once all of t's are in).
		for j := k0; j < k; j++ {
			switch c := int(ch.at(j).campaign); {
			case demand[c] > 0 && busy[c] < 0:
				busy[c] = t
			case demand[c] == 0 && busy[c] >= 0:
				mark(c, busy[c], t)
				busy[c] = -1
			}
		}
	}
	for c := range busy {
		if busy[c] >= 0 {
			mark(c, busy[c], fifo.Stop)
		}
	}
	for d := range ctl.Days {
		slices.Sort(ctl.Days[d])
	}
	return ctl
}

// heldIn adds a run of g GPUs over [a, b) to Shares' held GPU-seconds of
// campaign c: for each day d of the days from from to end (of length
// each) that the run overlaps, g × the seconds of it in the day to the
// cell of c in days[d] (held[cell[d]+s], s its place in the sorted
// days[d]), where c is in days[d].
func heldIn(held []float64, cell []int, days [][]int32, from, end, length int64, c int32, g float64, a, b int64) {
	a, b = max(a, from), min(b, end)
	for a < b {
		d := (a - from) / length
		e := min(b, from+(d+1)*length)
		if s, ok := slices.BinarySearch(days[d], c); ok {
			held[cell[d]+s] += g * float64(e-a)
		}
		a = e
	}
}

// ShareFairness is the share-based measure of docs/studies.md §4.4: for
// each whole day, over the control set's campaigns, x_c = the GPU-seconds c
// held that day ÷ its fair allocation (at every instant, the
// entitlement-weighted max–min split of the pool among the campaigns with
// demand, each capped by its demand, under the policy under test), and
// Jain's index of the x_c (Jain, Chiu & Hawe, DEC-TR-301, 1984); the mean
// of the daily indices over the days with at least two such campaigns,
// with a 95 % t interval over days.
type ShareFairness struct {
	Jain float64 `json:"jain"`
	Lo   float64 `json:"jain_lo"`
	Hi   float64 `json:"jain_hi"`
	Days int     `json:"days"`
}

// Shares computes the share-based measure of a replay against a control.
func Shares(w *Workload, run *Run, ctl ShareControl) ShareFairness {
	iv := ctl.Interval
	nd := len(ctl.Days)
	dayLength := ctl.Length
	if dayLength <= 0 {
		dayLength = Day
	}
	// Only the control set's cells are read, so held and fair keep one
	// slot per day and control campaign: day d's are cell[d] on, in the
	// order of ctl.Days[d], not a day × campaign table (4,085 days × 475
	// campaigns of each on a 300k-job log: 31 MB; docs/traces.md).
	cell := make([]int, nd+1)
	for d, cs := range ctl.Days {
		cell[d+1] = cell[d] + len(cs)
	}
	held := make([]float64, cell[nd])
	fair := make([]float64, cell[nd])
	end := iv.From + int64(nd)*dayLength
	perDay := func(a, b int64, f func(d int, dt float64)) {
		a, b = max(a, iv.From), min(b, end)
		for a < b {
			d := (a - iv.From) / dayLength
			e := min(b, iv.From+(d+1)*dayLength)
			f(int(d), float64(e-a))
			a = e
		}
	}
	// Each run's GPU-seconds day by day, into its campaign's cell where
	// the campaign is in the day's control set (heldIn). The run of a
	// job served once, never aborted (every job of an exact replay, most
	// of any other), is read without runs' callback: the same span, so
	// the same terms in the same order.
	for i := range run.Records {
		r := &run.Records[i]
		c, g := int32(w.Jobs[i].Campaign), float64(w.Jobs[i].GPUs)
		if len(r.Starts) == 1 && r.aborts == nil && r.State == Served {
			heldIn(held, cell, ctl.Days, iv.From, end, dayLength, c, g, r.Starts[0], r.End)
			continue
		}
		r.runs(run.Stop, func(a, b int64, _ bool) {
			heldIn(held, cell, ctl.Days, iv.From, end, dayLength, c, g, a, b)
		})
	}
	var f fairSplit
	f.init(w)
	// The fair split goes forward in time, so one day's row of every
	// campaign's allocation is enough: when the split reaches a later day,
	// the row's control campaigns go to fair and the row starts again
	// from zero.
	row := make([]float64, len(w.Campaigns))
	day := -1
	flush := func() {
		if day < 0 {
			return
		}
		for i, c := range ctl.Days[day] {
			fair[cell[day]+i] = row[c]
		}
		clear(row)
	}
	ch := ctl.changes
	if ctl.fifo != run {
		ch = demandKeys(w.Jobs, run.Records, run.Stop)
	}
	for j, n := 0, ch.len(); j < n; {
		t := ch.at(j).t
		var next int64
		for ; j < n; j++ {
			x := ch.at(j)
			if next = x.t; next != t {
				break
			}
			f.demand[x.campaign] += float64(x.gpus)
			f.touch(int(x.campaign))
		}
		if j == n {
			break
		}
		perDay(t, next, func(d int, dt float64) {
			if d != day {
				flush()
				day = d
			}
			// A day with fewer than two control campaigns has no index
			// (below): its split would be thrown away.
			if len(ctl.Days[d]) >= 2 {
				f.splitFor(float64(w.Pool), dt, row, ctl.Days[d])
			}
		})
	}
	flush()
	var idx []float64
	for d, cs := range ctl.Days {
		var xs []float64
		for i := range cs {
			if o := fair[cell[d]+i]; o > 0 {
				xs = append(xs, held[cell[d]+i]/o)
			}
		}
		// A day on which no control campaign held anything has no index
		// (0 ÷ 0): it is left out.
		if j := Jain(xs); len(xs) >= 2 && !math.IsNaN(j) {
			idx = append(idx, j)
		}
	}
	var s ShareFairness
	s.Days = len(idx)
	var jain stats.Interval
	s.Jain, jain = stats.MeanT(idx, byJob)
	jain = jain.Within(0, 1) // an index (docs/studies.md §5.1)
	s.Lo, s.Hi = jain.Lo, jain.Hi
	return s
}
