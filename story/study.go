package story

import (
	"fmt"
	"math"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/budget"
	"github.com/bursar-hpc/bursar/policy/fifo"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/priority"
	"github.com/bursar-hpc/bursar/policy/registry"
	"github.com/bursar-hpc/bursar/policy/static"
	"github.com/bursar-hpc/bursar/trace"
	"github.com/bursar-hpc/bursar/tracestudy"
)

// DefaultPolicies are fifo, the reference a collapsed priority is read
// against, the lab's three regimes — priority, static ownership, budgets
// with hierarchical fair share over 7 days and the minimum-runtime
// contract (budget at its defaults) — and the broker.
var DefaultPolicies = []string{fifo.Name, priority.Name, static.Name, budget.Name, policies.Bursar}

// Users is a named population of users: honest, or strategic by Rules.
type Users struct {
	Name  string
	Rules Rules
}

// The populations' names.
const (
	HonestName    = "honest"
	StrategicName = "strategic"
)

// DefaultUsers are the two populations of the study: honest, and
// strategic at the default rules; the sensitivity runs add others
// (SensitivityUsers).
func DefaultUsers() []Users {
	return []Users{{HonestName, Honest()}, {StrategicName, DefaultRules()}}
}

// SensitivityUsers are strategic users with one swept knob moved: the
// value of latency ν_l at ¼ and 4 times its default, and the value of
// wait ν_w likewise.
func SensitivityUsers() []Users {
	var out []Users
	d := DefaultRules()
	for _, f := range []float64{0.25, 4} {
		r := d
		r.LatencyValue *= f
		out = append(out, Users{fmt.Sprintf("latency_value=%g", r.LatencyValue), r})
	}
	for _, f := range []float64{0.25, 4} {
		r := d
		r.WaitValue *= f
		out = append(out, Users{fmt.Sprintf("wait_value=%g", r.WaitValue), r})
	}
	return out
}

// Spec is one run: a policy, a population of users (index into
// Study.Users) and a seed (the lab's jobs and the users' review times).
type Spec struct {
	Policy string
	Users  int
	Seed   int64
}

// Study is every run of the story: each policy × population × seed.
type Study struct {
	Lab      Lab
	Policies []string
	Users    []Users
	Seeds    []int64
	// Sensitivity: the populations from index Sensitive on run on the
	// first SensitiveSeeds seeds only.
	Sensitive      int
	SensitiveSeeds int
	// Restart is every policy's rule for a preempted job (the lab's
	// training checkpoints hourly).
	Restart baseline.Restart
	// Registry the policies are found in (nil: policies.Default).
	Registry *registry.Registry
	Specs    []Spec
}

// NewStudy is the study at its defaults: the default lab, the default
// policies, honest and strategic users on seeds 1 … 5 and the
// sensitivity populations on seeds 1 … 3.
func NewStudy() *Study {
	st := &Study{Lab: DefaultLab(), Policies: slices.Clone(DefaultPolicies), Users: DefaultUsers(),
		Seeds: []int64{1, 2, 3, 4, 5}, Restart: baseline.Restart{Checkpoint: baseline.DefaultCheckpoint}}
	st.Sensitive = len(st.Users)
	st.Users = append(st.Users, SensitivityUsers()...)
	st.SensitiveSeeds = 3
	return st
}

func (st *Study) registry() *registry.Registry {
	if st.Registry == nil {
		return policies.Default
	}
	return st.Registry
}

// Plan fills st.Specs: policy by policy, population by population, seed
// by seed.
func (st *Study) Plan() {
	st.Specs = st.Specs[:0]
	for _, p := range st.Policies {
		for u := range st.Users {
			seeds := st.Seeds
			if u >= st.Sensitive && st.SensitiveSeeds < len(seeds) {
				seeds = seeds[:st.SensitiveSeeds]
			}
			for _, s := range seeds {
				st.Specs = append(st.Specs, Spec{Policy: p, Users: u, Seed: s})
			}
		}
	}
}

