package engine

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/bursar-hpc/bursar/policy"
)

// The agent kinds a campaign may have (model.md §7).
const (
	AgentVictim   = "victim"
	AgentAdaptive = "adaptive"
	AgentNaive    = "naive"
	AgentStorm    = "storm"
	AgentProbe    = "probe"
	AgentBackfill = "backfill"
)

// AgentKinds lists the agent kinds in the paper's registration order.
var AgentKinds = []string{AgentVictim, AgentAdaptive, AgentNaive, AgentStorm, AgentProbe, AgentBackfill}

// Window is a half-open range of ticks [Start, End).
type Window struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Campaign is one campaign of a scenario's cast: its envelope (what the
// broker grants it) and its agent (how it behaves). Fields that an agent
// kind does not use are zero. A Campaign holds no pointer that is ever
// written through: IO and Inference are replaced, never modified, so that
// copies of a cast can be edited independently (see Scenario.editCast).
type Campaign struct {
	Name string
	// Group is the display group: campaigns with the same group are summed
	// in the series, the report and the replay ("" = the campaign's name).
	Group string

	// The envelope (model.md §1).
	Guaranteed   int
	Sustained    float64
	BurstCeiling int
	Bucket       float64
	Budget       float64
	Class        policy.Class
	// SustainedIsPool and CeilingIsPool make the rate and the burst
	// ceiling the pool's size, whatever it is (the backfill's envelope).
	SustainedIsPool, CeilingIsPool bool
	IO, Inference                  *policy.Flow

	// The agent (model.md §7).
	Agent string
	// GPUs is the agent's request size or target: the victim's request,
	// the probe's measurement size, the storm's and naive-sci's target of
	// outstanding GPUs, adaptive-sci's largest want.
	GPUs int
	// Period is the victim's, the storm's and the probe's request period.
	Period int
	// Lease is the duration of the agent's (agent-burst or interactive)
	// leases; the backfill's opportunistic ones.
	Lease int
	// Window is the storm's active window.
	Window Window
	// Tasks and Stream: a science campaign works through Tasks tasks drawn
	// from seed + Stream (stream 0 for both of the paper's campaigns,
	// which therefore share one list).
	Tasks  int
	Stream int
	// Headroom: free GPUs the backfill leaves idle; MinRequest: the
	// smallest request it makes.
	Headroom   int
	MinRequest int
	// Adaptive-sci: its smallest want, its want cap when io-starved, the
	// seconds of hot work one GPU should cover, and its opportunistic
	// side requests (at most OpportunisticMax, leaving OpportunisticKeep
	// free, for OpportunisticLease seconds).
	MinGPUs            int
	StarvedGPUs        int
	HotHorizon         int
	OpportunisticMax   int
	OpportunisticKeep  int
	OpportunisticLease int
	// InferenceDemand is the storm's inference use per tick, tokens/s.
	InferenceDemand float64
	// GiveUp is the probe's patience: it records GiveUp + 1 and stops.
	GiveUp int
}

// GroupName is the campaign's display group.
func (c *Campaign) GroupName() string {
	if c.Group != "" {
		return c.Group
	}
	return c.Name
}

// Envelope is the campaign's broker envelope for a pool of the given size.
func (c *Campaign) Envelope(pool int) policy.Envelope {
	env := policy.Envelope{
		Name: c.Name, Budget: c.Budget, Guaranteed: c.Guaranteed,
		Sustained: c.Sustained, BurstCeiling: c.BurstCeiling, Bucket: c.Bucket,
		Class: c.Class, IO: c.IO, Inference: c.Inference,
	}
	if c.SustainedIsPool {
		env.Sustained = float64(pool)
	}
	if c.CeilingIsPool {
		env.BurstCeiling = pool
	}
	return env
}

func isScience(agent string) bool { return agent == AgentAdaptive || agent == AgentNaive }

// The paper's flow envelopes (model.md §6).
var (
	scienceIO              = policy.Flow{Rate: 6, Bucket: 3600, Ceiling: 16}
	scienceInference       = policy.Flow{Rate: 500, Bucket: 100000, Ceiling: 2000}
	stormInferenceEnvelope = policy.Flow{Rate: 50, Bucket: 5000, Ceiling: 500}
)

