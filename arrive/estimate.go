package arrive

import (
	"math"
	"slices"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/internal/metric"
	"github.com/bursar-hpc/bursar/internal/stats"
	"github.com/bursar-hpc/bursar/tracestudy"
)

var nan = math.NaN()

// Metric is one number agents-arrive reports per run (docs/metrics.md
// lists every key with its unit). Get reads it from a run and the stay it
// is measured against (the run's own, or at k = 0 one seed's); Lower
// says whether the value is only a lower bound (censored waits).
type Metric struct {
	Key   string
	Unit  string
	Get   func(r *Result, d *During) float64
	Lower func(r *Result, d *During) bool
}

func users(key, unit string, get func(u *Users) float64, lower func(u *Users) bool) []Metric {
	m := []Metric{
		{Key: "users_" + key, Unit: unit, Get: func(r *Result, _ *During) float64 { return get(&r.Users) }},
		{Key: "during_" + key, Unit: unit, Get: func(_ *Result, d *During) float64 { return get(&d.Users) }},
	}
	if lower != nil {
		m[0].Lower = func(r *Result, _ *During) bool { return lower(&r.Users) }
		m[1].Lower = func(_ *Result, d *During) bool { return lower(&d.Users) }
	}
	return m
}

func agentSum(r *Result, f func(a *AgentResult) float64, kinds ...string) float64 {
	s := 0.0
	for i := range r.Agents {
		a := &r.Agents[i]
		if len(kinds) == 0 || a.Kind == kinds[0] {
			s += f(a)
		}
	}
	return s
}

// Metrics are the per-run numbers, in summary.json's and runs.csv's
// order: the users' over the window's measured jobs (users_*) and over
// the jobs submitted during the agents' stay (during_*), then what the
// agents got, summed over them.
var Metrics = func() []Metric {
	var ms []Metric
	ms = append(ms, users("jobs", "jobs", func(u *Users) float64 { return float64(u.Jobs) }, nil)...)
	ms = append(ms, users("served", "jobs", func(u *Users) float64 { return float64(u.Served) }, nil)...)
	ms = append(ms, users("denied", "jobs", func(u *Users) float64 { return float64(u.Denied) }, nil)...)
	ms = append(ms, users("unfinished", "jobs", func(u *Users) float64 { return float64(u.Unfinished) }, nil)...)
	ms = append(ms, users("served_work", "fraction", func(u *Users) float64 { return u.ServedWork }, nil)...)
	ms = append(ms, users("mean_wait", "s", func(u *Users) float64 { return u.Stats.MeanWait }, func(u *Users) bool { return u.Stats.MeanWaitLower })...)
	ms = append(ms, users("p95_wait", "s", func(u *Users) float64 { return u.Stats.P95Wait }, func(u *Users) bool { return u.Stats.P95WaitLower })...)
	ms = append(ms, users("mean_bsld", "ratio", func(u *Users) float64 { return u.Stats.MeanBSLD }, func(u *Users) bool { return u.Stats.MeanBSLDLower })...)
	ms = append(ms, users("p95_bsld", "ratio", func(u *Users) float64 { return u.Stats.P95BSLD }, func(u *Users) bool { return u.Stats.P95BSLDLower })...)
	ms = append(ms,
		Metric{Key: "agent_gpu_hours", Unit: "GPU-h", Get: func(r *Result, _ *During) float64 {
			// Whole GPU-seconds summed first, then one division: the same
			// holdings give the same hours bit for bit, so a contrast of
			// equal runs is exactly 0, not a rounding residue the
			// signed-rank test would rank.
			return agentSum(r, func(a *AgentResult) float64 { return float64(a.GPUSeconds) }) / 3600
		}},
		Metric{Key: "agent_requests", Unit: "requests", Get: func(r *Result, _ *During) float64 {
			return agentSum(r, func(a *AgentResult) float64 { return float64(a.Requests) })
		}},
		Metric{Key: "agent_refused", Unit: "requests", Get: func(r *Result, _ *During) float64 {
			return agentSum(r, func(a *AgentResult) float64 { return float64(a.Refused) })
		}},
		Metric{Key: "agent_served_fraction", Unit: "fraction", Get: func(r *Result, _ *During) float64 {
			req := agentSum(r, func(a *AgentResult) float64 { return float64(a.Requests) })
			if req == 0 {
				return nan
			}
			return agentSum(r, func(a *AgentResult) float64 { return float64(a.Granted) }) / req
		}},
		Metric{Key: "science", Unit: "science", Get: func(r *Result, _ *During) float64 {
			return agentSum(r, func(a *AgentResult) float64 { return a.Science })
		}},
		Metric{Key: "adaptive_science", Unit: "science", Get: func(r *Result, _ *During) float64 {
			if r.K < 3 {
				return nan
			}
			return agentSum(r, func(a *AgentResult) float64 { return a.Science }, engine.AgentAdaptive)
		}},
		Metric{Key: "completed", Unit: "tasks", Get: func(r *Result, _ *During) float64 {
			return agentSum(r, func(a *AgentResult) float64 { return float64(a.Completed) })
		}},
		Metric{Key: "preemptions", Unit: "leases", Get: func(r *Result, _ *During) float64 { return float64(r.Preemptions) }},
		Metric{Key: "stranded", Unit: "jobs", Get: func(r *Result, _ *During) float64 { return float64(r.Stranded) }},
		Metric{Key: "converged", Unit: "0 or 1", Get: func(r *Result, _ *During) float64 {
			if r.Converged {
				return 1
			}
			return 0
		}},
	)
	return ms
}()

