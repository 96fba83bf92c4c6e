package tracestudy

import (
	"math"
	"testing"

	"github.com/bursar-hpc/bursar/trace"
)

// The findings the README's "Real traces" section states, each checked on
// the committed excerpt (budget's on its first week: a whole-excerpt
// budget replay takes minutes).
func TestREADMETraceFindings(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the excerpt under six policies")
	}
	if raceDetector {
		t.Skip("single-goroutine replays: run without -race (.ci/run does)")
	}
	w, err := Load("", trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rs := map[string]Result{}
	for _, s := range TraceSpecs([]string{"bursar", "fifo", "priority", "static", "fairshare", "quota"}) {
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
	// FCFS + EASY: the highest utilization, and Jain's index only 0.10.
	fifo := rs["fifo"]
	near("fifo utilization", fifo.Utilization, 0.825, 0.0005)
	near("fifo Jain", fifo.Jain, 0.100, 0.0005)
	for name, r := range rs {
		if name != "fifo" && r.Utilization >= fifo.Utilization {
			t.Errorf("%s utilization %v ≥ fifo's %v", name, r.Utilization, fifo.Utilization)
		}
	}
	// fairshare: lower mean bounded slowdown than fifo at almost its
	// utilization.
	fs := rs["fairshare"]
	near("fairshare mean bsld", fs.All.MeanBSLD, 68.5, 0.05)
	near("fifo mean bsld", fifo.All.MeanBSLD, 85.1, 0.05)
	near("fairshare utilization", fs.Utilization, 0.797, 0.0005)
	// priority: no reservation for a blocked head, so wide jobs starve:
	// mean wait about 16× fifo's.
	pr := rs["priority"]
	near("priority mean wait", pr.All.MeanWait, 234119, 0.5)
	if ratio := pr.All.MeanWait / fifo.All.MeanWait; ratio < 16 || ratio >= 16.5 {
		t.Errorf("priority ÷ fifo mean wait %.2f, the README says about 16", ratio)
	}
	// static: 1,544 of 2,661 jobs are wider than their owner's partition;
	// the highest Jain (0.823) is over the 1,117 that ran.
	st := rs["static"]
	if st.Unserved != 1544 || st.Jobs != 1117 {
		t.Errorf("static: %d unserved, %d ran", st.Unserved, st.Jobs)
	}
	near("static Jain", st.Jain, 0.823, 0.0005)
	// bursar: with §3's envelope, 773 jobs (29 %) ask for more than
	// R + B ÷ estimate and can never start.
	if b := rs["bursar"]; b.Unserved != 773 {
		t.Errorf("bursar: %d unserved", b.Unserved)
	}
	// quota: 32 reclaims cost 1,390 GPU-hours.
	q := rs["quota"]
	if q.Preemptions != 32 || q.LostGPUSeconds/3600 != 1390 {
		t.Errorf("quota: %d preemptions, %d GPU-h lost", q.Preemptions, q.LostGPUSeconds/3600)
	}
	// budget churns: on the first week it preempts hundreds of times and
	// loses over ten times quota's work there.
	first := w.Jobs[0].Submit
	week, err := Load("", trace.Options{From: first, Until: first + 7*86400})
	if err != nil {
		t.Fatal(err)
	}
	bw, err := RunOne(week, TraceSpecs([]string{"budget"})[0])
	if err != nil {
		t.Fatal(err)
	}
	qw, err := RunOne(week, TraceSpecs([]string{"quota"})[0])
	if err != nil {
		t.Fatal(err)
	}
	if bw.Preemptions < 300 || bw.LostGPUSeconds < 10*qw.LostGPUSeconds {
		t.Errorf("budget, first week: %d preemptions, %d GPU-s lost (quota %d)", bw.Preemptions, bw.LostGPUSeconds, qw.LostGPUSeconds)
	}
	t.Logf("first week: budget %d preemptions, %d GPU-h lost, %d unfinished; quota %d, %d GPU-h",
		bw.Preemptions, bw.LostGPUSeconds/3600, bw.Unfinished, qw.Preemptions, qw.LostGPUSeconds/3600)
}

// The budget-knobs findings of the README, on the excerpt's first week.
func TestREADMEBudgetKnobFindings(t *testing.T) {
	if testing.Short() {
		t.Skip("replays a week under the budget policy four times")
	}
	if raceDetector {
		t.Skip("single-goroutine replays: run without -race (.ci/run does)")
	}
	w, err := Load("", trace.Options{From: 21772800, Until: 22377600})
	if err != nil {
		t.Fatal(err)
	}
	for _, wd := range []int{1, 7} {
		var pre [2]int
		for i, s := range BudgetKnobSpecs([]int{wd}, []int{0, 14400}) {
			r, err := RunOne(w, s)
			if err != nil {
				t.Fatal(err)
			}
			pre[i] = r.Preemptions
			if r.Preemptions < 121 || r.LostGPUSeconds < 13000*3600 {
				t.Errorf("W %d d, m %d s: %d preemptions, %d GPU-h lost", wd, s.MinRuntime, r.Preemptions, r.LostGPUSeconds/3600)
			}
			if r.Jain < 0.05 || r.Jain > 0.13 {
				t.Errorf("W %d d, m %d s: Jain %v", wd, s.MinRuntime, r.Jain)
			}
		}
		if pre[1] > 184 || pre[0] < 387 {
			t.Errorf("W %d d: %d preemptions at m = 0, %d at m = 4 h", wd, pre[0], pre[1])
		}
	}
}
