package registry

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/bursar-hpc/bursar/policy/baseline"
)

// Knobs holds every policy's settings, each policy's under its name (read
// and written through the policy's Slot), plus what the share-based
// baselines read from the workload. A Knobs value copies like a struct of
// the policies' knob structs: Slot.Edit changes the value it is called on
// and never a copy made before.
type Knobs struct {
	sets []knobSet

	// Entitlements are the groups and their members' shares that every
	// share-based baseline reads (docs/studies.md §1; baseline.Entitlements):
	// on a trace, trace.Workload.Entitlements. nil: R normalised, each
	// campaign a group of its own (the agent scenario). Derived from the
	// workload and its mapping options, so not a knob a config sets.
	Entitlements *baseline.Entitlements `json:"-" yaml:"-"`
	// History is the usage before the replay that fairshare and budget
	// start from (docs/studies.md §6.16; baseline.Usage). Derived too.
	History []baseline.Usage `json:"-" yaml:"-"`
	// Restart, when set, is how every preempted trace job restarts
	// under the policy, whatever its own knobs say: a study restarts
	// every policy's jobs by one rule (docs/studies.md §6.7; the trace
	// mapping's `restart`). A policy's run inputs record it where they
	// record the mapping.
	Restart *baseline.Restart `json:"-" yaml:"-"`
}

// knobSet is one policy's knobs: a pointer to its knob struct, never
// written through once stored (Edit replaces it).
type knobSet struct {
	policy string
	value  any
}

func (k *Knobs) find(policy string) int {
	return slices.IndexFunc(k.sets, func(s knobSet) bool { return s.policy == policy })
}

// MarshalJSON writes the knobs as an object of each policy's knob struct
// by policy name, in the order the Knobs value holds them
// (Registry.DefaultKnobs), as run inputs and cache keys hash them.
func (k Knobs) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, s := range k.sets {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(s.policy))
		b.WriteByte(':')
		v, err := json.Marshal(s.value)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Slot is a policy's typed handle on its knobs T in a Knobs value; its
// value is the policy's name. A policy package declares one:
// `var Slot = registry.Slot[Knobs](Name)`.
type Slot[T any] string

// Get is the policy's knobs in k; the zero T if k holds none.
func (s Slot[T]) Get(k Knobs) T {
	if i := k.find(string(s)); i >= 0 {
		return *k.sets[i].value.(*T)
	}
	var zero T
	return zero
}

// Has reports whether k holds the policy's knobs.
func (s Slot[T]) Has(k Knobs) bool { return k.find(string(s)) >= 0 }

// Edit is the policy's knobs in k, to change in place: k gets a copy of
// its own first, so that copies of k made before are unchanged.
func (s Slot[T]) Edit(k *Knobs) *T {
	p := new(T)
	k.sets = slices.Clone(k.sets)
	if i := k.find(string(s)); i >= 0 {
		*p = *k.sets[i].value.(*T)
		k.sets[i].value = p
	} else {
		k.sets = append(k.sets, knobSet{policy: string(s), value: p})
	}
	return p
}

// Set puts v as the policy's knobs in k.
func (s Slot[T]) Set(k *Knobs, v T) { *s.Edit(k) = v }

// Default makes KnobSet.Default (or Trace) of a function returning the
// policy's knobs.
func (s Slot[T]) Default(f func() T) func(*Knobs) {
	return func(k *Knobs) { s.Set(k, f()) }
}

// Knob makes the config key key of the policy's knobs, which set parses
// into its knobs (KnobSet.Keys).
func (s Slot[T]) Knob(key string, set func(k *T, v Value) error) Knob {
	return Knob{Key: key, set: func(k *Knobs, v Value) error { return set(s.Edit(k), v) }}
}

// IntKnob makes a knob of whole numbers of at least low, read into the
// field of T; below low, the error is format with the number
// (IntAtLeast).
func (s Slot[T]) IntKnob(key string, low int, format string, field func(*T) *int) Knob {
	return s.Knob(key, func(k *T, v Value) error {
		x, err := IntAtLeast(v, low, format)
		*field(k) = x
		return err
	})
}

