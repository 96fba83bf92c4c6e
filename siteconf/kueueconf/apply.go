package kueueconf

import (
	"fmt"

	"github.com/bursar-hpc/bursar/policy/quota"
	"github.com/bursar-hpc/bursar/policy/registry"
)

// Apply sets policy quota's knobs in k as the manifests configure them,
// through quota's own knob parsers (its descriptor), so that a value it
// refuses is refused here with the place it came from.
func (c *Conf) Apply(k *registry.Knobs) error {
	for _, kn := range c.Knobs {
		ok, err := quota.Policy.SetKnob(k, kn.Key, knobValue{kn})
		if !ok {
			return fmt.Errorf("%s: policy quota has no knob %s in this build", kn.From, kn.Key)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// knobValue is a Knob as quota's knob parsers read it (registry.Value).
type knobValue struct{ k Knob }

func (v knobValue) Key() string { return v.k.Key }

func (v knobValue) Int() (int, error) {
	if x, ok := v.k.Value.(int); ok {
		return x, nil
	}
	return 0, v.Errorf("want a whole number, got %s", v.Describe())
}

func (v knobValue) Number() (float64, error) {
	if x, ok := v.k.Value.(int); ok {
		return float64(x), nil
	}
	return 0, v.Errorf("want a number, got %s", v.Describe())
}

func (v knobValue) Text() (string, error) {
	if x, ok := v.k.Value.(string); ok {
		return x, nil
	}
	return "", v.Errorf("want text, got %s", v.Describe())
}

func (v knobValue) Texts() ([]string, error) {
	if x, ok := v.k.Value.([]string); ok {
		return x, nil
	}
	return nil, v.Errorf("want a list of text, got %s", v.Describe())
}

func (v knobValue) Scalar() (string, bool) {
	switch x := v.k.Value.(type) {
	case []string:
		return "", false
	default:
		return fmt.Sprint(x), true
	}
}

func (v knobValue) Items() ([]registry.Value, bool) {
	xs, ok := v.k.Value.([]string)
	if !ok {
		return nil, false
	}
	out := make([]registry.Value, len(xs))
	for i, x := range xs {
		out[i] = knobValue{Knob{Key: fmt.Sprintf("%s[%d]", v.k.Key, i), Value: x, From: v.k.From}}
	}
	return out, true
}

func (v knobValue) Map([]string, func(string, registry.Value, registry.Value) error) error {
	return v.Errorf("want a mapping, got %s", v.Describe())
}

func (v knobValue) Describe() string {
	if _, ok := v.k.Value.([]string); ok {
		return "a list"
	}
	return fmt.Sprintf("%q", fmt.Sprint(v.k.Value))
}

func (v knobValue) Errorf(format string, a ...any) error {
	return fmt.Errorf("%s: quota's %s: %s", v.k.From, v.k.Key, fmt.Sprintf(format, a...))
}
