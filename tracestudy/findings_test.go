package tracestudy

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/policy/static"
	"github.com/bursar-hpc/bursar/trace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// excerptStudy replays the committed excerpt as `bursar-sweep trace` does
// with its defaults (revision 2's mapping, one window with a day of
// warm-up and of cool-down, the log's record before it, fairSample fair
// start times) under the named policies at the trace studies' knobs.
func excerptStudy(t *testing.T, names []string, fairSample int) map[string]Result {
	t.Helper()
	opt := trace.Options{}
	w, err := Load("", opt)
	if err != nil {
		t.Fatal(err)
	}
	win, err := WholeWindow(w, opt, DefaultWarmup, DefaultCooldown)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ReadRecorded("", w.Pool)
	if err != nil {
		t.Fatal(err)
	}
	specs := TraceSpecs(names)
	// The mapping's defaults, as the command applies them (one restart
	// rule, zero, for every policy).
	if err := ApplyMapping(configs.TraceMapping{}, &opt, specs); err != nil {
		t.Fatal(err)
	}
	st := &Study{Specs: specs, Windows: []Window{win}, Loads: []*trace.Workload{w},
		Recorded: rec, Options: opt, FairSample: fairSample}
	rs := map[string]Result{}
	for i := range st.Runs() {
		r, err := st.Run(i)
		if err != nil {
			t.Fatal(err)
		}
		rs[r.Policy] = r
	}
	return rs
}

// The findings the README's "Real traces" section states of the excerpt,
// each checked on the committed excerpt as `bursar-sweep trace` replays it
// (results/trace/summary.json).
func TestREADMETraceFindings(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the excerpt under seven policies")
	}
	if raceDetector {
		t.Skip("single-goroutine replays: run without -race (.ci/run does)")
	}
	rs := excerptStudy(t, []string{"bursar", "fifo", "priority", "static", "static-share", "fairshare", "quota", "quota-fair", "budget"}, trace.DefaultFairSample)
	near := func(what string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol {
			t.Errorf("%s: %v, the README says %v", what, got, want)
		}
	}
	const hour = 3600.0
	fifo := rs["fifo"].Summary
	// fifo serves every measured job and converges.
	if fifo.Jobs != 2498 || fifo.Served != 2498 || !fifo.Converged {
		t.Errorf("fifo: %d of %d served, converged %v", fifo.Served, fifo.Jobs, fifo.Converged)
	}
	near("fifo useful", fifo.Useful, 0.848, 0.0005)
	near("fifo idle while waiting", fifo.IdleWhileWaiting, 0.084, 0.0005)
	// The excerpt holds no record before itself: under the default
	// lookback shares every group is entitled to the same share and
	// Bursar's buckets are empty (the study warns). fairshare waits 0.2 h
	// less than fifo and budget 2.0 h more; both converge and deny
	// nothing; budget, restarting from zero, loses 0.090 of the pool's
	// time in 125 preemptions.
	for name, want := range map[string]float64{"fairshare": -0.2, "budget": 2.0} {
		s := rs[name].Summary
		if !s.Converged || s.Denied != 0 {
			t.Errorf("%s: converged %v, %d denied: the README says converged, none", name, s.Converged, s.Denied)
		}
		near(name+" Δ mean wait (h)", (s.All.MeanWait-fifo.All.MeanWait)/hour, want, 0.05)
	}
	if b := rs["budget"]; b.Preemptions != 125 || math.Abs(b.Summary.Lost-0.090) > 0.0005 {
		t.Errorf("budget: %d preemptions, lost %.4f of the pool's time", b.Preemptions, b.Summary.Lost)
	}
	// quota-fair (the quota of before): 973 preemptions lose 0.264 of
	// the pool's time; its mean wait is 13.5 h above fifo's.
	q := rs["quota-fair"]
	if q.Preemptions != 973 || !q.Summary.Converged {
		t.Errorf("quota-fair: %d preemptions, converged %v", q.Preemptions, q.Summary.Converged)
	}
	near("quota-fair lost", q.Summary.Lost, 0.264, 0.0005)
	near("quota-fair Δ mean wait (h)", (q.Summary.All.MeanWait-fifo.All.MeanWait)/hour, 13.5, 0.05)
	// quota at Kueue's defaults: no preemption, nothing lost, a mean wait
	// 0.3 h above fifo's, no GPU idle while a queued job would fit.
	k := rs["quota"]
	if k.Preemptions != 0 || k.Summary.Lost != 0 || !k.Summary.Converged {
		t.Errorf("quota: %d preemptions, lost %v, converged %v", k.Preemptions, k.Summary.Lost, k.Summary.Converged)
	}
	near("quota Δ mean wait (h)", (k.Summary.All.MeanWait-fifo.All.MeanWait)/hour, 0.3, 0.05)
	near("quota idle while waiting", k.Summary.IdleWhileWaiting, 0, 0.0005)
	// static-share (lend none, revision 2's partitions): 334 denied, 0.842
	// of the work served, 0.208 of the pool idle while a queued job would
	// fit.
	st := rs["static-share"].Summary
	if st.Denied != 334 {
		t.Errorf("static-share: %d denied", st.Denied)
	}
	near("static-share served work", st.ServedWork, 0.842, 0.0005)
	near("static-share idle while waiting", st.IdleWhileWaiting, 0.208, 0.0005)
	// static (condo partitions): the owners' widest jobs exceed the pool,
	// so the minima are scaled and the run marked; 325 denied, 0.258 of the
	// work served, 0.803 idle while a queued job would fit.
	sc := rs["static"]
	if sc.Summary.Denied != 325 || !slices.Equal(sc.Marks, []string{static.MarkMinimaScaled}) {
		t.Errorf("static: %d denied, marks %v", sc.Summary.Denied, sc.Marks)
	}
	near("static served work", sc.Summary.ServedWork, 0.258, 0.0005)
	near("static idle while waiting", sc.Summary.IdleWhileWaiting, 0.803, 0.0005)
	// bursar, as a site meters it (the group metered, a scavenger for
	// idle GPUs; here every group's bucket empty, so each job wider than
	// its group's R runs on the scavenger): every job served, none
	// denied, converged; a mean wait of 11.7 h (7.6 h above fifo's); no
	// GPU idle while a queued job would fit (0.000 against fifo's 0.084);
	// 61 preemptions of scavenger leases lose 0.164 of the pool's time.
	b := rs["bursar"]
	if !b.Summary.Converged || b.Summary.Unfinished != 0 || b.Summary.Denied != 0 || b.Summary.Served != 2498 {
		t.Errorf("bursar: converged %v, %d served, %d unfinished, %d denied", b.Summary.Converged, b.Summary.Served, b.Summary.Unfinished, b.Summary.Denied)
	}
	near("bursar mean wait (h)", b.Summary.All.MeanWait/hour, 11.7, 0.05)
	near("bursar Δ mean wait (h)", (b.Summary.All.MeanWait-fifo.All.MeanWait)/hour, 7.6, 0.05)
	near("bursar idle while waiting", b.Summary.IdleWhileWaiting, 0.000, 0.0005)
	near("bursar lost", b.Summary.Lost, 0.164, 0.0005)
	if b.Preemptions != 61 {
		t.Errorf("bursar: %d preemptions, the README says 61", b.Preemptions)
	}
	// Fair start: 0.183 (0.160–0.208) of fifo's 1,000 sampled jobs are
	// late; fairshare's and budget's late fractions (0.272, 0.236) lie
	// above fifo's interval, with intervals that do not meet it.
	ff := fifo.FairStart
	near("fifo late", ff.LateFrac, 0.183, 0.0005)
	near("fifo late lo", ff.LateLo, 0.160, 0.0005)
	near("fifo late hi", ff.LateHi, 0.208, 0.0005)
	for name, want := range map[string]float64{"fairshare": 0.272, "budget": 0.236} {
		fs := rs[name].Summary.FairStart
		near(name+" late", fs.LateFrac, want, 0.0005)
		if fs.LateLo <= ff.LateHi {
			t.Errorf("%s: late fraction interval from %v meets fifo's, up to %v", name, fs.LateLo, ff.LateHi)
		}
	}
}