// Check names what is wrong with the study.
func (st *Study) Check() error {
	if err := st.Lab.Check(); err != nil {
		return err
	}
	switch {
	case len(st.Policies) == 0:
		return fmt.Errorf("story: no policies")
	case len(st.Users) == 0:
		return fmt.Errorf("story: no users")
	case len(st.Seeds) == 0:
		return fmt.Errorf("story: no seeds")
	}
	for _, p := range st.Policies {
		if _, ok := st.registry().Lookup(p); !ok {
			return fmt.Errorf("story: unknown policy %q", p)
		}
	}
	for _, u := range st.Users {
		if err := u.Rules.Check(); err != nil {
			return fmt.Errorf("users %s: %w", u.Name, err)
		}
	}
	return nil
}

// Week is the bin of the time series.
const Week = 7 * Day

// Result is one run's outcome (docs/story.md, "What is measured").
type Result struct {
	Policy string
	Users  string
	Seed   int64
	// Jobs and Unfinished (still queued or running at the replay's
	// horizon); Absorbed debug jobs ran in their project's park.
	Jobs, Unfinished, Absorbed int
	Preemptions                int
	// TopShare is, per week of submits, the fraction of the GPU-hours
	// submitted that were declared at the top tier (deadline or
	// interactive); TopShareEnd is its mean over the last four weeks.
	TopShare    []float64
	TopShareEnd float64
	// RaisedEnd is the projects raised at the end; FirstRaise the day of
	// the first raise (−1: none); Changes the declarations' changes.
	RaisedEnd  int
	FirstRaise float64
	Changes    int
	// Waits in hours: all jobs, the urgent training jobs, the debug jobs
	// (launch latency; 0 inside a park), mean and 95th percentile; those
	// never started are censored at the replay's stop.
	MeanWait, UrgentWait, UrgentP95, DebugLatency, DebugP95 float64
	// DebugWeekly is the debug jobs' mean latency per week of submits.
	DebugWeekly []float64
	// Over the submit span, as fractions of the pool's GPU-hours:
	// Utilization (held, parks included), IdleWhileWaiting (free GPUs
	// that waiting jobs asked for), OwnersIdle (free GPUs within the
	// entitlements of teams below them while another team waited),
	// Squatted (parked GPUs that ran no debug job).
	Utilization, IdleWhileWaiting, OwnersIdle, Squatted float64
	// SquattedGPUHours is Squatted in GPU-hours; Parks the parks held.
	SquattedGPUHours float64
	Parks            int
	// UsageRatio is each team's GPU-hours held over the span ÷ its
	// entitlement × pool × span (team order of the lab).
	UsageRatio []float64
}

// Label names a run: "budget strategic s3".
func (st *Study) Label(sp Spec) string {
	return fmt.Sprintf("%s %s s%d", sp.Policy, st.Users[sp.Users].Name, sp.Seed)
}

// Run replays run i of st.Specs.
func (st *Study) Run(i int) (Result, error) {
	r, _, err := st.RunSpec(st.Specs[i])
	return r, err
}

// Replayed is a run's replay, for the per-job records.
type Replayed struct {
	W     *Workload
	Run   *trace.Run
	users *users
}

// RunSpec replays one spec: the seed's lab under the policy (its trace
// knobs, the lab's entitlements, the study's restart rule, priority
// preempting), with the population's users on the machine.
func (st *Study) RunSpec(sp Spec) (Result, *Replayed, error) {
	fail := func(err error) (Result, *Replayed, error) {
		return Result{}, nil, fmt.Errorf("story %s: %w", st.Label(sp), err)
	}
	w, err := st.Lab.Generate(sp.Seed)
	if err != nil {
		return fail(err)
	}
	reg := st.registry()
	knobs := reg.TraceKnobs()
	rs := st.Restart
	knobs.Restart = &rs
	budget.Slot.Edit(&knobs).Restart = rs
	a, err := tracestudy.Allocator(reg, w.Workload, tracestudy.Spec{Policy: sp.Policy, Knobs: knobs}, nil)
	if err != nil {
		return fail(err)
	}
	pop := st.Users[sp.Users]
	u := newUsers(w, pop.Rules, sp.Policy, sp.Seed)
	horizon := int64(30 * Day)
	run, err := trace.Replay(w.Workload, a, trace.ReplayOptions{Actor: u, Recorder: u, Horizon: horizon})
	if err != nil {
		return fail(err)
	}
	res := measure(w, run, u, st.Lab)
	res.Policy, res.Users, res.Seed = sp.Policy, pop.Name, sp.Seed
	return res, &Replayed{W: w, Run: run, users: u}, nil
}

