package arrive

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"text/tabwriter"

	"github.com/bursar-hpc/bursar/figures"
	"github.com/bursar-hpc/bursar/internal/atomicfile"
	"github.com/bursar-hpc/bursar/internal/csvfile"
	"github.com/bursar-hpc/bursar/tracestudy"
)

// Summary is what Write writes: the study, the log and the results.
type Summary struct {
	Trace            tracestudy.TraceInfo
	Study            *Study
	Warmup, Cooldown int64
	Runs             []Result

	points            []Point
	contrasts         []Contrast
	pointsOK, contrOK bool
}

// Points are the summary's points (computed once).
func (s *Summary) Points() []Point {
	if !s.pointsOK {
		s.points, s.pointsOK = Points(s.Study, s.Runs), true
	}
	return s.points
}

// Contrasts are the summary's paired differences (computed once).
func (s *Summary) Contrasts() []Contrast {
	if !s.contrOK {
		s.contrasts, s.contrOK = Contrasts(s.Study, s.Runs), true
	}
	return s.contrasts
}

// Primary are the summary's contrasts in the primary family, in
// PrimaryFamily's order (the ones the study ran).
func (s *Summary) Primary() []*Contrast {
	cs := s.Contrasts()
	var out []*Contrast
	for _, f := range PrimaryFamily {
		for i := range cs {
			if c := &cs[i]; c.Primary() && f.matches(c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// num writes NaN and ±Inf as null (JSON has no NaN).
func num(x float64) any {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return x
}

func ivMap(iv tracestudy.Interval) map[string]any {
	m := map[string]any{"mean": num(iv.Mean), "lo": num(iv.Lo), "hi": num(iv.Hi), "n": iv.N}
	if iv.Lower {
		m["lower_bound"] = true
	}
	return m
}

func statsMap(u Users) map[string]any {
	m := map[string]any{"jobs": u.Jobs, "served": u.Served, "denied": u.Denied, "unfinished": u.Unfinished,
		"served_work": num(u.ServedWork), "mean_wait": num(u.Stats.MeanWait), "p50_wait": num(u.Stats.P50Wait),
		"p95_wait": num(u.Stats.P95Wait), "mean_bsld": num(u.Stats.MeanBSLD), "p95_bsld": num(u.Stats.P95BSLD),
		"censored": u.Stats.Censored}
	if lower := u.Stats.LowerBounds(); lower != nil {
		m["lower_bounds"] = lower
	}
	return m
}

func agentMap(a *AgentResult) map[string]any {
	return map[string]any{"name": a.Name, "kind": a.Kind, "gpu_hours": float64(a.GPUSeconds) / 3600, "science": num(a.Science),
		"completed": a.Completed, "requests": a.Requests, "refused": a.Refused, "denied": a.Denied, "granted": a.Granted,
		"expired": a.Expired, "served_fraction": num(a.ServedFraction())}
}

func runMap(r *Result) map[string]any {
	m := map[string]any{"policy": r.Policy, "mode": r.Mode, "k": r.K, "seed": r.Seed, "window": r.Window, "from": r.From,
		"until": r.Until, "converged": r.Converged, "ticks": r.Ticks, "preemptions": r.Preemptions,
		"lost_gpu_seconds": r.LostGPUSeconds, "stranded": r.Stranded, "preloaded_jobs": r.PreloadedUsage, "users": statsMap(r.Users)}
	if r.K > 0 {
		m["arrive"] = r.Arrive
	}
	var during []any
	for _, d := range r.During {
		during = append(during, map[string]any{"seed": d.Seed, "arrive": d.Arrive, "users": statsMap(d.Users)})
	}
	m["during"] = during
	agents := []any{}
	for i := range r.Agents {
		agents = append(agents, agentMap(&r.Agents[i]))
	}
	m["agents"] = agents
	return m
}

func (s *Summary) marshal() ([]byte, error) {
	st := s.Study
	wins := make([]any, len(st.Windows))
	for k, w := range st.Windows {
		wins[k] = map[string]any{"index": w.Index, "from": w.From, "until": w.Until, "measure_from": w.MeasureFrom,
			"measure_until": w.MeasureUntil, "replayed_jobs": len(st.Loads[k].Jobs)}
	}
	var points []any
	for _, p := range s.Points() {
		mets := map[string]any{}
		for i := range Metrics {
			mets[Metrics[i].Key] = ivMap(p.Values[i])
		}
		points = append(points, map[string]any{"policy": p.Policy, "mode": p.Mode, "k": p.K, "runs": p.Runs,
			"unconverged": p.Unconverged, "converged": p.Converged(), "metrics": mets})
	}
	var contrasts, primary []any
	for _, c := range s.Contrasts() {
		contrasts = append(contrasts, contrastMap(&c, st.AgentPhi))
	}
	for _, c := range s.Primary() {
		primary = append(primary, contrastMap(c, st.AgentPhi))
	}
	runs := make([]any, len(s.Runs))
	for i := range s.Runs {
		runs[i] = runMap(&s.Runs[i])
	}
	seeds := make([]any, len(st.Seeds))
	for i, sd := range st.Seeds {
		seeds[i] = sd
	}
	top := map[string]any{"experiment": "agents-arrive", "trace": s.Trace,
		"mapping": tracestudy.MappingMap(st.Options), "windows": wins,
		"warmup_s": s.Warmup, "cooldown_s": s.Cooldown, "stay_s": st.Stay, "agent_scale": st.AgentScale,
		"agent_share": st.AgentShare, "agent_phi": st.AgentPhi, "seeds": seeds, "max_k": st.MaxK, "mix": Mix[:], "policies": st.Policies,
		"interval": "points: mean over windows of the per-window mean over seeds; 95 % Student t over windows, within the quantity's range",
		"contrasts_test": "per window the seeds' means compared, log(a ÷ b) for waits and slowdowns, a − b otherwise; " +
			"exact Wilcoxon signed-rank over windows (Pratt's zeros), Hodges–Lehmann estimate and interval; " +
			"p_adjusted by Holm across the primary family (adjustment Holm), by Benjamini–Hochberg across every other contrast (adjustment BH, descriptive)",
		"window_rule": windowRuleMap(st), "primary": primary,
		"points": points, "contrasts": contrasts, "runs": runs}
	if li := tracestudy.LeadInMap(st.LeadIn); li != nil {
		top["lead_in"] = li
	}
	b, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// contrastMap is one contrast in summary.json: its lines, its statistic
// per window, the test, the Hodges–Lehmann estimate and interval (as a
// ratio beside for a log ratio), the raw and adjusted p and the
// adjustment, and φ, which every finding is read at.
func contrastMap(c *Contrast, phi float64) map[string]any {
	stat := "a − b"
	if c.Ratio {
		stat = "log(a ÷ b)"
	}
	vals := make([]any, len(c.Values))
	for k, v := range c.Values {
		vals[k] = num(v)
	}
	m := map[string]any{"policy": c.Policy, "a": c.A, "b": c.B, "k": c.K, "metric": c.Metric, "statistic": stat,
		"values": vals, "n": c.Shift.N, "zeros": c.Test.Zeros, "w_plus": c.Test.WPlus, "below": c.Below, "above": c.Above,
		"converged": c.Converged, "hodges_lehmann": num(c.Shift.Estimate), "lo": num(c.Shift.Lo), "hi": num(c.Shift.Hi),
		"coverage": num(c.Shift.Coverage), "p": num(c.P), "p_adjusted": num(c.PAdj), "adjustment": c.Adjustment, "agent_phi": phi}
	if c.Ratio {
		m["as_ratio"] = map[string]any{"estimate": num(math.Exp(c.Shift.Estimate)), "lo": num(math.Exp(c.Shift.Lo)), "hi": num(math.Exp(c.Shift.Hi))}
	}
	if c.Primary() {
		m["finding"] = c.Finding
	}
	return m
}

// windowRuleMap declares how the windows were chosen and weighed
// (tracestudy.WindowRuleMap) and the seeds averaged inside each.
func windowRuleMap(st *Study) map[string]any {
	m := tracestudy.WindowRuleMap(st.Windows, st.WindowRule)
	m["seeds_per_window"] = len(st.Seeds)
	return m
}

// RunsColumns are runs.csv's columns: the run's identity, then Metrics.
func RunsColumns() []string {
	h := []string{"policy", "mode", "k", "seed", "window", "from", "until", "arrive", "ticks"}
	for i := range Metrics {
		h = append(h, Metrics[i].Key)
	}
	return h
}

// AgentsColumns are agents.csv's columns.
var AgentsColumns = []string{"policy", "mode", "k", "seed", "window", "agent", "kind", "gpu_hours", "science", "completed",
	"requests", "refused", "denied", "granted", "expired", "served_fraction"}

// Write writes summary.json, runs.csv, agents.csv and fig_agents_arrive
// into out and returns the files written, relative to out. runs.csv has
// one row per run and stay: the k = 0 replay of a window once per seed,
// each row with that seed's stay (its users_* columns repeat).
func Write(out string, f figures.Format, s *Summary) ([]string, error) {
	b, err := s.marshal()
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(filepath.Join(out, "summary.json"), b); err != nil {
		return nil, err
	}
	i64 := func(x int64) string { return strconv.FormatInt(x, 10) }
	err = csvfile.Write(filepath.Join(out, "runs.csv"), RunsColumns(), func(emit func([]string) error) error {
		for i := range s.Runs {
			r := &s.Runs[i]
			for j := range r.During {
				d := &r.During[j]
				row := []string{r.Policy, r.Mode, strconv.Itoa(r.K), i64(d.Seed), strconv.Itoa(r.Window), i64(r.From), i64(r.Until), i64(d.Arrive), i64(r.Ticks)}
				for k := range Metrics {
					row = append(row, csvfile.Cell(Metrics[k].Get(r, d)))
				}
				if err := emit(row); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = csvfile.Write(filepath.Join(out, "agents.csv"), AgentsColumns, func(emit func([]string) error) error {
		for i := range s.Runs {
			r := &s.Runs[i]
			for k := range r.Agents {
				a := &r.Agents[k]
				if err := emit([]string{r.Policy, r.Mode, strconv.Itoa(r.K), i64(r.Seed), strconv.Itoa(r.Window), a.Name, a.Kind,
					csvfile.Cell(float64(a.GPUSeconds) / 3600), csvfile.Cell(a.Science), strconv.Itoa(a.Completed), strconv.Itoa(a.Requests),
					strconv.Itoa(a.Refused), strconv.Itoa(a.Denied), strconv.Itoa(a.Granted), strconv.Itoa(a.Expired),
					csvfile.Cell(a.ServedFraction())}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	fig := "fig_agents_arrive." + string(f)
	if err := WriteFigure(filepath.Join(out, fig), f, s); err != nil {
		return nil, err
	}
	return []string{"summary.json", "runs.csv", "agents.csv", fig}, nil
}

// PrintTable prints one row per policy and k: the users' mean bounded
// slowdown and p95 wait unmetered and metered (the bursar line: its own),
// the paired difference of the slowdown with the windows where metering
// lowered it, the unfinished jobs, and what the agents got.
func PrintTable(w io.Writer, s *Summary) error {
	st := s.Study
	pts := map[[3]string]*Point{}
	ps := s.Points()
	for i := range ps {
		p := &ps[i]
		pts[[3]string{p.Policy, p.Mode, strconv.Itoa(p.K)}] = p
	}
	contr := map[[3]string]*Contrast{}
	cs := s.Contrasts()
	for i := range cs {
		c := &cs[i]
		if c.A == ModeMetered && c.B == ModeUnmetered {
			contr[[3]string{c.Policy, c.Metric, strconv.Itoa(c.K)}] = c
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tk\tmean bsld unmetered\tmetered\tmetered ÷ unmetered HL [interval]\twindows lower\tp BH\t"+
		"p95 wait h unmetered\tmetered\tunfinished u/m\tagent GPU-h u/m\tadaptive science u/m\tagents served u/m\t")
	for _, p := range st.Policies {
		for k := 0; k <= st.MaxK; k++ {
			get := func(m string) *Point { return pts[[3]string{p, m, strconv.Itoa(k)}] }
			u, m := get(ModeUnmetered), get(ModeMetered)
			col := func(pt *Point, key string, scale float64, prec int) string {
				if pt == nil {
					return ""
				}
				v := pt.Value(key).Format(scale, prec)
				if !pt.Converged() {
					v += "*"
				}
				return v
			}
			pair := func(key string, scale float64, prec int) string {
				a, b := "–", col(m, key, scale, prec)
				if u != nil {
					iv := u.Value(key)
					if !math.IsNaN(iv.Mean) {
						a = strconv.FormatFloat(iv.Mean*scale, 'f', prec, 64)
					}
				}
				if m != nil {
					iv := m.Value(key)
					b = "–"
					if !math.IsNaN(iv.Mean) {
						b = strconv.FormatFloat(iv.Mean*scale, 'f', prec, 64)
					}
				}
				return a + " / " + b
			}
			d, lower, padj := "", "", ""
			if c := contr[[3]string{p, "users_mean_bsld", strconv.Itoa(k)}]; c != nil {
				d, lower, padj = formatShift(c), fmt.Sprintf("%d/%d", c.Below, c.Shift.N), formatP(c.PAdj)
				if c.Primary() {
					padj += " (Holm)"
				}
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", p, k,
				col(u, "users_mean_bsld", 1, 2), col(m, "users_mean_bsld", 1, 2), d, lower, padj,
				col(u, "users_p95_wait", 1.0/3600, 1), col(m, "users_p95_wait", 1.0/3600, 1),
				pair("users_unfinished", 1, 1), pair("agent_gpu_hours", 1, 0), pair("adaptive_science", 1, 1), pair("agent_served_fraction", 1, 2))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	rule := st.WindowRule
	if rule == "" {
		rule = "one window"
	}
	_, err := fmt.Fprintf(w, "Means over %d window(s) (%s, equal weights) of the per-window means over %d seed(s) ± the half-width of a 95 %% t interval over windows, within the quantity's range; "+
		"metered ÷ unmetered is the Hodges–Lehmann estimate of the windows' log ratios, as a ratio, with its interval; p BH is the exact signed-rank p adjusted by Benjamini–Hochberg (descriptive), or by Holm in the primary family; "+
		"* marks a point with a run stopped at its horizon (a lower bound).\n"+
		"Agents' envelopes: φ = Σ max(R, g) ÷ (agent_share × pool) = %g (agent_share %g, agent_scale %g; docs/studies.md §6.14).\n",
		len(st.Windows), rule, len(st.Seeds), st.AgentPhi, st.AgentShare, st.AgentScale)
	if err != nil {
		return err
	}
	return printPrimary(w, s)
}

// printPrimary prints the primary family: each contrast's finding, its
// Hodges–Lehmann estimate and interval (a ratio for waits and
// slowdowns), the windows it rests on, its raw and Holm-adjusted p, and
// φ beside it.
func printPrimary(w io.Writer, s *Summary) error {
	fam := s.Primary()
	if len(fam) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nPrimary family (%d contrasts; exact Wilcoxon signed-rank over windows, Holm across the family):\n", len(fam))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tk\ta vs b\tmetric\tHL estimate [interval]\tcoverage\twindows below/above (n)\tconverged\tp\tp Holm\tφ\tfinding\t")
	for _, c := range fam {
		fmt.Fprintf(tw, "%s\t%d\t%s vs %s\t%s\t%s\t%.3f\t%d/%d (%d)\t%v\t%s\t%s\t%g\t%s\t\n", c.Policy, c.K, c.A, c.B, c.Metric,
			formatShift(c), c.Shift.Coverage, c.Below, c.Above, c.Shift.N, c.Converged, formatP(c.P), formatP(c.PAdj), s.Study.AgentPhi, c.Finding)
	}
	return tw.Flush()
}

// formatShift is a contrast's Hodges–Lehmann estimate and interval: ×r
// [lo, hi] for a log ratio, a signed difference otherwise.
func formatShift(c *Contrast) string {
	sh := c.Shift
	if math.IsNaN(sh.Estimate) {
		return "–"
	}
	if c.Ratio {
		return fmt.Sprintf("×%.3g [%.3g, %.3g]", math.Exp(sh.Estimate), math.Exp(sh.Lo), math.Exp(sh.Hi))
	}
	return fmt.Sprintf("%+.4g [%.4g, %.4g]", sh.Estimate, sh.Lo, sh.Hi)
}

// formatP is a p-value to four places, "–" for none.
func formatP(p float64) string {
	if math.IsNaN(p) {
		return "–"
	}
	return fmt.Sprintf("%.4f", p)
}
