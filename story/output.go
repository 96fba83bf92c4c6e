package story

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"

	"github.com/bursar-hpc/bursar/internal/atomicfile"
	"github.com/bursar-hpc/bursar/internal/csvfile"
	"github.com/bursar-hpc/bursar/internal/metric"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/budget"
	"github.com/bursar-hpc/bursar/policy/priority"
	"github.com/bursar-hpc/bursar/tracestudy"
)

// Metric is one quantity of a run, reported with its interval over seeds.
type Metric struct {
	Key, Unit, Doc string
	Get            func(*Result) float64
}

// Metrics are the per-run quantities of runs.csv and the summary, in
// order (docs/story.md, "What is measured").
var Metrics = []Metric{
	{"top_share_end", "fraction", "GPU-hours submitted at the top tier (deadline or interactive) over the last 4 weeks", func(r *Result) float64 { return r.TopShareEnd }},
	{"raised_end", "campaigns", "projects declaring deadline at the end", func(r *Result) float64 { return float64(r.RaisedEnd) }},
	{"first_raise_day", "days", "day of the first raise (empty: none)", func(r *Result) float64 { return nanIfNeg(r.FirstRaise) }},
	{"mean_wait_h", "s", "mean wait of every job, hours", func(r *Result) float64 { return r.MeanWait }},
	{"urgent_wait_h", "s", "mean wait of the truly urgent training jobs, hours", func(r *Result) float64 { return r.UrgentWait }},
	{"urgent_p95_h", "s", "95th percentile wait of the urgent jobs, hours", func(r *Result) float64 { return r.UrgentP95 }},
	{"debug_latency_h", "s", "mean launch latency of debug jobs (0 inside a park), hours", func(r *Result) float64 { return r.DebugLatency }},
	{"debug_p95_h", "s", "95th percentile debug launch latency, hours", func(r *Result) float64 { return r.DebugP95 }},
	{"utilization", "fraction", "GPU-hours held (parks included) ÷ the pool's over the submit span", func(r *Result) float64 { return r.Utilization }},
	{"idle_while_waiting", "fraction", "free GPUs that waiting jobs asked for, ÷ the pool's GPU-hours", func(r *Result) float64 { return r.IdleWhileWaiting }},
	{"owners_idle", "fraction", "free GPUs inside the entitlements of teams below them while another team waited, ÷ the pool's GPU-hours", func(r *Result) float64 { return r.OwnersIdle }},
	{"squatted", "fraction", "parked GPU-hours that ran no debug job ÷ the pool's", func(r *Result) float64 { return r.Squatted }},
	{"squatted_gpu_h", "GPU-h", "parked GPU-hours that ran no debug job", func(r *Result) float64 { return r.SquattedGPUHours }},
	{"absorbed", "jobs", "debug jobs run inside a park", func(r *Result) float64 { return float64(r.Absorbed) }},
	{"preemptions", "jobs", "leases ended by preemption", func(r *Result) float64 { return float64(r.Preemptions) }},
	{"unfinished", "jobs", "jobs still queued or running 30 days after the last submit", func(r *Result) float64 { return float64(r.Unfinished) }},
	{"failures", "jobs", "hard failures of a node (empty: no hosts)", hostsOnly(func(r *Result) float64 { return float64(r.Tally.Failures) })},
	{"degradations", "jobs", "degraded nodes, each drained", hostsOnly(func(r *Result) float64 { return float64(r.Tally.Degradations) })},
	{"interventions", "jobs", "jobs a human ended on a node drained for the threshold", hostsOnly(func(r *Result) float64 { return float64(r.Tally.Interventions) })},
	{"interventions_per_drain", "ratio", "interventions ÷ degradations", hostsOnly(func(r *Result) float64 { return ratio(float64(r.Tally.Interventions), float64(r.Tally.Degradations)) })},
	{"drain_h", "s", "mean time from a degradation to an empty node, hours", hostsOnly(func(r *Result) float64 {
		return ratio(float64(r.Tally.DrainSeconds)/3600, float64(r.Tally.Drains))
	})},
	{"contract_requeues", "jobs", "jobs requeued off a draining node by the contract, no human", hostsOnly(func(r *Result) float64 { return float64(r.Tally.ContractRequeues) })},
	{"preemptible_requeues", "jobs", "opportunistic jobs requeued off a draining node, no human", hostsOnly(func(r *Result) float64 { return float64(r.Tally.PreemptibleRequeues) })},
	{"human_repairs", "jobs", "repairs that always need a human, counted apart", hostsOnly(func(r *Result) float64 { return float64(r.Tally.HumanRepairs) })},
	{"host_lost_gpu_h", "GPU-h", "work lost to failures and drains (since the last checkpoint)", hostsOnly(func(r *Result) float64 { return r.HostLostGPUHours })},
}

