package tracestudy

import (
	"math"
	"testing"

	"github.com/bursar-hpc/bursar/trace"
)

// revision1 is the mapping the README's findings were measured on:
// docs/studies.md revision 1's one campaign per user, with per-user shares
// and B = R × 24 h.
var revision1 = trace.Options{UserCampaigns: true, Shares: trace.ShareUsers, Bucket: "hours:24"}

// The findings the README's "Real traces" section states, each checked on
// the committed excerpt, every policy at the trace studies' knobs
// (policies.TraceKnobs).
func TestREADMETraceFindings(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the excerpt under six policies")
	}
	if raceDetector {
		t.Skip("single-goroutine replays: run without -race (.ci/run does)")
	}
	w, err := Load("", revision1)
	if err != nil {
		t.Fatal(err)
	}
	rs := map[string]Result{}
	for _, s := range TraceSpecs([]string{"bursar", "fifo", "priority", "static", "fairshare", "quota", "budget"}) {
		r, err := RunOne(w, s)
		if err != nil {
			t.Fatal(err)
		}
		rs[s.Policy] = r
	}
	near := func(what string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol {
			t.Errorf("%s: %v, the README says %v", what, got, want)
		}
	}
	// FCFS + EASY: the highest useful utilization over the one interval
	// (docs/studies.md §4.2), every job served.
	fifo := rs["fifo"]
	if fifo.Summary.Served != 2661 || !fifo.Summary.Converged {
		t.Errorf("fifo: %d served, converged %v", fifo.Summary.Served, fifo.Summary.Converged)
	}
	for name, r := range rs {
		if name != "fifo" && r.Summary.Useful >= fifo.Summary.Useful {
			t.Errorf("%s useful utilization %v ≥ fifo's %v", name, r.Summary.Useful, fifo.Summary.Useful)
		}
	}
	// fairshare: lower mean bounded slowdown than fifo.
	fs := rs["fairshare"]
	near("fairshare mean bsld", fs.Summary.All.MeanBSLD, 68.5, 0.05)
	near("fifo mean bsld", fifo.Summary.All.MeanBSLD, 85.1, 0.05)
	// priority: EASY in tier order by the log's queues, no preemption
	// (the header's `Preemption: No`): mean wait 1.13× fifo's.
	pr := rs["priority"]
	near("priority mean wait", pr.Summary.All.MeanWait, 16422, 0.5)
	if ratio := pr.Summary.All.MeanWait / fifo.Summary.All.MeanWait; ratio < 1.13 || ratio >= 1.14 {
		t.Errorf("priority ÷ fifo mean wait %.2f, the README says 1.13", ratio)
	}
	if pr.Preemptions != 0 {
		t.Errorf("priority preempted %d times on a log that says Preemption: No", pr.Preemptions)
	}
	// static (lend none): 262 of 2,661 jobs are wider than their
	// partition and denied.
	st := rs["static"]
	if st.Summary.Denied != 262 || st.Summary.Served != 2399 {
		t.Errorf("static: %d denied, %d served", st.Summary.Denied, st.Summary.Served)
	}
	// bursar: 773 jobs (29 %) ask for more than R + B ÷ estimate.
	if b := rs["bursar"]; b.Summary.Denied != 773 {
		t.Errorf("bursar: %d denied", b.Summary.Denied)
	}
	// quota: 1,192 fair-sharing preemptions cost 19,192 GPU-hours.
	q := rs["quota"]
	if q.Preemptions != 1192 || q.LostGPUSeconds/3600 != 19192 {
		t.Errorf("quota: %d preemptions, %d GPU-h lost", q.Preemptions, q.LostGPUSeconds/3600)
	}
	// budget under its contract: 49 preemptions lose 234 GPU-hours, 0.32 %
	// of its useful work and about 1/82 of quota's; nothing is left
	// unfinished at the replay's horizon.
	b := rs["budget"]
	if b.Preemptions != 49 || b.LostGPUSeconds/3600 != 234 || b.Summary.Unfinished != 0 || !b.Summary.Converged {
		t.Errorf("budget: %d preemptions, %d GPU-h lost, %d unfinished, converged %v", b.Preemptions, b.LostGPUSeconds/3600, b.Summary.Unfinished, b.Summary.Converged)
	}
	if r := float64(q.LostGPUSeconds) / float64(b.LostGPUSeconds); r < 80 || r >= 84 {
		t.Errorf("quota lost %.2f× budget's work: the README says about 82×", r)
	}
}

// The budget-knobs findings of the README, on the whole excerpt: every
// W × m cell preempts 23–86 times, loses 65–261 GPU-hours and converges
// (no job unfinished); at every W, m = 4 h preempts the least.
func TestREADMEBudgetKnobFindings(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the excerpt under the budget policy 16 times")
	}
	if raceDetector {
		t.Skip("single-goroutine replays: run without -race (.ci/run does)")
	}
	w, err := Load("", revision1)
	if err != nil {
		t.Fatal(err)
	}
	for _, wd := range BudgetWindows {
		specs := BudgetKnobSpecs([]int{wd}, BudgetMinRuntimes)
		rs := make([]Result, len(specs))
		for i, s := range specs {
			r, err := RunOne(w, s)
			if err != nil {
				t.Fatal(err)
			}
			rs[i] = r
			if lost := r.LostGPUSeconds / 3600; r.Preemptions < 23 || r.Preemptions > 86 || lost < 65 || lost > 261 || r.Summary.Unfinished != 0 || !r.Summary.Converged {
				t.Errorf("W %d d, m %d s: %d preemptions, %d GPU-h lost, %d unfinished", wd, s.MinRuntime, r.Preemptions, lost, r.Summary.Unfinished)
			}
		}
		m4h := rs[len(rs)-1]
		for i, r := range rs[:len(rs)-1] {
			if r.Preemptions <= m4h.Preemptions {
				t.Errorf("W %d d: m %d s preempts %d times, m = 4 h %d", wd, BudgetMinRuntimes[i], r.Preemptions, m4h.Preemptions)
			}
		}
	}
}
