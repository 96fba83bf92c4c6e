package trace

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/internal/stats"
	"github.com/bursar-hpc/bursar/policy/easy"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/swf"
)

// sharesTable is the share measure as it was computed over a whole day ×
// campaign table of held and fair GPU-seconds: the plain recomputation
// Shares, which keeps only the control set's cells, must equal bit for
// bit.
func sharesTable(w *Workload, run *Run, ctl ShareControl) ShareFairness {
	iv, nd, dayLength, k := ctl.Interval, len(ctl.Days), ctl.Length, len(w.Campaigns)
	if dayLength <= 0 {
		dayLength = Day
	}
	held, fair := make([]float64, nd*k), make([]float64, nd*k)
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
	for i := range run.Records {
		r, j := &run.Records[i], &w.Jobs[i]
		r.runs(run.Stop, func(a, b int64, _ bool) {
			perDay(a, b, func(d int, dt float64) { held[d*k+j.Campaign] += float64(j.GPUs) * dt })
		})
	}
	var f fairSplit
	f.init(w)
	ch := demandChanges(w.Jobs, run.Records, run.Stop)
	for j := 0; j < len(ch); {
		t := ch[j].t
		for j < len(ch) && ch[j].t == t {
			f.demand[ch[j].campaign] += float64(ch[j].gpus)
			f.touch(int(ch[j].campaign))
			j++
		}
		if j == len(ch) {
			break
		}
		perDay(t, ch[j].t, func(d int, dt float64) { f.split(float64(w.Pool), dt, fair[d*k:(d+1)*k]) })
	}
	var idx []float64
	for d, cs := range ctl.Days {
		var xs []float64
		for _, c := range cs {
			if o := fair[d*k+int(c)]; o > 0 {
				xs = append(xs, held[d*k+int(c)]/o)
			}
		}
		if j := Jain(xs); len(xs) >= 2 && !math.IsNaN(j) {
			idx = append(idx, j)
		}
	}
	var s ShareFairness
	s.Days = len(idx)
	var jain stats.Interval
	s.Jain, jain = stats.MeanT(idx, byJob)
	jain = jain.Within(0, 1)
	s.Lo, s.Hi = jain.Lo, jain.Hi
	return s
}

// Shares keeps only the control set's cells and one day's row of the fair
// split: on the excerpt under fifo, priority (which preempts) and
// fairshare, against the fifo control at days of 1, 3 and 24 hours, it
// gives what the whole day × campaign table gave, bit for bit.
func TestSharesEqualsTheWholeTable(t *testing.T) {
	w := loadExcerpt(t, Options{})
	fifoRun := ReplayExact(w)
	first, last := w.Span()
	iv := Interval{From: first + Day, To: last - Day}
	for _, name := range []string{"fifo", "priority", "fairshare"} {
		run := replayPolicy(t, w, name, policies.TraceKnobs(), ReplayOptions{})
		for _, length := range []int64{3600, 3 * 3600, Day} {
			ctl := fifoControl(w, fifoRun, iv, length)
			got, want := Shares(w, run, ctl), sharesTable(w, run, ctl)
			if got != want && !(math.IsNaN(got.Jain) && math.IsNaN(want.Jain)) {
				t.Fatalf("%s, days of %d s: %+v, the whole table gives %+v", name, length, got, want)
			}
			if want.Days == 0 {
				t.Fatalf("%s, days of %d s: no day measured", name, length)
			}
		}
	}
}

// sortByTime orders the elements by time, ties in their order before
// (the packed keys carry the index), in place: the stable sort's order.
func TestSortByTimeIsTheStableSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		type ev struct {
			t  int64
			id int
		}
		n := rapid.IntRange(0, 2000).Draw(t, "n")
		span := rapid.Int64Range(1, 1<<40).Draw(t, "span")
		rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 2))
		xs := make([]ev, n)
		for i := range xs {
			xs[i] = ev{rng.Int64N(span) - span/2, i}
		}
		want := slices.Clone(xs)
		slices.SortStableFunc(want, func(a, b ev) int { return cmpInt(a.t, b.t) })
		got := sortByTime(xs, func(e ev) int64 { return e.t })
		if !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
}

