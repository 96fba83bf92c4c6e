package trace

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/bursar-hpc/bursar/internal/stats"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/budget"
	"github.com/bursar-hpc/bursar/policy/policies"
	"pgregory.net/rapid"
)

// A hand-worked idle_while_waiting. Pool 4; A (3 GPUs) runs [0, 10); B (2
// GPUs) is submitted at 2 and runs [10, 20); C (1 GPU) is submitted at 5 and
// runs [12, 13).
//
//	[0, 2)   free 1, queue empty              0
//	[2, 5)   free 1, queue {B: 2}, none fits  0
//	[5, 10)  free 1, queue {B: 2, C: 1}       min(1, 1) × 5 = 5
//	[10, 12) free 2, queue {C: 1}             min(2, 1) × 2 = 2
//	[12, 20) the queue is empty               0
//
// 7 GPU-seconds of 4 × 20: 0.0875. Held: 3×10 + 2×10 + 1 = 51 of 80.
func TestIdleWhileWaitingHandWorked(t *testing.T) {
	w := small(4, [4]int64{0, 10, 10, 3}, [4]int64{2, 10, 10, 2}, [4]int64{5, 1, 1, 1})
	run := &Run{Records: newRecords(w), Converged: true, Stop: 20}
	for i, st := range []int64{0, 10, 12} {
		r := &run.Records[i]
		r.Starts, r.End, r.State = []int64{st}, st+r.Run, Served
	}
	s, err := Measure(w, run, Interval{0, 20})
	if err != nil {
		t.Fatal(err)
	}
	if s.IdleWhileWaiting != 7.0/80 || s.Held != 51.0/80 || s.Useful != s.Held || s.Lost != 0 {
		t.Fatalf("idle_while_waiting %v held %v useful %v lost %v; want 7/80, 51/80, 51/80, 0", s.IdleWhileWaiting, s.Held, s.Useful, s.Lost)
	}
	// Waits 0, 8, 7: mean 5, p50 (element 1 of 3) 7, p95 (element 2) 8.
	if s.All.MeanWait != 5 || s.All.P50Wait != 7 || s.All.P95Wait != 8 || s.Served != 3 || s.ServedWork != 1 {
		t.Fatalf("all %+v served %d work %v", s.All, s.Served, s.ServedWork)
	}
	if s.Makespan != 20 || s.Drain != 15 {
		t.Fatalf("makespan %d drain %d; want 20, 15", s.Makespan, s.Drain)
	}
}

// randomTrace is a small random trace of every class over a few campaigns.
func randomTrace(t *rapid.T) *Workload {
	pool := rapid.IntRange(1, 16).Draw(t, "pool")
	n := rapid.IntRange(1, 30).Draw(t, "jobs")
	ncamp := rapid.IntRange(1, 4).Draw(t, "campaigns")
	w := &Workload{Pool: pool}
	for c := range ncamp {
		w.Campaigns = append(w.Campaigns, Campaign{ID: c, Name: fmt.Sprintf("user %d", c), Share: float64(c+1) / float64(ncamp*(ncamp+1)/2)})
	}
	w.Groups = []Group{{ID: 0, Share: 1}}
	for c := range ncamp {
		w.Groups[0].Members = append(w.Groups[0].Members, c)
	}
	var submit int64
	for i := range n {
		submit += rapid.Int64Range(0, 400).Draw(t, "gap")
		run := rapid.Int64Range(1, 900).Draw(t, "run")
		est := run + rapid.Int64Range(0, 300).Draw(t, "over")
		c := rapid.IntRange(0, ncamp-1).Draw(t, "campaign")
		w.Jobs = append(w.Jobs, Job{
			Number: int64(i + 1), Submit: submit, Run: run, Estimate: est,
			GPUs: rapid.IntRange(1, pool).Draw(t, "gpus"), Campaign: c, User: c, Queue: -1,
			Class:   rapid.SampledFrom([]policy.Class{policy.Interactive, policy.AgentBurst, policy.Opportunistic}).Draw(t, "class"),
			LogWait: rapid.Int64Range(-1, 1000).Draw(t, "log-wait"),
		})
	}
	return w
}

