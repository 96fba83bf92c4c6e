package tracestudy

import (
	"context"
	"fmt"
	"io"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/budget"
	"github.com/bursar-hpc/bursar/policy/fifo"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/priority"
	"github.com/bursar-hpc/bursar/policy/registry"
	"github.com/bursar-hpc/bursar/sitemeter"
	"github.com/bursar-hpc/bursar/sweep"
	"github.com/bursar-hpc/bursar/trace"
)

// Spec is one policy with its knobs. WindowDays, MinRuntime and Restart
// are the budget knobs a budget-knobs run varies (for the record; Knobs
// holds them).
type Spec struct {
	Policy     string
	Knobs      policies.Knobs
	WindowDays int    // budget-knobs only
	MinRuntime int    // budget-knobs only, seconds
	Restart    string // budget-knobs only: zero or checkpoint:S
	// Entitle replaces the trace's entitlements in every window with the
	// site's (trace --sshare: its account tree's shares); nil keeps them.
	// Site names what it reads (the file's digest) in the run's inputs.
	Entitle func(*baseline.Entitlements) (*baseline.Entitlements, error) `json:"-"`
	Site    string                                                       `json:"-"`
}

// Result is one replay's outcome: one Spec on one Window, measured over
// the window less its warm-up and cool-down (trace.Measure).
type Result struct {
	Policy     string
	WindowDays int    // budget-knobs only
	MinRuntime int    // budget-knobs only, seconds
	Restart    string // budget-knobs only
	// Window is the index of the window in the study's list; From and
	// Until its submits.
	Window      int
	From, Until int64
	// Summary is the §4 metrics over the measured interval.
	Summary trace.Summary
	// Preemptions and LostGPUSeconds are over the whole replay (the
	// warm-up and cool-down included), Ticks the ticks it executed.
	Preemptions    int
	LostGPUSeconds int64
	Ticks          int64
	// PreloadedUsage is the number of the log's recorded jobs the policy
	// started the window with (History, docs/studies.md §6.16).
	PreloadedUsage int
	// ModelVsLog is fifo's start times against the ones the log records
	// (docs/studies.md §4.8) over the measured jobs; nil for every other
	// policy.
	ModelVsLog *trace.ModelVsLog
	// Shape is the shape of the run's mapping (docs/studies.md §4.9).
	Shape Shape
	// Marks are what the policy says of the run (baseline.Marked): static
	// with condo partitions whose minima exceeded the pool marks it
	// "minima scaled". summary.json writes them, and the study warns.
	Marks []string
}

// Stats is trace.Stats as summary.json writes it per class.
type Stats = trace.Stats

// Execute runs the specs on w, as one window (the whole workload, nothing
// left out of the measurement), with at most workers at once and returns
// the results in spec order. A cancelled ctx stops before the next run
// starts. progress (may be nil) is called after every run with the runs
// done.
func Execute(ctx context.Context, w *trace.Workload, specs []Spec, workers int, progress func(done, total int)) ([]Result, error) {
	if workers < 1 {
		return nil, fmt.Errorf("workers must be at least 1, got %d", workers)
	}
	st, err := WholeStudy(w, specs)
	if err != nil {
		return nil, err
	}
	return ExecutePlan(ctx, st, NewPlan("", "", st), sweep.Options{Workers: workers, Progress: progress})
}

// WholeStudy is specs on w as one window, measured whole (no warm-up, no
// cool-down).
func WholeStudy(w *trace.Workload, specs []Spec) (*Study, error) {
	from, until := w.SubmitSpan()
	win := Window{From: from, Until: until}
	if err := win.Measure(0, 0); err != nil {
		return nil, err
	}
	return &Study{Specs: specs, Windows: []Window{win}, Loads: []*trace.Workload{w}}, nil
}