// radixSort sorts as slices.Sort does, at lengths on both sides of its
// switch to slices.Sort and at key widths of one digit or several (the
// buckets sorted again by the next digit).
func TestRadixSortIsASort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 40*radixMin).Draw(t, "n")
		bits := rapid.IntRange(0, 64).Draw(t, "bits")
		rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 3))
		// The keys share their top bits above spread: one bucket at the
		// first digits, so that the sort goes down to the later ones.
		spread := rapid.IntRange(0, bits).Draw(t, "spread")
		if !radixSortsAsSort(sharedPrefixKeys(rng, n, bits, spread), bits) {
			t.Fatalf("n %d, %d bits: not sorted as slices.Sort sorts", n, bits)
		}
	})
}

// sharedPrefixKeys draws n keys of the given width (bits) from rng that
// share every bit above spread: one bucket at the first digits, so that
// radixSort must go down to the later ones.
func sharedPrefixKeys(rng *rand.Rand, n, bits, spread int) []uint64 {
	base := rng.Uint64()
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = base&^(1<<spread-1) | rng.Uint64()&(1<<spread-1)
		if bits < 64 {
			keys[i] &= 1<<bits - 1
		}
	}
	return keys
}

// radixSortsAsSort says whether radixSort leaves keys (of the given
// width) in the order slices.Sort gives.
func radixSortsAsSort(keys []uint64, bits int) bool {
	want := slices.Clone(keys)
	slices.Sort(want)
	radixSort(keys, bits)
	return slices.Equal(keys, want)
}

// sortByTime on more elements than radixSort leaves to slices.Sort: the
// stable sort's order still.
func TestSortByTimeLongIsTheStableSort(t *testing.T) {
	type ev struct {
		t  int64
		id int
	}
	for _, span := range []int64{1, 7, 1 << 20, 1 << 40} {
		rng := rand.New(rand.NewPCG(uint64(span), 4))
		xs := make([]ev, 200*radixMin+3)
		for i := range xs {
			xs[i] = ev{rng.Int64N(span) - span/2, i}
		}
		want := slices.Clone(xs)
		slices.SortStableFunc(want, func(a, b ev) int { return cmpInt(a.t, b.t) })
		if got := sortByTime(xs, func(e ev) int64 { return e.t }); !slices.Equal(got, want) {
			t.Fatalf("span %d: not the stable sort's order", span)
		}
	}
}

// randomRecords are n jobs and their records of a replay that preempts:
// up to three starts each, every run but the last aborted, served, denied
// (at once, or after a preemption) or unfinished (queued again, or
// running), with times over span seconds from base.
func randomRecords(t *rapid.T, n int, base, span int64, pool int) ([]Job, []JobRecord) {
	rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 5))
	jobs, recs := make([]Job, n), make([]JobRecord, n)
	for i := range recs {
		r := &recs[i]
		r.Job, jobs[i].Campaign, jobs[i].GPUs = int32(i), rng.IntN(6), 1+rng.IntN(pool)
		r.Submit, r.End, r.State = base+rng.Int64N(span), -1, Unfinished
		at := r.Submit
		later := func() int64 { at += rng.Int64N(span/8 + 1); return at }
		starts := rng.IntN(4)
		for k := 0; k < starts; k++ {
			r.Starts = append(r.Starts, later())
			if k < starts-1 {
				r.Abort(later(), 0)
			}
		}
		switch rng.IntN(5) {
		case 0:
			if starts == 0 {
				r.State = Denied
			} else {
				r.State = Denied
				r.Abort(later(), 0)
			}
		case 1, 2:
			if starts > 0 {
				r.End, r.State = later(), Served
			}
		case 3:
			if starts > 0 {
				r.Abort(later(), 0) // queued again
			}
		}
	}
	return jobs, recs
}

