package trace

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/bursar-hpc/bursar/policy"
	"pgregory.net/rapid"
)

// tickReplay is an independent reading of docs/studies.md §2.1, written without
// policy/easy and without events: it visits every second from the first
// submit until every job has finished and applies steps (1)–(4) literally.
// It is slow on purpose; it is the oracle for ReplayEASY.
func tickReplay(w *Workload) []int64 {
	type lease struct {
		gpus        int
		end, estEnd int64
	}
	n := len(w.Jobs)
	start := make([]int64, n)
	var running []lease
	var queue []int
	free, next, done := w.Pool, 0, 0
	for t := w.Jobs[0].Submit; done < n; t++ {
		// (1) Leases ending at or before t end.
		kept := running[:0]
		for _, l := range running {
			if l.end <= t {
				free += l.gpus
				done++
			} else {
				kept = append(kept, l)
			}
		}
		running = kept
		// (2) Arrivals in submit order (w.Jobs is sorted by submit, number).
		for next < n && w.Jobs[next].Submit <= t {
			queue = append(queue, next)
			next++
		}
		launch := func(i int) {
			j := &w.Jobs[i]
			start[i] = t
			free -= j.GPUs
			running = append(running, lease{j.GPUs, t + j.Run, t + j.Estimate})
		}
		// (3) The head starts while it fits.
		for len(queue) > 0 && w.Jobs[queue[0]].GPUs <= free {
			launch(queue[0])
			queue = queue[1:]
		}
		if len(queue) == 0 {
			continue
		}
		// (4) The head's reservation: try each estimated end in ascending
		// order, counting all leases with an estimated end ≤ it.
		head := w.Jobs[queue[0]].GPUs
		ends := make([]int64, 0, len(running))
		for _, l := range running {
			ends = append(ends, l.estEnd)
		}
		slices.Sort(ends)
		shadow, extra := int64(math.MaxInt64), 0
		for _, e := range ends {
			avail := free
			for _, l := range running {
				if l.estEnd <= e {
					avail += l.gpus
				}
			}
			if avail >= head {
				shadow, extra = e, avail-head
				break
			}
		}
		rest := queue[:1]
		for _, i := range queue[1:] {
			j := &w.Jobs[i]
			switch {
			case j.GPUs > free:
				rest = append(rest, i)
			case t+j.Estimate <= shadow:
				launch(i)
			case j.GPUs <= extra:
				extra -= j.GPUs
				launch(i)
			default:
				rest = append(rest, i)
			}
		}
		queue = rest
	}
	return start
}

// small builds a workload from (submit, run, estimate, gpus) rows on a pool.
func small(pool int, rows ...[4]int64) *Workload {
	w := &Workload{Pool: pool, Campaigns: []Campaign{{Name: "user 1", ID: 1, Share: 1}}, Groups: []Group{{ID: 1, Members: []int{0}, Share: 1}}}
	for i, r := range rows {
		w.Jobs = append(w.Jobs, Job{Number: int64(i + 1), Submit: r[0], Run: r[1], Estimate: max(r[2], r[1]), GPUs: int(r[3])})
	}
	return w
}

func TestReplayMatchesTickByTickOnRandomTraces(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.IntRange(1, 16).Draw(t, "pool")
		n := rapid.IntRange(1, 25).Draw(t, "jobs")
		ncamp := rapid.IntRange(1, 4).Draw(t, "campaigns")
		w := &Workload{Pool: pool}
		for c := range ncamp {
			w.Campaigns = append(w.Campaigns, Campaign{ID: c, Share: 1 / float64(ncamp)})
		}
		var submit int64
		for i := range n {
			submit += rapid.Int64Range(0, 30).Draw(t, "gap")
			run := rapid.Int64Range(1, 60).Draw(t, "run")
			est := run + rapid.Int64Range(0, 60).Draw(t, "over")
			w.Jobs = append(w.Jobs, Job{
				Number: int64(i + 1), Submit: submit, Run: run, Estimate: est,
				GPUs: rapid.IntRange(1, pool).Draw(t, "gpus"), Campaign: rapid.IntRange(0, ncamp-1).Draw(t, "campaign"),
			})
		}
		got, want := ReplayEASY(w), tickReplay(w)
		if !slices.Equal(got, want) {
			t.Fatalf("event-driven starts %v\ntick-by-tick starts %v", got, want)
		}
		checkFeasible(t, w, got)
		m := Summarize(w, got)
		wait, bsld := naiveMeans(w, want)
		if m.All.MeanWait != wait || m.All.MeanBSLD != bsld {
			t.Fatalf("means %v %v, tick-by-tick %v %v", m.All.MeanWait, m.All.MeanBSLD, wait, bsld)
		}
	})
}

