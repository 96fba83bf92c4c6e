package arrive

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/priority"
	"github.com/bursar-hpc/bursar/policy/registry"
	"github.com/bursar-hpc/bursar/trace"
	"github.com/bursar-hpc/bursar/tracestudy"
)

// Modes: how the agents reach a site policy (docs/studies.md §3.3, §6.14).
const (
	// ModeUnmetered: the agents submit to the site's policy as its users do.
	ModeUnmetered = "unmetered"
	// ModeMetered: each agent request must first pass Bursar's cap and
	// token checks for the agent's envelope (model.md §5); the site's users
	// are never metered.
	ModeMetered = "metered"
)

// Modes are the modes in the order the study runs and reports them.
var Modes = []string{ModeUnmetered, ModeMetered}

// BursarLine is the policy that is a line of its own, not a site policy
// with two modes: Bursar as the whole site policy, users metered too. Its
// runs carry ModeMetered (the broker meters the agents itself; the site's
// gate is not applied a second time).
const BursarLine = policies.Bursar

// Defaults of the study (docs/studies.md §5, §6.14).
const (
	DefaultMaxK       = 8
	DefaultStay       = 2 * tracestudy.Day
	DefaultAgentScale = 1.0
	DefaultAgentShare = 0.1
	// AgentsGroup is the name of the agents' group in the entitlements.
	AgentsGroup = "agents"
)

// Spec is one run: a policy, the mode the agents reach it in, k agents,
// the seed and the window. At k = 0 there are no agents: Mode is "" and
// Seed 0, and the one run stands for both modes and every seed.
type Spec struct {
	Policy string
	Mode   string
	K      int
	Seed   int64
	Window int
}

// Study is every run of agents-arrive: each policy × mode × k × window ×
// seed on the windows of one log.
type Study struct {
	// Policies in report order; BursarLine among them is its own line.
	Policies []string
	MaxK     int
	Seeds    []int64
	// Windows and Loads are the replayed windows and their workloads
	// (tracestudy.Windows, LoadWindows); Recorded and Options give the
	// usage the log records before each window to fairshare and budget
	// (docs/studies.md §6.16).
	Windows  []tracestudy.Window
	Loads    []*trace.Workload
	Recorded []tracestudy.Recorded
	Options  trace.Options
	// LeadInSpec is the `lead_in` knob ("": none, auto: by the rule, or a
	// duration) and LeadIn the lead-in every window replays before it
	// (Lay; nil: none), as in the trace studies (tracestudy.PickLeadIn).
	LeadInSpec string
	LeadIn     *tracestudy.LeadIn
	// WindowRule names the rule that set the number of windows
	// (tracestudy.WindowRule; "" one window), declared in summary.json.
	WindowRule string
	// Knobs are the policies' knobs (policies.TraceKnobs with the trace
	// mapping's restart); Entitlements, History and priority's preempt are
	// set per run.
	Knobs policies.Knobs
	// Registry is the registry the policies are found in: constructors,
	// lookbacks and costs (nil: policies.Default).
	Registry *registry.Registry
	// Stay is how long the agents act, in seconds; AgentScale sizes them
	// and AgentShare is their group's entitlement (§6.14).
	Stay       int64
	AgentScale float64
	AgentShare float64
	// AgentPhi is φ, the agents' Σ max(R, g) ÷ (AgentShare × pool): their
	// envelopes against their entitlement (Envelop; 1 by default).
	AgentPhi float64
	// JobsDir, when set, receives each run's per-job records
	// (JobsDir/<RunFileLabel>/jobs.parquet and jobs.csv).
	JobsDir string
	// Specs are the runs, in order (Plan fills them).
	Specs []Spec
}