// hostsOnly is a host metric: NaN for a run without hosts.
func hostsOnly(get func(*Result) float64) func(*Result) float64 {
	return func(r *Result) float64 {
		if !r.Hosts {
			return math.NaN()
		}
		return get(r)
	}
}

func nanIfNeg(x float64) float64 {
	if x < 0 {
		return math.NaN()
	}
	return x
}

// MetricIndex is the index of the metric called key (−1: none).
func MetricIndex(key string) int {
	for i := range Metrics {
		if Metrics[i].Key == key {
			return i
		}
	}
	return -1
}

// Point is one policy and population over the seeds.
type Point struct {
	Line, Policy, Users string
	Seeds               int
	Values              []tracestudy.Interval // by Metrics
	// TopShare, DebugWeekly: the weekly series' means over seeds.
	TopShare, DebugWeekly []float64
	// UsageRatio: each team's usage ÷ entitlement over seeds.
	UsageRatio []tracestudy.Interval
}

// Summary is the study's outcome: its settings and every run.
type Summary struct {
	Study *Study
	Runs  []Result
}

// Points are every (policy, population) with its intervals over seeds,
// in plan order.
func (s *Summary) Points() []Point {
	var out []Point
	for _, line := range s.Study.Lines() {
		for _, u := range s.Study.Users {
			var rs []*Result
			for i := range s.Runs {
				if s.Runs[i].Line == line && s.Runs[i].Users == u.Name {
					rs = append(rs, &s.Runs[i])
				}
			}
			if len(rs) == 0 {
				continue
			}
			pt := Point{Line: line, Policy: rs[0].Policy, Users: u.Name, Seeds: len(rs)}
			for k := range Metrics {
				xs := make([]float64, len(rs))
				for i, r := range rs {
					xs[i] = Metrics[k].Get(r)
				}
				pt.Values = append(pt.Values, tracestudy.TIntervalIn(xs, metric.RangeOf(Metrics[k].Unit)))
			}
			pt.TopShare = seriesMean(rs, func(r *Result) []float64 { return r.TopShare })
			pt.DebugWeekly = seriesMean(rs, func(r *Result) []float64 { return r.DebugWeekly })
			for g := range rs[0].UsageRatio {
				xs := make([]float64, len(rs))
				for i, r := range rs {
					xs[i] = r.UsageRatio[g]
				}
				pt.UsageRatio = append(pt.UsageRatio, tracestudy.TIntervalIn(xs, metric.RangeOf("ratio")))
			}
			out = append(out, pt)
		}
	}
	return out
}

// Value is point p's interval of metric key.
func (p *Point) Value(key string) tracestudy.Interval { return p.Values[MetricIndex(key)] }

func seriesMean(rs []*Result, get func(*Result) []float64) []float64 {
	n := len(get(rs[0]))
	out := make([]float64, n)
	for k := range n {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = get(r)[k]
		}
		out[k] = mean(xs)
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

func nums(xs []float64) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = num(x)
	}
	return out
}

func ivMap(iv tracestudy.Interval) map[string]any {
	return map[string]any{"mean": num(iv.Mean), "lo": num(iv.Lo), "hi": num(iv.Hi), "n": iv.N}
}

func rulesMap(r Rules) map[string]any {
	return map[string]any{"inflate": r.Inflate, "wait_value": r.WaitValue, "review_days": r.ReviewDays, "memory_days": r.MemoryDays,
		"squat": r.Squat, "latency_value": r.LatencyValue, "tolerance_s": r.Tolerance, "park_hours": r.ParkHours}
}

