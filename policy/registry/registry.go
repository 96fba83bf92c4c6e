package registry

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bursar-hpc/bursar/internal/cliusage"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
)

// Registry is an ordered list of policies: the order reports, tables and
// --help list them in. A command or a study takes one (policies.Default
// in production) and resolves every policy name through it, so that a
// test can add a policy of its own (With).
type Registry struct {
	list []*Descriptor
	// knobsFirst are the policies whose knobs lead a Knobs value, in
	// this order; the others follow in list order.
	knobsFirst []string
}

// New is the registry of ds, in this order. It panics on a descriptor
// without a name, constructor or doc line, or on a name given twice: a
// registry is built once, from literals.
func New(ds ...Descriptor) *Registry {
	r := &Registry{}
	for _, d := range ds {
		r.add(d)
	}
	return r
}

func (r *Registry) add(d Descriptor) {
	if d.Name == "" || d.New == nil || d.Doc == "" {
		panic(fmt.Sprintf("registry: policy %q needs a name, a constructor and a doc line", d.Name))
	}
	if _, ok := r.Lookup(d.Name); ok {
		panic(fmt.Sprintf("registry: policy %q listed twice", d.Name))
	}
	r.list = append(r.list, &d)
}

// KnobsFirst makes the knobs of the named policies lead every Knobs value
// the registry builds, in this order, and so in their JSON (which run
// inputs and cache keys hash); the others follow in list order. It
// returns r.
func (r *Registry) KnobsFirst(names ...string) *Registry {
	r.knobsFirst = names
	return r
}

// With is a copy of r with d added last (a test's own policy).
func (r *Registry) With(d Descriptor) *Registry {
	c := &Registry{list: slices.Clone(r.list), knobsFirst: r.knobsFirst}
	c.add(d)
	return c
}

// Names are the default policies' names, in order: every policy but the
// Optional ones.
func (r *Registry) Names() []string {
	var out []string
	for _, d := range r.list {
		if !d.Optional {
			out = append(out, d.Name)
		}
	}
	return out
}

// Known are every policy's names, the Optional ones included, in order:
// the names a command or a config accepts.
func (r *Registry) Known() []string {
	out := make([]string, len(r.list))
	for i, d := range r.list {
		out[i] = d.Name
	}
	return out
}

// Descriptors are the policies, in order.
func (r *Registry) Descriptors() []*Descriptor { return slices.Clone(r.list) }

// Lookup is the policy called name.
func (r *Registry) Lookup(name string) (*Descriptor, bool) {
	for _, d := range r.list {
		if d.Name == name {
			return d, true
		}
	}
	return nil, false
}

// knobOrder is the registry's descriptors in the order their knobs take
// in a Knobs value.
func (r *Registry) knobOrder() []*Descriptor {
	var out []*Descriptor
	for _, n := range r.knobsFirst {
		if d, ok := r.Lookup(n); ok {
			out = append(out, d)
		}
	}
	for _, d := range r.list {
		if !slices.Contains(r.knobsFirst, d.Name) {
			out = append(out, d)
		}
	}
	return out
}

// DefaultKnobs are each policy's documented defaults.
func (r *Registry) DefaultKnobs() Knobs {
	var k Knobs
	for _, d := range r.knobOrder() {
		if d.Knobs.Default != nil && !d.Optional {
			d.Knobs.Default(&k)
		}
	}
	return k
}

// TraceKnobs are each policy's defaults in the trace studies (KnobSet.Trace,
// else its Default).
func (r *Registry) TraceKnobs() Knobs {
	var k Knobs
	for _, d := range r.knobOrder() {
		switch {
		case d.Optional:
		case d.Knobs.Trace != nil:
			d.Knobs.Trace(&k)
		case d.Knobs.Default != nil:
			d.Knobs.Default(&k)
		}
	}
	return k
}

// New builds the policy called name on cfg with its knobs in knobs. A
// baseline on baseline.Core gets the knobs' Entitlements, History and
// Restart.
func (r *Registry) New(name string, cfg policy.Config, knobs Knobs) (policy.Allocator, error) {
	d, ok := r.Lookup(name)
	if !ok {
		names := r.Known()
		return nil, fmt.Errorf("unknown policy %q%s (want one of %s)", name, cliusage.DidYouMean(name, names), strings.Join(names, ", "))
	}
	a, err := d.New(cfg, knobs)
	if err != nil {
		return nil, err
	}
	if k, ok := a.(*baseline.Core); ok {
		if err := k.SetEntitlements(knobs.Entitlements); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if err := k.SetHistory(knobs.History); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if knobs.Restart != nil {
			k.SetRestart(*knobs.Restart)
		}
	}
	return a, nil
}

// Cost is the policy's Descriptor.Cost; for a name the registry lacks, or
// a policy with no measured cost, the costliest policy's.
func (r *Registry) Cost(name string) float64 {
	if d, ok := r.Lookup(name); ok && d.Cost > 0 {
		return d.Cost
	}
	most := 0.0
	for _, d := range r.list {
		most = max(most, d.Cost)
	}
	return most
}

// Lookback is how much of a log's record before a window the policy
// reads with knobs k (Descriptor.Lookback): 0 for none or an unknown name.
func (r *Registry) Lookback(name string, k Knobs) int64 {
	if d, ok := r.Lookup(name); ok && d.Lookback != nil {
		return d.Lookback(k)
	}
	return 0
}

// Style is how figures draw the policy; UnknownStyle for a name the
// registry lacks or a descriptor without a colour.
func (r *Registry) Style(name string) Style {
	if d, ok := r.Lookup(name); ok && d.Style.Color != nil {
		return d.Style
	}
	return UnknownStyle
}

// KnobKeys are the config keys of the policy's knobs, in order.
func (d *Descriptor) KnobKeys() []string {
	out := make([]string, len(d.Knobs.Keys))
	for i, kn := range d.Knobs.Keys {
		out[i] = kn.Key
	}
	return out
}

// SetKnob parses v into the policy's knob key of k. ok is false if the
// policy has no such key.
func (d *Descriptor) SetKnob(k *Knobs, key string, v Value) (ok bool, err error) {
	for _, kn := range d.Knobs.Keys {
		if kn.Key == key {
			return true, kn.set(k, v)
		}
	}
	return false, nil
}

// FormatKnobs are the "key: value" parts of the knobs of k that differ
// from d (KnobSet.Format).
func (d *Descriptor) FormatKnobs(k, def Knobs) []string {
	if d.Knobs.Format == nil {
		return nil
	}
	return d.Knobs.Format(k, def)
}