// ChoiceKnob makes a knob whose text is one of a and b, read into the
// field of T: "KEY must be A or B, got "x"" otherwise.
func (s Slot[T]) ChoiceKnob(key, a, b string, field func(*T) *string) Knob {
	return s.Knob(key, func(k *T, v Value) error {
		x, err := v.Text()
		if err == nil && x != a && x != b {
			return v.Errorf("%s must be %s or %s, got %q", key, a, b, x)
		}
		*field(k) = x
		return err
	})
}

// Format makes KnobSet.Format of a function of the policy's knobs k and
// its defaults d.
func (s Slot[T]) Format(f func(k, d T) []string) func(k, d Knobs) []string {
	return func(k, d Knobs) []string { return f(s.Get(k), s.Get(d)) }
}

// KnobSet is a policy's knobs as the program sees them.
type KnobSet struct {
	// Default puts the policy's documented defaults into a Knobs value
	// (Slot.Default). nil: the policy takes no knobs.
	Default func(*Knobs)
	// Trace puts the trace studies' defaults (trace, budget-knobs,
	// agents-arrive) where they differ from Default. nil: Default.
	Trace func(*Knobs)
	// Keys are the config keys of the mapping form
	// (`policy: {name: NAME, key: value, …}`), in the order
	// docs/configs.md lists them.
	Keys []Knob
	// Mappings are the mappings nested in the knobs' values, each with
	// its heading in docs/configs.md and its keys (a test holds the page
	// to them).
	Mappings []Mapping
	// Format writes the knobs of k that differ from the defaults d as
	// "key: value" parts of the mapping form (FormatList and FormatNumber
	// help), so that the mapping reads back to k. nil: none.
	Format func(k, d Knobs) []string
}

// Mapping is a mapping nested in a knob's value: the heading of
// docs/configs.md that documents it and the keys it takes.
type Mapping struct {
	Section string
	Keys    []string
}

// Knob is one config key of a policy's knobs (Slot.Knob).
type Knob struct {
	Key string
	set func(k *Knobs, v Value) error
}

// Value is a knob's value in a config file, as the config parser hands it
// to the knob's parser: each method reads it as one type, and its errors
// (and Errorf's) name the file, the line and the key.
type Value interface {
	// Key is the value's key in the file (policy.calc_period).
	Key() string
	// Int reads a whole number.
	Int() (int, error)
	// Number reads a number.
	Number() (float64, error)
	// Text reads text.
	Text() (string, error)
	// Texts reads a list of text values.
	Texts() ([]string, error)
	// Scalar is the value's raw text, if it is one scalar.
	Scalar() (string, bool)
	// Items are the values of a list; false if the value is not one.
	Items() ([]Value, bool)
	// Map calls each for every key of a mapping, in the file's order,
	// refusing a key outside allowed (nil: any key) and a key given
	// twice. name is the key's text; key reports errors at the key's
	// line, value at its value's.
	Map(allowed []string, each func(name string, key, value Value) error) error
	// Describe names what the value holds ("a list", "text"), for "got …".
	Describe() string
	// Errorf is an error at the value's line and key.
	Errorf(format string, a ...any) error
}

// FormatNumber writes a number as a config reads it back.
func FormatNumber(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// FormatList writes a list of text values as a config reads it back.
func FormatList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// CalcPeriodError is the error of a calc_period under 1 (Slurm's
// PriorityCalcPeriod, a knob of every policy that recalculates
// priorities periodically).
const CalcPeriodError = "calc_period must be at least 1 second, got %d"

// Bool reads true or false; anything else is the error "KEY must be
// true or false, got …".
func Bool(v Value, key string) (bool, error) {
	x, ok := v.Scalar()
	if !ok || x != "true" && x != "false" {
		return false, v.Errorf("%s must be true or false, got %s", key, v.Describe())
	}
	return x == "true", nil
}

// IntAtLeast reads a whole number of at least low; below, the error is
// format with the number (e.g. "owners must be ≥ 0 groups, got %d").
func IntAtLeast(v Value, low int, format string) (int, error) {
	x, err := v.Int()
	if err == nil && x < low {
		return x, v.Errorf(format, x)
	}
	return x, err
}
