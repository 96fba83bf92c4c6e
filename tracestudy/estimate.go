package tracestudy

import (
	"math"

	"github.com/bursar-hpc/bursar/internal/metric"
	"github.com/bursar-hpc/bursar/internal/stats"
)

// Metric is one number a trace study reports per replay, in summary.json,
// runs.csv and the intervals over windows (docs/metrics.md lists every
// key with its unit): Get reads it from a result, NaN where it has none;
// Lower reports whether the value is only a lower bound (censored waits
// of unfinished jobs, §4.1), nil: never.
type Metric = metric.Metric[Result]

func count(n int) float64 { return float64(n) }

// Metrics are the per-replay numbers of trace and budget-knobs, in
// summary.json's and runs.csv's order.
var Metrics = metric.Table[Result]{
	{Key: "jobs", Unit: "jobs", Get: func(r *Result) float64 { return count(r.Summary.Jobs) }},
	{Key: "served", Unit: "jobs", Get: func(r *Result) float64 { return count(r.Summary.Served) }},
	{Key: "denied", Unit: "jobs", Get: func(r *Result) float64 { return count(r.Summary.Denied) }},
	{Key: "unfinished", Unit: "jobs", Get: func(r *Result) float64 { return count(r.Summary.Unfinished) }},
	{Key: "served_work", Unit: "fraction", Get: func(r *Result) float64 { return r.Summary.ServedWork }},
	{Key: "mean_wait", Unit: "s", Get: func(r *Result) float64 { return r.Summary.All.MeanWait },
		Lower: func(r *Result) bool { return r.Summary.All.MeanWaitLower }},
	{Key: "p50_wait", Unit: "s", Get: func(r *Result) float64 { return r.Summary.All.P50Wait },
		Lower: func(r *Result) bool { return r.Summary.All.P50WaitLower }},
	{Key: "p95_wait", Unit: "s", Get: func(r *Result) float64 { return r.Summary.All.P95Wait },
		Lower: func(r *Result) bool { return r.Summary.All.P95WaitLower }},
	{Key: "mean_bsld", Unit: "ratio", Get: func(r *Result) float64 { return r.Summary.All.MeanBSLD },
		Lower: func(r *Result) bool { return r.Summary.All.MeanBSLDLower }},
	{Key: "p95_bsld", Unit: "ratio", Get: func(r *Result) float64 { return r.Summary.All.P95BSLD },
		Lower: func(r *Result) bool { return r.Summary.All.P95BSLDLower }},
	{Key: "useful_utilization", Unit: "fraction", Get: func(r *Result) float64 { return r.Summary.Useful }},
	{Key: "lost_utilization", Unit: "fraction", Get: func(r *Result) float64 { return r.Summary.Lost }},
	{Key: "held_utilization", Unit: "fraction", Get: func(r *Result) float64 { return r.Summary.Held }},
	{Key: "idle_while_waiting", Unit: "fraction", Get: func(r *Result) float64 { return r.Summary.IdleWhileWaiting }},
	{Key: "preemptions", Unit: "leases", Get: func(r *Result) float64 { return count(r.Preemptions) }},
	{Key: "lost_gpu_seconds", Unit: "GPU-s", Get: func(r *Result) float64 { return float64(r.LostGPUSeconds) }},
	{Key: "log_mean_wait", Unit: "s", Get: func(r *Result) float64 { return r.Summary.Log.MeanWait }},
	{Key: "log_sim_mean_wait", Unit: "s", Get: func(r *Result) float64 { return r.Summary.LogSim.MeanWait },
		Lower: func(r *Result) bool { return r.Summary.LogSim.MeanWaitLower }},
	{Key: "fair_start_late", Unit: "fraction", Get: func(r *Result) float64 {
		if fs := r.Summary.FairStart; fs != nil {
			return fs.LateFrac
		}
		return math.NaN()
	}},
	{Key: "fair_start_mean_miss", Unit: "s", Get: func(r *Result) float64 {
		if fs := r.Summary.FairStart; fs != nil {
			return fs.MeanMiss
		}
		return math.NaN()
	}, Lower: func(r *Result) bool { return r.Summary.FairStart != nil && r.Summary.FairStart.Censored > 0 }},
	{Key: "nuwt_cv", Unit: "ratio", Get: func(r *Result) float64 { return r.Summary.NUWT.CV },
		Lower: func(r *Result) bool { return r.Summary.NUWT.Lower }},
	{Key: "share_jain", Unit: "index", Get: func(r *Result) float64 {
		if sf := r.Summary.Shares; sf != nil {
			return sf.Jain
		}
		return math.NaN()
	}},
	{Key: "fair_last_late", Unit: "fraction", Get: func(r *Result) float64 {
		if fs := r.Summary.FairStart; fs != nil {
			return fs.Last.LateFrac
		}
		return math.NaN()
	}},
	{Key: "fair_last_mean_miss", Unit: "s", Get: func(r *Result) float64 {
		if fs := r.Summary.FairStart; fs != nil {
			return fs.Last.MeanMiss
		}
		return math.NaN()
	}, Lower: func(r *Result) bool { return r.Summary.FairStart != nil && r.Summary.FairStart.Last.Censored > 0 }},
	{Key: "first_wait", Unit: "s", Get: func(r *Result) float64 { return r.Summary.Harm.FirstWait },
		Lower: func(r *Result) bool { return r.Summary.Harm.FirstWaitLower }},
	{Key: "preemptions_per_job", Unit: "preemptions", Get: func(r *Result) float64 { return r.Summary.Harm.MeanPreempt }},
	{Key: "preemptions_per_job_max", Unit: "preemptions", Get: func(r *Result) float64 { return float64(r.Summary.Harm.MaxPreempt) }},
	{Key: "preempted_jobs", Unit: "fraction", Get: func(r *Result) float64 { return r.Summary.Harm.Preempted }},
	{Key: "preempted_10_jobs", Unit: "fraction", Get: func(r *Result) float64 { return r.Summary.Harm.Preempted10 }},
	{Key: "preloaded_jobs", Unit: "jobs", Get: func(r *Result) float64 { return count(r.PreloadedUsage) }},
	{Key: "makespan", Unit: "s", Get: func(r *Result) float64 { return float64(r.Summary.Makespan) }},
	{Key: "drain", Unit: "s", Get: func(r *Result) float64 { return float64(r.Summary.Drain) }},
	{Key: "converged", Unit: "0 or 1", Get: func(r *Result) float64 {
		if r.Summary.Converged {
			return 1
		}
		return 0
	}},
}