// Plan fills st.Specs: for each policy, k = 0 once per window, then per
// mode (the site policies both, BursarLine metered only) each k = 1 …
// MaxK on each window with each seed.
func (st *Study) Plan() {
	st.Specs = st.Specs[:0]
	for _, p := range st.Policies {
		for wi := range st.Windows {
			st.Specs = append(st.Specs, Spec{Policy: p, Window: wi})
		}
		for _, m := range ModesOf(p) {
			for k := 1; k <= st.MaxK; k++ {
				for wi := range st.Windows {
					for _, sd := range st.Seeds {
						st.Specs = append(st.Specs, Spec{Policy: p, Mode: m, K: k, Seed: sd, Window: wi})
					}
				}
			}
		}
	}
}

// ModesOf is the modes policy p is run in: both for a site policy, only
// metered for BursarLine.
func ModesOf(p string) []string {
	if p == BursarLine {
		return []string{ModeMetered}
	}
	return Modes
}

// Check says what is wrong with the study's settings, naming the knob.
func (st *Study) Check() error {
	switch {
	case len(st.Policies) == 0:
		return fmt.Errorf("agents-arrive: no policies")
	case len(st.Windows) == 0 || len(st.Loads) != len(st.Windows):
		return fmt.Errorf("agents-arrive: %d windows with %d workloads", len(st.Windows), len(st.Loads))
	case len(st.Seeds) == 0:
		return fmt.Errorf("agents-arrive: no seeds")
	case st.MaxK < 0:
		return fmt.Errorf("agents-arrive: max_k %d: must not be negative", st.MaxK)
	case st.Stay < 2:
		return fmt.Errorf("agents-arrive: stay %d s: must be at least 2 s", st.Stay)
	case !(st.AgentShare > 0 && st.AgentShare < 1):
		return fmt.Errorf("agents-arrive: agent_share %v: must be above 0 and below 1", st.AgentShare)
	case !(st.AgentScale > 0 && st.AgentScale <= MaxAgentScale):
		return fmt.Errorf("agents-arrive: agent_scale %v: must be above 0 and at most %v", st.AgentScale, float64(MaxAgentScale))
	case !(st.AgentPhi > 0 && st.AgentPhi <= MaxAgentPhi):
		return fmt.Errorf("agents-arrive: agent_phi %v: must be above 0 and at most %v", st.AgentPhi, float64(MaxAgentPhi))
	}
	for wi, win := range st.Windows {
		if _, err := Arrival(win, st.Loads[wi], st.Stay, 1); err != nil {
			return err
		}
	}
	if st.MaxK > 0 {
		for _, w := range st.Loads {
			if _, err := st.Agents(st.MaxK, w.Pool); err != nil {
				return err
			}
		}
	}
	return nil
}

// Agents is the k agents on a pool as the study sizes them: the paper's
// cast scaled by agent_scale (Cast), their envelopes then sized from
// their entitlement (Envelop: φ = agent_phi).
func (st *Study) Agents(k, pool int) ([]engine.Campaign, error) {
	cast, err := Cast(k, pool, int(st.Stay), st.AgentScale)
	if err != nil {
		return nil, err
	}
	Envelop(cast, st.AgentShare, st.AgentPhi, pool)
	g := 0
	for i := range cast {
		g += cast[i].Guaranteed
	}
	if g > pool {
		return nil, fmt.Errorf("agents cast: %d agents at agent_phi %v guarantee %d GPUs, more than the pool of %d", k, st.AgentPhi, g, pool)
	}
	return cast, nil
}

// MaxAgentScale bounds agent_scale: past it the guarantees of a few agents
// exceed any pool the study replays.
const MaxAgentScale = 64

// arrivalStream separates the arrival draw from every other use of a seed.
const arrivalStream = 0x61727269766521 // "arrive!"

