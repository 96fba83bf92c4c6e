package tracestudy

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/bursar-hpc/bursar/figures"
	"github.com/bursar-hpc/bursar/internal/atomicfile"
	"github.com/bursar-hpc/bursar/internal/csvfile"
	"github.com/bursar-hpc/bursar/trace"
)

// TraceInfo describes the workload in summary.json.
type TraceInfo struct {
	Name     string         `json:"name"`
	Pool     int            `json:"pool"`
	Jobs     int            `json:"jobs"`
	Records  int            `json:"records"`
	Skipped  map[string]int `json:"skipped"`
	Users    int            `json:"campaigns"`
	Groups   int            `json:"groups"`
	From     int64          `json:"window_from"`
	Until    int64          `json:"window_until"`
	FirstSub int64          `json:"first_submit"`
}

// Info summarizes w for summary.json.
func Info(w *trace.Workload, name string, from, until int64) TraceInfo {
	ti := TraceInfo{Name: name, Pool: w.Pool, Jobs: len(w.Jobs), Records: w.Records, Skipped: map[string]int{},
		Users: len(w.Campaigns), Groups: len(w.Groups), From: from, Until: until}
	if len(w.Jobs) > 0 {
		ti.FirstSub = w.Jobs[0].Submit
	}
	ti.Skipped["no_run_time"] = w.Skipped.NoRunTime
	ti.Skipped["no_processors"] = w.Skipped.NoProcs
	ti.Skipped["too_wide"] = w.Skipped.TooWide
	return ti
}

// Summary is summary.json.
type Summary struct {
	Experiment string
	Trace      TraceInfo
	Study      *Study
	Warmup     int64
	Cooldown   int64
	Runs       []Result
	// shapes are the windows' shapes (windowShapes), found once for all
	// the outputs: nil until then.
	shapes []WindowShape
}

// windowShapes is s.shapes, or the windows' shapes found now where they
// have not been.
func (s *Summary) windowShapes() []WindowShape {
	if s.shapes == nil {
		s.shapes = windowShapes(s.Study)
	}
	return s.shapes
}