func (s *Summary) marshal() ([]byte, error) {
	st := s.Study
	lab := st.Lab
	var teams []any
	for _, t := range lab.Teams {
		var ps []any
		for _, p := range t.Projects {
			ps = append(ps, map[string]any{"name": p.Name, "weight": p.Weight})
		}
		teams = append(teams, map[string]any{"name": t.Name, "projects": ps})
	}
	var users []any
	for _, u := range st.Users {
		users = append(users, map[string]any{"name": u.Name, "strategic": u.Rules.Strategic(), "rules": rulesMap(u.Rules)})
	}
	var points []any
	for _, p := range s.Points() {
		mets := map[string]any{}
		for i := range Metrics {
			mets[Metrics[i].Key] = ivMap(p.Values[i])
		}
		var ratios []any
		for g, iv := range p.UsageRatio {
			m := ivMap(iv)
			m["team"] = lab.Teams[g].Name
			ratios = append(ratios, m)
		}
		points = append(points, map[string]any{"line": p.Line, "policy": p.Policy, "users": p.Users, "seeds": p.Seeds, "metrics": mets,
			"top_share_weekly": nums(p.TopShare), "debug_latency_weekly_h": nums(p.DebugWeekly), "usage_ratio": ratios})
	}
	prices := map[string]any{}
	for _, p := range st.Policies {
		cls := map[string]any{}
		for _, c := range []policy.Class{policy.Deadline, policy.Interactive, policy.AgentBurst, policy.Opportunistic} {
			cls[c.String()] = Price(p, c)
		}
		prices[p] = cls
	}
	var hostsCfg any
	if st.Hosts != nil {
		hostsCfg = map[string]any{"platform": st.Platform.String(), "config": st.Hosts, "contract_regimes": ContractRegimes}
	}
	var contrasts []any
	for _, c := range s.Contrasts() {
		m := ivMap(c.Reduction)
		m["name"], m["a"], m["b"], m["users"] = c.Name, c.A, c.B, c.Users
		contrasts = append(contrasts, m)
	}
	b, err := json.MarshalIndent(map[string]any{"experiment": "story", "hosts": hostsCfg, "contrasts": contrasts,
		"contrasts_rule": "per seed 1 − interventions(a) ÷ interventions(b) (seeds where b has none left out); mean and 95 % t interval over seeds",
		"lab": map[string]any{"teams": teams, "pool": lab.Pool, "days": lab.Days, "load": lab.Load, "season": lab.Season,
			"season_days": lab.SeasonDays, "mix": map[string]any{"training": lab.Mix[Training], "debug": lab.Mix[Debug], "eval": lab.Mix[Eval]},
			"urgent": lab.Urgent},
		"restart": st.Restart.String(), "policies": st.Policies, "users": users, "seeds": st.Seeds,
		"sensitivity_seeds": st.SensitiveSeeds, "prices_per_gpu_hour": prices,
		"interval": "mean over seeds; 95 % Student t over seeds, within the quantity's range",
		"points":   points}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// RunsColumns are runs.csv's columns: the run, then Metrics, then each
// team's usage ÷ entitlement.
func (s *Summary) RunsColumns() []string {
	h := []string{"line", "policy", "users", "seed", "jobs"}
	for i := range Metrics {
		h = append(h, Metrics[i].Key)
	}
	for _, t := range s.Study.Lab.Teams {
		h = append(h, "usage_ratio_"+t.Name)
	}
	return h
}

// FigureName is the figure's file name without its extension.
const FigureName = "fig_story"

// Write writes summary.json, runs.csv and fig_story into out and returns
// the files written, relative to out.
func Write(out string, f figureFormat, s *Summary) ([]string, error) {
	b, err := s.marshal()
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(filepath.Join(out, "summary.json"), b); err != nil {
		return nil, err
	}
	err = csvfile.Write(filepath.Join(out, "runs.csv"), s.RunsColumns(), func(emit func([]string) error) error {
		for i := range s.Runs {
			r := &s.Runs[i]
			row := []string{r.Line, r.Policy, r.Users, strconv.FormatInt(r.Seed, 10), strconv.Itoa(r.Jobs)}
			for k := range Metrics {
				row = append(row, csvfile.Cell(Metrics[k].Get(r)))
			}
			for _, x := range r.UsageRatio {
				row = append(row, csvfile.Cell(x))
			}
			if err := emit(row); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	fig := FigureName + "." + string(f)
	if err := WriteFigure(filepath.Join(out, fig), f, s); err != nil {
		return nil, err
	}
	return []string{"summary.json", "runs.csv", fig}, nil
}

// PrintTable prints one row per policy and population: the top tier's
// share at the end, the urgent jobs' and debug jobs' waits, idle while
// waiting, owners' idle, squatted GPU-hours and utilisation, each the
// mean over seeds ± the upper half of its 95 % interval.
func PrintTable(w io.Writer, s *Summary) error {
	fmt.Fprintf(w, "story: the lab (%d GPUs, %d days, load %g, seasons ±%g%% over %g days) under each policy, honest or strategic users; mean ± the 95 %% interval's upper half over seeds\n",
		s.Study.Lab.Pool, s.Study.Lab.Days, s.Study.Lab.Load, 100*s.Study.Lab.Season, s.Study.Lab.SeasonDays)
	cols := []struct {
		key, head string
		scale     float64
		prec      int
	}{
		{"top_share_end", "top tier %", 100, 0}, {"urgent_wait_h", "urgent wait h", 1, 1}, {"debug_latency_h", "debug latency h", 1, 2},
		{"idle_while_waiting", "idle waiting %", 100, 1}, {"owners_idle", "owners' idle %", 100, 1}, {"squatted_gpu_h", "squatted GPU-h", 1, 0},
		{"utilization", "util %", 100, 0}, {"interventions_per_drain", "interv./drain", 1, 2}, {"drain_h", "drain h", 1, 1},
	}
	fmt.Fprintf(w, "%-26s %-19s %5s", "line", "users", "seeds")
	for _, c := range cols {
		fmt.Fprintf(w, " %17s", c.head)
	}
	fmt.Fprintln(w)
	for _, p := range s.Points() {
		fmt.Fprintf(w, "%-26s %-19s %5d", p.Line, p.Users, p.Seeds)
		for _, c := range cols {
			fmt.Fprintf(w, " %17s", p.Value(c.key).Format(c.scale, c.prec))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "top tier: GPU-hours declared deadline or interactive; squatted: parked GPU-hours that ran no debug job (docs/story.md)")
	for _, c := range s.Contrasts() {
		fmt.Fprintf(w, "interventions, %s (%s users): %s vs %s: %s fewer (the lab: 74 %% fewer; a calibration, not a validation)\n",
			c.Name, c.Users, c.A, c.B, c.Reduction.Format(100, 0)+" %")
	}
	return nil
}

// Contrast is a relative reduction of interventions between two lines,
// seed by seed.
type Contrast struct {
	Name, A, B, Users string
	Reduction         tracestudy.Interval
}

// Contrasts are the interventions' two contrasts of the issue, for
// honest and strategic users: the lab's (budget with the contract against
// priority without) and the contract's (budget with against without; and
// priority with against without).
func (s *Summary) Contrasts() []Contrast {
	var out []Contrast
	for _, c := range []struct{ name, a, b string }{
		{"the lab's", budget.Name, priority.Name},
		{"the contract under budget", budget.Name, budget.Name + ", contract off"},
		{"the contract under priority", priority.Name + ", contract on", priority.Name},
		{"a 12 h minimum runtime (above the threshold)", budget.Name + ", min runtime 12 h", budget.Name + ", contract off"},
	} {
		for _, u := range []string{HonestName, StrategicName} {
			var xs []float64
			for i := range s.Runs {
				a := &s.Runs[i]
				if a.Line != c.a || a.Users != u || !a.Hosts {
					continue
				}
				for j := range s.Runs {
					b := &s.Runs[j]
					if b.Line == c.b && b.Users == u && b.Seed == a.Seed && b.Tally.Interventions > 0 {
						xs = append(xs, 1-float64(a.Tally.Interventions)/float64(b.Tally.Interventions))
					}
				}
			}
			if len(xs) > 0 {
				out = append(out, Contrast{Name: c.name, A: c.a, B: c.b, Users: u, Reduction: tracestudy.TIntervalIn(xs, metric.Range{Lo: math.Inf(-1), Hi: 1})})
			}
		}
	}
	return out
}