// Arrival is the second of the log at which the agents of seed arrive in
// window win (docs/studies.md §6.14): after the warm-up, drawn uniformly
// from the whole seconds [max(measured start, first submit), measured end
// − stay], so that their whole stay falls among the measured submits. The
// draw is the seed's and the window's (PCG seeded with both): the same
// seed arrives at another time in another window. It is an error when the
// stay does not fit in the measured interval.
func Arrival(win tracestudy.Window, w *trace.Workload, stay, seed int64) (int64, error) {
	lo := win.MeasureFrom
	if len(w.Jobs) > 0 {
		lo = max(lo, w.Jobs[0].Submit)
	}
	hi := win.MeasureUntil - stay
	if hi < lo {
		return 0, fmt.Errorf("window %s: a stay of %s does not fit in its measured submits [%d, %d) s (after the warm-up, before the cool-down): shorten the stay or lengthen the window",
			win.Label(), fmtSeconds(stay), lo, win.MeasureUntil)
	}
	r := rand.New(rand.NewPCG(uint64(seed), arrivalStream^uint64(win.Index)))
	return lo + r.Int64N(hi-lo+1), nil
}

func fmtSeconds(s int64) string {
	switch {
	case s%tracestudy.Day == 0:
		return fmt.Sprintf("%d d", s/tracestudy.Day)
	case s%3600 == 0:
		return fmt.Sprintf("%d h", s/3600)
	}
	return fmt.Sprintf("%d s", s)
}

// AgentResult is what one agent got during its stay.
type AgentResult struct {
	Name string
	Kind string // engine.AgentStorm, AgentNaive or AgentAdaptive
	// GPUSeconds is what it held, summed over its stay.
	GPUSeconds int64
	// Science and Completed are a science agent's science and tasks.
	Science   float64
	Completed int
	// Requests it made; Refused by the site's meter (metered mode; under
	// the bursar line the broker queues a throttled request, which is
	// granted or expires); Denied by the policy at once; Granted and
	// Expired as the policy's journal records them.
	Requests, Refused, Denied, Granted, Expired int
}

// ServedFraction is the agent's granted requests ÷ the requests it made
// (NaN with none): a request refused by the meter, denied, expired behind
// a backlog or still pending when the agent left was not served.
func (a *AgentResult) ServedFraction() float64 {
	if a.Requests == 0 {
		return nan
	}
	return float64(a.Granted) / float64(a.Requests)
}

// Users is the trace users' outcome over a set of measured jobs.
type Users struct {
	// Jobs by state (docs/studies.md §4.1) and the served fraction of
	// their work.
	Jobs, Served, Denied, Unfinished int
	ServedWork                       float64
	// Stats are the waits and bounded slowdowns of the jobs not denied,
	// censored at the replay's stop for the unfinished ones.
	Stats trace.Stats
}

func usersOf(s *trace.Summary) Users {
	return Users{Jobs: s.Jobs, Served: s.Served, Denied: s.Denied, Unfinished: s.Unfinished, ServedWork: s.ServedWork, Stats: s.All}
}

// During is the users' outcome over the jobs submitted while the agents
// of one seed were on the machine, [Arrive, Arrive + stay).
type During struct {
	Seed   int64
	Arrive int64
	Users  Users
}

// Result is one run's outcome.
type Result struct {
	Policy string
	Mode   string
	K      int
	Seed   int64
	// Window is the index of the window; From and Until its submits.
	Window      int
	From, Until int64
	// Arrive is the second of the log the agents arrived (−1 at k = 0).
	Arrive int64
	// Users is over the window's measured jobs (the warm-up and cool-down
	// left out).
	Users Users
	// During is over the jobs submitted during the agents' stay: one
	// entry, the run's own, at k ≥ 1; at k = 0 one per study seed, over
	// the stay that seed's agents have at k ≥ 1 (the k = 0 run stands for
	// every seed).
	During []During
	// Converged is false when the replay stopped at its horizon with jobs
	// unfinished (§4.3): its numbers are lower bounds.
	Converged bool
	// Preemptions, LostGPUSeconds and Ticks are over the whole replay.
	Preemptions    int
	LostGPUSeconds int64
	Ticks          int64
	// Stranded counts the trace jobs Bursar denied because they are wider
	// than the pool less the agents' guarantees (the bursar line).
	Stranded int
	// PreloadedUsage is the log's recorded jobs the policy started with
	// (fairshare, budget; §6.16).
	PreloadedUsage int
	// Agents are what each agent got, in cast order.
	Agents []AgentResult
}