// measure computes a run's outcome from the job records and the users'
// books.
func measure(w *Workload, run *trace.Run, u *users, lab Lab) Result {
	r := Result{Jobs: len(w.Jobs), Unfinished: run.UnfinishedJobs, Preemptions: run.Preemptions, FirstRaise: -1}
	span := int64(lab.Days) * Day
	weeks := int((span + Week - 1) / Week)
	topGS, allGS := make([]float64, weeks), make([]float64, weeks)
	dbgSum, dbgN := make([]float64, weeks), make([]float64, weeks)
	var all, urgent, debug []float64
	for j := range w.Jobs {
		jb := &w.Jobs[j]
		wk := min(int(jb.Submit/Week), weeks-1)
		gs := float64(jb.GPUs) * float64(jb.Run) / 3600
		cls := u.declared[j]
		if cls == policy.AnyClass {
			cls = jb.Class // never filed (absorbed before)
		}
		allGS[wk] += gs
		if cls == policy.Deadline || cls == policy.Interactive {
			topGS[wk] += gs
		}
		start := u.start[j]
		if start < 0 {
			start = run.Stop
		}
		wait := float64(start-jb.Submit) / 3600
		all = append(all, wait)
		switch {
		case w.Kind[j] == Debug:
			debug = append(debug, wait)
			dbgSum[wk] += wait
			dbgN[wk]++
		case jb.Class == policy.Deadline:
			urgent = append(urgent, wait)
		}
		if u.absorbed[j] {
			r.Absorbed++
		}
	}
	r.TopShare = make([]float64, weeks)
	r.DebugWeekly = make([]float64, weeks)
	for k := range weeks {
		r.TopShare[k] = ratio(topGS[k], allGS[k])
		r.DebugWeekly[k] = ratio(dbgSum[k], dbgN[k])
	}
	last := r.TopShare[max(0, weeks-4):]
	r.TopShareEnd = mean(last)
	r.MeanWait = mean(all)
	r.UrgentWait, r.UrgentP95 = mean(urgent), quantile(urgent, 0.95)
	r.DebugLatency, r.DebugP95 = mean(debug), quantile(debug, 0.95)
	raised := make([]bool, len(w.Campaigns))
	for _, ch := range u.Levels {
		if ch.Raised && r.FirstRaise < 0 {
			r.FirstRaise = float64(ch.T) / Day
		}
		raised[ch.Project] = ch.Raised
	}
	r.Changes = len(u.Levels)
	for _, x := range raised {
		if x {
			r.RaisedEnd++
		}
	}
	occ := occupancy(w, run, u, span)
	pool := float64(w.Pool) * float64(span) / 3600
	r.Utilization = occ.held / pool
	r.IdleWhileWaiting = occ.idleWaiting / pool
	r.OwnersIdle = occ.ownersIdle / pool
	r.SquattedGPUHours = occ.squatted
	r.Squatted = occ.squatted / pool
	r.Parks = occ.parks
	for g := range w.Groups {
		r.UsageRatio = append(r.UsageRatio, occ.team[g]/(w.Groups[g].Share*pool))
	}
	return r
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

func mean(xs []float64) float64 {
	s, n := 0.0, 0
	for _, x := range xs {
		if !math.IsNaN(x) {
			s += x
			n++
		}
	}
	return ratio(s, float64(n))
}

// quantile is the q-quantile of xs by the nearest rank (NaN: none).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	k := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(k, len(s)-1))]
}