// checkFeasible: no job starts before it is submitted, and the pool is
// never overcommitted.
func checkFeasible(t interface{ Fatalf(string, ...any) }, w *Workload, start []int64) {
	type ev struct {
		t int64
		d int
	}
	var evs []ev
	for i := range w.Jobs {
		j := &w.Jobs[i]
		if start[i] < j.Submit {
			t.Fatalf("job %d starts at %d before its submit %d", j.Number, start[i], j.Submit)
		}
		evs = append(evs, ev{start[i], j.GPUs}, ev{start[i] + j.Run, -j.GPUs})
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if a.t != b.t {
			return cmpInt(a.t, b.t)
		}
		return a.d - b.d // ends first
	})
	used := 0
	for _, e := range evs {
		used += e.d
		if used > w.Pool {
			t.Fatalf("%d GPUs in use at %d on a pool of %d", used, e.t, w.Pool)
		}
	}
}

// naiveMeans computes the mean wait and mean bounded slowdown (τ = 10 s)
// straight from the definitions of §4, summing in job order as Summarize
// does so that the floating-point results are comparable exactly.
func naiveMeans(w *Workload, start []int64) (wait, bsld float64) {
	for i, j := range w.Jobs {
		wt := start[i] - j.Submit
		wait += float64(wt)
		den := j.Run
		if den < 10 {
			den = 10
		}
		b := float64(wt+j.Run) / float64(den)
		if b < 1 {
			b = 1
		}
		bsld += b
	}
	n := float64(len(w.Jobs))
	return wait / n, bsld / n
}

// Bursar's event skipping on random small traces: the same journal and
// run as ticking every second, whatever the shares, buckets, classes and
// enforcement mode.
func TestBursarSkippingMatchesTickByTickOnRandomTraces(t *testing.T) {
	var jobs, denied, preempted, ticks, seconds int64
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.IntRange(1, 64).Draw(t, "pool")
		n := rapid.IntRange(1, 40).Draw(t, "jobs")
		ncamp := rapid.IntRange(1, 5).Draw(t, "campaigns")
		w := &Workload{Pool: pool, BucketHours: rapid.SampledFrom([]float64{0, 24, 1, 0.01}).Draw(t, "bucket-hours")}
		var sum float64
		for c := range ncamp {
			s := rapid.Float64Range(0.01, 1).Draw(t, "share")
			sum += s
			w.Campaigns = append(w.Campaigns, Campaign{ID: c, Name: fmt.Sprintf("user %d", c), Share: s})
		}
		for c := range w.Campaigns {
			w.Campaigns[c].Share /= sum
		}
		classes := []policy.Class{policy.AgentBurst, policy.Interactive, policy.Opportunistic}
		var submit int64
		for i := range n {
			submit += rapid.Int64Range(0, 3000).Draw(t, "gap")
			run := rapid.Int64Range(1, 5000).Draw(t, "run")
			est := run + rapid.Int64Range(0, 5000).Draw(t, "over")
			w.Jobs = append(w.Jobs, Job{
				Number: int64(i + 1), Submit: submit, Run: run, Estimate: est,
				GPUs: rapid.IntRange(1, pool).Draw(t, "gpus"), Campaign: rapid.IntRange(0, ncamp-1).Draw(t, "campaign"),
				Class: rapid.SampledFrom(classes).Draw(t, "class"),
			})
		}
		cfg := policy.DefaultConfig(pool)
		cfg.GrantTimeOnly = rapid.Bool().Draw(t, "grant-time-only")
		cfg.Grace = rapid.IntRange(0, 120).Draw(t, "grace")
		replay := func(tickByTick bool) (*Run, []byte) {
			b, err := policy.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var j journal
			r, err := Replay(w, b, ReplayOptions{Recorder: &j, TickByTick: tickByTick, Horizon: 86400})
			if err != nil {
				t.Fatal(err)
			}
			return r, j.buf
		}
		ev, ej := replay(false)
		tk, tj := replay(true)
		if !bytes.Equal(ej, tj) {
			a, b := bytes.Split(ej, []byte("\n")), bytes.Split(tj, []byte("\n"))
			for i := range min(len(a), len(b)) {
				if !bytes.Equal(a[i], b[i]) {
					t.Fatalf("journal line %d:\n event-driven %s\n tick-by-tick %s", i+1, a[i], b[i])
				}
			}
			t.Fatalf("journals differ in length: %d and %d lines", len(a), len(b))
		}
		if ev.Ticks > tk.Ticks {
			t.Fatalf("event-driven %d ticks, tick-by-tick %d", ev.Ticks, tk.Ticks)
		}
		jobs, denied, preempted, ticks, seconds = jobs+int64(n), denied+int64(ev.Unserved), preempted+int64(ev.Preemptions), ticks+ev.Ticks, seconds+tk.Ticks
		ev.Ticks = tk.Ticks
		if !reflect.DeepEqual(ev, tk) {
			t.Fatalf("runs differ:\n %+v\n %+v", ev, tk)
		}
	})
	t.Logf("%d jobs, %d denied, %d preemptions; %d of %d seconds ticked", jobs, denied, preempted, ticks, seconds)
}