// MetricIndex is the index of key in Metrics (−1: none).
func MetricIndex(key string) int {
	for i := range Metrics {
		if Metrics[i].Key == key {
			return i
		}
	}
	return -1
}

// Point is one line's point: a policy, a mode and k, each metric as the
// mean over the windows of the per-window mean over the seeds, with its
// 95 % t interval over the windows (tracestudy.TInterval; docs/studies.md
// §5: runs on one window are not independent, so the seeds are averaged
// inside it first). At k = 0 the one run per window stands for every
// seed (its during_* metrics over each seed's stay).
type Point struct {
	Policy, Mode string
	K            int
	// Runs is the runs the point rests on (k = 0: one per window);
	// Unconverged counts those that stopped at their horizon.
	Runs, Unconverged int
	Values            []tracestudy.Interval // Metrics order
}

// Converged reports whether every run of the point converged.
func (p *Point) Converged() bool { return p.Unconverged == 0 }

// Value is the point's interval of metric key.
func (p *Point) Value(key string) tracestudy.Interval { return p.Values[MetricIndex(key)] }

// index finds the runs of a study by spec.
type index map[Spec]int

func newIndex(st *Study) index {
	ix := make(index, len(st.Specs))
	for i, sp := range st.Specs {
		ix[sp] = i
	}
	return ix
}

// cell is the result and the stay of (policy, mode, k, window, seed j):
// at k = 0 the window's one run and seed j's stay.
func (ix index) cell(st *Study, rs []Result, p, m string, k, wi, j int) (*Result, *During, bool) {
	sp := Spec{Policy: p, Mode: m, K: k, Seed: st.Seeds[j], Window: wi}
	if k == 0 {
		sp.Mode, sp.Seed = "", 0
	}
	i, ok := ix[sp]
	if !ok {
		return nil, nil, false
	}
	r := &rs[i]
	if k == 0 {
		return r, &r.During[j], true
	}
	return r, &r.During[0], true
}

// meanOf is the mean of the values that are not NaN (NaN with none).
func meanOf(xs []float64) float64 {
	s, n := 0.0, 0
	for _, x := range xs {
		if !math.IsNaN(x) {
			s += x
			n++
		}
	}
	if n == 0 {
		return nan
	}
	return s / float64(n)
}

// Points are every line's points in report order: each policy, each of
// its modes, k = 0 … MaxK. rs are st's results in spec order.
func Points(st *Study, rs []Result) []Point {
	ix := newIndex(st)
	var ps []Point
	for _, p := range st.Policies {
		for _, m := range ModesOf(p) {
			for k := 0; k <= st.MaxK; k++ {
				pt := Point{Policy: p, Mode: m, K: k, Values: make([]tracestudy.Interval, len(Metrics))}
				seen := map[*Result]bool{}
				for mi := range Metrics {
					mt := &Metrics[mi]
					perWindow := make([]float64, len(st.Windows))
					lower := false
					for wi := range st.Windows {
						xs := make([]float64, len(st.Seeds))
						for j := range st.Seeds {
							r, d, ok := ix.cell(st, rs, p, m, k, wi, j)
							if !ok {
								xs[j] = nan
								continue
							}
							if mi == 0 && !seen[r] {
								seen[r] = true
								pt.Runs++
								if !r.Converged {
									pt.Unconverged++
								}
							}
							xs[j] = mt.Get(r, d)
							lower = lower || (mt.Lower != nil && mt.Lower(r, d))
						}
						perWindow[wi] = meanOf(xs)
					}
					iv := tracestudy.TIntervalIn(perWindow, metric.RangeOf(mt.Unit))
					iv.Lower = lower
					pt.Values[mi] = iv
				}
				ps = append(ps, pt)
			}
		}
	}
	return ps
}