// The packed sweep of idleWhileWaiting and the packed demand changes give
// what the 16-byte changes sorted by sortByTime give, bit for bit, on
// random preempting replays, over spans the words hold and spans they do
// not (the wide fallback).
func TestPackedChangesAreTheWideOnes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 3*radixMin).Draw(t, "n")
		pool := rapid.IntRange(1, 1<<20).Draw(t, "pool")
		span := rapid.SampledFrom([]int64{1, 10, 1 << 20, 1 << 40, 1 << 58}).Draw(t, "span")
		base := rapid.Int64Range(-1<<40, 1<<40).Draw(t, "base")
		jobs, recs := randomRecords(t, n, base, span, pool)
		stop := base + span + rapid.Int64Range(0, span).Draw(t, "after")
		iv := Interval{From: base + span/4, To: base + span/4 + 1 + span/2}
		if got, want := idleWhileWaiting(jobs, recs, pool, stop, iv), idleWhileWaitingWide(jobs, recs, pool, stop, iv); got != want {
			t.Fatalf("idle while waiting %v, the wide changes give %v", got, want)
		}
		l, want := demandKeys(jobs, recs, stop), demandChanges(jobs, recs, stop)
		got := make([]demandChange, l.len())
		for k := range got {
			got[k] = l.at(k)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("demand changes %v, want %v", got, want)
		}
	})
}

// grouped gives, bit for bit, what stats gives over each group's
// measured jobs in record order (the indices partitioned plainly, one
// slice per group grown by appending): any mix of served, denied and
// unfinished jobs, groups empty or all denied, and the statistics it
// leaves in the scratch reused by the next call.
func TestGroupedIsStatsPerGroup(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 300).Draw(t, "jobs")
		groups := rapid.IntRange(1, 7).Draw(t, "groups")
		stop := int64(rapid.IntRange(0, 5000).Draw(t, "stop"))
		jobs := make([]Job, n)
		recs := make([]JobRecord, n)
		key := make([]int, n)
		for i := range recs {
			r := &recs[i]
			r.Job, r.Submit, r.Run = int32(i), int64(rapid.IntRange(0, 3000).Draw(t, "submit")), int64(rapid.IntRange(0, 900).Draw(t, "run"))
			r.End = -1
			key[i] = rapid.IntRange(0, groups-1).Draw(t, "group")
			switch rapid.IntRange(0, 3).Draw(t, "state") {
			case 0:
				r.State = Denied
			case 1:
				r.State = Unfinished
			case 2:
				r.State, r.Starts = Unfinished, []int64{r.Submit + int64(rapid.IntRange(0, 500).Draw(t, "wait"))}
			default:
				st := r.Submit + int64(rapid.IntRange(0, 500).Draw(t, "wait"))
				r.State, r.Starts, r.End = Served, []int64{st}, st+r.Run
			}
		}
		var measured []int32
		for i := range n {
			if rapid.IntRange(0, 4).Draw(t, "measured") > 0 {
				measured = append(measured, int32(i))
			}
		}
		sc := newStatsScratch(jobs, len(measured))
		got := sc.grouped(recs, measured, stop, groups, func(i int32) int { return key[i] })
		plain := newStatsScratch(jobs, len(measured))
		for g := range groups {
			var idx []int32
			for _, i := range measured {
				if key[i] == g {
					idx = append(idx, i)
				}
			}
			want := plain.stats(recs, idx, stop, false)
			if !sameStats(got[g], want) {
				t.Fatalf("group %d: grouped %+v, stats %+v", g, got[g], want)
			}
		}
		// The scratch serves the whole-window statistics afterwards.
		if a, b := sc.stats(recs, measured, stop, false), plain.stats(recs, measured, stop, false); !sameStats(a, b) {
			t.Fatalf("after grouped: %+v, want %+v", a, b)
		}
	})
}

// sameStats is s == o with NaN equal to NaN, bit for bit otherwise.
func sameStats(s, o Stats) bool {
	same := func(a, b float64) bool {
		return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
	}
	return s.Jobs == o.Jobs && s.Denied == o.Denied && s.Censored == o.Censored &&
		same(s.MeanWait, o.MeanWait) && same(s.P50Wait, o.P50Wait) && same(s.P95Wait, o.P95Wait) &&
		same(s.MeanBSLD, o.MeanBSLD) && same(s.P95BSLD, o.P95BSLD) &&
		s.MeanWaitLower == o.MeanWaitLower && s.P50WaitLower == o.P50WaitLower && s.P95WaitLower == o.P95WaitLower &&
		s.MeanBSLDLower == o.MeanBSLDLower && s.P95BSLDLower == o.P95BSLDLower
}