// RunFileLabel names a run's folder under jobs/: "fifo-metered-k3-s1-w1",
// "fifo-k0-w0" (windows count from 0, as in runs.csv).
func RunFileLabel(sp Spec) string {
	if sp.K == 0 {
		return fmt.Sprintf("%s-k0-w%d", sp.Policy, sp.Window)
	}
	return fmt.Sprintf("%s-%s-k%d-s%d-w%d", sp.Policy, sp.Mode, sp.K, sp.Seed, sp.Window)
}

// Run replays run i of st.Specs.
func (st *Study) Run(i int) (Result, error) {
	sp := st.Specs[i]
	r, run, w, err := st.RunSpec(sp)
	if err != nil {
		return Result{}, err
	}
	if st.JobsDir != "" {
		rows := tracestudy.JobRows(w, run.Records, st.Windows[sp.Window], run.Stop)
		if err := tracestudy.WriteJobs(st.JobsDir, RunFileLabel(sp), rows); err != nil {
			return Result{}, err
		}
	}
	return r, nil
}

// RunSpec replays one spec: the window's workload under the policy
// (policy.DefaultConfig at the trace's pool, st.Knobs, the entitlements
// with the agents' group, the log's usage before the window), with the
// spec's agents on the machine during their stay. It returns the replay
// and the workload it replayed too.
func (st *Study) RunSpec(sp Spec) (Result, *trace.Run, *trace.Workload, error) {
	fail := func(err error) (Result, *trace.Run, *trace.Workload, error) {
		return Result{}, nil, nil, fmt.Errorf("%s: %w", Label(sp, st.Windows[sp.Window]), err)
	}
	if sp.Window < 0 || sp.Window >= len(st.Windows) {
		return fail(fmt.Errorf("window %d of %d", sp.Window, len(st.Windows)))
	}
	switch {
	case sp.K == 0 && sp.Mode != "":
		return fail(fmt.Errorf("mode %q at k = 0 (no agents: no mode)", sp.Mode))
	case sp.K > 0 && !slices.Contains(ModesOf(sp.Policy), sp.Mode):
		return fail(fmt.Errorf("mode %q (want one of %v for %s)", sp.Mode, ModesOf(sp.Policy), sp.Policy))
	case sp.K < 0:
		return fail(fmt.Errorf("k %d: must not be negative", sp.K))
	}
	win, w0 := st.Windows[sp.Window], st.Loads[sp.Window]
	cast, err := st.Agents(sp.K, w0.Pool)
	if err != nil {
		return fail(err)
	}
	w := w0
	if sp.K > 0 {
		w = WithAgentShare(w0, st.AgentShare)
	}
	knobs := st.Knobs
	knobs.Entitlements = Entitlements(w, cast, st.AgentShare)
	// priority's preempt follows the log's header (docs/studies.md §6.14).
	p := w.Preemptible()
	priority.Slot.Edit(&knobs).Preempt = &p
	if st.Recorded != nil {
		knobs.History = tracestudy.History(st.Recorded, w, st.Options, st.registry().Lookback(sp.Policy, knobs))
	}
	a, err := st.registry().New(sp.Policy, policy.DefaultConfig(w.Pool), knobs)
	if err == nil {
		a, err = tracestudy.SiteMetered(sp.Policy, a, w, knobs.Restart)
	}
	if err != nil {
		return fail(err)
	}
	r := Result{Policy: sp.Policy, Mode: sp.Mode, K: sp.K, Seed: sp.Seed, Window: win.Index, From: win.From, Until: win.Until,
		Arrive: -1, PreloadedUsage: len(knobs.History)}
	arrive := int64(0)
	if sp.K > 0 {
		if r.Arrive, err = Arrival(win, w, st.Stay, sp.Seed); err != nil {
			return fail(err)
		}
		// The replay's tick t is second t + first submit − 1 of the log;
		// the agents' first tick is arrive + 1.
		arrive = r.Arrive - w.Jobs[0].Submit
	}
	// The bursar line's broker meters the agents itself: the site's gate
	// would apply its cap a second time.
	gate := sp.Mode == ModeMetered && sp.Policy != BursarLine
	ag := newAgents(cast, sp.Seed, int(arrive), int(st.Stay), gate)
	run, err := trace.Replay(w, a, trace.ReplayOptions{Actor: ag, Recorder: ag})
	if err != nil {
		return fail(err)
	}
	sum, err := trace.Measure(w, run, trace.Interval{From: win.MeasureFrom, To: win.MeasureUntil})
	if err != nil {
		return fail(err)
	}
	r.Users, r.Converged = usersOf(sum), run.Converged
	r.Preemptions, r.LostGPUSeconds, r.Ticks, r.Stranded = run.Preemptions, run.LostGPUSeconds, run.Ticks, ag.stranded
	during := func(seed, at int64) error {
		d, err := trace.Measure(w, run, trace.Interval{From: at, To: at + st.Stay})
		if err != nil {
			return err
		}
		r.During = append(r.During, During{Seed: seed, Arrive: at, Users: usersOf(d)})
		return nil
	}
	if sp.K == 0 {
		for _, sd := range st.Seeds {
			at, err := Arrival(win, w, st.Stay, sd)
			if err == nil {
				err = during(sd, at)
			}
			if err != nil {
				return fail(err)
			}
		}
	} else if err := during(sp.Seed, r.Arrive); err != nil {
		return fail(err)
	}
	r.Agents = ag.got
	if ag.crew != nil {
		for i := range r.Agents {
			r.Agents[i].Science, r.Agents[i].Completed = ag.crew.Science(i)
		}
	}
	return r, run, w, nil
}