// bkSummary is what TestREADMEBudgetKnobFindings reads of the committed
// results/trace/budget-knobs/summary.json.
type bkSummary struct {
	Windows []struct {
		From, Until int64
	} `json:"windows"`
	WindowRule struct {
		N    int
		Rule string
	} `json:"window_rule"`
	Runs      []map[string]any `json:"runs"`
	Estimates []struct {
		Label      string                         `json:"label"`
		WindowDays int                            `json:"window_days"`
		MinRuntime int                            `json:"min_runtime_s"`
		Restart    string                         `json:"restart"`
		Metrics    map[string]map[string]*float64 `json:"metrics"`
		Paired     map[string]map[string]*float64 `json:"paired_difference"`
	} `json:"estimates"`
	Primary []struct {
		Policy, Versus, Metric string
		HL                     float64 `json:"hodges_lehmann"`
		Lo, Hi                 float64
		AsRatio                *struct{ Estimate, Lo, Hi float64 } `json:"as_ratio"`
		Values                 []*float64
		PHolm                  float64 `json:"p_holm"`
		Adjustment             string
	} `json:"primary"`
}

// The budget-knobs conclusion of the README ("before you change your
// lookback window"), checked on the committed run —
// results/trace/budget-knobs/summary.json, `bursar-sweep budget-knobs`
// at its defaults: 12 windows of 14 days of the full SDSC-SP2 log by the
// rule, W × m × restart — its primary family and its descriptive
// numbers, and that run reproduced in part: a reduced version (the
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
	if len(s.Windows) != 12 || s.WindowRule.N != 12 || s.WindowRule.Rule != "min(12, ⌊span ÷ D⌋)" || len(s.Runs) != 384 || len(s.Estimates) != 32 {
		t.Fatalf("%d windows (%+v), %d runs, %d cells: the README speaks of 12 windows by the rule, 384 replays, 32 cells",
			len(s.Windows), s.WindowRule, len(s.Runs), len(s.Estimates))
	}
	for _, r := range s.Runs {
		if r["converged"] != true {
			t.Errorf("a run did not converge: %v W=%v m=%v window %v", r["restart"], r["window_days"], r["min_runtime_s"], r["window"])
		}
	}
	// The primary family, in BudgetKnobsFamily's order: estimate
	// [interval] (ratios for the waits), windows in the finding's
	// direction, Holm's p.
	if len(s.Primary) != len(BudgetKnobsFamily) {
		t.Fatalf("%d primary contrasts, the family has %d", len(s.Primary), len(BudgetKnobsFamily))
	}
	for i, w := range []struct {
		est, lo, hi float64
		windows     int
		holm        float64
	}{
		{1.35, 1.20, 1.69, 12, 0.0034},
		{1.21, 1.08, 1.37, 11, 0.0098},
		{0.0229, 0.0118, 0.0384, 11, 0.0073},
		{-23.25, -34.5, -15.5, 12, 0.0034},
		{0.95, 0.89, 1.04, -1, 0.80},
		{1.04, 0.91, 1.22, -1, 0.93},
		{-0.0179, -0.0587, 0.0269, -1, 0.93},
	} {
		c, f := s.Primary[i], BudgetKnobsFamily[i]
		bkPrimaryMember(t, &s, i, w.est, w.lo, w.hi, w.holm, 0.00005, 0.005)
		if (c.PHolm <= 0.05) != (w.windows > 0) {
			t.Errorf("primary %d (%s): Holm p %v, but the README says it is %sshown", i, f.Finding, c.PHolm, map[bool]string{true: "", false: "not "}[w.windows > 0])
		}
		if w.windows > 0 {
			n := 0
			for _, v := range c.Values {
				if v != nil && (*v > 0) == (w.est > 0 && (c.AsRatio == nil || w.est > 1)) && *v != 0 {
					n++
				}
			}
			if n != w.windows {
				t.Errorf("primary %d (%s): %d windows in its direction, the README's %d", i, f.Finding, n, w.windows)
			}
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
			// Every paired interval of the mean wait holds 0, the cells
			// from −0.02 h to +0.85 h; Jain 0.66–0.70 (to two places);
			// lost ≤ 0.7 % of capacity.
			if !ref && (!in(dm, -0.025, 0.855) || dlo > 0 || dhi < 0) {
				t.Errorf("%s: Δ mean wait %.2f h [%.2f, %.2f]", cell, dm, dlo, dhi)
			}
			if !in(jain, 0.655, 0.705) || lost > 0.007 {
				t.Errorf("%s: Jain %.3f, lost %.4f", cell, jain, lost)
			}
			// m = 0: 49–52 preemptions per window; m = 4 h: 21–24.
			if e.MinRuntime == 0 && !in(pre, 48.5, 52.5) || e.MinRuntime == 14400 && !in(pre, 20.5, 24.5) {
				t.Errorf("%s: %.1f preemptions per window", cell, pre)
			}
		case "zero":
			// Every cell waits longer than the reference, by +1.1 to +2.8
			// h, each paired interval above 0; lost 2.7–4.2 % at m = 0,
			// 5.5–6.6 % at m = 5 min, 6.1–9.8 % at m ≥ 1 h.
			if dlo <= 0 || !in(dm, 1.05, 2.85) {
				t.Errorf("%s: Δ mean wait %.2f h [%.2f, %.2f]", cell, dm, dlo, dhi)
			}
			if e.MinRuntime == 0 && !in(lost, 0.0265, 0.0425) || e.MinRuntime == 300 && !in(lost, 0.0545, 0.0665) ||
				e.MinRuntime >= 3600 && !in(lost, 0.0605, 0.0985) {
				t.Errorf("%s: lost %.4f", cell, lost)
			}
		default:
			t.Errorf("%s: restart %q", cell, e.Restart)
		}
	}
	// With checkpoints, m = 4 h preempts fewer times than m = 0 in 47 of
	// the 48 W × window pairs.
	pre := map[[3]int]float64{} // W, m, window → preemptions, checkpoint:3600
	for _, r := range s.Runs {
		if r["restart"] == "checkpoint:3600" {
			pre[[3]int{int(r["window_days"].(float64)), int(r["min_runtime_s"].(float64)), int(r["window"].(float64))}] = r["preemptions"].(float64)
		}
	}
	fewer := 0
	for _, wd := range BudgetWindows {
		for k := range 12 {
			if pre[[3]int{wd, 14400, k}] < pre[[3]int{wd, 0, k}] {
				fewer++
			}
		}
	}
	if fewer != 47 {
		t.Errorf("m = 4 h preempts less than m = 0 in %d of 48 W × window pairs; the README says 47", fewer)
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
	ws, err := LayWindows(w, trace.Options{}, 0, 14*Day, DefaultWarmup, DefaultCooldown)
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

// committedEstimate is one policy's intervals over windows in a committed
// `trace --windows` summary: each metric's mean over windows and its
// paired difference from fifo, with their 95 % t intervals.
type committedEstimate struct {
	Label            string              `json:"label"`
	Metrics          map[string]Interval `json:"metrics"`
	PairedDifference map[string]Interval `json:"paired_difference"`
	Windows          int                 `json:"windows"`
}

// committedEstimates reads results/trace/<folder>/summary.json's
// estimates by policy.
func committedEstimates(t *testing.T, folder string) map[string]committedEstimate {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "results", "trace", folder, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Estimates []committedEstimate `json:"estimates"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	out := map[string]committedEstimate{}
	for _, e := range s.Estimates {
		out[e.Label] = e
	}
	return out
}

// committedPrimary is a committed summary's primary family, by
// "policy metric".
func committedPrimary(t *testing.T, folder string) (map[string]committedContrast, int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "results", "trace", folder, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Rule struct {
			N    int    `json:"n"`
			Rule string `json:"rule"`
		} `json:"window_rule"`
		Primary []committedContrast `json:"primary"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	out := map[string]committedContrast{}
	for _, c := range s.Primary {
		out[c.Policy+" "+c.Metric] = c
	}
	return out, s.Rule.N
}

type committedContrast struct {
	Policy, Metric string
	N              int     `json:"n"`
	Converged      int     `json:"converged_windows"`
	HL             float64 `json:"hodges_lehmann"`
	Lo, Hi, P      float64
	PHolm          float64 `json:"p_holm"`
	Coverage       float64
	AsRatio        *struct{ Estimate, Lo, Hi float64 } `json:"as_ratio"`
}

// The README's findings over the windows of the full SDSC-SP2 and KTH-SP2
// logs (`trace --windows 14d`: 12 windows each), checked against the
// committed summaries: a regenerated summary that no longer bears a
// finding out fails here. The primary family (docs/studies.md §5.1):
// Hodges–Lehmann estimate and interval (a ratio for waits) and the
// Holm-adjusted exact signed-rank p, as the README rounds them; the
// counts summed over the windows.
func TestCommittedTraceWindowFindings(t *testing.T) {
	type hl struct{ est, lo, hi, holm float64 }
	check := func(log, what string, c committedContrast, ok bool, want hl, tol float64) {
		t.Helper()
		if !ok {
			t.Errorf("%s: no primary contrast %s", log, what)
			return
		}
		est, lo, hi := c.HL, c.Lo, c.Hi
		if c.AsRatio != nil {
			est, lo, hi = c.AsRatio.Estimate, c.AsRatio.Lo, c.AsRatio.Hi
		}
		// The README rounds p to 0.001 below 0.1, else to 0.01.
		ptol := 0.0005
		if want.holm >= 0.1 {
			ptol = 0.005
		}
		if math.Abs(est-want.est) > tol || math.Abs(lo-want.lo) > tol || math.Abs(hi-want.hi) > tol || math.Abs(c.PHolm-want.holm) > ptol {
			t.Errorf("%s %s: %.4g [%.4g, %.4g] Holm p %.4g, the README says %v [%v, %v] Holm p %v", log, what, est, lo, hi, c.PHolm, want.est, want.lo, want.hi, want.holm)
		}
		// Twelve windows: k = 14 of 78 Walsh averages, coverage 1 − 174/4096
		// (a window with a zero difference leaves the test, not the
		// estimate).
		if c.N < 11 || math.Abs(c.Coverage-(1-174.0/4096)) > 1e-9 {
			t.Errorf("%s %s: %d windows tested, coverage %v", log, what, c.N, c.Coverage)
		}
	}
	for _, c := range []struct {
		log, folder                   string
		fsWait, budgetWait, quotaWait hl // ratio to fifo's mean wait
		quotaLost, staticIdle         hl
		staticDenied, bursarIdle      hl
		bursarWait                    hl
		fsLate, budgetLate            hl
		staticDeniedSum               float64
		jobs, budgetLost              float64
	}{
		{"SDSC-SP2", "sdsc-sp2-12x14d", hl{0.98, 0.72, 1.27, 1}, hl{1.34, 1.02, 1.86, 0.26}, hl{0.87, 0.75, 1.04, 0.81},
			hl{0.258, 0.207, 0.307, 0.005}, hl{0.405, 0.248, 0.548, 0.005}, hl{176, 143.5, 210, 0.005}, hl{-0.051, -0.071, -0.030, 0.005},
			hl{4.0, 2.3, 6.7, 0.005}, hl{0.020, -0.037, 0.041, 1}, hl{0.008, -0.027, 0.047, 1}, 2138, 9284, 0.093},
		{"KTH-SP2", "kth-sp2-12x14d", hl{0.73, 0.55, 0.95, 0.13}, hl{1.04, 0.71, 1.40, 1}, hl{0.62, 0.49, 0.78, 0.015},
			hl{0.229, 0.188, 0.281, 0.005}, hl{0.484, 0.372, 0.587, 0.005}, hl{129, 102.5, 166, 0.005}, hl{-0.034, -0.048, -0.020, 0.005},
			hl{1.8, 1.3, 2.2, 0.13}, hl{0.009, -0.022, 0.034, 1}, hl{0.009, -0.017, 0.038, 1}, 1617, 13530, 0.043},
	} {
		fam, nw := committedPrimary(t, c.folder)
		if nw != 12 || len(fam) != len(PrimaryFamily) {
			t.Fatalf("%s: %d windows, %d primary contrasts", c.log, nw, len(fam))
		}
		at := func(key string) (committedContrast, bool) { v, ok := fam[key]; return v, ok }
		for _, x := range []struct {
			key  string
			want hl
			tol  float64
		}{
			{"fairshare mean_wait", c.fsWait, 0.0051}, {"budget mean_wait", c.budgetWait, 0.0051}, {"quota mean_wait", c.quotaWait, 0.051},
			{"quota-fair lost_utilization", c.quotaLost, 0.00051}, {"static idle_while_waiting", c.staticIdle, 0.00051},
			{"static denied", c.staticDenied, 0.51}, {"bursar idle_while_waiting", c.bursarIdle, 0.00051}, {"bursar mean_wait", c.bursarWait, 0.051},
			{"fairshare fair_start_late", c.fsLate, 0.00051}, {"budget fair_start_late", c.budgetLate, 0.00051},
		} {
			v, ok := at(x.key)
			check(c.log, x.key, v, ok, x.want, x.tol)
		}
		// Shown (Holm p ≤ 0.05) and not shown, as the README sorts them.
		for key, v := range fam {
			shown := v.PHolm <= 0.05
			notShown := key == "fairshare mean_wait" || key == "budget mean_wait" ||
				key == "fairshare fair_start_late" || key == "budget fair_start_late" ||
				c.log == "SDSC-SP2" && key == "quota mean_wait" ||
				c.log == "KTH-SP2" && key == "bursar mean_wait"
			// (bursar mean_wait on KTH-SP2: ×1.8 [1.3, 2.2] but Holm p
			// 0.13, not shown.)
			if shown == notShown {
				t.Errorf("%s %s: Holm p %v", c.log, key, v.PHolm)
			}
		}
		// Every contrast rests on converged runs in all 12 windows but
		// static's on KTH-SP2 (one window stops with 2 unfinished, 11):
		// the tests leave that window out.
		for key, v := range fam {
			want := 12
			if c.log == "KTH-SP2" && strings.HasPrefix(key, "static ") {
				want = 11
			}
			if v.Converged != want {
				t.Errorf("%s %s: %d converged windows", c.log, key, v.Converged)
			}
		}
		es := committedEstimates(t, c.folder)
		fifo := es["fifo"].Metrics
		if got := fifo["jobs"].Mean * 12; math.Abs(got-c.jobs) > 0.5 || fifo["served"].Mean != fifo["jobs"].Mean {
			t.Errorf("%s fifo: %v jobs, %v served per window", c.log, fifo["jobs"].Mean, fifo["served"].Mean)
		}
		for name, e := range es {
			want := 1.0
			if c.log == "KTH-SP2" && name == "static" {
				want = 11.0 / 12 // one window does not converge (above)
			}
			if e.Windows != 12 {
				t.Errorf("%s %s: %d windows", c.log, name, e.Windows)
			}
			if cv := e.Metrics["converged"]; math.Abs(cv.Mean-want) > 1e-9 || want == 1 && (cv.Lo != want || cv.Hi != want) {
				t.Errorf("%s %s: converged in a fraction %v of the windows", c.log, name, cv.Mean)
			}
		}
		if got := es["static"].Metrics["denied"].Mean * 12; math.Abs(got-c.staticDeniedSum) > 0.5 {
			t.Errorf("%s static: %v denied, the README says %v", c.log, got, c.staticDeniedSum)
		}
		// Bursar denies nothing and finishes every job.
		unf := map[string]float64{"SDSC-SP2": 0, "KTH-SP2": 0}[c.log]
		if b := es["bursar"].Metrics; math.Abs(b["unfinished"].Mean*12-unf) > 0.5 || b["denied"].Mean != 0 {
			t.Errorf("%s bursar: %v unfinished, %v denied per window, the README says %v unfinished, none denied", c.log, b["unfinished"].Mean, b["denied"].Mean, unf)
		}
		// Bursar's scavenger work thrown away (descriptive): 0.282
		// [0.228, 0.335] and 0.175 [0.133, 0.218] of the pool's time.
		lost := map[string][3]float64{"SDSC-SP2": {0.282, 0.228, 0.335}, "KTH-SP2": {0.175, 0.133, 0.218}}[c.log]
		if l := es["bursar"].Metrics["lost_utilization"]; math.Abs(l.Mean-lost[0]) > 0.0005 || math.Abs(l.Lo-lost[1]) > 0.0005 || math.Abs(l.Hi-lost[2]) > 0.0005 {
			t.Errorf("%s bursar lost %v [%v, %v], the README says %v", c.log, l.Mean, l.Lo, l.Hi, lost)
		}
		// budget, restarting from zero, loses 0.093 and 0.043 of the pool's
		// time.
		if l := es["budget"].Metrics["lost_utilization"].Mean; math.Abs(l-c.budgetLost) > 0.0005 {
			t.Errorf("%s budget lost %v of the pool's time", c.log, l)
		}
		// The descriptive NUWT and share-index differences whose interval
		// excludes 0: exactly the nine the README lists.
		excl := map[string]bool{}
		for name, e := range es {
			for _, k := range []string{"nuwt_cv", "share_jain"} {
				if d, ok := e.PairedDifference[k]; ok && (d.Lo > 0 || d.Hi < 0) {
					excl[c.log+" "+name+" "+k] = d.Lo > 0
				}
			}
		}
		want := map[string]bool{"SDSC-SP2 static nuwt_cv": false, "SDSC-SP2 static-share nuwt_cv": false, "SDSC-SP2 budget nuwt_cv": false,
			"SDSC-SP2 fairshare nuwt_cv": false, "SDSC-SP2 static share_jain": true, "SDSC-SP2 static-share share_jain": true,
			"SDSC-SP2 fairshare share_jain": true, "SDSC-SP2 quota share_jain": true, "KTH-SP2 quota-fair nuwt_cv": true}
		for k, up := range want {
			if strings.HasPrefix(k, c.log+" ") {
				if got, ok := excl[k]; !ok || got != up {
					t.Errorf("%s: excludes 0 %v, above %v; the README says so, above %v", k, ok, got, up)
				}
				delete(excl, k)
			}
		}
		for k := range excl {
			t.Errorf("%s: the descriptive interval excludes 0, the README does not say so", k)
		}
	}
}

// The README's sensitivity of the trace findings to the mapping, checked
// against the committed runs: the SDSC-SP2 windows (12 of 14 days) under
// each `shares` rule (lookback is the default run, sdsc-sp2-12x14d; groups
// and window are the labelled oracles) and under Bursar's `bucket:
// hours:24`. Every Δ here is descriptive.
func TestCommittedSharesFindings(t *testing.T) {
	const hour, nw = 3600.0, 12
	type iv struct{ mean, lo, hi float64 }
	rules := []struct {
		name, folder   string
		bursarStopped  float64 // Bursar's windows that do not converge
		bursarWait     iv      // Δ mean wait, h
		bursarLost     float64 // of the pool's time
		staticDenied   float64 // static-share's, summed over the 12 windows
		condoDenied    float64 // static's (condo partitions), the same
		condoStopped   float64 // static's windows that do not converge
		fairshareBelow bool    // fairshare's Δ mean wait interval below 0
	}{
		{"lookback", "sdsc-sp2-12x14d", 0, iv{24.6, 12.3, 36.9}, 0.282, 1940, 2138, 0, false},
		{"groups", "shares/groups", 0, iv{13.3, 4.3, 22.3}, 0.287, 2083, 2042, 1, false},
		{"window", "shares/window", 0, iv{6.5, 1.8, 11.2}, 0.184, 2321, 2658, 0, false},
		{"users", "shares/users", 0, iv{6.5, 1.8, 11.2}, 0.184, 2321, 2658, 0, false},
		{"equal-groups", "shares/equal-groups", 0, iv{15.4, 5.7, 25.0}, 0.388, 1546, 1849, 0, false},
		{"equal-users", "shares/equal-users", 0, iv{12.6, 5.4, 19.8}, 0.382, 1964, 2481, 1, false},
	}
	for _, r := range rules {
		es := committedEstimates(t, r.folder)
		b := es["bursar"]
		// Bursar denies nothing and converges in every window under any
		// rule; the rule moves its wait and the scavenger work thrown
		// away.
		if stopped := (1 - b.Metrics["converged"].Mean) * nw; math.Abs(stopped-r.bursarStopped) > 1e-9 || b.Metrics["denied"].Mean != 0 {
			t.Errorf("shares %s: bursar stopped in %v windows, %v denied per window", r.name, stopped, b.Metrics["denied"].Mean)
		}
		d := b.PairedDifference["mean_wait"]
		if math.Abs(d.Mean/hour-r.bursarWait.mean) > 0.05 || math.Abs(d.Lo/hour-r.bursarWait.lo) > 0.05 || math.Abs(d.Hi/hour-r.bursarWait.hi) > 0.05 {
			t.Errorf("shares %s: bursar Δ mean wait %v [%v, %v] h, the README says %v", r.name, d.Mean/hour, d.Lo/hour, d.Hi/hour, r.bursarWait)
		}
		if got := b.Metrics["lost_utilization"].Mean; math.Abs(got-r.bursarLost) > 0.0005 {
			t.Errorf("shares %s: bursar lost %v, the README says %v", r.name, got, r.bursarLost)
		}
		if got := math.Round(es["quota-fair"].Metrics["lost_utilization"].Mean*100) / 100; got < 0.21 || got > 0.26 {
			t.Errorf("shares %s: quota-fair lost %v of the pool's time, the README says 0.21–0.26", r.name, got)
		}
		if got := es["quota"].Metrics["lost_utilization"].Mean; got != 0 {
			t.Errorf("shares %s: quota (Kueue's defaults) lost %v of the pool's time, the README says none", r.name, got)
		}
		if got := es["static-share"].Metrics["denied"].Mean * nw; math.Abs(got-r.staticDenied) > 0.5 {
			t.Errorf("shares %s: static-share denied %v, the README says %v", r.name, got, r.staticDenied)
		}
		if u := math.Round(es["static-share"].Metrics["useful_utilization"].Mean*100) / 100; u < 0.20 || u > 0.57 {
			t.Errorf("shares %s: static-share useful %v, the README says 0.20–0.57", r.name, u)
		}
		if got := es["static"].Metrics["denied"].Mean * nw; math.Abs(got-r.condoDenied) > 0.5 {
			t.Errorf("shares %s: static denied %v, the README says %v", r.name, got, r.condoDenied)
		}
		if u := math.Round(es["static"].Metrics["useful_utilization"].Mean*100) / 100; u < 0.14 || u > 0.28 {
			t.Errorf("shares %s: static useful %v, the README says 0.14–0.28", r.name, u)
		}
		if got := (1 - es["static"].Metrics["converged"].Mean) * nw; math.Abs(got-r.condoStopped) > 1e-9 {
			t.Errorf("shares %s: static stopped in %v windows, the README says %v", r.name, got, r.condoStopped)
		}
		// fairshare: Δ mean wait from −1.7 to +1.0 h, no interval below
		// 0; budget from −0.2 to +17.4 h, every interval including 0.
		d = es["fairshare"].PairedDifference["mean_wait"]
		if m := math.Round(d.Mean/hour*10) / 10; m < -1.7 || m > 1.0 || (d.Hi < 0) != r.fairshareBelow {
			t.Errorf("shares %s: fairshare Δ mean wait %v [%v, %v] h", r.name, d.Mean/hour, d.Lo/hour, d.Hi/hour)
		}
		d = es["budget"].PairedDifference["mean_wait"]
		if m := math.Round(d.Mean/hour*10) / 10; m < -0.2 || m > 17.4 || d.Hi < 0 || d.Lo > 0 {
			t.Errorf("shares %s: budget Δ mean wait %v [%v, %v] h", r.name, d.Mean/hour, d.Lo/hour, d.Hi/hour)
		}
		if u := es["fifo"].Metrics["useful_utilization"].Mean; math.Abs(u-0.862) > 0.0005 {
			t.Errorf("shares %s: fifo useful %v", r.name, u)
		}
	}
	// The old bucket: it too denies nothing now (a job its group's
	// bucket can never hold runs on the scavenger), and converges in
	// every window.
	b := committedEstimates(t, "shares/bucket-hours24")["bursar"]
	if c, d, u := b.Metrics["converged"].Mean*nw, b.Metrics["denied"].Mean*nw, b.Metrics["unfinished"].Mean*nw; math.Abs(c-12) > 1e-9 || d != 0 ||
		math.Abs(u-0) > 0.5 || math.Abs(b.Metrics["jobs"].Mean*nw-9284) > 0.5 {
		t.Errorf("bucket hours:24: bursar converged in %v windows, %v denied, %v unfinished", c, d, u)
	}
}

// Issue 31's test of Bursar as a site meters it (docs/studies.md §3.2),
// on every window of the committed SDSC-SP2 and KTH-SP2 runs: with the
// default mapping (lookback shares and buckets) Bursar denies nothing,
// and the pool's time it leaves idle while a queued job would fit is at
// most fifo's + 0.02 in each window (it is at most 0.006 against fifo's
// 0.014–0.086).
func TestBursarSiteMeteringOnEveryWindow(t *testing.T) {
	for _, folder := range []string{"sdsc-sp2-12x14d", "kth-sp2-12x14d"} {
		b, err := os.ReadFile(filepath.Join("..", "results", "trace", folder, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Runs []struct {
				Policy           string  `json:"policy"`
				Window           int     `json:"window"`
				Denied           int     `json:"denied"`
				Converged        bool    `json:"converged"`
				IdleWhileWaiting float64 `json:"idle_while_waiting"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		fifo := map[int]float64{}
		for _, r := range s.Runs {
			if r.Policy == "fifo" {
				fifo[r.Window] = r.IdleWhileWaiting
			}
		}
		n := 0
		for _, r := range s.Runs {
			if r.Policy != "bursar" {
				continue
			}
			n++
			f, ok := fifo[r.Window]
			if !ok || r.Denied != 0 || r.IdleWhileWaiting > f+0.02 {
				t.Errorf("%s window %d: bursar denied %d, idle while waiting %.4f against fifo's %.4f (have %v): want none denied, at most fifo's + 0.02",
					folder, r.Window, r.Denied, r.IdleWhileWaiting, f, ok)
			}
		}
		if n != 12 {
			t.Errorf("%s: %d bursar runs, want 12", folder, n)
		}
	}
}

// The README's degenerate finding, against the committed summaries:
// priority on KTH-SP2 (no queue recorded) has one tier and runs as fifo
// in every window, and is the only flag of any committed trace run.
func TestCommittedDegenerateFindings(t *testing.T) {
	type flag struct {
		Label, Reason string
		Windows       []int
	}
	read := func(folder string) []flag {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("..", "results", "trace", folder, "summary.json"))
		require.NoError(t, err)
		var s struct {
			Degenerate []flag `json:"degenerate"`
		}
		require.NoError(t, json.Unmarshal(b, &s))
		require.NotNil(t, s.Degenerate, "%s: no degenerate list", folder)
		return s.Degenerate
	}
	all := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	assert.Equal(t, []flag{{"priority", ReasonOneTier, all}, {"priority", ReasonSameAsFifo, all}}, read("kth-sp2-12x14d"))
	for _, folder := range []string{"", "sdsc-sp2-12x14d", "shares/groups", "shares/window", "shares/users", "shares/equal-groups", "shares/equal-users", "shares/bucket-hours24"} {
		assert.Empty(t, read(folder), folder)
	}
}

// The README's harm findings on quota-fair (the quota of before) and Bursar, against the committed
// summaries: late by the last start far more often than by the first,
// and how often their jobs were preempted.
func TestCommittedHarmFindings(t *testing.T) {
	for _, c := range []struct {
		folder      string
		first, last float64
	}{{"", 0.057, 0.086}, {"sdsc-sp2-12x14d", 0.155, 0.205}, {"kth-sp2-12x14d", 0.055, 0.104}} {
		q := committedEstimates(t, c.folder)["quota-fair"].Metrics
		assert.InDelta(t, c.first, q["fair_start_late"].Mean, 0.0005, c.folder)
		assert.InDelta(t, c.last, q["fair_last_late"].Mean, 0.0005, c.folder)
	}
	for _, c := range []struct {
		folder      string
		first, last float64
	}{{"", 0.088, 0.092}, {"sdsc-sp2-12x14d", 0.184, 0.227}, {"kth-sp2-12x14d", 0.088, 0.149}} {
		b := committedEstimates(t, c.folder)["bursar"].Metrics
		assert.InDelta(t, c.first, b["fair_start_late"].Mean, 0.0005, c.folder)
		assert.InDelta(t, c.last, b["fair_last_late"].Mean, 0.0005, c.folder)
	}
	b := committedEstimates(t, "")["bursar"].Metrics
	assert.InDelta(t, 0.012, b["preempted_jobs"].Mean, 0.0005)
	assert.InDelta(t, 0.000, b["preempted_10_jobs"].Mean, 0.0005)
	assert.Equal(t, 6.0, b["preemptions_per_job_max"].Mean)
	q := committedEstimates(t, "")["quota-fair"].Metrics
	assert.InDelta(t, 0.043, q["preempted_jobs"].Mean, 0.0005)
	assert.InDelta(t, 0.012, q["preempted_10_jobs"].Mean, 0.0005)
	assert.Equal(t, 58.0, q["preemptions_per_job_max"].Mean)
	// quota-fair is the least often late by its first start on the excerpt.
	for label, e := range committedEstimates(t, "") {
		if label != "quota-fair" {
			assert.Greater(t, e.Metrics["fair_start_late"].Mean, q["fair_start_late"].Mean, label)
		}
	}
}

// TestKTHBudgetKnobsPrimary checks the README's budget-knobs family on
// KTH-SP2 ("The same family on KTH-SP2") against the committed run,
// results/kth-sp2/budget-knobs: 12 windows of 14 days by the rule, 384
// replays, every one converged; each contrast's estimate [interval]
// (ratios for the waits) and Holm's p, three of seven shown.
func TestKTHBudgetKnobsPrimary(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "results", "kth-sp2", "budget-knobs", "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s bkSummary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.WindowRule.N != 12 || len(s.Runs) != 384 || len(s.Primary) != len(BudgetKnobsFamily) {
		t.Fatalf("%d windows, %d runs, %d primary contrasts: the README speaks of 12 windows, 384 replays and the family of %d",
			s.WindowRule.N, len(s.Runs), len(s.Primary), len(BudgetKnobsFamily))
	}
	for _, r := range s.Runs {
		if r["converged"] != true {
			t.Errorf("a run did not converge: %v W=%v m=%v window %v", r["restart"], r["window_days"], r["min_runtime_s"], r["window"])
		}
	}
	for i, w := range []struct {
		est, lo, hi float64
		holm        float64
	}{
		{1.17, 1.04, 1.45, 0.0034},
		{1.13, 1.01, 1.26, 0.084},
		{0.0082, 0.0018, 0.0173, 0.046},
		{-43, -67.5, -25, 0.0034},
		{0.95, 0.91, 0.99, 0.084},
		{0.92, 0.61, 1.05, 0.47},
		{0.0036, -0.029, 0.061, 0.83},
	} {
		c, f := s.Primary[i], BudgetKnobsFamily[i]
		bkPrimaryMember(t, &s, i, w.est, w.lo, w.hi, w.holm, 0.0005, 0.01)
		if shown := i == 0 || i == 2 || i == 3; (c.PHolm <= 0.05) != shown {
			t.Errorf("primary %d (%s): Holm p %v, but the README says it is %sshown", i, f.Finding, c.PHolm, map[bool]string{true: "", false: "not "}[shown])
		}
	}
}

// bkPrimaryMember checks budget-knobs' primary contrast i against a
// README row: that it is the family's member, its estimate and interval
// (ratios for the waits, to 0.005; preemptions to 0.05; other
// differences to tol) and its Holm p (to tol plus rel of it).
func bkPrimaryMember(t *testing.T, s *bkSummary, i int, wEst, wLo, wHi, holm, tol, rel float64) {
	t.Helper()
	c, f := s.Primary[i], BudgetKnobsFamily[i]
	if c.Policy != f.Policy || c.Versus != f.Versus || c.Metric != f.Metric || c.Adjustment != "Holm" {
		t.Fatalf("primary %d is %s vs %s %s (%s), the family's %s vs %s %s", i, c.Policy, c.Versus, c.Metric, c.Adjustment, f.Policy, f.Versus, f.Metric)
	}
	est, lo, hi, etol := c.HL, c.Lo, c.Hi, tol
	switch {
	case c.AsRatio != nil:
		est, lo, hi, etol = c.AsRatio.Estimate, c.AsRatio.Lo, c.AsRatio.Hi, 0.005
	case f.Metric == "preemptions":
		etol = 0.05
	}
	if math.Abs(est-wEst) > etol || math.Abs(lo-wLo) > etol || math.Abs(hi-wHi) > etol {
		t.Errorf("primary %d (%s): %v [%v, %v], the README's %v [%v, %v]", i, f.Finding, est, lo, hi, wEst, wLo, wHi)
	}
	if math.Abs(c.PHolm-holm) > tol+rel*holm {
		t.Errorf("primary %d (%s): Holm p %v, the README's %v", i, f.Finding, c.PHolm, holm)
	}
}
