package engine

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bursar-hpc/bursar/policy"
)

// Field is one numeric field of a campaign as a scenario file writes it
// (docs/scenarios.md): its key (dotted inside io, inference and window),
// its kind ("int" or "float"), the agent kinds that have it (nil: every
// campaign, an envelope field) and whether it may be written `pool`.
type Field struct {
	Name   string
	Kind   string
	Agents []string
	// Pool: the value may be the word pool (the pool's size, whatever it
	// is); IsPool and SetPool read and write that choice.
	Pool  bool
	Usage string
	get   func(*Campaign) float64
	set   func(*Campaign, float64)
}

// Get reads the field (NaN for a flow field of a campaign without that
// flow).
func (f *Field) Get(c *Campaign) float64 { return f.get(c) }

// Set writes the field. A flow field of a campaign without that flow gives
// it one (zero elsewhere); flows are replaced, never written through, so
// that copies of a cast stay independent.
func (f *Field) Set(c *Campaign, v float64) { f.set(c, v) }

// IsPool says whether the field is written `pool` in c.
func (f *Field) IsPool(c *Campaign) bool {
	switch f.Name {
	case "sustained":
		return c.SustainedIsPool
	case "burst_ceiling":
		return c.CeilingIsPool
	}
	return false
}

// SetPool makes the field the pool's size (or a plain number again).
func (f *Field) SetPool(c *Campaign, on bool) {
	switch f.Name {
	case "sustained":
		c.SustainedIsPool = on
	case "burst_ceiling":
		c.CeilingIsPool = on
	}
}

// AppliesTo says whether a campaign of the agent kind has the field.
func (f *Field) AppliesTo(agent string) bool {
	return f.Agents == nil || slices.Contains(f.Agents, agent)
}

func intField(name, usage string, agents []string, p func(*Campaign) *int) Field {
	return Field{Name: name, Kind: "int", Agents: agents, Usage: usage,
		get: func(c *Campaign) float64 { return float64(*p(c)) },
		set: func(c *Campaign, v float64) { *p(c) = int(v) }}
}

func floatField(name, usage string, agents []string, p func(*Campaign) *float64) Field {
	return Field{Name: name, Kind: "float", Agents: agents, Usage: usage,
		get: func(c *Campaign) float64 { return *p(c) },
		set: func(c *Campaign, v float64) { *p(c) = v }}
}

func flowField(dim, part, usage string) Field {
	ptr := func(c *Campaign) **policy.Flow {
		if dim == "io" {
			return &c.IO
		}
		return &c.Inference
	}
	pick := func(f *policy.Flow) *float64 {
		switch part {
		case "rate":
			return &f.Rate
		case "bucket":
			return &f.Bucket
		}
		return &f.Ceiling
	}
	return Field{Name: dim + "." + part, Kind: "float", Usage: usage,
		get: func(c *Campaign) float64 {
			if f := *ptr(c); f != nil {
				return *pick(f)
			}
			return math.NaN()
		},
		set: func(c *Campaign, v float64) {
			var f policy.Flow
			if old := *ptr(c); old != nil {
				f = *old
			}
			*pick(&f) = v
			*ptr(c) = &f
		}}
}

var (
	withGPUs     = []string{AgentVictim, AgentAdaptive, AgentNaive, AgentStorm, AgentProbe}
	withPeriod   = []string{AgentVictim, AgentStorm, AgentProbe}
	withLease    = AgentKinds
	onlyStorm    = []string{AgentStorm}
	onlyScience  = []string{AgentAdaptive, AgentNaive}
	onlyAdaptive = []string{AgentAdaptive}
	onlyProbe    = []string{AgentProbe}
	onlyBackfill = []string{AgentBackfill}
)

// CampaignFields are a campaign's numeric fields, in the order a scenario
// file writes them: the envelope, then the agent's parameters.
var CampaignFields = []Field{
	floatField("budget", "credit budget", nil, func(c *Campaign) *float64 { return &c.Budget }),
	intField("guaranteed", "guaranteed GPUs g", nil, func(c *Campaign) *int { return &c.Guaranteed }),
	{Name: "sustained", Kind: "float", Pool: true, Usage: "sustained rate R, GPUs (or pool)",
		get: func(c *Campaign) float64 { return c.Sustained },
		set: func(c *Campaign, v float64) { c.Sustained, c.SustainedIsPool = v, false }},
	{Name: "burst_ceiling", Kind: "int", Pool: true, Usage: "burst ceiling, GPUs (or pool)",
		get: func(c *Campaign) float64 { return float64(c.BurstCeiling) },
		set: func(c *Campaign, v float64) { c.BurstCeiling, c.CeilingIsPool = int(v), false }},
	floatField("bucket", "GPU token bucket B, GPU-s", nil, func(c *Campaign) *float64 { return &c.Bucket }),
	flowField("io", "rate", "io sustained rate, GB/s"),
	flowField("io", "bucket", "io bucket, GB"),
	flowField("io", "ceiling", "io ceiling, GB/s"),
	flowField("inference", "rate", "inference sustained rate, tokens/s"),
	flowField("inference", "bucket", "inference bucket, tokens"),
	flowField("inference", "ceiling", "inference ceiling, tokens/s"),
	intField("gpus", "request size or target, GPUs", withGPUs, func(c *Campaign) *int { return &c.GPUs }),
	intField("period", "request period, s", withPeriod, func(c *Campaign) *int { return &c.Period }),
	intField("lease", "lease duration, s", withLease, func(c *Campaign) *int { return &c.Lease }),
	intField("window.start", "first tick of the storm's window", onlyStorm, func(c *Campaign) *int { return &c.Window.Start }),
	intField("window.end", "first tick after the storm's window", onlyStorm, func(c *Campaign) *int { return &c.Window.End }),
	floatField("inference_demand", "inference used per tick in the window, tokens/s", onlyStorm, func(c *Campaign) *float64 { return &c.InferenceDemand }),
	intField("tasks", "tasks to work through", onlyScience, func(c *Campaign) *int { return &c.Tasks }),
	intField("stream", "task list drawn from seed + stream", onlyScience, func(c *Campaign) *int { return &c.Stream }),
	intField("min_gpus", "smallest want, GPUs", onlyAdaptive, func(c *Campaign) *int { return &c.MinGPUs }),
	intField("starved_gpus", "smallest want cap when io-starved, GPUs", onlyAdaptive, func(c *Campaign) *int { return &c.StarvedGPUs }),
	intField("hot_horizon", "seconds of hot work one GPU should cover", onlyAdaptive, func(c *Campaign) *int { return &c.HotHorizon }),
	intField("opportunistic_max", "largest opportunistic side request, GPUs", onlyAdaptive, func(c *Campaign) *int { return &c.OpportunisticMax }),
	intField("opportunistic_keep", "free GPUs an opportunistic request leaves", onlyAdaptive, func(c *Campaign) *int { return &c.OpportunisticKeep }),
	intField("opportunistic_lease", "opportunistic lease duration, s", onlyAdaptive, func(c *Campaign) *int { return &c.OpportunisticLease }),
	intField("give_up", "seconds after which the probe gives up", onlyProbe, func(c *Campaign) *int { return &c.GiveUp }),
	intField("headroom", "free GPUs the backfill leaves idle", onlyBackfill, func(c *Campaign) *int { return &c.Headroom }),
	intField("min_request", "smallest request, GPUs", onlyBackfill, func(c *Campaign) *int { return &c.MinRequest }),
}