// Contrast compares two lines at one k over the windows (docs/studies.md
// §5.1): for each window the mean over the seeds of line A and of line B
// on the same seeds (the same arrival and task lists), then, as in the
// trace studies, log(A ÷ B) for a wait or a slowdown (Ratio: their spread
// grows with their size) and A − B for an amount or a count
// (tracestudy.Paired). The windows' values are tested by the exact
// Wilcoxon signed-rank test and estimated by Hodges–Lehmann.
type Contrast struct {
	Policy string
	// A and B name the compared lines: "metered" − "unmetered" at the
	// same k, or a mode at k − the same policy at k = 0.
	A, B   string
	K      int
	Metric string
	Ratio  bool
	// Values are the per-window statistics (NaN where a window has no
	// value, or a ratio with a zero).
	Values []float64
	// Below and Above count the windows whose statistic is negative and
	// positive; Converged is false when any run compared stopped at its
	// horizon (no finding may rest on it, docs/studies.md §6.20).
	Below, Above int
	Converged    bool
	// Test is the exact signed-rank test of Values (Pratt's zeros) and
	// Shift their Hodges–Lehmann estimate and interval: each lies between
	// the smallest and the largest window's value, so inside the
	// quantity's range.
	Test  stats.SignedRank
	Shift stats.Shift
	// P is Test.P (NaN when no window has a value) and PAdj it adjusted
	// by Adjustment: "Holm" across the primary family for its members
	// (Finding names the README finding), "BH" (Benjamini–Hochberg)
	// across every other contrast of the study, which are descriptive.
	P, PAdj    float64
	Adjustment string
	Finding    string
}

// Primary reports whether the contrast is a member of the primary family.
func (c *Contrast) Primary() bool { return c.Finding != "" }

// Adjustments of a contrast's p-value.
const (
	AdjustHolm = "Holm"
	AdjustBH   = "BH"
)

// ContrastKeys are the metrics the contrasts are taken of.
var ContrastKeys = []string{"users_mean_bsld", "users_p95_wait", "during_mean_bsld", "during_p95_wait", "agent_gpu_hours", "adaptive_science"}

// ratioKeys are the contrast metrics compared as log ratios: the users'
// waits and slowdowns.
var ratioKeys = []string{"users_mean_bsld", "users_p95_wait", "during_mean_bsld", "during_p95_wait"}

// Family names one contrast of the primary family: the policy, the lines
// A and B (as Contrast names them), k and the metric, and the README
// finding it tests.
type Family struct {
	Policy, A, B string
	K            int
	Metric       string
	Finding      string
}

// matches reports whether c is the family member f names.
func (f Family) matches(c *Contrast) bool {
	return c.Policy == f.Policy && c.A == f.A && c.B == f.B && c.K == f.K && c.Metric == f.Metric
}