// scienceCampaign is a paper science campaign; flows holds its io and
// inference envelopes (the caller allocates them, several at once).
func scienceCampaign(name, agent string, s *Scenario, flows *[2]policy.Flow) Campaign {
	flows[0], flows[1] = scienceIO, scienceInference
	c := Campaign{
		Name: name, Agent: agent, Budget: 20000, Guaranteed: 64,
		Sustained: s.SciRate, BurstCeiling: s.SciBurst, Bucket: s.SciBucket,
		Class:     policy.AgentBurst,
		IO:        &flows[0],
		Inference: &flows[1],
		Lease:     scienceLease, Tasks: s.Tasks,
	}
	if agent == AgentAdaptive {
		c.GPUs, c.MinGPUs, c.StarvedGPUs, c.HotHorizon = adaptiveMaxWant, adaptiveMinWant, adaptiveStarvedMin, hotHorizon
		c.OpportunisticMax, c.OpportunisticKeep, c.OpportunisticLease = opportunisticMax, opportunisticSpare, opportunisticLease
	} else {
		c.GPUs = naiveTarget
	}
	return c
}

func stormCampaign(i int, s *Scenario, inference *policy.Flow) Campaign {
	*inference = stormInferenceEnvelope
	return Campaign{
		Name: stormName(i), Group: "storm", Agent: AgentStorm, Budget: 8000, Guaranteed: 16,
		Sustained: s.StormRate, BurstCeiling: s.StormBurst, Bucket: s.StormBucket,
		Class:     policy.AgentBurst,
		Inference: inference,
		GPUs:      stormTarget, Period: stormPeriod, Lease: stormLease,
		Window: Window{s.StormStart, s.StormEnd}, InferenceDemand: stormInference,
	}
}

func probeCampaign() Campaign {
	return Campaign{
		Name: "probe", Agent: AgentProbe, Budget: 1e9, Sustained: probeGPUs, BurstCeiling: probeGPUs, Bucket: 1e9,
		Class: policy.AgentBurst, GPUs: probeGPUs, Period: probePeriod, Lease: probeLease, GiveUp: probeGiveUp,
	}
}

// PaperCast is the cast the knobs describe (model.md §6): victim,
// adaptive-sci, naive-sci, the storms (storm, storm2, …, one display group),
// the probe when on, and the backfill.
func PaperCast(s *Scenario) []Campaign {
	cast := make([]Campaign, 0, 5+s.Storms)
	// Every flow envelope of the cast in one allocation (a sweep builds a
	// cast per run).
	flows := make([]policy.Flow, 4+s.Storms)
	cast = append(cast, Campaign{
		Name: "victim", Agent: AgentVictim, Budget: 5000, Guaranteed: 32, Sustained: 32,
		BurstCeiling: VictimBurstCeiling, Bucket: 60000, Class: policy.Interactive,
		GPUs: victimGPUs, Period: victimPeriod, Lease: victimLease,
	})
	cast = append(cast, scienceCampaign("adaptive-sci", AgentAdaptive, s, (*[2]policy.Flow)(flows[0:2])),
		scienceCampaign("naive-sci", AgentNaive, s, (*[2]policy.Flow)(flows[2:4])))
	for i := range s.Storms {
		cast = append(cast, stormCampaign(i, s, &flows[4+i]))
	}
	if s.Probe {
		cast = append(cast, probeCampaign())
	}
	return append(cast, Campaign{
		Name: "backfill", Agent: AgentBackfill, Budget: 1e9, SustainedIsPool: true, CeilingIsPool: true,
		Bucket: 1e9, Class: policy.Opportunistic, Headroom: s.Headroom, MinRequest: backfillMinRequest, Lease: backfillLease,
	})
}

// Explicit returns the scenario with its cast written out: the paper's
// cast built from the knobs when Cast is nil. Running it gives the same
// run; from then on the knobs edit the cast.
func (s Scenario) Explicit() Scenario {
	if s.Cast == nil {
		s.Cast = PaperCast(&s)
		for i := range s.Cast {
			if s.Cast[i].Envelope(s.Pool).BurstCeiling > s.Pool {
				s.AllowBurstAbovePool = true
			}
		}
	}
	return s
}

// cast is the campaigns a run registers.
func (s *Scenario) cast() []Campaign {
	if s.Cast != nil {
		return s.Cast
	}
	return PaperCast(s)
}

// editCast gives s a private copy of its cast before an edit, so that
// scenarios copied by value (a sweep's grid points) never share one.
func (s *Scenario) editCast() {
	s.Cast = slices.Clone(s.Cast)
}