// nuwt's table of small user ids gives what its binary search gives
// where the ids are too large for a table (the same users shifted up, so
// in the same order): any mix of states, users in runs or interleaved.
func TestNUWTTableIsTheSearch(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 200).Draw(t, "jobs")
		users := rapid.IntRange(1, 12).Draw(t, "users")
		stop := int64(rapid.IntRange(0, 5000).Draw(t, "stop"))
		small, large := make([]Job, n), make([]Job, n)
		recs := make([]JobRecord, n)
		var measured []int32
		for i := range n {
			u := rapid.IntRange(0, users-1).Draw(t, "user") * 7
			small[i].User, small[i].GPUs = u, rapid.IntRange(1, 8).Draw(t, "gpus")
			large[i] = small[i]
			large[i].User = u + 1<<40
			r := &recs[i]
			r.Submit, r.Run, r.End = int64(rapid.IntRange(0, 3000).Draw(t, "submit")), int64(rapid.IntRange(1, 900).Draw(t, "run")), -1
			switch rapid.IntRange(0, 2).Draw(t, "state") {
			case 0:
				r.State = Denied
			case 1:
				r.State = Unfinished
			default:
				st := r.Submit + int64(rapid.IntRange(0, 500).Draw(t, "wait"))
				r.State, r.Starts, r.End = Served, []int64{st}, st+r.Run
			}
			measured = append(measured, int32(i))
		}
		a, b := nuwt(small, recs, measured, stop), nuwt(large, recs, measured, stop)
		if a.Users != b.Users || a.Lower != b.Lower || math.Float64bits(a.CV) != math.Float64bits(b.CV) && !(math.IsNaN(a.CV) && math.IsNaN(b.CV)) {
			t.Fatalf("table %+v, search %+v", a, b)
		}
	})
}

// dropStartedPlain is dropStarted as it was, one pass over the whole
// queue: the plain computation its test compares with.
func (r *replayer) dropStartedPlain(picked []int) {
	out, p := 0, 0
	for i := range r.queue {
		if p < len(picked) && picked[p] == i {
			p++
			continue
		}
		r.queue[out] = r.queue[i]
		r.qjobs[out] = r.qjobs[i]
		out++
	}
	r.queue = r.queue[:out]
	r.qjobs = r.qjobs[:out]
}

// dropStarted leaves the queue dropStartedPlain leaves, for any picked
// positions: heads, backfills behind them, none, all.
func TestDropStartedIsThePlainPass(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 40).Draw(t, "queue")
		var a, b replayer
		for i := range n {
			a.queue = append(a.queue, int32(100+i))
			a.qjobs = append(a.qjobs, easy.Job{GPUs: i + 1, Estimate: int64(7 * i)})
		}
		b.queue, b.qjobs = slices.Clone(a.queue), slices.Clone(a.qjobs)
		var picked []int
		heads := rapid.IntRange(0, n).Draw(t, "heads")
		for i := range n {
			if i < heads || rapid.IntRange(0, 3).Draw(t, "pick") == 0 {
				picked = append(picked, i)
			}
		}
		a.dropStarted(picked)
		b.dropStartedPlain(picked)
		if !slices.Equal(a.queue, b.queue) || !slices.Equal(a.qjobs, b.qjobs) {
			t.Fatalf("picked %v: queue %v %v, want %v %v", picked, a.queue, a.qjobs, b.queue, b.qjobs)
		}
	})
}

// sortBSLD sorts as slices.Sort does, bit for bit: bounded slowdowns
// (many exactly 1, some +Inf), any non-negative floats, keys too short
// (slices.Sort then), and a negative value or NaN (slices.Sort too).
func TestSortBSLDIsASort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 2000).Draw(t, "n")
		xs := make([]float64, n)
		for i := range xs {
			switch rapid.IntRange(0, 5).Draw(t, "kind") {
			case 0:
				xs[i] = 1
			case 1:
				xs[i] = math.Inf(1)
			case 2:
				xs[i] = rapid.Float64Range(0, 1e-300).Draw(t, "tiny")
			default:
				xs[i] = 1 + rapid.Float64Range(0, 1e6).Draw(t, "bsld")
			}
		}
		if n > 0 && rapid.IntRange(0, 9).Draw(t, "bad") == 0 {
			xs[rapid.IntRange(0, n-1).Draw(t, "at")] = []float64{-1, math.NaN(), math.Copysign(0, -1)}[rapid.IntRange(0, 2).Draw(t, "which")]
		}
		want := slices.Clone(xs)
		slices.Sort(want)
		keys := make([]uint64, rapid.IntRange(0, n+3).Draw(t, "keys"))
		sortBSLD(xs, keys)
		for i := range xs {
			if math.Float64bits(xs[i]) != math.Float64bits(want[i]) && !(math.IsNaN(xs[i]) && math.IsNaN(want[i])) {
				t.Fatalf("at %d: %v, want %v", i, xs[i], want[i])
			}
		}
	})
}

