package tracestudy

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
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

// bkSummary is what TestREADMEBudgetKnobFindings reads of the committed
// results/trace/budget-knobs/summary.json.
type bkSummary struct {
	Windows []struct {
		From, Until int64
	} `json:"windows"`
	Runs      []map[string]any `json:"runs"`
	Estimates []struct {
		Label      string                         `json:"label"`
		WindowDays int                            `json:"window_days"`
		MinRuntime int                            `json:"min_runtime_s"`
		Restart    string                         `json:"restart"`
		Metrics    map[string]map[string]*float64 `json:"metrics"`
		Paired     map[string]map[string]*float64 `json:"paired_difference"`
	} `json:"estimates"`
}

// The budget-knobs conclusion of the README ("before you change your
// lookback window"), checked on the committed run —
// results/trace/budget-knobs/summary.json, `bursar-sweep budget-knobs`
// at its defaults: 8 windows of 14 days of the full SDSC-SP2 log, W × m ×
// restart — and that run reproduced in part: a reduced version (the
// first window, the four corners of W × m under each restart) replayed
// by this code gives every committed metric of those runs exactly.
func TestREADMEBudgetKnobFindings(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "results", "trace", "budget-knobs", "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s bkSummary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Windows) != 8 || len(s.Runs) != 256 || len(s.Estimates) != 32 {
		t.Fatalf("%d windows, %d runs, %d cells: the README speaks of 8 windows, 256 replays, 32 cells", len(s.Windows), len(s.Runs), len(s.Estimates))
	}
	for _, r := range s.Runs {
		if r["converged"] != true {
			t.Errorf("a run did not converge: %v W=%v m=%v window %v", r["restart"], r["window_days"], r["min_runtime_s"], r["window"])
		}
	}
	get := func(m map[string]map[string]*float64, key, field string) float64 {
		if v := m[key][field]; v != nil {
			return *v
		}
		return math.NaN()
	}
	in := func(x, lo, hi float64) bool { return x >= lo && x <= hi }
	for _, e := range s.Estimates {
		cell := e.Label
		lost, jain, pre := get(e.Metrics, "lost_utilization", "mean"), get(e.Metrics, "share_jain", "mean"), get(e.Metrics, "preemptions", "mean")
		dm, dlo, dhi := get(e.Paired, "mean_wait", "mean")/3600, get(e.Paired, "mean_wait", "lo")/3600, get(e.Paired, "mean_wait", "hi")/3600
		ref := e.Restart == "checkpoint:3600" && e.WindowDays == 7 && e.MinRuntime == 3600
		switch e.Restart {
		case "checkpoint:3600":
			// No W and no m moves the mean wait by more than 0.3 h from
			// the reference; every paired interval holds 0, the widest
			// −0.7 to +1.0 h; Jain 0.58–0.64; lost ≤ 0.7 % of capacity.
			if !ref && (math.Abs(dm) > 0.3 || dlo > 0 || dhi < 0 || dlo < -0.7 || dhi > 1.05) {
				t.Errorf("%s: Δ mean wait %.2f h [%.2f, %.2f]", cell, dm, dlo, dhi)
			}
			if !in(jain, 0.575, 0.645) || lost > 0.007 {
				t.Errorf("%s: Jain %.3f, lost %.4f", cell, jain, lost)
			}
			// m = 0: 58–78 preemptions per window; m = 4 h: 23–26.
			if e.MinRuntime == 0 && !in(pre, 58, 78) || e.MinRuntime == 14400 && !in(pre, 23, 26) {
				t.Errorf("%s: %.1f preemptions per window", cell, pre)
			}
		case "zero":
			// Every cell waits longer than the reference (its paired
			// interval above 0), by +0.5 to +2.0 h; lost 3.0–3.1 % at
			// m = 0, 5.5–7.9 % at m ≥ 1 h.
			if dlo <= 0 || !in(dm, 0.5, 2.05) {
				t.Errorf("%s: Δ mean wait %.2f h [%.2f, %.2f]", cell, dm, dlo, dhi)
			}
			if e.MinRuntime == 0 && !in(lost, 0.030, 0.0315) || e.MinRuntime >= 3600 && !in(lost, 0.055, 0.0795) {
				t.Errorf("%s: lost %.4f", cell, lost)
			}
		default:
			t.Errorf("%s: restart %q", cell, e.Restart)
		}
	}
	// With checkpoints, m = 4 h preempts fewer times than m = 0 in 31 of
	// the 32 W × window pairs (W = 7 d on the fifth window: 23 against 24).
	pre := map[[3]int]float64{} // W, m, window → preemptions, checkpoint:3600
	for _, r := range s.Runs {
		if r["restart"] == "checkpoint:3600" {
			pre[[3]int{int(r["window_days"].(float64)), int(r["min_runtime_s"].(float64)), int(r["window"].(float64))}] = r["preemptions"].(float64)
		}
	}
	fewer := 0
	for _, wd := range BudgetWindows {
		for k := range 8 {
			if pre[[3]int{wd, 14400, k}] < pre[[3]int{wd, 0, k}] {
				fewer++
			}
		}
	}
	if fewer != 31 {
		t.Errorf("m = 4 h preempts less than m = 0 in %d of 32 W × window pairs; the README says 31", fewer)
	}

	// The reduced version, replayed.
	if testing.Short() {
		t.Skip("replays 8 cells of the committed study")
	}
	if raceDetector {
		t.Skip("single-goroutine replays: run without -race (.ci/run does)")
	}
	w, err := Load(BuiltinFull, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := Windows(w.Jobs[0].Submit, w.Jobs[len(w.Jobs)-1].Submit, 8, 14*Day, DefaultWarmup, DefaultCooldown)
	if err != nil {
		t.Fatal(err)
	}
	ws = ws[:1]
	if ws[0].From != s.Windows[0].From || ws[0].Until != s.Windows[0].Until {
		t.Fatalf("window 1 is [%d, %d), the committed run's [%d, %d)", ws[0].From, ws[0].Until, s.Windows[0].From, s.Windows[0].Until)
	}
	loads, err := LoadWindows(BuiltinFull, trace.Options{}, ws)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ReadRecorded(BuiltinFull, w.Pool)
	if err != nil {
		t.Fatal(err)
	}
	specs, err := BudgetKnobSpecs([]int{1, 14}, []int{0, 14400}, BudgetRestarts)
	if err != nil {
		t.Fatal(err)
	}
	st := &Study{Specs: specs, Windows: ws, Loads: loads, Recorded: rec, FairSample: trace.DefaultFairSample}
	for i := range st.Runs() {
		r, err := st.Run(i)
		if err != nil {
			t.Fatal(err)
		}
		var committed map[string]any
		for _, c := range s.Runs {
			if c["restart"] == r.Restart && int(c["window_days"].(float64)) == r.WindowDays && int(c["min_runtime_s"].(float64)) == r.MinRuntime && c["window"].(float64) == 0 {
				committed = c
			}
		}
		if committed == nil {
			t.Fatalf("%s: not in the committed run", specs[i].Label())
		}
		for _, m := range Metrics {
			got, want := m.Get(&r), committed[m.Key]
			if m.Key == "converged" {
				if r.Summary.Converged != want {
					t.Errorf("%s: converged %v, committed %v", specs[i].Label(), r.Summary.Converged, want)
				}
				continue
			}
			if want == nil && !math.IsNaN(got) || want != nil && want.(float64) != got {
				t.Errorf("%s: %s = %v, committed %v", specs[i].Label(), m.Key, got, want)
			}
		}
	}
}