// castGet reads a cast knob: the first campaign of one of the agent kinds
// whose value is read, NaN when the cast has none (the knob does not apply).
func castGet(s *Scenario, field func(*Scenario) float64, get func(*Campaign) float64, agents ...string) float64 {
	if s.Cast == nil {
		return field(s)
	}
	for i := range s.Cast {
		if slices.Contains(agents, s.Cast[i].Agent) {
			return get(&s.Cast[i])
		}
	}
	return math.NaN()
}

// castSet writes a cast knob into every campaign of the agent kinds.
func castSet(s *Scenario, set func(*Campaign), agents ...string) {
	if s.Cast == nil {
		return
	}
	s.editCast()
	for i := range s.Cast {
		if slices.Contains(agents, s.Cast[i].Agent) {
			set(&s.Cast[i])
		}
	}
}

// setStorms makes the cast hold n storm campaigns: the last ones go, or
// copies of the last storm (of the knobs' storm when there is none) named
// storm, storm2, … join after it.
func setStorms(s *Scenario, n int) {
	if s.Cast == nil {
		return
	}
	s.editCast()
	var storms []int
	for i := range s.Cast {
		if s.Cast[i].Agent == AgentStorm {
			storms = append(storms, i)
		}
	}
	for len(storms) > n {
		last := storms[len(storms)-1]
		s.Cast = slices.Delete(s.Cast, last, last+1)
		storms = storms[:len(storms)-1]
	}
	for k := len(storms); k < n; k++ {
		c := stormCampaign(k, s, new(policy.Flow))
		at := 0
		if len(storms) > 0 {
			c = s.Cast[storms[len(storms)-1]]
			c.Name = stormName(k)
			at = storms[len(storms)-1] + 1
		} else {
			for i := range s.Cast {
				if a := s.Cast[i].Agent; a == AgentVictim || isScience(a) {
					at = i + 1
				}
			}
		}
		s.Cast = slices.Insert(s.Cast, at, c)
		storms = append(storms, at)
	}
}

// setProbe adds the paper's probe before the first backfill (or at the
// end), or removes every probe.
func setProbe(s *Scenario, on bool) {
	if s.Cast == nil {
		return
	}
	s.editCast()
	if !on {
		s.Cast = slices.DeleteFunc(s.Cast, func(c Campaign) bool { return c.Agent == AgentProbe })
		return
	}
	if slices.ContainsFunc(s.Cast, func(c Campaign) bool { return c.Agent == AgentProbe }) {
		return
	}
	at := len(s.Cast)
	for i := range s.Cast {
		if s.Cast[i].Agent == AgentBackfill {
			at = i
			break
		}
	}
	s.Cast = slices.Insert(s.Cast, at, probeCampaign())
}

func countAgents(s *Scenario, agent string) float64 {
	n := 0
	for i := range s.Cast {
		if s.Cast[i].Agent == agent {
			n++
		}
	}
	return float64(n)
}