// WithAgentShare is w with every group's and campaign's entitlement
// scaled by 1 − share: the users' entitlements scaled to what the agents'
// group leaves (docs/studies.md §6.14). Under Bursar a user's R is its
// entitlement × pool, so the users' rates shrink by the same factor. w
// itself is not changed (its jobs are shared, read only).
func WithAgentShare(w *trace.Workload, share float64) *trace.Workload {
	c := *w
	c.Campaigns = slices.Clone(w.Campaigns)
	c.Groups = slices.Clone(w.Groups)
	for i := range c.Campaigns {
		c.Campaigns[i].Share *= 1 - share
	}
	for i := range c.Groups {
		c.Groups[i].Share *= 1 - share
	}
	return &c
}

// Entitlements are w's groups and, with agents, one more group named
// AgentsGroup entitled to share of the pool, split equally among them
// (docs/studies.md §6.14); w's own shares are already scaled to the rest
// (WithAgentShare). Without agents they are w's own.
func Entitlements(w *trace.Workload, cast []engine.Campaign, share float64) *baseline.Entitlements {
	e := w.Entitlements()
	if len(cast) == 0 {
		return e
	}
	g := baseline.GroupShare{Name: AgentsGroup, Share: share}
	for i := range cast {
		g.Members = append(g.Members, baseline.MemberShare{Name: cast[i].Name, Share: share / float64(len(cast))})
	}
	// The members' equal parts may sum one ulp away from the group's
	// share; the group's share is their sum, as Validate checks.
	g.Share = 0
	for _, m := range g.Members {
		g.Share += m.Share
	}
	e.Groups = append(e.Groups, g)
	return e
}