// byID holds what a map would: sums and maxima by id, ids small, large
// and negative, every id seen kept (with 0 too).
func TestByIDIsAMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var sum, most byID
		wantSum, wantMost := map[int]int64{}, map[int]int64{}
		for range rapid.IntRange(0, 200).Draw(t, "ops") {
			id := rapid.OneOf(rapid.IntRange(-3, 300), rapid.IntRange(maxSmallID-2, maxSmallID+2), rapid.IntRange(0, maxSmallID-1)).Draw(t, "id")
			x := int64(rapid.IntRange(-5, 1000).Draw(t, "x"))
			sum.add(id, x)
			wantSum[id] += x
			most.atLeast(id, x)
			wantMost[id] = max(wantMost[id], x)
		}
		if got := sum.table(); !maps.Equal(got, wantSum) {
			t.Fatalf("sums %v, want %v", got, wantSum)
		}
		if got := most.table(); !maps.Equal(got, wantMost) {
			t.Fatalf("maxima %v, want %v", got, wantMost)
		}
	})
}

// Read finds the same owners, campaigns, groups and queue tiers whether
// the ids are small (its tables) or large (its maps): the same log with
// every user, group and queue id shifted up by maxSmallID gives the same
// workload but for the ids in the names.
func TestReadSmallIDsAreTheLargeOnes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var small, large strings.Builder
		small.WriteString("; MaxProcs: 16\n")
		large.WriteString("; MaxProcs: 16\n")
		n := rapid.IntRange(1, 60).Draw(t, "jobs")
		for i := range n {
			u, g, q := rapid.IntRange(0, 5).Draw(t, "user"), rapid.IntRange(-1, 3).Draw(t, "group"), rapid.IntRange(-1, 3).Draw(t, "queue")
			run, req, procs := rapid.IntRange(1, 500).Draw(t, "run"), rapid.IntRange(1, 900).Draw(t, "req"), rapid.IntRange(1, 16).Draw(t, "procs")
			shift := func(x int) int {
				if x < 0 {
					return x
				}
				return x + maxSmallID
			}
			fmt.Fprintf(&small, "%d %d -1 %d %d -1 -1 %d %d -1 1 %d %d -1 %d -1 -1 -1\n", i+1, 10*i, run, procs, procs, req, u, g, q)
			fmt.Fprintf(&large, "%d %d -1 %d %d -1 -1 %d %d -1 1 %d %d -1 %d -1 -1 -1\n", i+1, 10*i, run, procs, procs, req, shift(u), shift(g), shift(q))
		}
		for _, opt := range []Options{{Shares: ShareGroups}, {Shares: ShareUsers}, {ByGroup: true}} {
			rs, err := swf.NewReader(strings.NewReader(small.String()), "s.swf")
			require.NoError(t, err)
			ws, err := Read(rs, opt)
			require.NoError(t, err)
			rl, err := swf.NewReader(strings.NewReader(large.String()), "l.swf")
			require.NoError(t, err)
			wl, err := Read(rl, opt)
			require.NoError(t, err)
			require.Equal(t, len(ws.Campaigns), len(wl.Campaigns))
			require.Equal(t, len(ws.Groups), len(wl.Groups))
			for i := range ws.Jobs {
				require.Equal(t, ws.Jobs[i].Campaign, wl.Jobs[i].Campaign, "job %d", i)
			}
			for c := range ws.Campaigns {
				a, b := ws.Campaigns[c], wl.Campaigns[c]
				require.Equal(t, []any{a.Group, a.Share, a.GPUSeconds, a.Jobs}, []any{b.Group, b.Share, b.GPUSeconds, b.Jobs}, "campaign %d", c)
			}
			for g := range ws.Groups {
				require.Equal(t, ws.Groups[g].LogGPUSeconds, wl.Groups[g].LogGPUSeconds, "group %d", g)
				require.Equal(t, ws.Groups[g].Members, wl.Groups[g].Members, "group %d", g)
			}
			require.Equal(t, len(ws.QueueTiers), len(wl.QueueTiers))
			for k := range ws.QueueTiers {
				a, b := ws.QueueTiers[k], wl.QueueTiers[k]
				require.Equal(t, []any{a.MaxTime, a.Tier, a.By}, []any{b.MaxTime, b.Tier, b.By})
			}
		}
	})
}

