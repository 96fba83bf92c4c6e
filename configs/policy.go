package configs

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/registry"
	"gopkg.in/yaml.v3"
)

// Policy is a `policy:` key of a scenario file, a config or a series: the
// admission policy's name (engine.Policies) and the knobs of its baseline,
// policies.DefaultKnobs() where the key does not set them
// (docs/policies.md lists each knob and its default).
type Policy struct {
	Name  string
	Knobs policies.Knobs
	Line  int
	Key   string
	// Policies is the registry the name was found in (nil:
	// policies.Default).
	Policies *registry.Registry
}

// Apply makes s run under the policy.
func (pc *Policy) Apply(s *engine.Scenario) {
	s.Policy = pc.Name
	s.Policies = pc.Policies
	k := pc.Knobs
	s.PolicyKnobs = &k
}

// allPolicyKnobKeys is every knob of every policy, for "did you mean".
func (p *parser) allPolicyKnobKeys() []string {
	var out []string
	for _, d := range p.registry().Descriptors() {
		out = append(out, d.KnobKeys()...)
	}
	return out
}

// policy reads `policy: NAME` or `policy: {name: NAME, knob: value, …}`.
// A knob of another policy is refused with the policy it belongs to, an
// unknown one with the nearest knob's name. Each knob is parsed by its
// policy's descriptor (registry.KnobSet.Keys).
func (p *parser) policy(n *yaml.Node, key string) (*Policy, error) {
	reg := p.registry()
	names := reg.Known()
	pc := &Policy{Knobs: reg.DefaultKnobs(), Line: n.Line, Key: key, Policies: p.policies}
	var desc *registry.Descriptor
	checkName := func(v *yaml.Node, k string) error {
		name, err := p.str(v, k)
		if err != nil {
			return err
		}
		d, ok := reg.Lookup(name)
		if !ok {
			return p.errAt(v, k, "unknown admission policy %q%s (policies: %s)", name, suggest(name, names), strings.Join(names, ", "))
		}
		pc.Name, desc = name, d
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		return pc, checkName(n, key)
	}
	if n.Kind != yaml.MappingNode {
		return nil, p.errAt(n, key, "want a policy name or {name: NAME, knob: value, …}, got %s", describe(n))
	}
	// The name first, wherever it is written: it says which knobs apply.
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "name" {
			if err := checkName(n.Content[i+1], join(key, "name")); err != nil {
				return nil, err
			}
		}
	}
	if pc.Name == "" {
		return nil, p.errAt(n, join(key, "name"), "missing: the mapping form names its policy ({name: quota, borrowing_limit: 64})")
	}
	allowed := append([]string{"name"}, desc.KnobKeys()...)
	err := p.mapping(n, key, nil, func(sub string, k, v *yaml.Node) error {
		kk := join(key, sub)
		if sub == "name" {
			return nil // read first
		}
		ok, err := desc.SetKnob(&pc.Knobs, sub, &knobValue{p: p, n: v, key: kk, name: sub})
		if ok {
			return err
		}
		for _, owner := range reg.Descriptors() { // in order: calc_period is two policies' knob
			if slices.Contains(owner.KnobKeys(), sub) {
				return p.errAt(k, kk, "%s is a knob of policy %s, not of %s (%s takes %s)", sub, owner.Name, pc.Name, pc.Name, strings.Join(allowed, ", "))
			}
		}
		return p.errAt(k, kk, "unknown key%s (policy %s takes %s)", suggest(sub, p.allPolicyKnobKeys()), pc.Name, strings.Join(allowed, ", "))
	})
	if err != nil {
		return nil, err
	}
	return pc, nil
}

// knobValue is a policy knob's value in the file (registry.Value): name is
// its key in the policy's mapping, key its full key.
type knobValue struct {
	p         *parser
	n         *yaml.Node
	key, name string
}

func (v *knobValue) Key() string                     { return v.key }
func (v *knobValue) Int() (int, error)               { return v.p.integer(v.n, v.key) }
func (v *knobValue) Text() (string, error)           { return v.p.str(v.n, v.key) }
func (v *knobValue) Texts() ([]string, error)        { return v.p.strings(v.n, v.key) }
func (v *knobValue) Describe() string                { return describe(v.n) }
func (v *knobValue) Errorf(f string, a ...any) error { return v.p.errAt(v.n, v.key, f, a...) }

func (v *knobValue) Number() (float64, error) {
	return v.p.value(engine.KnobOfKind(v.name, "float"), v.n, v.key)
}

func (v *knobValue) Scalar() (string, bool) { return v.n.Value, v.n.Kind == yaml.ScalarNode }

func (v *knobValue) Items() ([]registry.Value, bool) {
	if v.n.Kind != yaml.SequenceNode {
		return nil, false
	}
	out := make([]registry.Value, len(v.n.Content))
	for i, item := range v.n.Content {
		out[i] = &knobValue{p: v.p, n: item, key: fmt.Sprintf("%s[%d]", v.key, i), name: v.name}
	}
	return out, true
}

func (v *knobValue) Map(allowed []string, each func(name string, key, value registry.Value) error) error {
	return v.p.mapping(v.n, v.key, allowed, func(sub string, k, val *yaml.Node) error {
		kk := join(v.key, sub)
		return each(sub, &knobValue{p: v.p, n: k, key: kk, name: sub}, &knobValue{p: v.p, n: val, key: kk, name: sub})
	})
}

// strings reads a list of text values.
func (p *parser) strings(n *yaml.Node, key string) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errAt(n, key, "want a list of names [a, b, …], got %s", describe(n))
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		s, err := p.str(item, fmt.Sprintf("%s[%d]", key, i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// FormatPolicy writes the scenario's policy as the `policy:` value a file
// reads back to the same policy: the bare name when its knobs are the
// defaults, else the mapping with the knobs that differ.
func FormatPolicy(s *engine.Scenario) string {
	if s.Policy == "" {
		return ""
	}
	if s.PolicyKnobs == nil {
		return s.Policy
	}
	reg := s.Policies
	if reg == nil {
		reg = policies.Default
	}
	var parts []string
	if d, ok := reg.Lookup(s.Policy); ok {
		parts = d.FormatKnobs(*s.PolicyKnobs, reg.DefaultKnobs())
	}
	if len(parts) == 0 {
		return s.Policy
	}
	return "{name: " + s.Policy + ", " + strings.Join(parts, ", ") + "}"
}