// validateCast checks an explicit cast; every error names the campaign
// and the field.
func (s *Scenario) validateCast() error {
	bad := func(c *Campaign, field, format string, a ...any) error {
		return fmt.Errorf("%w: campaign %s: %s: %s", ErrInvalidScenario, c.Name, field, fmt.Sprintf(format, a...))
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if len(s.Cast) == 0 {
		return fmt.Errorf("%w: campaigns: the cast is empty", ErrInvalidScenario)
	}
	seen := map[string]int{}
	guaranteed := 0
	for i := range s.Cast {
		c := &s.Cast[i]
		if c.Name == "" {
			return fmt.Errorf("%w: campaigns[%d]: name is empty", ErrInvalidScenario, i)
		}
		if c.Name == "overbooked" {
			return bad(c, "name", "the name is reserved for the report's overbooking proof")
		}
		if j, dup := seen[c.Name]; dup {
			return bad(c, "name", "duplicate name (campaigns[%d] and campaigns[%d])", j, i)
		}
		seen[c.Name] = i
		if !slices.Contains(AgentKinds, c.Agent) {
			return bad(c, "agent", "unknown agent %q (want one of %v)", c.Agent, AgentKinds)
		}
		env := c.Envelope(s.Pool)
		switch {
		case c.Guaranteed < 0:
			return bad(c, "guaranteed", "must not be negative, got %d", c.Guaranteed)
		case !finite(env.Sustained) || env.Sustained < 0:
			return bad(c, "sustained", "must be a finite number ≥ 0, got %v", env.Sustained)
		case env.BurstCeiling < c.Guaranteed:
			return bad(c, "burst_ceiling", "%d is below the guarantee of %d GPUs", env.BurstCeiling, c.Guaranteed)
		case env.BurstCeiling > s.Pool && !s.AllowBurstAbovePool:
			return bad(c, "burst_ceiling", "%d GPUs is above the pool of %d (write pool, or allow_burst_above_pool: true if you mean it)", env.BurstCeiling, s.Pool)
		case !finite(c.Bucket) || c.Bucket < 0:
			return bad(c, "bucket", "must be a finite number ≥ 0, got %v", c.Bucket)
		case !finite(c.Budget) || c.Budget < 0:
			return bad(c, "budget", "must be a finite number ≥ 0, got %v", c.Budget)
		case !c.Class.Valid():
			return bad(c, "class", "unknown service class")
		}
		for _, f := range []struct {
			name string
			f    *policy.Flow
		}{{"io", c.IO}, {"inference", c.Inference}} {
			if f.f == nil {
				continue
			}
			for _, x := range []struct {
				name string
				v    float64
			}{{"rate", f.f.Rate}, {"bucket", f.f.Bucket}, {"ceiling", f.f.Ceiling}} {
				if !finite(x.v) || x.v < 0 {
					return bad(c, f.name+"."+x.name, "must be a finite number ≥ 0, got %v", x.v)
				}
			}
		}
		if err := validateAgent(c, s.Pool, bad); err != nil {
			return err
		}
		guaranteed += c.Guaranteed
		if guaranteed > s.Pool {
			return bad(c, "guaranteed", "the guarantees up to this campaign sum to %d GPUs, more than the pool of %d (guarantees are never overbooked)", guaranteed, s.Pool)
		}
	}
	return nil
}

func validateAgent(c *Campaign, pool int, bad func(*Campaign, string, string, ...any) error) error {
	pos := func(field string, v int) error {
		if v < 1 {
			return bad(c, field, "must be at least 1, got %d", v)
		}
		return nil
	}
	nonneg := func(field string, v int) error {
		if v < 0 {
			return bad(c, field, "must not be negative, got %d", v)
		}
		return nil
	}
	var errs []error
	switch c.Agent {
	case AgentVictim, AgentProbe:
		errs = append(errs, pos("gpus", c.GPUs), pos("period", c.Period), pos("lease", c.Lease))
		if c.Agent == AgentProbe {
			errs = append(errs, nonneg("give_up", c.GiveUp))
		}
	case AgentStorm:
		errs = append(errs, pos("gpus", c.GPUs), pos("period", c.Period), pos("lease", c.Lease), nonneg("window.start", c.Window.Start))
		if c.Window.End <= c.Window.Start {
			errs = append(errs, bad(c, "window", "[start, end) = [%d, %d) is empty or inverted", c.Window.Start, c.Window.End))
		}
		if math.IsNaN(c.InferenceDemand) || math.IsInf(c.InferenceDemand, 0) || c.InferenceDemand < 0 {
			errs = append(errs, bad(c, "inference_demand", "must be a finite number ≥ 0, got %v", c.InferenceDemand))
		}
	case AgentNaive, AgentAdaptive:
		errs = append(errs, pos("lease", c.Lease), nonneg("gpus", c.GPUs), nonneg("tasks", c.Tasks), nonneg("stream", c.Stream))
		if c.Tasks > MaxTasks {
			errs = append(errs, bad(c, "tasks", "must be at most %d, got %d (the task list is drawn before the run starts)", MaxTasks, c.Tasks))
		}
		if c.Agent == AgentAdaptive {
			errs = append(errs, nonneg("min_gpus", c.MinGPUs), nonneg("starved_gpus", c.StarvedGPUs), pos("hot_horizon", c.HotHorizon),
				nonneg("opportunistic_max", c.OpportunisticMax), nonneg("opportunistic_keep", c.OpportunisticKeep), pos("opportunistic_lease", c.OpportunisticLease))
			if c.IO == nil {
				errs = append(errs, bad(c, "io", "an adaptive agent reads its io envelope: give one"))
			}
		}
	case AgentBackfill:
		// A headroom above the pool runs (Warnings).
		errs = append(errs, nonneg("headroom", c.Headroom), nonneg("min_request", c.MinRequest), pos("lease", c.Lease))
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// stormName is the paper's name of storm i: storm, storm2, storm3, …
func stormName(i int) string {
	if i == 0 {
		return "storm"
	}
	return "storm" + strconv.Itoa(i+1)
}