// Study is what a trace study replays: every Spec on every Window (Loads
// holds each window's workload), policy-major: run i is Specs[i ÷ len
// Windows] on Windows[i mod len Windows].
type Study struct {
	Specs   []Spec
	Windows []Window
	Loads   []*trace.Workload
	// LeadIn is the lead-in every window replays before it (PickLeadIn;
	// nil: none, a study of one window).
	LeadIn *LeadIn
	// WindowRule says how the number of windows was set, declared in
	// summary.json and the table: "given" (--windows N×D), "min(12,
	// ⌊span ÷ D⌋)" (--windows D), "" one window.
	WindowRule string
	// Recorded is the log's own record (ReadRecorded) and Options the
	// mapping the windows were read with: with them, fairshare and budget
	// start each window from the usage the log records before it
	// (History, docs/studies.md §6.16); nil: from an empty memory.
	Recorded []Recorded
	Options  trace.Options
	// FairSample is how many jobs of each window get a fair start time
	// (docs/studies.md §4.4, §6.17), drawn with trace.DefaultFairSeed; 0
	// none.
	FairSample int
	// JobsDir, when set, receives each replay's per-job records
	// (JobsDir/<RunFileLabel>/jobs.parquet and jobs.csv, WriteJobs).
	JobsDir string
	// Policies is the registry the specs' policies are found in: their
	// constructors, costs, lookbacks and looks (nil: policies.Default).
	Policies *registry.Registry
}

// registry is the registry the study's policies are found in.
func (st *Study) registry() *registry.Registry { return orDefault(st.Policies) }

// orDefault is reg, or policies.Default for nil.
func orDefault(reg *registry.Registry) *registry.Registry {
	if reg != nil {
		return reg
	}
	return policies.Default
}

// Runs is the number of replays.
func (st *Study) Runs() int { return len(st.Specs) * len(st.Windows) }

// Cell is run i's spec and window indices.
func (st *Study) Cell(i int) (spec, window int) { return i / len(st.Windows), i % len(st.Windows) }

// Run replays run i.
func (st *Study) Run(i int) (Result, error) {
	s, k := st.Cell(i)
	r, run, err := RunWindow(st.Loads[k], st.Windows[k], st.Specs[s], RunOptions{
		Exact: true, History: st.windowHistory(s, k), FairSample: st.FairSample, Policies: st.Policies})
	if err != nil {
		return Result{}, err
	}
	if st.JobsDir != "" {
		rows := JobRows(st.Loads[k], run.Records, st.Windows[k], run.Stop)
		if err := WriteJobs(st.JobsDir, RunFileLabel(st.Specs[s], st.Windows[k]), rows); err != nil {
			return Result{}, err
		}
	}
	return r, nil
}

// RunOne replays w whole under one spec through the allocator contract
// (fifo too) and measures every job (no warm-up, no cool-down):
// agents-arrive's plain replay and the tests' entry.
func RunOne(w *trace.Workload, s Spec) (Result, error) {
	st, err := WholeStudy(w, []Spec{s})
	if err != nil {
		return Result{}, err
	}
	r, _, err := RunWindow(w, st.Windows[0], s, RunOptions{})
	return r, err
}

// RunOptions are how RunWindow replays.
type RunOptions struct {
	// Exact runs fifo through the exact FCFS + EASY replay
	// (trace.ReplayExact), which trace's tests prove gives the allocator
	// path's records, at a fraction of its cost.
	Exact bool
	// History is the usage before the window (History); nil none.
	History []baseline.Usage
	// FairSample is how many measured jobs get a fair start time; 0 none.
	FairSample int
	// Policies is the registry the spec's policy is found in (nil:
	// policies.Default).
	Policies *registry.Registry
}

