package story

import (
	"fmt"
	"math"
	"slices"

	"github.com/bursar-hpc/bursar/hosts"
	"github.com/bursar-hpc/bursar/platform"
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
// Study.Users) and a seed (the lab's jobs, the users' review times and
// the hosts' failures), on a line: the policy as its regime runs it, or a
// variant of the failure process (Line names it).
type Spec struct {
	Policy string
	Users  int
	Seed   int64
	// Line is the name the run is reported under: the policy's, or the
	// policy's with its variant ("budget, contract off").
	Line string
	// Hosts is the failure process on the lab's nodes (nil: none, and
	// the pool is a number).
	Hosts *hosts.Config
}

// line is the spec's line: its Line, or its policy's.
func (sp Spec) line() string {
	if sp.Line == "" {
		return sp.Policy
	}
	return sp.Line
}

// LabHosts is the failure process of the study (docs/story.md, "Hosts
// that fail and drain"): docs/hosts.md's defaults with hard failures and
// degradations each at 0.03 per node-day, ten times Llama 3's per-node
// hardware rate (Meta's research clusters fail far more often per node
// at small scale, docs/hosts.md §2): about 43 of each in 90 days on 16
// nodes, enough drains per run to count interventions.
func LabHosts() hosts.Config {
	c := hosts.Default()
	c.FailPerNodeDay, c.DegradePerNodeDay = 0.03, 0.03
	return c
}

// ContractRegimes are the policies whose regime has the minimum-runtime
// contract: the lab's budgets, and Bursar.
var ContractRegimes = []string{budget.Name, policies.Bursar}

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
	// Platform is the lab's nodes; Hosts, if not nil, their failure
	// process (the contract set per line: on for ContractRegimes).
	Platform platform.Spec
	Hosts    *hosts.Config
	// Contrasts adds the contract's contrast lines (priority with the
	// contract, budget without); HostSensitivity the lines that move the
	// operator's threshold and the minimum runtime (honest users, the
	// sensitivity seeds).
	Contrasts, HostSensitivity bool
	Specs                      []Spec
}