// Label names a run in plans and errors: "fifo metered k=3 seed 1 w1 days
// 300–307", "fifo k=0 w0 days 252–259".
func Label(sp Spec, win tracestudy.Window) string {
	if sp.K == 0 {
		return fmt.Sprintf("%s k=0 %s", sp.Policy, win.Label())
	}
	return fmt.Sprintf("%s %s k=%d seed %d %s", sp.Policy, sp.Mode, sp.K, sp.Seed, win.Label())
}

// byRule is Lay's n for windows of days whose number follows the default
// rule, min(12, ⌊span ÷ D⌋) (tracestudy.DefaultWindowCount).
const byRule = -1

// Lay lays the study out on the log at path ("" the embedded excerpt)
// read with opt (a window in opt.From, opt.Until narrows the log): n
// disjoint windows of days each spread over it (docs/studies.md §6.16;
// n = 0: one window, the whole log or opt's; n = byRule: as many as the
// default rule gives), each measured less warmup and cooldown seconds of
// submits, their workloads, and the log's own record for the policies
// with a usage memory. It returns the log as read (for the plan's shared
// inputs).
func (st *Study) Lay(path string, opt trace.Options, n int, days, warmup, cooldown int64) (*trace.Workload, error) {
	w, err := tracestudy.LoadRange(path, opt)
	if err != nil {
		return nil, err
	}
	if len(w.Jobs) == 0 {
		return nil, fmt.Errorf("%s: no replayable jobs", w.Name)
	}
	st.Options = opt
	if n == 0 {
		win, err := tracestudy.WholeWindow(w, opt, warmup, cooldown)
		if err != nil {
			return nil, fmt.Errorf("warm-up, cool-down: %w", err)
		}
		st.Windows, st.Loads, st.WindowRule = []tracestudy.Window{win}, []*trace.Workload{w}, ""
	} else {
		st.WindowRule = tracestudy.WindowRule(configs.WindowsSpec{N: max(n, 0), Days: days})
		if st.Windows, err = tracestudy.LayWindows(w, opt, max(n, 0), days*tracestudy.Day, warmup, cooldown); err != nil {
			return nil, fmt.Errorf("windows %dx%dd: %w", n, days, err)
		}
		if st.LeadInSpec != "" {
			li, err := tracestudy.PickLeadIn(w, st.Windows, st.LeadInSpec)
			if err != nil {
				return nil, fmt.Errorf("lead-in %w", err)
			}
			li.Apply(st.Windows)
			st.LeadIn = &li
		}
		if st.Loads, err = tracestudy.LoadWindows(path, opt, st.Windows); err != nil {
			return nil, fmt.Errorf("windows %dx%dd: %w", n, days, err)
		}
	}
	st.Recorded = nil
	for _, p := range st.Policies {
		if st.registry().Lookback(p, st.Knobs) > 0 {
			if st.Recorded, err = tracestudy.ReadRecorded(path, w.Pool); err != nil {
				return nil, err
			}
			break
		}
	}
	return w, nil
}

// DefaultPolicies are the site policies of the contrast, then the bursar
// line.
var DefaultPolicies = []string{"fifo", "priority", "static", "static-share", "fairshare", "quota", "quota-fair", "budget", BursarLine}

// NewStudy is a study at the defaults (docs/studies.md §5, §6.14): every
// policy, k = 0 … 8, the seeds 1 … DefaultSeeds, the agents staying 2
// days, agent_scale 1, agent_share 0.1, the trace studies' knobs. Lay it
// on a log next.
func NewStudy() *Study {
	return &Study{Policies: append([]string{}, DefaultPolicies...), MaxK: DefaultMaxK, Seeds: seedsUpTo(DefaultSeeds),
		Knobs: policies.TraceKnobs(), Stay: DefaultStay, AgentScale: DefaultAgentScale, AgentShare: DefaultAgentShare,
		AgentPhi: DefaultAgentPhi}
}

// registry is the registry the study's policies are found in.
func (st *Study) registry() *registry.Registry {
	if st.Registry != nil {
		return st.Registry
	}
	return policies.Default
}