// RunWindow replays w (the jobs of win) under one spec, with the pool and
// grace of policy.DefaultConfig at the trace's pool, and measures it over
// win's measured interval: the §4 summary, fair-start-time unfairness on
// a seeded sample of the measured jobs (the same jobs for every policy),
// and the share-based fairness against a fifo control on the same
// window. It returns the replay too (its records, for --jobs).
func RunWindow(w *trace.Workload, win Window, s Spec, o RunOptions) (Result, *trace.Run, error) {
	iv := trace.Interval{From: win.MeasureFrom, To: win.MeasureUntil}
	var sample []int
	if o.FairSample > 0 {
		sample = trace.FairSample(w, iv, o.FairSample, trace.DefaultFairSeed)
	}
	exactFifo := o.Exact && s.Policy == fifo.Name && w.Platform == nil
	var fifoRun *trace.Run
	var err error
	if exactFifo && sample != nil {
		// The run is the control itself: its fair starts come from the
		// same replay.
		fifoRun = trace.ReplayExactSampled(w, sample, trace.DefaultFairSeed)
	} else if fifoRun, err = fifoControl(w, o); err != nil {
		return Result{}, nil, err
	}
	var run *trace.Run
	var a policy.Allocator
	if exactFifo {
		run = fifoRun
	} else {
		if a, err = Allocator(o.Policies, w, s, o.History); err != nil {
			return Result{}, nil, err
		}
		if run, err = trace.Replay(w, a, trace.ReplayOptions{FairStart: sample, FairSeed: trace.DefaultFairSeed}); err != nil {
			return Result{}, nil, fmt.Errorf("%s: %w", s.Policy, err)
		}
	}
	sum, err := trace.Measure(w, run, iv)
	if err != nil {
		return Result{}, nil, fmt.Errorf("%s, window %s: %w", s.Policy, win.Label(), err)
	}
	if iv.Span() >= trace.Day {
		sf := trace.Shares(w, run, trace.FifoControl(w, fifoRun, iv))
		sum.Shares = &sf
	}
	r := Result{
		Policy: s.Policy, WindowDays: s.WindowDays, MinRuntime: s.MinRuntime, Restart: s.Restart,
		Window: win.Index, From: win.From, Until: win.Until, Summary: *sum,
		Preemptions: run.Preemptions, LostGPUSeconds: run.LostGPUSeconds, Ticks: run.Ticks,
		PreloadedUsage: len(o.History),
	}
	if s.Policy == fifo.Name {
		m := trace.CompareToLog(w, run, iv)
		r.ModelVsLog = &m
	}
	r.Shape = runShape(w, s, a, s.Policy != fifo.Name && sameRecords(run.Records, fifoRun.Records))
	if m, ok := a.(baseline.Marked); ok {
		r.Marks = m.Marks()
	}
	return r, run, nil
}

// fifoControl is the fifo replay of w that the share-based fairness
// compares against: the exact FCFS + EASY replay on a pool that is a
// number, fifo through the allocator on a platform's nodes (the exact
// replay counts GPUs, not nodes).
func fifoControl(w *trace.Workload, o RunOptions) (*trace.Run, error) {
	if w.Platform == nil {
		return trace.ReplayExact(w), nil
	}
	a, err := orDefault(o.Policies).New(fifo.Name, policy.DefaultConfig(w.Pool), orDefault(o.Policies).DefaultKnobs())
	if err != nil {
		return nil, err
	}
	run, err := trace.Replay(w, a, trace.ReplayOptions{})
	if err != nil {
		return nil, fmt.Errorf("fifo control: %w", err)
	}
	return run, nil
}

// WarnMarks writes a warning line for every run a policy marked
// (Result.Marks), naming the policy and the window.
func WarnMarks(w io.Writer, rs []Result) {
	for i := range rs {
		for _, m := range rs[i].Marks {
			fmt.Fprintf(w, "warning: %s, window %d: %s (the run's marks in summary.json; docs/policies.md)\n", rs[i].Policy, rs[i].Window, m)
		}
	}
}

