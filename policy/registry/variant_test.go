package registry_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/registry"
)

// A variant builds its base on the base's knobs with its preset over
// them, leaves the caller's knobs alone, takes the base's config keys but
// those the preset fixes, and is listed, known and built by name like any
// policy.
func TestVariant(t *testing.T) {
	base := desc("a", 2)
	base.Knobs.Default = slotA.Default(func() knobsA { return knobsA{N: 1} })
	base.Knobs.Keys = []registry.Knob{
		slotA.IntKnob("n", 0, "n must be ≥ 0, got %d", func(k *knobsA) *int { return &k.N }),
		slotA.IntKnob("m", 0, "m must be ≥ 0, got %d", func(k *knobsA) *int { return &k.N }),
	}
	var built []int
	base.New = func(cfg policy.Config, k registry.Knobs) (policy.Allocator, error) {
		built = append(built, slotA.Get(k).N)
		return desc("x", 1).New(cfg, k)
	}
	base.Lookback = func(k registry.Knobs) int64 { return int64(slotA.Get(k).N) }
	v := registry.Variant{Name: "a-big", Label: "a with n 7", Base: base,
		Preset: func(k *registry.Knobs) { slotA.Edit(k).N = 7 }, PresetKeys: []string{"n"}, Presets: "n: 7"}.Descriptor()
	r := registry.New(base, v)
	require.Equal(t, []string{"a", "a-big"}, r.Names())
	d, ok := r.Lookup("a-big")
	require.True(t, ok)
	require.Equal(t, "a", d.Base)
	require.Equal(t, "n: 7", d.Presets)
	require.Equal(t, "a with n 7", d.Doc)
	require.Equal(t, []string{"m"}, d.KnobKeys(), "the preset's key is not the variant's to set")
	require.Equal(t, 2.0, r.Cost("a-big"), "no cost of its own: the base's")

	k := r.DefaultKnobs()
	_, err := r.New("a-big", policy.DefaultConfig(8), k)
	require.NoError(t, err)
	_, err = r.New("a", policy.DefaultConfig(8), k)
	require.NoError(t, err)
	require.Equal(t, []int{7, 1}, built, "the variant runs the preset, the base its own knobs")
	require.Equal(t, 1, slotA.Get(k).N, "the caller's knobs are unchanged")
	require.Equal(t, int64(7), r.Lookback("a-big", k))
	require.Panics(t, func() { registry.Variant{Name: "z", Label: "no preset", Base: base}.Descriptor() })
}

// Preset starts from the base's defaults where a Knobs value holds none
// of its knobs, and edits them; Key lists a variant and its base, each
// with its doc line, where both sit in a list, and nothing else.
func TestPresetAndKey(t *testing.T) {
	base := desc("a", 1)
	base.Knobs.Default = slotA.Default(func() knobsA { return knobsA{N: 1} })
	preset := registry.Preset(slotA, func() knobsA { return knobsA{N: 5} }, func(k *knobsA) { k.N++ })
	var empty registry.Knobs
	preset(&empty)
	require.Equal(t, 6, slotA.Get(empty).N, "no knobs of its own: from the defaults")
	k := registry.New(base).DefaultKnobs()
	preset(&k)
	require.Equal(t, 2, slotA.Get(k).N, "the value's own knobs, edited")
	v := registry.Variant{Name: "a-more", Label: "a, one more", Base: base, Preset: preset}.Descriptor()
	r := registry.New(base, v, desc("c", 1))
	require.Equal(t, []string{"a: a test policy", "a-more: a, one more"}, r.Key([]string{"a", "a-more", "c"}))
	require.Empty(t, r.Key([]string{"a", "c"}), "a base without its variant needs no key")
}
