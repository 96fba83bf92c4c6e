package engine

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/bursar-hpc/bursar/platform"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/registry"
)

// Scenario is one simulated run: the scenario-wide fields and either the
// twenty knobs of model.md §6, which describe the paper's cast (Cast nil),
// or an explicit cast (Cast set, as a scenario file gives; see
// docs/scenarios.md). The zero value is not useful; start from
// DefaultScenario or configs.ParseScenario. Write one out with
// configs.FormatScenario (its JSON form leaves the cast out).
type Scenario struct {
	Pool              int     `json:"pool"`
	IOCapacity        float64 `json:"io_capacity"`
	InferenceCapacity float64 `json:"inference_capacity"`
	Headroom          int     `json:"headroom"`
	Seed              int64   `json:"seed"`
	Tasks             int     `json:"tasks"`
	// Leaky selects grant-time-only enforcement instead of prepaid leases.
	Leaky       bool    `json:"leaky"`
	Grace       int     `json:"grace"`
	SciRate     float64 `json:"sci_rate"`
	SciBucket   float64 `json:"sci_bucket"`
	SciBurst    int     `json:"sci_burst"`
	Storms      int     `json:"storms"`
	StormRate   float64 `json:"storm_rate"`
	StormBucket float64 `json:"storm_bucket"`
	StormBurst  int     `json:"storm_burst"`
	StormStart  int     `json:"storm_start"`
	StormEnd    int     `json:"storm_end"`
	Probe       bool    `json:"probe"`
	Ticks       int     `json:"ticks"`
	SampleEvery int     `json:"sample_every"`

	// Cast, when set, is the list of campaigns the run registers, in
	// order, replacing the paper's cast that the campaign knobs describe
	// (PaperCast); the knobs then edit it (see Knobs). A scenario file
	// always has one. StormStart and StormEnd remain the window the
	// in-window metrics measure.
	Cast []Campaign `json:"-"`
	// Policy names the admission policy: "" or "bursar" is the broker of
	// package policy, any other name in Policies a baseline of
	// policy/policies (docs/studies.md §2). A scenario file's `policy:` key and
	// `bursar-sweep run --policy` set it. A run whose scenario names a
	// policy (even "bursar") also measures the policy-study metrics
	// (StudyKeys).
	Policy string `json:"-"`
	// PolicyKnobs are the baselines' knobs (nil: policies.DefaultKnobs()).
	PolicyKnobs *policies.Knobs `json:"-"`
	// Policies is the registry Policy is found in (nil: policies.Default);
	// a config read with another registry sets it (a test's own policy).
	Policies *registry.Registry `json:"-"`
	// AllowBurstAbovePool lets a campaign's burst ceiling exceed the pool
	// (the broker then caps its grants at the pool). A scenario file must
	// say so; the paper's knobs allow it (sci_burst 384 on a 256-GPU pool
	// runs in the prototype), and Explicit sets it when they need it.
	AllowBurstAbovePool bool `json:"-"`
	// Platform, if set, is the machine's nodes (docs/platform.md): every
	// policy schedules on them; its GPUs must be the pool. nil: the pool
	// is a number. A config's `platform:` key and --platform set it.
	Platform *platform.Spec `json:"-"`
}

// Policies lists the admission policies a scenario may name by default
// (policies.Default; a scenario with its own registry, Scenario.Policies,
// may name its policies).
var Policies = policies.Names

// DefaultScenario is the published scenario with seed 7.
func DefaultScenario() Scenario {
	return Scenario{
		Pool: 512, IOCapacity: 28, InferenceCapacity: 5000, Headroom: 160,
		Seed: 7, Tasks: 3000, Grace: 60,
		SciRate: 128, SciBucket: 300000, SciBurst: 384,
		Storms: 1, StormRate: 64, StormBucket: 150000, StormBurst: 384,
		StormStart: 3600, StormEnd: 5400,
		Ticks: 7200, SampleEvery: 5,
	}
}

// Knob describes one scenario knob: its name (as in configs, CSV columns
// and CLI flags), what it means, and how to read and write it.
type Knob struct {
	Name  string
	Usage string
	// Kind is "int", "float" or "bool".
	Kind string
	get  func(*Scenario) float64
	set  func(*Scenario, float64)
	// lo and hi bound the values Set takes (knobRanges); hi == lo means
	// unbounded.
	lo, hi float64
}