// CampaignFieldByName finds a campaign field.
func CampaignFieldByName(name string) (*Field, bool) {
	for i := range CampaignFields {
		if CampaignFields[i].Name == name {
			return &CampaignFields[i], true
		}
	}
	return nil, false
}

// DefaultCampaign is the paper's campaign of an agent kind (its envelope
// and parameters), which a scenario file's campaign starts from: only the
// name is required.
func DefaultCampaign(agent string) (Campaign, bool) {
	s := DefaultScenario()
	s.Probe = true
	for _, c := range PaperCast(&s) {
		if c.Agent == agent {
			c.Group = ""
			return c, true
		}
	}
	return Campaign{}, false
}

// scenarioPaths are the scenario-wide fields a path may name.
var scenarioPaths = []string{"pool", "io_capacity", "inference_capacity", "grace", "leaky", "seed", "ticks", "sample_every", "window.start", "window.end"}

// PathKnob is a knob for any field of a scenario by path: a scenario-wide
// field (pool, grace, window.start, …) or campaigns.NAME.FIELD (for
// instance campaigns.storm2.window.start or campaigns.adaptive-sci.bucket).
// s is the scenario the path must exist in; it must have an explicit cast
// for a campaign path. Unlike the storm_start knob, window.start moves
// only the metrics' window, not the storms'.
func PathKnob(s *Scenario, path string) (*Knob, error) {
	if slices.Contains(scenarioPaths, path) {
		switch path {
		case "window.start", "window.end":
			p := func(s *Scenario) *int { return &s.StormStart }
			if path == "window.end" {
				p = func(s *Scenario) *int { return &s.StormEnd }
			}
			k := intKnob(path, "the metrics' storm window", p)
			return &k, nil
		}
		k, _ := KnobByName(path)
		return k, nil
	}
	rest, ok := strings.CutPrefix(path, "campaigns.")
	if !ok {
		return nil, fmt.Errorf("no scenario field %q (scenario fields: %s; a campaign's: campaigns.NAME.FIELD)", path, strings.Join(scenarioPaths, ", "))
	}
	if s.Cast == nil {
		return nil, fmt.Errorf("%s: a campaign path needs a scenario file (print the paper's with `bursar-sweep run --print-scenario [knob flags] > paper.yaml` and name it with scenario: paper.yaml)", path)
	}
	// The campaign name may itself hold dots: try the longest known name.
	var name, field string
	for i := range s.Cast {
		n := s.Cast[i].Name
		if f, ok := strings.CutPrefix(rest, n+"."); ok && len(n) > len(name) {
			name, field = n, f
		}
	}
	if name == "" {
		names := make([]string, len(s.Cast))
		for i := range s.Cast {
			names[i] = s.Cast[i].Name
		}
		return nil, fmt.Errorf("%s: no campaign of that name (campaigns: %s)", path, strings.Join(names, ", "))
	}
	idx := slices.IndexFunc(s.Cast, func(c Campaign) bool { return c.Name == name })
	f, ok := CampaignFieldByName(field)
	if !ok || !f.AppliesTo(s.Cast[idx].Agent) {
		var have []string
		for i := range CampaignFields {
			if CampaignFields[i].AppliesTo(s.Cast[idx].Agent) {
				have = append(have, CampaignFields[i].Name)
			}
		}
		return nil, fmt.Errorf("%s: a %s campaign has no field %q (its fields: %s)", path, s.Cast[idx].Agent, field, strings.Join(have, ", "))
	}
	find := func(s *Scenario) int {
		return slices.IndexFunc(s.Cast, func(c Campaign) bool { return c.Name == name })
	}
	k := Knob{Name: path, Usage: f.Usage, Kind: f.Kind,
		get: func(s *Scenario) float64 {
			if i := find(s); i >= 0 {
				return f.get(&s.Cast[i])
			}
			return math.NaN()
		},
		set: func(s *Scenario, v float64) {
			if i := find(s); i >= 0 {
				s.editCast()
				f.set(&s.Cast[i], v)
			}
		}}
	return &k, nil
}
