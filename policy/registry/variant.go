package registry

import (
	"fmt"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
)

// Variant is a named setting of another policy: a baseline as a site runs
// it when that differs from the base's defaults (quota-fair is quota with
// Kueue's fair-sharing preemption), kept beside the base in the studies
// under a name of its own (docs/policies.md, "Variants").
//
// A variant runs its base's constructor on the base's knobs with Preset
// applied over them. It reads the base's knobs (a config's knobs for the
// base apply to it too) and takes the base's config keys but those in
// PresetKeys, which the preset fixes: a variant whose preset a config
// could undo would not be what its name says.
type Variant struct {
	// Name is the variant's name wherever a policy name is read.
	Name string
	// Label is one line saying what it is, for --help, tables and
	// figure legends, without a final period.
	Label string
	// Base is the policy it sets.
	Base Descriptor
	// Preset changes the base's knobs into the variant's; PresetKeys are
	// the config keys it fixes, and Presets how the docs write it
	// ("reclaim_within_cohort: Any, fair_sharing: true").
	Preset     func(*Knobs)
	PresetKeys []string
	Presets    string
	// Cost, Style and Optional are the variant's own (Descriptor); Cost
	// 0 is the base's.
	Cost     float64
	Style    Style
	Optional bool
}

// Descriptor is the variant as a policy of a registry: its name and
// label, the base's knobs but the preset's keys, a constructor that
// applies the preset, and the base's campaigns check and lookback on the
// preset knobs.
func (v Variant) Descriptor() Descriptor {
	b := v.Base
	if v.Preset == nil {
		panic(fmt.Sprintf("registry: variant %q of %q needs a preset", v.Name, b.Name))
	}
	preset := func(k Knobs) Knobs {
		v.Preset(&k) // Slot.Edit copies before it writes: k's caller keeps its own
		return k
	}
	d := Descriptor{
		Name:     v.Name,
		Doc:      v.Label,
		Base:     b.Name,
		Presets:  v.Presets,
		Cost:     v.Cost,
		Style:    v.Style,
		Optional: v.Optional,
		Knobs: KnobSet{
			Mappings: b.Knobs.Mappings,
			Format:   b.Knobs.Format,
		},
		New: func(cfg policy.Config, k Knobs) (policy.Allocator, error) {
			return b.New(cfg, preset(k))
		},
	}
	if d.Cost == 0 {
		d.Cost = b.Cost
	}
	for _, kn := range b.Knobs.Keys {
		if !slices.Contains(v.PresetKeys, kn.Key) {
			d.Knobs.Keys = append(d.Knobs.Keys, kn)
		}
	}
	if b.CheckCampaigns != nil {
		d.CheckCampaigns = func(k Knobs, known func(string) bool) error { return b.CheckCampaigns(preset(k), known) }
	}
	if b.Lookback != nil {
		d.Lookback = func(k Knobs) int64 { return b.Lookback(preset(k)) }
	}
	return d
}

// Preset makes a Variant's Preset of edit, a change of the base's knobs T
// in its slot s: where the Knobs value holds none of them, it starts from
// the base's defaults def.
func Preset[T any](s Slot[T], def func() T, edit func(*T)) func(*Knobs) {
	return func(k *Knobs) {
		if !s.Has(*k) {
			s.Set(k, def())
		}
		edit(s.Edit(k))
	}
}

// Key is what a table prints under its rows so that a reader knows what
// each name stands for where a policy and its variants sit side by side:
// "name: doc line" for every name of names that is a variant, or the
// base of a variant among names, in the order of names.
func (r *Registry) Key(names []string) []string {
	related := func(d *Descriptor) bool {
		for _, n := range names {
			if o, ok := r.Lookup(n); ok && o != d && (o.Base == d.Name || d.Base == o.Name) {
				return true
			}
		}
		return false
	}
	var out []string
	for _, n := range names {
		if d, ok := r.Lookup(n); ok && related(d) {
			out = append(out, n+": "+d.Doc)
		}
	}
	return out
}