// Allocator is the policy of s as a trace study replays it on w
// (docs/studies.md §1, §2, §6.16): the pool and grace of
// policy.DefaultConfig at the trace's pool, the trace's entitlements
// (budget's hierarchy is their groups, its groups knob left unset, as
// every share-based policy reads them), priority's preemption as the
// log's header says, and history (the log's usage before the window,
// History; nil none) preloaded. The policy is found in reg (nil:
// policies.Default). Bursar is the broker as a site meters a trace
// (sitemeter: the group metered, a scavenger for idle GPUs).
func Allocator(reg *registry.Registry, w *trace.Workload, s Spec, history []baseline.Usage) (policy.Allocator, error) {
	knobs := s.Knobs
	if knobs.Entitlements == nil {
		knobs.Entitlements = w.Entitlements()
	}
	if s.Entitle != nil {
		e, err := s.Entitle(knobs.Entitlements)
		if err != nil {
			return nil, err
		}
		knobs.Entitlements = e
	}
	if priority.Slot.Get(knobs).Preempt == nil {
		// priority's preempt follows the log's header
		// (docs/studies.md §2: off where it says Preemption: No).
		p := w.Preemptible()
		priority.Slot.Edit(&knobs).Preempt = &p
	}
	knobs.History = history
	a, err := orDefault(reg).New(s.Policy, policy.DefaultConfig(w.Pool), knobs)
	if err != nil {
		return nil, err
	}
	return SiteMetered(s.Policy, a, w, knobs.Restart)
}

// SiteMetered is a, the policy called name built for a replay of w, as a
// trace study replays it: Bursar (the broker) as a site meters a trace
// (sitemeter: the group metered, a scavenger per group for idle GPUs,
// docs/studies.md §3.2), its preempted jobs restarting by restart (nil:
// zero), as every policy's do (§6.7); every other policy as it is.
func SiteMetered(name string, a policy.Allocator, w *trace.Workload, restart *baseline.Restart) (policy.Allocator, error) {
	if b, ok := a.(*policy.Broker); ok && name == policies.Bursar {
		s, err := sitemeter.New(b, w)
		if err == nil && restart != nil {
			s.SetRestart(*restart)
		}
		return s, err
	}
	return a, nil
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

// TraceSpecs is one run per policy, at the trace studies' default knobs.
func TraceSpecs(names []string) []Spec { return TraceSpecsOf(nil, names) }

// TraceSpecsOf is TraceSpecs with the policies and their knobs of reg
// (nil: policies.Default).
func TraceSpecsOf(reg *registry.Registry, names []string) []Spec {
	specs := make([]Spec, len(names))
	for i, n := range names {
		specs[i] = Spec{Policy: n, Knobs: orDefault(reg).TraceKnobs()}
	}
	return specs
}

// Budget-knobs grid (docs/studies.md §5): W in days, m in seconds, and
// the restart rules (§6.7): the default, an hourly checkpoint, and zero,
// the sensitivity case.
var (
	BudgetWindows     = []int{1, 3, 7, 14}
	BudgetMinRuntimes = []int{0, 300, 3600, 14400}
	BudgetRestarts    = []string{"checkpoint:3600", "zero"}
)

// BudgetKnobSpecs is the budget policy at every restart × m × W (W
// fastest); m is the minimum runtime of every class (a trace job declares
// one m whatever its queue). A restart is checked with
// baseline.ParseRestart.
func BudgetKnobSpecs(windows, mins []int, restarts []string) ([]Spec, error) {
	var specs []Spec
	for _, rs := range restarts {
		r, err := baseline.ParseRestart(rs)
		if err != nil {
			return nil, err
		}
		for _, m := range mins {
			for _, wd := range windows {
				k := policies.TraceKnobs()
				b := budget.Slot.Edit(&k)
				b.Window = wd * 86400
				b.MinRuntime = [4]int{m, m, m, m}
				b.Restart = r
				ri := r
				k.Restart = &ri
				specs = append(specs, Spec{Policy: "budget", Knobs: k, WindowDays: wd, MinRuntime: m, Restart: r.String()})
			}
		}
	}
	return specs, nil
}