// The sweep's tree over the jobs' distinct widths, hand-worked: pool 10;
// A (6 GPUs) runs over [0, 10), B (5) and C (3) queue from 0 and run from
// 10. Over [0, 10) 4 GPUs are free and of the queue only C (3) fits in
// them: 4 is no job's width, so the jobs that fit are those up to the
// rank of the widest width below it, 3 (rank 1 of 3, 5, 6). 3 × 10 =
// 30 GPU-seconds; nothing after 10, the queue empty.
func TestIdleWhileWaitingBetweenWidths(t *testing.T) {
	jobs := []Job{{GPUs: 6}, {GPUs: 5}, {GPUs: 3}}
	recs := []JobRecord{
		{Job: 0, State: Served, Submit: 0, Run: 10, Starts: []int64{0}, End: 10},
		{Job: 1, State: Served, Submit: 0, Run: 10, Starts: []int64{10}, End: 20},
		{Job: 2, State: Served, Submit: 0, Run: 5, Starts: []int64{10}, End: 15},
	}
	iv := Interval{From: 0, To: 20}
	if got := idleWhileWaiting(jobs, recs, 10, 20, iv); got != 30 {
		t.Fatalf("idle while waiting %v GPU-seconds, want 30", got)
	}
	if got := idleWhileWaitingWide(jobs, recs, 10, 20, iv); got != 30 {
		t.Fatalf("the wide sweep gives %v GPU-seconds, want 30", got)
	}
	rank, width := widthRanks([]int32{0, 0, 0, 1, 0, 1, 1})
	if !slices.Equal(rank, []int32{0, 0, 0, 1, 1, 2, 3}) || !slices.Equal(width, []int64{0, 3, 5, 6}) {
		t.Fatalf("ranks %v, widths %v", rank, width)
	}
}

// With few distinct widths spread over a wide pool, as a log's are, the
// sweep over the widths' ranks gives what the wide sweep gives, bit for
// bit (TestPackedChangesAreTheWideOnes draws every width at random,
// nearly all distinct).
func TestIdleWhileWaitingFewWidths(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 3*radixMin).Draw(t, "n")
		pool := rapid.IntRange(1, 1<<17).Draw(t, "pool")
		ws := rapid.SliceOfN(rapid.IntRange(1, pool), 1, 6).Draw(t, "widths")
		jobs, recs := randomRecords(t, n, 0, 1<<20, pool)
		for i := range jobs {
			jobs[i].GPUs = ws[i%len(ws)]
		}
		stop := int64(1<<20 + rapid.IntRange(0, 1<<20).Draw(t, "after"))
		iv := Interval{From: 1 << 18, To: 1<<18 + 1 + 1<<19}
		if got, want := idleWhileWaiting(jobs, recs, pool, stop, iv), idleWhileWaitingWide(jobs, recs, pool, stop, iv); got != want {
			t.Fatalf("idle while waiting %v, the wide changes give %v", got, want)
		}
	})
}

// radixSort on keys that share every bit above spread, for every spread
// up to their width: a digit that every key shares is passed over, and
// the keys must then be sorted by the bits right below it, whichever
// digit the sort's widths put the boundary at (the rapid test above
// draws a shared prefix that ends exactly at a digit's boundary only
// rarely).
func TestRadixSortEverySharedPrefix(t *testing.T) {
	for _, n := range []int{radixMin, 3000, 40000} {
		for _, width := range []int{20, 41, 64} {
			rng := rand.New(rand.NewPCG(uint64(n), uint64(width)))
			for spread := 0; spread <= width; spread++ {
				if !radixSortsAsSort(sharedPrefixKeys(rng, n, width, spread), width) {
					t.Fatalf("%d keys of %d bits sharing all above bit %d: not sorted as slices.Sort sorts", n, width, spread)
				}
			}
		}
	}
}