// Baseline is the name of the baseline admission policy the scenario runs
// under, or "" for the Bursar broker (Policy "" or "bursar"): what the
// report, the replay page and metrics.json name instead of Bursar.
func (s *Scenario) Baseline() string {
	if s.Policy == "" || s.Policy == "bursar" {
		return ""
	}
	return s.Policy
}

// Range is the values the knob takes, lo to hi inclusive (ok false: any
// value of its kind).
func (k *Knob) Range() (lo, hi float64, ok bool) { return k.lo, k.hi, k.hi > k.lo }

// Get returns the knob's value in s as a float64 (bools are 0 or 1).
func (k *Knob) Get(s *Scenario) float64 { return k.get(s) }

// Format writes the knob's value as it appears in CSV and summaries.
func (k *Knob) Format(s *Scenario) string {
	v := k.get(s)
	if math.IsNaN(v) {
		return "null" // the knob does not apply to this cast
	}
	switch k.Kind {
	case "bool":
		return strconv.FormatBool(v != 0)
	case "int":
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Set assigns a value to the knob, refusing one of the wrong kind (a
// fraction for an int knob, anything but 0/1 for a bool).
func (k *Knob) Set(s *Scenario, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("knob %s: %v is not a finite number", k.Name, v)
	}
	switch k.Kind {
	case "int":
		if v != math.Trunc(v) || math.Abs(v) > 1<<53 {
			return fmt.Errorf("knob %s takes a whole number, got %v", k.Name, v)
		}
	case "bool":
		if v != 0 && v != 1 {
			return fmt.Errorf("knob %s takes true or false, got %v", k.Name, v)
		}
	}
	if lo, hi, ok := k.Range(); ok {
		num := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
		switch {
		case v < lo && lo == 0:
			return fmt.Errorf("knob %s must not be negative, got %s", k.Name, num(v))
		case v < lo:
			return fmt.Errorf("knob %s must be at least %s, got %s", k.Name, num(lo), num(v))
		case v > hi:
			return fmt.Errorf("knob %s must be at most %s, got %s", k.Name, num(hi), num(v))
		}
	}
	k.set(s, v)
	return nil
}

// knobRanges bound every numeric knob, so that no value reaches the
// simulation that would make it fail (a negative count indexes nothing) or
// never end (a run's cost grows with ticks, storms, tasks and the pool).
// The ceilings are far above any study here: the paper runs 7,200 ticks of
// 512 GPUs, one storm and 3,000 tasks per science campaign. Cross-knob
// rules (the guarantees within the pool, the storm window inside the run,
// headroom within the pool) are Validate's.
// MaxTasks bounds a science campaign's task list, whether set by the
// tasks knob or by a campaign's own tasks field: a task list is drawn and
// sorted up front, so an unbounded count would exhaust memory before the
// first tick (a campaign field of 7.7e10 did, in a fuzzed scenario file).
const MaxTasks = 1_000_000

var knobRanges = map[string][2]float64{
	"pool":               {1, 1 << 20},
	"io_capacity":        {0, 1e12},
	"inference_capacity": {0, 1e12},
	"headroom":           {0, 1 << 20},
	"seed":               {0, 1 << 53},
	"tasks":              {0, MaxTasks},
	"grace":              {0, 864_000},
	"sci_rate":           {0, 1 << 20},
	"sci_bucket":         {0, 1e12},
	"sci_burst":          {0, 1 << 20},
	"storms":             {0, 1000},
	"storm_rate":         {0, 1 << 20},
	"storm_bucket":       {0, 1e12},
	"storm_burst":        {0, 1 << 20},
	"storm_start":        {0, 864_000},
	"storm_end":          {0, 864_000},
	"ticks":              {1, 864_000},
	"sample_every":       {1, 864_000},
}

func init() {
	for i := range Knobs {
		if r, ok := knobRanges[Knobs[i].Name]; ok {
			Knobs[i].lo, Knobs[i].hi = r[0], r[1]
		}
	}
}

func intKnob(name, usage string, p func(*Scenario) *int) Knob {
	return Knob{Name: name, Usage: usage, Kind: "int",
		get: func(s *Scenario) float64 { return float64(*p(s)) },
		set: func(s *Scenario, v float64) { *p(s) = int(v) }}
}

func floatKnob(name, usage string, p func(*Scenario) *float64) Knob {
	return Knob{Name: name, Usage: usage, Kind: "float",
		get: func(s *Scenario) float64 { return *p(s) },
		set: func(s *Scenario, v float64) { *p(s) = v }}
}

func boolKnob(name, usage string, p func(*Scenario) *bool) Knob {
	return Knob{Name: name, Usage: usage, Kind: "bool",
		get: func(s *Scenario) float64 {
			if *p(s) {
				return 1
			}
			return 0
		},
		set: func(s *Scenario, v float64) { *p(s) = v != 0 }}
}

// castKnob is a knob that, once the cast is explicit, reads the first
// campaign of the given agent kinds and writes every one of them; on the
// knob form (Cast nil) it reads and writes field.
func castKnob(name, usage, kind string, field func(*Scenario) *float64Ref, get func(*Campaign) float64, set func(*Campaign, float64), agents ...string) Knob {
	return Knob{Name: name, Usage: usage, Kind: kind,
		get: func(s *Scenario) float64 {
			return castGet(s, func(s *Scenario) float64 { return field(s).get() }, get, agents...)
		},
		set: func(s *Scenario, v float64) {
			field(s).set(v)
			castSet(s, func(c *Campaign) { set(c, v) }, agents...)
		}}
}

// float64Ref reads and writes one knob field of either type.
type float64Ref struct {
	i *int
	f *float64
}

func (r float64Ref) get() float64 {
	if r.i != nil {
		return float64(*r.i)
	}
	return *r.f
}

func (r float64Ref) set(v float64) {
	if r.i != nil {
		*r.i = int(v)
		return
	}
	*r.f = v
}

func intRef(p *int) *float64Ref       { return &float64Ref{i: p} }
func floatRef(p *float64) *float64Ref { return &float64Ref{f: p} }

// Knobs lists every scenario knob in a fixed order. On an explicit cast
// (Scenario.Cast set) the campaign knobs edit the cast: sci_* every
// science campaign, storm_* every storm, storms and probe add or remove
// campaigns, storm_start and storm_end move the window and every storm's;
// a knob with no campaign to read (storm_rate without a storm) reads NaN.
var Knobs = []Knob{
	intKnob("pool", "GPUs in the pool", func(s *Scenario) *int { return &s.Pool }),
	floatKnob("io_capacity", "facility filesystem bandwidth, GB/s", func(s *Scenario) *float64 { return &s.IOCapacity }),
	floatKnob("inference_capacity", "facility inference capacity, tokens/s", func(s *Scenario) *float64 { return &s.InferenceCapacity }),
	castKnob("headroom", "free GPUs the backfill leaves idle", "int", func(s *Scenario) *float64Ref { return intRef(&s.Headroom) },
		func(c *Campaign) float64 { return float64(c.Headroom) }, func(c *Campaign, v float64) { c.Headroom = int(v) }, AgentBackfill),
	{Name: "seed", Usage: "random seed of the task lists", Kind: "int",
		get: func(s *Scenario) float64 { return float64(s.Seed) },
		set: func(s *Scenario, v float64) { s.Seed = int64(v) }},
	castKnob("tasks", "tasks per science campaign", "int", func(s *Scenario) *float64Ref { return intRef(&s.Tasks) },
		func(c *Campaign) float64 { return float64(c.Tasks) }, func(c *Campaign, v float64) { c.Tasks = int(v) }, AgentAdaptive, AgentNaive),
	boolKnob("leaky", "grant-time-only enforcement instead of prepaid leases", func(s *Scenario) *bool { return &s.Leaky }),
	intKnob("grace", "preemption grace period, s", func(s *Scenario) *int { return &s.Grace }),
	castKnob("sci_rate", "science sustained rate R, GPUs", "float", func(s *Scenario) *float64Ref { return floatRef(&s.SciRate) },
		func(c *Campaign) float64 { return c.Sustained }, func(c *Campaign, v float64) { c.Sustained = v }, AgentAdaptive, AgentNaive),
	castKnob("sci_bucket", "science bucket B, GPU-s", "float", func(s *Scenario) *float64Ref { return floatRef(&s.SciBucket) },
		func(c *Campaign) float64 { return c.Bucket }, func(c *Campaign, v float64) { c.Bucket = v }, AgentAdaptive, AgentNaive),
	castKnob("sci_burst", "science burst ceiling, GPUs", "int", func(s *Scenario) *float64Ref { return intRef(&s.SciBurst) },
		func(c *Campaign) float64 { return float64(c.BurstCeiling) }, func(c *Campaign, v float64) { c.BurstCeiling = int(v) }, AgentAdaptive, AgentNaive),
	{Name: "storms", Usage: "number of storm campaigns", Kind: "int",
		get: func(s *Scenario) float64 {
			if s.Cast == nil {
				return float64(s.Storms)
			}
			return countAgents(s, AgentStorm)
		},
		set: func(s *Scenario, v float64) { s.Storms = int(v); setStorms(s, int(v)) }},
	castKnob("storm_rate", "storm sustained rate R, GPUs", "float", func(s *Scenario) *float64Ref { return floatRef(&s.StormRate) },
		func(c *Campaign) float64 { return c.Sustained }, func(c *Campaign, v float64) { c.Sustained = v }, AgentStorm),
	castKnob("storm_bucket", "storm bucket B, GPU-s", "float", func(s *Scenario) *float64Ref { return floatRef(&s.StormBucket) },
		func(c *Campaign) float64 { return c.Bucket }, func(c *Campaign, v float64) { c.Bucket = v }, AgentStorm),
	castKnob("storm_burst", "storm burst ceiling, GPUs", "int", func(s *Scenario) *float64Ref { return intRef(&s.StormBurst) },
		func(c *Campaign) float64 { return float64(c.BurstCeiling) }, func(c *Campaign, v float64) { c.BurstCeiling = int(v) }, AgentStorm),
	{Name: "storm_start", Usage: "first tick of the storm window", Kind: "int",
		get: func(s *Scenario) float64 { return float64(s.StormStart) },
		set: func(s *Scenario, v float64) {
			s.StormStart = int(v)
			castSet(s, func(c *Campaign) { c.Window.Start = int(v) }, AgentStorm)
		}},
	{Name: "storm_end", Usage: "first tick after the storm window", Kind: "int",
		get: func(s *Scenario) float64 { return float64(s.StormEnd) },
		set: func(s *Scenario, v float64) {
			s.StormEnd = int(v)
			castSet(s, func(c *Campaign) { c.Window.End = int(v) }, AgentStorm)
		}},
	{Name: "probe", Usage: "add the 128-GPU latency probe campaign", Kind: "bool",
		get: func(s *Scenario) float64 {
			if s.Cast == nil {
				return b2f(s.Probe)
			}
			return b2f(countAgents(s, AgentProbe) > 0)
		},
		set: func(s *Scenario, v float64) { s.Probe = v != 0; setProbe(s, v != 0) }},
	intKnob("ticks", "simulated seconds", func(s *Scenario) *int { return &s.Ticks }),
	intKnob("sample_every", "ticks between samples", func(s *Scenario) *int { return &s.SampleEvery }),
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// KnobByName finds a knob.
func KnobByName(name string) (*Knob, bool) {
	for i := range Knobs {
		if Knobs[i].Name == name {
			return &Knobs[i], true
		}
	}
	return nil, false
}

// KnobNames lists the knob names, for error messages.
func KnobNames() string {
	names := make([]string, len(Knobs))
	for i := range Knobs {
		names[i] = Knobs[i].Name
	}
	return strings.Join(names, ", ")
}

// ErrInvalidScenario wraps every scenario validation error.
var ErrInvalidScenario = errors.New("invalid scenario")

// Validate checks every knob and says which one is wrong.
func (s *Scenario) Validate() error {
	if err := s.validateFields(); err != nil {
		return err
	}
	// The policy's knobs last: they name campaigns of a valid cast.
	if err := s.validatePolicyKnobs(); err != nil {
		return fmt.Errorf("%w: policy: %v", ErrInvalidScenario, err)
	}
	return nil
}

func (s *Scenario) validateFields() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidScenario, fmt.Sprintf(format, a...))
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if names := s.policies().Known(); s.Policy != "" && !slices.Contains(names, s.Policy) {
		return bad("policy: unknown admission policy %q (want one of %v)", s.Policy, names)
	}
	if p := s.Platform; p != nil {
		if err := p.Validate(); err != nil {
			return bad("platform: %v", err)
		}
		if p.GPUs() != s.Pool {
			return bad("platform: %s has %d GPUs, the pool %d (a platform's GPUs are the pool)", p, p.GPUs(), s.Pool)
		}
	}
	if s.Cast != nil {
		return s.validateExplicit()
	}
	switch {
	case s.Pool < 1:
		return bad("pool must be at least 1 GPU, got %d", s.Pool)
	case !finite(s.IOCapacity) || s.IOCapacity < 0:
		return bad("io_capacity must be a finite number ≥ 0, got %v", s.IOCapacity)
	case !finite(s.InferenceCapacity) || s.InferenceCapacity < 0:
		return bad("inference_capacity must be a finite number ≥ 0, got %v", s.InferenceCapacity)
	case s.Headroom < 0:
		return bad("headroom must not be negative, got %d", s.Headroom)
	case s.Seed < 0:
		return bad("seed must not be negative, got %d", s.Seed)
	case s.Tasks < 0:
		return bad("tasks must not be negative, got %d", s.Tasks)
	case s.Grace < 0:
		return bad("grace must not be negative, got %d", s.Grace)
	case !finite(s.SciRate) || s.SciRate < 0:
		return bad("sci_rate must be a finite number ≥ 0, got %v", s.SciRate)
	case !finite(s.SciBucket) || s.SciBucket < 0:
		return bad("sci_bucket must be a finite number ≥ 0, got %v", s.SciBucket)
	case s.SciBurst < 64:
		return bad("sci_burst must be at least the science guarantee of 64 GPUs, got %d", s.SciBurst)
	case s.Storms < 0:
		return bad("storms must not be negative, got %d", s.Storms)
	case !finite(s.StormRate) || s.StormRate < 0:
		return bad("storm_rate must be a finite number ≥ 0, got %v", s.StormRate)
	case !finite(s.StormBucket) || s.StormBucket < 0:
		return bad("storm_bucket must be a finite number ≥ 0, got %v", s.StormBucket)
	case s.StormBurst < 16:
		return bad("storm_burst must be at least the storm guarantee of 16 GPUs, got %d", s.StormBurst)
	case s.StormStart < 0:
		return bad("storm_start must not be negative, got %d", s.StormStart)
	case s.StormEnd <= s.StormStart:
		return bad("the storm window [storm_start, storm_end) = [%d, %d) is empty or inverted", s.StormStart, s.StormEnd)
	case s.Ticks < 1:
		return bad("ticks must be at least 1, got %d", s.Ticks)
	case s.SampleEvery < 1:
		return bad("sample_every must be at least 1, got %d", s.SampleEvery)
	}
	if g := guaranteedSum(s); g > s.Pool {
		return bad("the guarantees (victim 32 + science 2×64 + storms %d×16 = %d GPUs) exceed the pool of %d", s.Storms, g, s.Pool)
	}
	// A headroom above the pool runs (the backfill never fills), as in
	// the prototype: Warnings says so.
	return nil
}

func guaranteedSum(s *Scenario) int { return 32 + 2*64 + 16*s.Storms }

// validateExplicit checks a scenario whose cast is written out: the
// scenario-wide fields, then every campaign.
func (s *Scenario) validateExplicit() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidScenario, fmt.Sprintf(format, a...))
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case s.Pool < 1:
		return bad("pool must be at least 1 GPU, got %d", s.Pool)
	case !finite(s.IOCapacity) || s.IOCapacity < 0:
		return bad("io_capacity must be a finite number ≥ 0, got %v", s.IOCapacity)
	case !finite(s.InferenceCapacity) || s.InferenceCapacity < 0:
		return bad("inference_capacity must be a finite number ≥ 0, got %v", s.InferenceCapacity)
	case s.Seed < 0:
		return bad("seed must not be negative, got %d", s.Seed)
	case s.Grace < 0:
		return bad("grace must not be negative, got %d", s.Grace)
	case s.StormStart < 0:
		return bad("window.start must not be negative, got %d", s.StormStart)
	case s.StormEnd <= s.StormStart:
		return bad("the storm window [start, end) = [%d, %d) is empty or inverted", s.StormStart, s.StormEnd)
	case s.Ticks < 1:
		return bad("ticks must be at least 1, got %d", s.Ticks)
	case s.SampleEvery < 1:
		return bad("sample_every must be at least 1, got %d", s.SampleEvery)
	}
	return s.validateCast()
}

// KnobOfKind is a knob that writes nowhere: it checks a value's kind
// (a whole number for "int", 0 or 1 for "bool", finite for every kind)
// for parsers of fields that are not knobs.
func KnobOfKind(name, kind string) *Knob {
	return &Knob{Name: name, Kind: kind,
		get: func(*Scenario) float64 { return 0 },
		set: func(*Scenario, float64) {}}
}