// PrimaryFamily is agents-arrive's primary family (docs/studies.md
// §5.1): ten contrasts, the README's headline findings as they stood on
// the four-window run, fixed before the windows were rerun by rule. They
// are taken under fifo (every batch scheduler's core), fairshare (Slurm's
// multifactor priority, what most sites run) and budget (the lab's own),
// the policies the findings were stated on. Holm's adjustment is taken
// across them; every other contrast is descriptive, its p adjusted by
// Benjamini–Hochberg.
var PrimaryFamily = []Family{
	{"fifo", ModeUnmetered, "k=0", 8, "users_mean_bsld", "eight unmetered agents raise the users' slowdown under fifo"},
	{"fairshare", ModeUnmetered, "k=0", 8, "users_mean_bsld", "eight unmetered agents raise the users' slowdown under fairshare"},
	{"budget", ModeUnmetered, "k=0", 8, "users_mean_bsld", "eight unmetered agents raise the users' slowdown under budget"},
	{"fairshare", ModeUnmetered, "k=0", 8, "during_mean_bsld", "the users submitting during the stay lose most"},
	{"fairshare", ModeMetered, ModeUnmetered, 1, "agent_gpu_hours", "metering holds one storm back under fairshare"},
	{"budget", ModeMetered, ModeUnmetered, 1, "agent_gpu_hours", "metering holds one storm back under budget"},
	{"fairshare", ModeMetered, ModeUnmetered, 1, "users_mean_bsld", "with one storm metered the users' slowdown falls under fairshare"},
	{"fairshare", ModeMetered, ModeUnmetered, 8, "users_mean_bsld", "with eight agents metered the users' slowdown falls under fairshare"},
	{"budget", ModeMetered, ModeUnmetered, 8, "users_mean_bsld", "with eight agents metered the users' slowdown falls under budget"},
	{"fairshare", ModeMetered, ModeUnmetered, 3, "adaptive_science", "metering at the entitlement costs the science agent"},
}

// Contrasts are every comparison the study reports: for every site
// policy and k ≥ 1, metered against unmetered over ContrastKeys; for
// every line and k ≥ 1, the line against its k = 0 (what the agents cost
// the users) over the users' metrics. The members of PrimaryFamily the
// study ran are adjusted by Holm among themselves, the rest by
// Benjamini–Hochberg.
func Contrasts(st *Study, rs []Result) []Contrast {
	ix := newIndex(st)
	compare := func(p, ma, mb string, ka, kb int, key string) Contrast {
		mt := &Metrics[MetricIndex(key)]
		c := Contrast{Policy: p, A: lineName(ma, ka), B: lineName(mb, kb), K: ka, Metric: key, Converged: true,
			Ratio: slices.Contains(ratioKeys, key), Values: make([]float64, len(st.Windows))}
		for wi := range st.Windows {
			as, bs := make([]float64, len(st.Seeds)), make([]float64, len(st.Seeds))
			for j := range st.Seeds {
				as[j], bs[j] = nan, nan
				ra, da, okA := ix.cell(st, rs, p, ma, ka, wi, j)
				rb, db, okB := ix.cell(st, rs, p, mb, kb, wi, j)
				if !okA || !okB {
					continue
				}
				c.Converged = c.Converged && ra.Converged && rb.Converged
				if x, y := mt.Get(ra, da), mt.Get(rb, db); !math.IsNaN(x) && !math.IsNaN(y) {
					as[j], bs[j] = x, y
				}
			}
			v := tracestudy.Paired(meanOf(as), meanOf(bs), c.Ratio)
			c.Values[wi] = v
			switch {
			case v < 0:
				c.Below++
			case v > 0:
				c.Above++
			}
		}
		c.Test, c.Shift = stats.SignedRankTest(c.Values), stats.HodgesLehmann(c.Values)
		c.P = c.Test.P
		if c.Shift.N == 0 {
			c.P = nan // nothing to test
		}
		return c
	}
	var cs []Contrast
	for _, p := range st.Policies {
		for k := 1; k <= st.MaxK; k++ {
			for _, key := range ContrastKeys {
				if p != BursarLine {
					cs = append(cs, compare(p, ModeMetered, ModeUnmetered, k, k, key))
				}
				for _, m := range ModesOf(p) {
					if slices.Contains(ratioKeys, key) {
						cs = append(cs, compare(p, m, m, k, 0, key))
					}
				}
			}
		}
	}
	for _, f := range PrimaryFamily {
		for i := range cs {
			if f.matches(&cs[i]) {
				cs[i].Finding = f.Finding
			}
		}
	}
	for _, adj := range []struct {
		name    string
		primary bool
		by      func([]float64) []float64
	}{{AdjustHolm, true, stats.Holm}, {AdjustBH, false, stats.BenjaminiHochberg}} {
		var idx []int
		var ps []float64
		for i := range cs {
			if cs[i].Primary() == adj.primary {
				idx, ps = append(idx, i), append(ps, cs[i].P)
			}
		}
		for j, q := range adj.by(ps) {
			cs[idx[j]].PAdj, cs[idx[j]].Adjustment = q, adj.name
		}
	}
	return cs
}

// lineName is "metered k" or "k=0".
func lineName(mode string, k int) string {
	if k == 0 {
		return "k=0"
	}
	return mode
}