// Measure against a second-by-second reading of the records on random
// replays under policies that preempt, deny and stop at a short horizon:
// held, lost, idle_while_waiting, the counts and the mean wait.
func TestMeasureMatchesSecondBySecond(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := randomTrace(t)
		name := rapid.SampledFrom([]string{"fifo", "static", "budget", "priority", "quota", "fairshare"}).Draw(t, "policy")
		knobs := policies.TraceKnobs()
		budget.Slot.Edit(&knobs).MinRuntime = [4]int{}
		run := replayPolicy(t, w, name, knobs, ReplayOptions{Horizon: rapid.Int64Range(1, 3000).Draw(t, "horizon")})
		first := w.Jobs[0].Submit
		from := rapid.Int64Range(first-100, run.Stop).Draw(t, "from")
		iv := Interval{from, from + rapid.Int64Range(1, run.Stop-from+200).Draw(t, "span")}
		s, err := Measure(w, run, iv)
		if err != nil {
			t.Fatal(err)
		}
		var held, lost, idle float64
		for u := iv.From; u < min(iv.To, run.Stop); u++ {
			free := int64(w.Pool)
			var queued []int
			for i := range run.Records {
				r := &run.Records[i]
				running := false
				r.runs(run.Stop, func(a, b int64, aborted bool) {
					if a <= u && u < b {
						running = true
						held += float64(w.Jobs[i].GPUs)
						free -= int64(w.Jobs[i].GPUs)
						if aborted {
							lost += float64(w.Jobs[i].GPUs)
						}
					}
				})
				gone := r.State == Denied && (len(r.Aborted()) == 0 || r.Aborted()[len(r.Aborted())-1] <= u)
				if !gone && r.Submit <= u && !running && !(r.State == Served && r.End <= u) {
					queued = append(queued, w.Jobs[i].GPUs)
				}
			}
			var fit int64
			for _, g := range queued {
				if int64(g) <= free {
					fit += int64(g)
				}
			}
			idle += float64(min(free, fit))
		}
		den := float64(w.Pool) * float64(iv.Span())
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }
		if !near(s.Held, held/den) || !near(s.Lost, lost/den) || !near(s.IdleWhileWaiting, idle/den) {
			t.Fatalf("held %v lost %v idle %v; second by second %v %v %v", s.Held, s.Lost, s.IdleWhileWaiting, held/den, lost/den, idle/den)
		}
		var counts [3]int
		var sw float64
		n := 0
		for i := range run.Records {
			r := &run.Records[i]
			if !iv.Contains(r.Submit) {
				continue
			}
			counts[r.State]++
			if r.State != Denied {
				sw += float64(r.Wait(run.Stop))
				n++
			}
		}
		if counts != [3]int{s.Served, s.Denied, s.Unfinished} || s.Jobs != counts[0]+counts[1]+counts[2] || s.All.Jobs != n || s.All.Denied != s.Denied {
			t.Fatalf("counts %v, summary %d/%d/%d of %d, stats over %d", counts, s.Served, s.Denied, s.Unfinished, s.Jobs, s.All.Jobs)
		}
		if n > 0 && !near(s.All.MeanWait, sw/float64(n)) {
			t.Fatalf("mean wait %v, records %v", s.All.MeanWait, sw/float64(n))
		}
		if s.All.MeanWaitLower != (s.Unfinished > 0) {
			t.Fatalf("mean wait lower bound %v with %d unfinished", s.All.MeanWaitLower, s.Unfinished)
		}
		if run.Converged != (run.UnfinishedJobs == 0) {
			t.Fatalf("converged %v with %d unfinished", run.Converged, run.UnfinishedJobs)
		}
	})
}