// NewStudy is the study at its defaults: the default lab, the default
// policies, honest and strategic users on seeds 1 … 5 and the
// sensitivity populations on seeds 1 … 3.
func NewStudy() *Study {
	h := LabHosts()
	st := &Study{Lab: DefaultLab(), Policies: slices.Clone(DefaultPolicies), Users: DefaultUsers(),
		Seeds: []int64{1, 2, 3, 4, 5}, Restart: baseline.Restart{Checkpoint: baseline.DefaultCheckpoint},
		Platform: platform.Spec{Nodes: 16, GPUsPerNode: 8}, Hosts: &h, Contrasts: true, HostSensitivity: true}
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

// Plan fills st.Specs: policy by policy (each on its regime's line),
// population by population, seed by seed; then, with hosts, the
// contract's contrast lines and the hosts' sensitivity lines.
func (st *Study) Plan() {
	st.Specs = st.Specs[:0]
	honestAndStrategic := []int{}
	for u := range st.Users {
		if st.Users[u].Name == HonestName || st.Users[u].Name == StrategicName {
			honestAndStrategic = append(honestAndStrategic, u)
		}
	}
	add := func(line, p string, h *hosts.Config, users []int, seeds []int64) {
		for _, u := range users {
			ss := seeds
			if u >= st.Sensitive && st.SensitiveSeeds < len(ss) {
				ss = ss[:st.SensitiveSeeds]
			}
			for _, sd := range ss {
				st.Specs = append(st.Specs, Spec{Policy: p, Users: u, Seed: sd, Line: line, Hosts: h})
			}
		}
	}
	all := make([]int, len(st.Users))
	for u := range all {
		all[u] = u
	}
	for _, p := range st.Policies {
		add(p, p, st.hostsFor(slices.Contains(ContractRegimes, p), nil), all, st.Seeds)
	}
	if st.Hosts == nil {
		return
	}
	if st.Contrasts {
		for _, c := range []struct {
			policy   string
			contract bool
		}{{priority.Name, true}, {budget.Name, false}} {
			if slices.Contains(st.Policies, c.policy) {
				add(c.policy+", contract "+onOff(c.contract), c.policy, st.hostsFor(c.contract, nil), honestAndStrategic, st.Seeds)
			}
		}
	}
	if st.HostSensitivity && st.SensitiveSeeds > 0 {
		// The intervention count turns on the operator's threshold
		// against the jobs' remaining runs (priority, no contract) and on
		// the minimum runtime against the threshold (budget, contract).
		seeds := st.Seeds[:min(st.SensitiveSeeds, len(st.Seeds))]
		honest := honestAndStrategic[:1]
		for _, v := range []struct {
			policy string
			name   string
			edit   func(*hosts.Config)
		}{
			{priority.Name, "threshold 2 h", func(c *hosts.Config) { c.Threshold = 2 * 3600 }},
			{priority.Name, "threshold 24 h", func(c *hosts.Config) { c.Threshold = 24 * 3600 }},
			{budget.Name, "min runtime 12 h", func(c *hosts.Config) { c.MinRuntime = 12 * 3600 }},
			{budget.Name, "threshold 1 h", func(c *hosts.Config) { c.Threshold = 3600 }},
		} {
			if slices.Contains(st.Policies, v.policy) {
				add(v.policy+", "+v.name, v.policy, st.hostsFor(slices.Contains(ContractRegimes, v.policy), v.edit), honest, seeds)
			}
		}
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// hostsFor is the study's failure process with the contract on or off
// and edit applied (nil without hosts).
func (st *Study) hostsFor(contract bool, edit func(*hosts.Config)) *hosts.Config {
	if st.Hosts == nil {
		return nil
	}
	c := *st.Hosts
	c.Contract = contract
	if edit != nil {
		edit(&c)
	}
	return &c
}

// Lines are the lines of the plan, in order.
func (st *Study) Lines() []string {
	var out []string
	for _, sp := range st.Specs {
		if !slices.Contains(out, sp.line()) {
			out = append(out, sp.line())
		}
	}
	return out
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
	if st.Hosts != nil {
		if err := st.Hosts.Validate(); err != nil {
			return fmt.Errorf("story hosts: %w", err)
		}
		if st.Platform.GPUs() != st.Lab.Pool {
			return fmt.Errorf("story: a platform of %d GPUs for a pool of %d", st.Platform.GPUs(), st.Lab.Pool)
		}
	}
	return nil
}

// Week is the bin of the time series.
const Week = 7 * Day

// Result is one run's outcome (docs/story.md, "What is measured").
type Result struct {
	Policy string
	Line   string
	Users  string
	Seed   int64
	// Hosts: whether the run had a failure process, and its tally
	// (docs/hosts.md §4); HostEnded the jobs' leases ended by it and
	// HostLostGPUHours the work they lost.
	Hosts            bool
	Tally            hosts.Tally
	HostEnded        int
	HostLostGPUHours float64
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
	return fmt.Sprintf("%s %s s%d", sp.line(), st.Users[sp.Users].Name, sp.Seed)
}

// Run replays run i of st.Specs.
func (st *Study) Run(i int) (Result, error) {
	r, _, err := st.RunSpec(st.Specs[i])
	return r, err
}

// hostsStream separates the hosts' draws from the lab's and the users'.
const hostsStream = 0x686f737473 // "hosts"

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
	opt := trace.ReplayOptions{Actor: u, Recorder: u, Horizon: 30 * Day}
	if sp.Hosts != nil {
		opt.Platform = st.Platform
		if opt.Hosts, err = hosts.New(*sp.Hosts, st.Platform.Nodes, uint64(sp.Seed)^hostsStream); err != nil {
			return fail(err)
		}
	}
	run, err := trace.Replay(w.Workload, a, opt)
	if err != nil {
		return fail(err)
	}
	res := measure(w, run, u, st.Lab)
	res.Policy, res.Line, res.Users, res.Seed = sp.Policy, sp.line(), pop.Name, sp.Seed
	if sp.Hosts != nil {
		res.Hosts, res.Tally, res.HostEnded = true, run.Hosts, run.HostEnded
		res.HostLostGPUHours = float64(run.HostLostGPUSeconds) / 3600
	}
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