// marshal writes summary.json: the trace, the windows, every run's
// metrics and each spec's estimates over the windows, NaN as null.
func marshal(s Summary) ([]byte, error) {
	st := s.Study
	runs := make([]any, len(s.Runs))
	for i := range s.Runs {
		runs[i] = resultMap(&s.Runs[i])
	}
	wins := make([]any, len(st.Windows))
	for k, w := range st.Windows {
		wins[k] = map[string]any{"index": w.Index, "from": w.From, "until": w.Until, "measure_from": w.MeasureFrom,
			"measure_until": w.MeasureUntil, "replayed_jobs": len(st.Loads[k].Jobs), "shape": windowShapeMap(s.windowShapes()[k])}
		if ld := st.Loads[k]; st.Options.LookbackSpan() > 0 {
			// Where the shares and Bursar's buckets were read from.
			wins[k].(map[string]any)["lookback"] = map[string]any{"from": ld.LookbackFrom, "days": float64(w.From-ld.LookbackFrom) / Day,
				"jobs": ld.LookbackJobs}
		}
	}
	var ests []any
	for _, e := range Estimate(st, s.Runs, Reference(st.Specs)) {
		sp := st.Specs[e.Spec]
		m := map[string]any{"label": e.Label, "policy": sp.Policy, "windows": len(st.Windows), "metrics": intervalsMap(e.Intervals)}
		if sp.WindowDays > 0 {
			m["window_days"], m["min_runtime_s"], m["restart"] = sp.WindowDays, sp.MinRuntime, sp.Restart
		}
		if e.Versus != "" {
			m["versus"], m["paired_difference"] = e.Versus, intervalsMap(e.Diffs)
		}
		ests = append(ests, m)
	}
	top := map[string]any{"experiment": s.Experiment, "trace": s.Trace, "mapping": MappingMap(st.Options),
		"windows": wins, "warmup_s": s.Warmup, "cooldown_s": s.Cooldown, "runs": runs, "estimates": ests,
		"window_rule": windowRuleMap(st)}
	top["degenerate"] = degenerateList(findDegenerate(st, s.Runs, s.windowShapes()))
	if li := LeadInMap(st.LeadIn); li != nil {
		top["lead_in"] = li
	}
	if mvl := modelVsLogList(s.Runs); mvl != nil {
		top["model_vs_log"] = mvl
	}
	if len(st.Windows) > 1 {
		top["contrasts"] = "every paired_difference is descriptive (a 95 % t interval over windows, no test); " +
			"the primary family is tested (exact Wilcoxon signed-rank, Pratt's zeros; Holm across the family)"
		if fam := TestedFamily(st, s.Runs, FamilyOf(s.Experiment)); fam != nil {
			top["primary"] = familyMaps(fam)
		}
	}
	b, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// windowRuleMap declares how st's windows were chosen and weighed
// (WindowRuleMap).
func windowRuleMap(st *Study) map[string]any { return WindowRuleMap(st.Windows, st.WindowRule) }

// WindowRuleMap declares how a study's windows were chosen and weighed
// (docs/studies.md §5.1): their number and length, the rule that set
// the number ("" is one window), equal weights.
func WindowRuleMap(ws []Window, rule string) map[string]any {
	m := map[string]any{"n": len(ws), "weights": "equal"}
	if len(ws) > 0 {
		m["days"] = ws[0].Days()
	}
	if rule == "" {
		rule = "one window"
	}
	m["rule"] = rule
	return m
}

// familyMaps are summary.json's primary block: each contrast with its
// per-window statistics, exact signed-rank test, Hodges–Lehmann
// estimate and interval (on the log scale for a ratio, and as a ratio
// beside it), raw and Holm-adjusted p.
func familyMaps(fam []Tested) []any {
	out := make([]any, len(fam))
	for i, t := range fam {
		stat := "policy − " + t.Against()
		if t.Ratio {
			stat = "log(policy ÷ " + t.Against() + ")"
		}
		vals := make([]any, len(t.Values))
		for k, v := range t.Values {
			vals[k] = num(v)
		}
		m := map[string]any{"policy": t.Policy, "metric": t.Metric, "statistic": stat, "finding": t.Finding,
			"values": vals, "n": t.Test.N, "zeros": t.Test.Zeros, "converged_windows": t.Converged,
			"w_plus": t.Test.WPlus, "p": num(t.Test.P), "p_holm": num(t.PHolm), "adjustment": "Holm",
			"hodges_lehmann": num(t.Shift.Estimate), "lo": num(t.Shift.Lo), "hi": num(t.Shift.Hi),
			"coverage": num(t.Shift.Coverage)}
		if t.Versus != "" {
			m["versus"] = t.Versus
		}
		if t.Ratio {
			m["as_ratio"] = map[string]any{"estimate": num(math.Exp(t.Shift.Estimate)), "lo": num(math.Exp(t.Shift.Lo)),
				"hi": num(math.Exp(t.Shift.Hi))}
		}
		out[i] = m
	}
	return out
}

// MappingMap is summary.json's mapping block: the trace mapping the run
// used (docs/studies.md §1, §3), each knob at the value it took, defaults
// written out: what a campaign is, how entitlements are shared, Bursar's
// bucket, the queue → class overrides (as QUEUE=CLASS, sorted; absent
// when there are none) and revision 1's one campaign per user (only when
// set). Every study that replays a trace (trace, budget-knobs,
// agents-arrive) writes it, so that two summaries say how they differ.
func MappingMap(o trace.Options) map[string]any {
	by := "user"
	if o.ByGroup {
		by = "group"
	}
	shares := o.Shares
	if shares == "" {
		shares = trace.ShareLookback
	}
	bucket := o.Bucket
	if bucket == "" {
		bucket = trace.BucketLargestJob
	}
	m := map[string]any{"by": by, "shares": string(shares), "bucket": bucket}
	if span := o.LookbackSpan(); span > 0 {
		m["lookback_days"] = float64(span) / Day
	}
	if shares.Oracle() {
		// Labelled: these shares read the log after the window's start.
		m["oracle"] = true
	}
	if o.UserCampaigns {
		m["user_campaigns"] = true
	}
	if o.Meter == trace.MeterUser {
		// Only where it is not the default (group), so that the
		// summaries of the studies Bursar is not in stay as they were.
		m["meter"] = o.Meter
	}
	if len(o.Classes) > 0 {
		var cs []string
		for q, c := range o.Classes {
			cs = append(cs, q+"="+c.String())
		}
		slices.Sort(cs)
		m["classes"] = cs
	}
	if len(o.Tiers) > 0 {
		var ts []string
		for q, t := range o.Tiers {
			ts = append(ts, q+"="+t)
		}
		slices.Sort(ts)
		m["tiers"] = ts
	}
	return m
}

func intervalsMap(ivs []Interval) map[string]any {
	m := map[string]any{}
	for i, iv := range ivs {
		e := map[string]any{"mean": num(iv.Mean), "lo": num(iv.Lo), "hi": num(iv.Hi), "n": iv.N}
		if iv.Lower {
			e["lower_bound"] = true
		}
		m[Metrics[i].Key] = e
	}
	return m
}

func num(x float64) any {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return x
}

func statsMap(s trace.Stats) map[string]any {
	m := map[string]any{"jobs": s.Jobs, "denied": s.Denied, "censored": s.Censored, "mean_wait": num(s.MeanWait),
		"p50_wait": num(s.P50Wait), "p95_wait": num(s.P95Wait), "mean_bsld": num(s.MeanBSLD), "p95_bsld": num(s.P95BSLD)}
	if lower := s.LowerBounds(); lower != nil {
		m["lower_bounds"] = lower
	}
	return m
}

func resultMap(r *Result) map[string]any {
	m := map[string]any{"policy": r.Policy, "window": r.Window, "from": r.From, "until": r.Until, "ticks": r.Ticks,
		"all": statsMap(r.Summary.All), "log": statsMap(r.Summary.Log), "log_sim": statsMap(r.Summary.LogSim)}
	for i := range Metrics {
		mt := &Metrics[i]
		if mt.Key == "converged" {
			m[mt.Key] = r.Summary.Converged
			continue
		}
		m[mt.Key] = num(mt.Get(r))
	}
	bc := map[string]any{}
	for k, c := range trace.Classes {
		bc[c.String()] = statsMap(r.Summary.ByClass[k])
	}
	m["by_class"] = bc
	if fs := r.Summary.FairStart; fs != nil {
		m["fair_start"] = map[string]any{"seed": fs.Seed, "sampled": fs.Sampled, "n": fs.N, "late": fs.Late,
			"late_fraction": num(fs.LateFrac), "late_fraction_lo": num(fs.LateLo), "late_fraction_hi": num(fs.LateHi),
			"mean_miss": num(fs.MeanMiss), "mean_miss_lo": num(fs.MissLo), "mean_miss_hi": num(fs.MissHi), "censored": fs.Censored,
			"unknown": fs.Unknown, "last": latenessMap(fs.Last)}
	}
	h := &r.Summary.Harm
	harm := map[string]any{"jobs": h.Jobs, "first_wait": num(h.FirstWait), "total_wait": num(r.Summary.All.MeanWait),
		"mean_preemptions": num(h.MeanPreempt), "max_preemptions": h.MaxPreempt, "preempted": num(h.Preempted), "preempted_10": num(h.Preempted10)}
	if h.FirstWaitLower {
		harm["first_wait_lower"] = true
	}
	m["harm"] = harm
	m["nuwt"] = map[string]any{"cv": num(r.Summary.NUWT.CV), "users": r.Summary.NUWT.Users, "censored": r.Summary.NUWT.Lower}
	if sf := r.Summary.Shares; sf != nil {
		m["shares"] = map[string]any{"jain": num(sf.Jain), "jain_lo": num(sf.Lo), "jain_hi": num(sf.Hi), "days": sf.Days}
	}
	if r.WindowDays > 0 {
		m["window_days"] = r.WindowDays
		m["min_runtime_s"] = r.MinRuntime
		m["restart"] = r.Restart
	}
	if mv := r.ModelVsLog; mv != nil {
		m["model_vs_log"] = modelVsLogMap(mv)
	}
	m["shape"] = shapeMap(&r.Shape, r.Policy)
	if len(r.Marks) > 0 {
		m["marks"] = r.Marks
	}
	return m
}

// shapeMap is a run's mapping shape in summary.json (docs/studies.md
// §4.9): what the policy reads of it, and whether it ran as fifo did.
func shapeMap(sh *Shape, policy string) map[string]any {
	m := map[string]any{}
	if policy != "fifo" {
		m["same_as_fifo"] = sh.SameAsFifo
	}
	if sh.Tiers != nil {
		m["tiers"] = tierList(sh.Tiers)
	}
	if sh.Weights != nil {
		ws := map[string]any{}
		for _, w := range sh.Weights {
			ws[w.Name] = w.Value
		}
		m["weights"] = ws
	}
	if sh.Partitions != nil {
		var ps []any
		for _, p := range sh.Partitions {
			ps = append(ps, map[string]any{"gpus": p.Size, "widest_job": p.Widest, "groups": p.Groups})
		}
		m["partitions"] = ps
	}
	return m
}

func tierList(ts []TierJobs) []any {
	l := []any{}
	for _, t := range ts {
		l = append(l, map[string]any{"tier": t.Tier, "jobs": t.Jobs})
	}
	return l
}

// windowShapeMap is a window's mapping shape in summary.json: its groups
// (the largest by work), its queues' tiers and its jobs' tiers.
func windowShapeMap(ws WindowShape) map[string]any {
	var gs []any
	for _, g := range ws.Largest {
		gs = append(gs, map[string]any{"group": g.Name, "entitlement": g.Entitlement, "work": g.Work})
	}
	qs := []any{}
	for _, q := range ws.Queues {
		e := map[string]any{"queue": q.Queue, "max_time_s": q.MaxTime, "tier": q.Tier, "by": q.By}
		if q.Name != "" {
			e["name"] = q.Name
		}
		qs = append(qs, e)
	}
	return map[string]any{"groups": ws.Groups, "largest_groups": gs, "queues": qs, "tiers": tierList(ws.Tiers), "no_queue_jobs": ws.NoQueue}
}

// degenerateList is summary.json's degenerate block: every degenerate
// shape of the study's runs (FindDegenerate); empty when there is none.
func degenerateList(ds []Degenerate) []any {
	l := []any{}
	for _, d := range ds {
		l = append(l, map[string]any{"label": d.Label, "reason": d.Reason, "windows": d.Windows, "detail": d.Detail})
	}
	return l
}

// WarnDegenerate writes one warning per degenerate shape (FindDegenerate)
// to w: a study never prints a degenerate comparison without a word.
func WarnDegenerate(w io.Writer, experiment string, ds []Degenerate, nw int) {
	for _, d := range ds {
		fmt.Fprintf(w, "%s: warning: %s is degenerate (%s) in %d of %d windows %v: %s\n", experiment, d.Label, d.Reason, len(d.Windows), nw, d.Windows, d.Detail)
	}
}

// latenessMap is fair-start lateness by one kind of start in summary.json.
func latenessMap(l trace.Lateness) map[string]any {
	return map[string]any{"late": l.Late, "late_fraction": num(l.LateFrac), "late_fraction_lo": num(l.LateLo),
		"late_fraction_hi": num(l.LateHi), "mean_miss": num(l.MeanMiss), "mean_miss_lo": num(l.MissLo),
		"mean_miss_hi": num(l.MissHi), "censored": l.Censored}
}

// modelVsLogMap is a run's model against the log in summary.json
// (docs/studies.md §4.8), in seconds.
func modelVsLogMap(mv *trace.ModelVsLog) map[string]any {
	return map[string]any{"jobs": mv.Jobs, "unrecorded": mv.Unrecorded, "unstarted": mv.Unstarted,
		"start_error_median_abs_s": num(mv.MedianAbs), "start_error_p90_abs_s": num(mv.P90Abs),
		"start_error_signed_mean_s": num(mv.SignedMean), "wait_pearson": num(mv.Pearson), "wait_spearman": num(mv.Spearman)}
}

// modelVsLogList is summary.json's top-level model against the log:
// fifo's, window by window (nil when the study ran no fifo).
func modelVsLogList(rs []Result) []any {
	var l []any
	for i := range rs {
		if mv := rs[i].ModelVsLog; mv != nil {
			m := modelVsLogMap(mv)
			m["window"] = rs[i].Window
			l = append(l, m)
		}
	}
	return l
}

// csvHeader is runs.csv's columns: the run's identity, then Metrics.
func csvHeader() []string {
	h := []string{"experiment", "policy", "window_days", "min_runtime_s", "restart", "window", "from", "until"}
	for i := range Metrics {
		h = append(h, Metrics[i].Key)
	}
	return append(h, "ticks")
}

func writeCSV(path, experiment string, rs []Result) error {
	return atomicfile.WriteFunc(path, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		if err := cw.Write(csvHeader()); err != nil {
			return err
		}
		for i := range rs {
			r := &rs[i]
			wd, mr := "", ""
			if r.WindowDays > 0 {
				wd, mr = strconv.Itoa(r.WindowDays), strconv.Itoa(r.MinRuntime)
			}
			row := []string{experiment, r.Policy, wd, mr, r.Restart, strconv.Itoa(r.Window), strconv.FormatInt(r.From, 10), strconv.FormatInt(r.Until, 10)}
			for k := range Metrics {
				row = append(row, csvfile.Cell(Metrics[k].Get(r)))
			}
			row = append(row, strconv.FormatInt(r.Ticks, 10))
			if err := cw.Write(row); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	})
}

// Write writes summary.json, runs.csv and the experiment's figure into
// out and returns the files written, relative to out.
func Write(out string, s Summary, f figures.Format) ([]string, error) {
	s.windowShapes() // once, for summary.json and the figures
	b, err := marshal(s)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(filepath.Join(out, "summary.json"), b); err != nil {
		return nil, err
	}
	if err := writeCSV(filepath.Join(out, "runs.csv"), s.Experiment, s.Runs); err != nil {
		return nil, err
	}
	fig := "fig_trace." + string(f)
	if s.Experiment == "budget-knobs" {
		fig = "fig_budget_knobs." + string(f)
		err = WriteBudgetKnobsFigure(filepath.Join(out, fig), f, s)
	} else {
		err = WriteTraceFigure(filepath.Join(out, fig), f, s)
	}
	if err != nil {
		return nil, err
	}
	files := []string{"summary.json", "runs.csv", fig}
	if s.Experiment == "trace" && len(s.Study.Windows) > 1 {
		if fam := TestedFamily(s.Study, s.Runs, PrimaryFamily); len(fam) > 0 {
			name := "fig_primary." + string(f)
			if err := WritePrimaryFigure(filepath.Join(out, name), f, s, fam); err != nil {
				return nil, err
			}
			files = append(files, name)
		}
	}
	return files, nil
}

// PrintTable prints one row per spec: the counts summed over the windows,
// then each estimate as its mean over the windows ± the half-width of its
// 95 % interval ("≥" where an unfinished job's censored wait makes it a
// lower bound), a percentile over fewer than 200 jobs with its n, the
// windows that converged, and the paired difference of the mean wait
// from the reference spec.
func PrintTable(w io.Writer, s Summary) error {
	st, rs := s.Study, s.Runs
	nw := len(st.Windows)
	ref := Reference(st.Specs)
	ests := Estimate(st, rs, ref)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "policy\t"
	if s.Experiment == "budget-knobs" {
		head = "restart\tW (d)\tm\t"
	}
	vs := ""
	if ref >= 0 {
		vs = "Δ mean wait vs " + st.Specs[ref].Label() + " (h)\t"
	}
	fmt.Fprintln(tw, head+"served\tdenied\tunfinished\tserved work\tmean wait (h)\tp95 wait (h)\tmean bsld\t"+
		"useful\tlost\tidle while waiting\tlate (fair start)\tlate (last start)\tNUWT CV\tshare Jain\tpreemptions\tpreempted ≥1 / ≥10\tconverged\t"+vs)
	at := func(e Estimates, key string) Interval {
		for i := range Metrics {
			if Metrics[i].Key == key {
				return e.Intervals[i]
			}
		}
		panic("no metric " + key)
	}
	diff := func(e Estimates, key string) Interval {
		for i := range Metrics {
			if Metrics[i].Key == key {
				return e.Diffs[i]
			}
		}
		panic("no metric " + key)
	}
	for si, e := range ests {
		sp := st.Specs[si]
		var served, denied, unfinished, conv int
		for k := range nw {
			r := &rs[si*nw+k]
			served += r.Summary.Served
			denied += r.Summary.Denied
			unfinished += r.Summary.Unfinished
			if r.Summary.Converged {
				conv++
			}
		}
		row := sp.Policy + "\t"
		if s.Experiment == "budget-knobs" {
			row = fmt.Sprintf("%s\t%d\t%s\t", sp.Restart, sp.WindowDays, fmtDur(sp.MinRuntime))
		}
		p95 := at(e, "p95_wait").Format(1.0/3600, 1)
		if e.MinP95Jobs < 200 {
			p95 += fmt.Sprintf(" (n=%d)", e.MinP95Jobs)
		}
		// No fairness figure for a spec with a replay that stopped at its
		// horizon: the mark instead (docs/studies.md §4.4).
		late, lastLate, nuwtCV, jain := lateCell(e, rs, si, nw, "fair_start_late", firstLate), lateCell(e, rs, si, nw, "fair_last_late", lastLate),
			at(e, "nuwt_cv").Format(1, 2), at(e, "share_jain").Format(1, 3)
		if conv < nw {
			late, lastLate, nuwtCV, jain = "†", "†", "†", "†"
		}
		row += fmt.Sprintf("%d\t%d\t%d\t"+strings.Repeat("%s\t", 12)+"%s / %s\t%d/%d\t",
			served, denied, unfinished, at(e, "served_work").Format(1, 3), at(e, "mean_wait").Format(1.0/3600, 1), p95,
			at(e, "mean_bsld").Format(1, 1), at(e, "useful_utilization").Format(1, 3), at(e, "lost_utilization").Format(1, 3),
			at(e, "idle_while_waiting").Format(1, 3), late, lastLate, nuwtCV, jain, at(e, "preemptions").Format(1, 0),
			at(e, "preempted_jobs").Format(1, 3), at(e, "preempted_10_jobs").Format(1, 3), conv, nw)
		if ref >= 0 {
			if si == ref {
				row += "—\t"
			} else {
				row += diff(e, "mean_wait").FormatDiff(1.0/3600, 1) + "\t"
			}
		}
		fmt.Fprintln(tw, row)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if nw > 1 {
		fmt.Fprintf(w, "Means over %d windows (%s, equal weights) ± the half-width of a 95 %% t interval within the quantity's range; counts summed over the windows; Δ is the paired difference, window by window (descriptive).\n", nw, st.WindowRule)
	}
	for si := range st.Specs {
		if c := converged(rs, si, nw); c < nw {
			fmt.Fprintln(w, "† in a fairness column: a replay stopped at its horizon, so no fairness figure (summary.json keeps the lower bounds).")
			break
		}
	}
	printModelVsLog(w, rs)
	names := make([]string, len(st.Specs))
	for i, sp := range st.Specs {
		names[i] = sp.Policy
	}
	for _, line := range st.registry().Key(names) {
		fmt.Fprintln(w, line)
	}
	return printFamily(w, TestedFamily(st, rs, FamilyOf(s.Experiment)))
}

// printModelVsLog writes fifo's start times against the log's record,
// one line per window (docs/studies.md §4.8), when the study ran fifo.
func printModelVsLog(w io.Writer, rs []Result) {
	for i := range rs {
		mv := rs[i].ModelVsLog
		if mv == nil {
			continue
		}
		fmt.Fprintf(w, "fifo against the log, window %d (%d jobs): |start-time error| median %.2f h, p90 %.2f h; signed mean %+.2f h; waits' correlation %.2f (ranks %.2f)\n",
			rs[i].Window, mv.Jobs, mv.MedianAbs/3600, mv.P90Abs/3600, mv.SignedMean/3600, mv.Pearson, mv.Spearman)
	}
}

// printFamily prints the primary family: each contrast's Hodges–Lehmann
// estimate with its interval (a ratio for waits), the windows it rests
// on, and its raw and Holm-adjusted exact signed-rank p.
func printFamily(w io.Writer, fam []Tested) error {
	if len(fam) == 0 {
		return nil
	}
	against, versus := "with fifo", ""
	for _, t := range fam {
		if t.Versus != "" {
			against, versus = "of two cells", "versus\t"
		}
	}
	fmt.Fprintf(w, "\nPrimary family (%d contrasts %s; exact Wilcoxon signed-rank over windows, Holm across the family):\n", len(fam), against)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\t"+versus+"metric\tstatistic\tHL estimate [interval]\tcoverage\twindows (converged)\tp\tp Holm\t")
	for _, t := range fam {
		ref := "fifo"
		if versus != "" {
			ref = "versus"
		}
		stat, est := "policy − "+ref, fmt.Sprintf("%+.3g [%.3g, %.3g]", t.Shift.Estimate, t.Shift.Lo, t.Shift.Hi)
		if t.Ratio {
			stat = "policy ÷ " + ref
			est = fmt.Sprintf("×%.3g [%.3g, %.3g]", math.Exp(t.Shift.Estimate), math.Exp(t.Shift.Lo), math.Exp(t.Shift.Hi))
		}
		row := t.Policy + "\t"
		if versus != "" {
			row += t.Versus + "\t"
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%.3f\t%d (%d)\t%.4f\t%.4f\t\n", row, t.Metric, stat, est,
			t.Shift.Coverage, t.Test.N+t.Test.Zeros, t.Converged, t.Test.P, t.PHolm)
	}
	return tw.Flush()
}

// Format writes the interval's mean (× scale) with the half-width of its
// interval where there is one, "≥" before a lower bound: a table cell.
func (iv Interval) Format(scale float64, prec int) string {
	if math.IsNaN(iv.Mean) {
		return "–"
	}
	s := strconv.FormatFloat(iv.Mean*scale, 'f', prec, 64)
	if iv.Lower {
		s = "≥" + s
	}
	if !math.IsNaN(iv.Hi) {
		s += " ± " + strconv.FormatFloat((iv.Hi-iv.Mean)*scale, 'f', prec, 64)
	}
	return s
}

// FormatDiff writes a paired difference (× scale), signed, with its
// interval [lo, hi] where there is one: a table cell.
func (iv Interval) FormatDiff(scale float64, prec int) string {
	if math.IsNaN(iv.Mean) {
		return "–"
	}
	s := strconv.FormatFloat(iv.Mean*scale, 'f', prec, 64)
	if iv.Mean > 0 {
		s = "+" + s
	}
	if !math.IsNaN(iv.Hi) {
		s += fmt.Sprintf(" [%s, %s]", strconv.FormatFloat(iv.Lo*scale, 'f', prec, 64), strconv.FormatFloat(iv.Hi*scale, 'f', prec, 64))
	}
	return s
}

// lateCell is a fair-start late fraction (the metric key, read from a
// run's sample by late): over windows with its t interval, or in one
// window with its Wilson interval over the sample.
func lateCell(e Estimates, rs []Result, si, nw int, key string, late func(*trace.FairStartStats) trace.Lateness) string {
	iv := e.Intervals[metricIndex(key)]
	if fs := rs[si].Summary.FairStart; nw == 1 && fs != nil {
		if l := late(fs); !math.IsNaN(l.LateLo) {
			return fmt.Sprintf("%.3f [%.3f, %.3f]", l.LateFrac, l.LateLo, l.LateHi)
		}
	}
	return iv.Format(1, 3)
}

// firstLate and lastLate are a sample's lateness by its first and by its
// last start.
func firstLate(fs *trace.FairStartStats) trace.Lateness {
	return trace.Lateness{Late: fs.Late, LateFrac: fs.LateFrac, LateLo: fs.LateLo, LateHi: fs.LateHi}
}

func lastLate(fs *trace.FairStartStats) trace.Lateness { return fs.Last }

// converged is how many of spec si's nw windows converged.
func converged(rs []Result, si, nw int) int {
	n := 0
	for k := range nw {
		if rs[si*nw+k].Summary.Converged {
			n++
		}
	}
	return n
}

// metricIndex is the index of the metric key in Metrics.
func metricIndex(key string) int {
	if i := Metrics.Index(key); i >= 0 {
		return i
	}
	panic("no metric " + key)
}