// MetricByKey is the metric called key.
func MetricByKey(key string) *Metric { return Metrics.ByKey(key) }

// Interval is an estimate over windows: the mean of the per-window
// values and its 95 % t interval (Student's t with N − 1 degrees of
// freedom; stats.MeanT), N the windows with a value. With one window Lo
// and Hi are NaN: one window gives no interval. Lower is set when some
// window's value is only a lower bound.
type Interval struct {
	Mean float64
	stats.Interval
	N     int
	Lower bool
}

// byWindow is how the windows' means sum (stats.Method): gonum's
// stat.Mean and stat.StdDev, as the committed results were written.
var byWindow = stats.Method{Sum: stats.Lanes, Spread: stats.Corrected}

// TInterval is the mean of xs and its 95 % t interval, NaN values left
// out (a window in which the metric has no value).
func TInterval(xs []float64) Interval { return TIntervalIn(xs, metric.Unbounded) }

// TIntervalIn is TInterval intersected with r, the range of the
// quantity (docs/studies.md §5.1): a fraction's interval stays in
// [0, 1], a count's at or above 0.
func TIntervalIn(xs []float64, r metric.Range) Interval {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	iv := Interval{N: len(v)}
	iv.Mean, iv.Interval = stats.MeanT(v, byWindow)
	iv.Interval = iv.Within(r.Lo, r.Hi)
	return iv
}

// Estimates are one spec's intervals over the windows, by metric key in
// Metrics order, and (Versus) the paired differences from the reference
// spec, window by window: for each window the spec's value minus the
// reference's, then TInterval of those differences.
type Estimates struct {
	Label     string
	Spec      int
	Intervals []Interval // Metrics order
	Versus    string     // the reference's label, "" for the reference itself
	Diffs     []Interval // Metrics order; nil for the reference
	// MinP95Jobs is the fewest jobs any window's p95 (and p50) is taken
	// over: a percentile over fewer than 200 jobs is printed with its n.
	MinP95Jobs int
}

// Estimate turns the results of st (in run order) into each spec's
// estimates, with paired differences from spec ref (−1: none).
func Estimate(st *Study, rs []Result, ref int) []Estimates {
	nw := len(st.Windows)
	out := make([]Estimates, len(st.Specs))
	values := func(s int, m *Metric) []float64 {
		xs := make([]float64, nw)
		for k := range nw {
			xs[k] = m.Get(&rs[s*nw+k])
		}
		return xs
	}
	for s := range st.Specs {
		e := Estimates{Label: st.Specs[s].Label(), Spec: s, MinP95Jobs: math.MaxInt}
		for k := range nw {
			e.MinP95Jobs = min(e.MinP95Jobs, rs[s*nw+k].Summary.All.Jobs)
		}
		for i := range Metrics {
			m := &Metrics[i]
			rng := metric.RangeOf(m.Unit)
			iv := TIntervalIn(values(s, m), rng)
			if m.Lower != nil {
				for k := range nw {
					iv.Lower = iv.Lower || m.Lower(&rs[s*nw+k])
				}
			}
			e.Intervals = append(e.Intervals, iv)
			if ref >= 0 && s != ref {
				a, b := values(s, m), values(ref, m)
				d := make([]float64, nw)
				for k := range d {
					d[k] = a[k] - b[k]
				}
				div := TIntervalIn(d, rng.Diff())
				div.Lower = false // a difference of two bounds bounds nothing
				e.Diffs = append(e.Diffs, div)
			}
		}
		if ref >= 0 && s != ref {
			e.Versus = st.Specs[ref].Label()
		}
		out[s] = e
	}
	return out
}

// Reference is the spec the paired differences are taken against: fifo
// in a trace study (the site's default core), the budget policy's
// default W, m and restart (7 days, 1 hour, checkpoint:3600) in
// budget-knobs — with one restart in the grid, that one; else the first
// spec.
func Reference(specs []Spec) int {
	restart := ""
	for _, s := range specs {
		if s.WindowDays > 0 && (restart == "" || s.Restart == "checkpoint:3600") {
			restart = s.Restart
		}
	}
	for i, s := range specs {
		if s.WindowDays == 0 && s.Policy == "fifo" {
			return i
		}
		if s.WindowDays == 7 && s.MinRuntime == 3600 && s.Restart == restart {
			return i
		}
	}
	if len(specs) < 2 {
		return -1
	}
	return 0
}
