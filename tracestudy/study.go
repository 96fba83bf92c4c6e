package tracestudy

import (
	"context"
	"fmt"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/budget"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/sweep"
	"github.com/bursar-hpc/bursar/trace"
)

// Spec is one run: a policy with its knobs. Window and MinRuntime are the
// budget knobs a budget-knobs run varies (for the record; Knobs holds them).
type Spec struct {
	Policy     string
	Knobs      policies.Knobs
	WindowDays int // budget-knobs only
	MinRuntime int // budget-knobs only, seconds
}

// Result is one run's outcome.
type Result struct {
	Policy         string           `json:"policy"`
	WindowDays     int              `json:"window_days,omitempty"`
	MinRuntime     int              `json:"min_runtime_s,omitempty"`
	Jobs           int              `json:"jobs"`       // jobs that ran
	Unserved       int              `json:"unserved"`   // denied: larger than their campaign can ever hold
	Unfinished     int              `json:"unfinished"` // still queued or running at the replay's horizon
	Preemptions    int              `json:"preemptions"`
	LostGPUSeconds int64            `json:"lost_gpu_seconds"`
	All            trace.Stats      `json:"all"`
	ByClass        map[string]Stats `json:"by_class"`
	Utilization    float64          `json:"utilization"` // useful GPU-seconds ÷ (pool × makespan)
	HeldUtil       float64          `json:"held_utilization"`
	Jain           float64          `json:"jain"`
	Makespan       int64            `json:"makespan"`
	Ticks          int64            `json:"ticks"`
	// BSLD is every job's bounded slowdown, ascending: the figure's CDF.
	BSLD []float64 `json:"-"`
}

// Stats is trace.Stats as summary.json writes it per class.
type Stats = trace.Stats

// Execute runs the specs on w with at most workers at once and returns the
// results in spec order (ExecutePlan with no shard and no cache). A
// cancelled ctx stops before the next run starts. progress (may be nil)
// is called after every run with the runs done.
func Execute(ctx context.Context, w *trace.Workload, specs []Spec, workers int, progress func(done, total int)) ([]Result, error) {
	if workers < 1 {
		return nil, fmt.Errorf("workers must be at least 1, got %d", workers)
	}
	return ExecutePlan(ctx, w, specs, NewPlan("", "", w, specs), sweep.StudyOptions{Workers: workers, Progress: progress})
}

// RunOne replays w under one spec (the pool and grace of
// policy.DefaultConfig at the trace's pool) and summarizes it.
func RunOne(w *trace.Workload, s Spec) (Result, error) {
	knobs := s.Knobs
	if s.Policy == budget.Name && knobs.Budget.Groups == nil {
		knobs.Budget.Groups = Hierarchy(w)
	}
	if knobs.Entitlements == nil {
		knobs.Entitlements = w.Entitlements()
	}
	a, err := policies.New(s.Policy, policy.DefaultConfig(w.Pool), knobs)
	if err != nil {
		return Result{}, err
	}
	run, err := trace.Replay(w, a, trace.ReplayOptions{})
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", s.Policy, err)
	}
	sw, start := run.Served(w)
	m := trace.Summarize(sw, start)
	r := Result{
		Policy: s.Policy, WindowDays: s.WindowDays, MinRuntime: s.MinRuntime,
		Jobs: len(sw.Jobs), Unserved: run.Unserved, Unfinished: run.UnfinishedJobs, Preemptions: run.Preemptions, LostGPUSeconds: run.LostGPUSeconds,
		All: m.All, ByClass: map[string]Stats{}, Utilization: m.Utilization, Jain: m.Jain, Makespan: m.Makespan, Ticks: run.Ticks,
	}
	for k, c := range trace.Classes {
		r.ByClass[c.String()] = m.ByClass[k]
	}
	if m.Makespan > 0 {
		r.HeldUtil = float64(run.HeldGPUSeconds) / (float64(w.Pool) * float64(m.Makespan))
	}
	r.BSLD = make([]float64, len(sw.Jobs))
	for i := range sw.Jobs {
		r.BSLD[i] = trace.BSLD(&sw.Jobs[i], start[i])
	}
	slices.Sort(r.BSLD)
	return r, nil
}

// Hierarchy is the trace's groups as the budget policy's hierarchy
// (docs/studies.md §2, §6.11): one level-one node per SWF group, its members
// the campaigns whose GPU-seconds mostly went to it.
func Hierarchy(w *trace.Workload) []budget.Group {
	if len(w.Groups) < 2 {
		return nil
	}
	gs := make([]budget.Group, len(w.Groups))
	for g, grp := range w.Groups {
		gs[g].Name = fmt.Sprintf("group %d", grp.ID)
		for _, c := range grp.Members {
			gs[g].Members = append(gs[g].Members, w.Campaigns[c].Name)
		}
	}
	return gs
}

// TraceSpecs is one run per policy, at the default knobs.
func TraceSpecs(names []string) []Spec {
	specs := make([]Spec, len(names))
	for i, n := range names {
		specs[i] = Spec{Policy: n, Knobs: policies.TraceKnobs()}
	}
	return specs
}

// Budget-knobs grid (docs/studies.md §5): W in days, m in seconds.
var (
	BudgetWindows     = []int{1, 3, 7, 14}
	BudgetMinRuntimes = []int{0, 300, 3600, 14400}
)

// BudgetKnobSpecs is the budget policy at every W × m; m is the minimum
// runtime of every class (a trace job declares one m whatever its queue).
func BudgetKnobSpecs(windows, mins []int) []Spec {
	var specs []Spec
	for _, m := range mins {
		for _, wd := range windows {
			k := policies.TraceKnobs()
			k.Budget.Window = wd * 86400
			k.Budget.MinRuntime = [4]int{m, m, m, m}
			specs = append(specs, Spec{Policy: "budget", Knobs: k, WindowDays: wd, MinRuntime: m})
		}
	}
	return specs
}
