package registry_test

import (
	"encoding/json"
	"image/color"
	"testing"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/fifo"
	"github.com/bursar-hpc/bursar/policy/registry"
	"github.com/stretchr/testify/require"
)

type knobsA struct {
	N int `json:"n"`
}

type knobsB struct {
	S string `json:"s"`
}

var slotA, slotB = registry.Slot[knobsA]("a"), registry.Slot[knobsB]("b")

// desc is a descriptor that builds fifo under another name.
func desc(name string, cost float64) registry.Descriptor {
	return registry.Descriptor{Name: name, Doc: "a test policy", Cost: cost,
		New: func(cfg policy.Config, _ registry.Knobs) (policy.Allocator, error) { return fifo.New(cfg) }}
}

func testRegistry() *registry.Registry {
	a, b := desc("a", 2), desc("b", 0)
	a.Knobs.Default = slotA.Default(func() knobsA { return knobsA{N: 1} })
	a.Knobs.Trace = slotA.Default(func() knobsA { return knobsA{N: 300} })
	a.Lookback = func(k registry.Knobs) int64 { return int64(10 * slotA.Get(k).N) }
	a.Style = registry.Style{Color: color.Gray{Y: 0}}
	b.Knobs.Default = slotB.Default(func() knobsB { return knobsB{S: "x"} })
	return registry.New(a, b, desc("c", 5)).KnobsFirst("b")
}

// Hand-worked: the lookups a consumer makes, for a listed and an unlisted
// name.
func TestRegistryLookups(t *testing.T) {
	r := testRegistry()
	require.Equal(t, []string{"a", "b", "c"}, r.Names())
	require.Equal(t, 2.0, r.Cost("a"))
	require.Equal(t, 5.0, r.Cost("b"), "no measured cost: the costliest's")
	require.Equal(t, 5.0, r.Cost("zz"), "an unknown name: the costliest's")
	require.Equal(t, int64(10), r.Lookback("a", r.DefaultKnobs()))
	require.Equal(t, int64(3000), r.Lookback("a", r.TraceKnobs()))
	require.Zero(t, r.Lookback("c", r.DefaultKnobs()))
	require.Zero(t, r.Lookback("zz", r.DefaultKnobs()))
	require.Equal(t, color.Gray{Y: 0}, r.Style("a").Color)
	require.Equal(t, registry.UnknownStyle, r.Style("c"), "no style: the unknown look")
	_, err := r.New("aa", policy.DefaultConfig(8), r.DefaultKnobs())
	require.EqualError(t, err, `unknown policy "aa"; did you mean "a"? (want one of a, b, c)`)
	al, err := r.New("c", policy.DefaultConfig(8), r.DefaultKnobs())
	require.NoError(t, err)
	require.NotNil(t, al)
}

// The knobs' JSON leads with the KnobsFirst policies, then the others in
// list order; a policy without knobs has no entry.
func TestKnobsOrder(t *testing.T) {
	r := testRegistry()
	b, err := json.Marshal(r.DefaultKnobs())
	require.NoError(t, err)
	require.Equal(t, `{"b":{"s":"x"},"a":{"n":1}}`, string(b))
	b, err = json.Marshal(r.With(desc("d", 1)).TraceKnobs())
	require.NoError(t, err)
	require.Equal(t, `{"b":{"s":"x"},"a":{"n":300}}`, string(b))
}

// With adds a policy last and leaves the registry it copies alone; a
// name given twice, or a descriptor without a constructor, is refused.
func TestWith(t *testing.T) {
	r := testRegistry()
	w := r.With(desc("d", 1))
	require.Equal(t, []string{"a", "b", "c", "d"}, w.Names())
	require.Equal(t, []string{"a", "b", "c"}, r.Names())
	require.Panics(t, func() { r.With(desc("b", 1)) })
	require.Panics(t, func() { registry.New(registry.Descriptor{Name: "x", Doc: "no constructor"}) })
}
