package arrive

import (
	"math"

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
			return agentSum(r, func(a *AgentResult) float64 { return float64(a.GPUSeconds) / 3600 })
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

// Contrast is a paired difference between two lines at one k, window by
// window: for each window the mean over the seeds of (a − b) on the same
// seed (the same arrival and task lists), then the mean over the windows
// and its 95 % t interval.
type Contrast struct {
	Policy string
	// A and B name the compared lines: "metered" − "unmetered" at the
	// same k, or a mode at k − the same policy at k = 0.
	A, B   string
	K      int
	Metric string
	Diff   tracestudy.Interval
	// Below and Above count the windows whose difference is negative and
	// positive; Converged is false when any run compared stopped at its
	// horizon (no finding may rest on it, docs/studies.md §6.20).
	Below, Above int
	Converged    bool
	// P is the exact Wilcoxon signed-rank p-value of the per-window
	// differences (Pratt's zeros, stats.SignedRankTest) and PBH it
	// adjusted by Benjamini–Hochberg over every contrast of the study:
	// agents-arrive's contrasts are many and none is in a primary family
	// (docs/studies.md §5.1), so each says it is BH-adjusted.
	P, PBH float64
}

// ContrastKeys are the metrics the paired differences are taken of.
var ContrastKeys = []string{"users_mean_bsld", "users_p95_wait", "during_mean_bsld", "during_p95_wait", "agent_gpu_hours", "adaptive_science"}

// Contrasts are the paired differences: for every site policy and k ≥ 1,
// metered − unmetered; and for every line and k ≥ 1, the line − its
// k = 0 (what the agents cost the users), over ContrastKeys.
func Contrasts(st *Study, rs []Result) []Contrast {
	ix := newIndex(st)
	diff := func(p, ma, mb string, ka, kb int, key string) Contrast {
		mt := &Metrics[MetricIndex(key)]
		c := Contrast{Policy: p, A: lineName(ma, ka), B: lineName(mb, kb), K: ka, Metric: key, Converged: true}
		perWindow := make([]float64, len(st.Windows))
		for wi := range st.Windows {
			xs := make([]float64, len(st.Seeds))
			for j := range st.Seeds {
				ra, da, okA := ix.cell(st, rs, p, ma, ka, wi, j)
				rb, db, okB := ix.cell(st, rs, p, mb, kb, wi, j)
				if !okA || !okB {
					xs[j] = nan
					continue
				}
				c.Converged = c.Converged && ra.Converged && rb.Converged
				xs[j] = mt.Get(ra, da) - mt.Get(rb, db)
			}
			perWindow[wi] = meanOf(xs)
			switch {
			case perWindow[wi] < 0:
				c.Below++
			case perWindow[wi] > 0:
				c.Above++
			}
		}
		c.Diff = tracestudy.TIntervalIn(perWindow, metric.RangeOf(mt.Unit).Diff())
		c.P = stats.SignedRankTest(perWindow).P
		if c.Diff.N == 0 {
			c.P = nan // nothing to test
		}
		return c
	}
	var cs []Contrast
	for _, p := range st.Policies {
		for k := 1; k <= st.MaxK; k++ {
			for _, key := range ContrastKeys {
				if p != BursarLine {
					cs = append(cs, diff(p, ModeMetered, ModeUnmetered, k, k, key))
				}
				for _, m := range ModesOf(p) {
					if key == "users_mean_bsld" || key == "during_mean_bsld" || key == "users_p95_wait" || key == "during_p95_wait" {
						cs = append(cs, diff(p, m, m, k, 0, key))
					}
				}
			}
		}
	}
	ps := make([]float64, len(cs))
	for i := range cs {
		ps[i] = cs[i].P
	}
	for i, q := range stats.BenjaminiHochberg(ps) {
		cs[i].PBH = q
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
