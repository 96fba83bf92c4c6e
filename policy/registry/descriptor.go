package registry

import (
	"image/color"

	"github.com/bursar-hpc/bursar/policy"
)

// Descriptor is everything the program knows about one allocation policy
// outside the policy's own package. A policy package exports one, by
// convention as `var Policy = registry.Descriptor{…}`, and
// policy/policies.Default lists it (one line); nothing else names the
// policy.
//
// A policy with knobs declares them through a Slot, the typed handle on
// its knobs in a Knobs value (Knobs holds every policy's):
//
//	// Slot is the policy's knobs in a registry.Knobs.
//	var Slot = registry.Slot[Knobs](Name)
//
//	var Policy = registry.Descriptor{
//		Name: Name,
//		Doc:  "first come, first served with EASY backfilling",
//		Knobs: registry.KnobSet{
//			Default: Slot.Default(DefaultKnobs),
//			Keys: []registry.Knob{
//				Slot.Knob("depth", func(k *Knobs, v registry.Value) error {
//					x, err := v.Int()
//					if err == nil && x < 1 {
//						return v.Errorf("depth must be ≥ 1, got %d", x)
//					}
//					k.Depth = x
//					return err
//				}),
//			},
//			Format: Slot.Format(func(k, d Knobs) (parts []string) { … }),
//		},
//		New:   func(cfg policy.Config, k registry.Knobs) (policy.Allocator, error) { return New(cfg, Slot.Get(k)) },
//		Cost:  1,
//		Style: registry.Style{Color: …, Dashes: …, Marker: registry.Square},
//	}
//
// Every field but Name, Doc and New may be left zero: no knobs, the
// costliest policy's cost, no history, the grey look of an unknown name.
type Descriptor struct {
	// Name is the policy's name in configs, flags and reports: lower case,
	// unique in a Registry.
	Name string
	// Doc is one line for --help and error messages: what the policy does
	// and after which scheduler, without a final period.
	Doc string
	// Knobs are the policy's settings: their defaults, their config keys
	// and parsing, and how they are written back. Zero: the policy takes
	// none.
	Knobs KnobSet
	// New builds the policy on cfg with its knobs (Slot.Get(k)). A
	// baseline on baseline.Core need not read k.Entitlements or k.History:
	// Registry.New hands them to the Core it returns.
	New func(cfg policy.Config, k Knobs) (policy.Allocator, error)
	// CheckCampaigns refuses knobs k naming a campaign that known (the
	// scenario's cast) lacks. nil: the knobs name none.
	CheckCampaigns func(k Knobs, known func(campaign string) bool) error
	// Cost is a trace replay's expected CPU cost per job relative to fifo's
	// (1), for the shards' balance (sweep.AssignStudyShards): only the
	// ordering and rough ratios matter. Measure it with
	// trace's BenchmarkReplayPolicyExcerpt. 0: as costly as the costliest
	// policy of the registry.
	Cost float64
	// Lookback is how many seconds of a log's record before a window the
	// policy reads as usage history (docs/studies.md §6.16): a policy with
	// a usage memory (fairshare's decay, budget's window) starts from it.
	// nil: none.
	Lookback func(k Knobs) int64
	// Style is how figures draw the policy (figures.PolicyStyle): the same
	// in every panel of every figure. It must differ from every other
	// policy's in colour, dash pattern and marker (figures' tests check).
	Style Style
	// Optional policies are known by name wherever a name is read
	// (Lookup, New, a config's policy and policies keys, --policy,
	// --policies) but are not among Names, the default lists of compare,
	// trace and agents-arrive, and their knobs are not in DefaultKnobs or
	// TraceKnobs: adding one moves no committed output (its Knobs'
	// setters and New start from its own defaults where a Knobs value
	// holds none of its knobs). A later rerun of the studies may make it a
	// default.
	Optional bool
	// Base is, for a variant (Variant.Descriptor), the name of the policy
	// it sets, and Presets the knobs it fixes, as the docs write them;
	// "" for a policy of its own.
	Base, Presets string
}

// Marker is the shape of a policy's marker in figures.
type Marker int

// The markers figures draw.
const (
	Circle Marker = iota
	Square
	Triangle
	Diamond
	// TriangleDown points down: the ninth and tenth policies' (filled and
	// open) once the four shapes above were each taken twice.
	TriangleDown
)

// Style is how a policy is drawn wherever it is a line or a marker, as
// plain data (package figures turns it into gonum/plot styles).
type Style struct {
	// Color is the line's and the marker's colour.
	Color color.Color
	// Dashes is the dash pattern in points, on and off in turn; nil solid.
	Dashes []float64
	// Marker is the marker's shape; Open draws it hollow.
	Marker Marker
	Open   bool
}

// UnknownStyle is the look of a name no descriptor styles (a custom
// series): grey and solid with an open diamond, never mistaken for a
// policy.
var UnknownStyle = Style{Color: color.Gray{Y: 0x60}, Marker: Diamond, Open: true}