// The per-job records add up to the summary and to the run's own totals,
// on the excerpt's first week under policies that serve all, deny, and
// preempt.
func TestRecordsAddUpToSummary(t *testing.T) {
	whole := loadExcerpt(t, Options{})
	first := whole.Jobs[0].Submit
	w := loadExcerpt(t, Options{From: first, Until: first + 7*86400})
	for _, name := range []string{"fifo", "static", "budget"} {
		t.Run(name, func(t *testing.T) {
			run := replayPolicy(t, w, name, policies.TraceKnobs(), ReplayOptions{})
			from, until := w.SubmitSpan()
			iv, err := MeasureInterval(from, until, DefaultWarmup, DefaultCooldown)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Measure(w, run, iv)
			if err != nil {
				t.Fatal(err)
			}
			var lost, held int64
			var states [3]int
			var inf int
			for i := range run.Records {
				r := &run.Records[i]
				lost += r.LostGPUSeconds
				r.runs(run.Stop, func(a, b int64, _ bool) { held += int64(w.Jobs[i].GPUs) * (b - a) })
				if r.State != Served && run.Start[i] != -1 || r.State == Served && run.Start[i] != r.LastStart() {
					t.Fatalf("job %d: start %d, record %+v", w.Jobs[i].Number, run.Start[i], r)
				}
				if r.State == Denied != run.Denied[i] || len(r.Starts) != r.Preemptions+boolInt(r.State == Served || r.Running()) {
					t.Fatalf("job %d: denied %v, record %+v", w.Jobs[i].Number, run.Denied[i], r)
				}
				if iv.Contains(r.Submit) {
					states[r.State]++
				}
			}
			for _, b := range s.BSLD {
				if math.IsInf(b, 1) {
					inf++
				}
			}
			if lost != run.LostGPUSeconds || held != run.HeldGPUSeconds && run.Converged {
				t.Fatalf("records: lost %d held %d; run: lost %d held %d", lost, held, run.LostGPUSeconds, run.HeldGPUSeconds)
			}
			if states != [3]int{s.Served, s.Denied, s.Unfinished} || inf != s.Denied || len(s.BSLD) != s.Jobs {
				t.Fatalf("records %v, summary %+v, %d of %d at +Inf", states, s, inf, len(s.BSLD))
			}
			t.Logf("%s: %d jobs (%d served, %d denied, %d unfinished), held %.3f lost %.3f idle-while-waiting %.3f, mean wait %.0f s, converged %v",
				name, s.Jobs, s.Served, s.Denied, s.Unfinished, s.Held, s.Lost, s.IdleWhileWaiting, s.All.MeanWait, s.Converged)
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A converged run's metrics do not depend on the horizon it was given:
// doubling it (and doubling it again) changes no number of the summary.
// A run cut short is flagged instead, and its means are lower bounds.
func TestConvergedSummaryIgnoresHorizon(t *testing.T) {
	whole := loadExcerpt(t, Options{})
	first := whole.Jobs[0].Submit
	w := loadExcerpt(t, Options{From: first, Until: first + 7*86400})
	from, until := w.SubmitSpan()
	iv, err := MeasureInterval(from, until, DefaultWarmup, DefaultCooldown)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fifo", "static", "fairshare"} {
		t.Run(name, func(t *testing.T) {
			var want string
			h := max(until-from, 7*86400)
			for k, horizon := range []int64{0, 2 * h, 4 * h} {
				run := replayPolicy(t, w, name, policies.TraceKnobs(), ReplayOptions{Horizon: horizon})
				if !run.Converged {
					t.Fatalf("horizon %d: not converged", horizon)
				}
				s, err := Measure(w, run, iv)
				if err != nil {
					t.Fatal(err)
				}
				got := fmt.Sprintf("%+v", *s)
				if k == 0 {
					want = got
				} else if got != want {
					t.Fatalf("horizon %d moved the summary:\n%s\nwant\n%s", horizon, got, want)
				}
			}
		})
	}
	// A horizon of an hour stops fifo with jobs queued: not converged, and
	// the mean wait is a lower bound.
	run := replayPolicy(t, w, "fifo", policies.TraceKnobs(), ReplayOptions{Horizon: 3600})
	s, err := Measure(w, run, iv)
	if err != nil {
		t.Fatal(err)
	}
	if run.Converged || s.Converged || s.Unfinished == 0 || !s.All.MeanWaitLower {
		t.Fatalf("an hour's horizon: converged %v, %d unfinished, mean wait lower bound %v", s.Converged, s.Unfinished, s.All.MeanWaitLower)
	}
}

// selectK is the sorted order's element, on any input (ties, sorted,
// reversed, constant).
func TestSelectKMatchesSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		xs := rapid.SliceOfN(rapid.Float64Range(-5, 5).Filter(func(x float64) bool { return x == math.Trunc(x) || x > 0 }), 1, 300).Draw(t, "xs")
		switch rapid.IntRange(0, 2).Draw(t, "shape") {
		case 1:
			slices.Sort(xs)
		case 2:
			slices.Sort(xs)
			slices.Reverse(xs)
		}
		k := rapid.IntRange(0, len(xs)-1).Draw(t, "k")
		want := slices.Clone(xs)
		slices.Sort(want)
		got := selectK(slices.Clone(xs), k)
		if got != want[k] {
			t.Fatalf("k=%d: %v, sorted %v", k, got, want[k])
		}
		ys := slices.Clone(xs)
		k95, k50 := stats.Rank(len(ys), 95), stats.Rank(len(ys), 50)
		p95 := selectK(ys, k95)
		if p50 := selectK(ys[:k95+1], k50); p50 != want[k50] || p95 != want[k95] {
			t.Fatalf("p50 %v p95 %v; sorted %v %v", p50, p95, want[k50], want[k95])
		}
	})
}
