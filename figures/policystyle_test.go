package figures

import (
	"fmt"
	"math"
	"testing"

	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/stretchr/testify/require"
)

// style is the look of the policy called name in the program's registry.
func style(name string) PolicyLook { return PolicyStyle(policies.Default.Style(name)) }

// Each policy of the registry has its own colour, dash pattern and
// marker, fixed by its name: asking again, or in another order, gives the
// same.
func TestPolicyStyleIsFixedByName(t *testing.T) {
	names := policies.Default.Names()
	require.GreaterOrEqual(t, len(names), 7, "the broker and the six baselines")
	seen := map[string]string{}
	for _, n := range names {
		a := style(n)
		for _, m := range names {
			_ = style(m) // another policy in between changes nothing
		}
		require.Equal(t, a, style(n), n)
		for what, key := range map[string]string{
			"colour": fmt.Sprint(a.Line.Color),
			"dashes": fmt.Sprint(a.Line.Dashes),
			"marker": fmt.Sprint(a.l.shape, a.l.open),
		} {
			k := what + " " + key
			require.NotContains(t, seen, k, "%s shares its %s with %s", n, what, seen[k])
			seen[k] = n
		}
	}
	unknown := style("custom")
	require.Equal(t, unknown, style("another"), "every unknown name looks the same")
	for _, n := range names {
		require.NotEqual(t, fmt.Sprint(unknown.Line.Color), fmt.Sprint(style(n).Line.Color), n)
	}
	f, h := style("quota").Filled(), style("quota").Hollow()
	require.Equal(t, f.Color, h.Color)
	require.Equal(t, marker{shape: square}, f.Shape)
	require.Equal(t, marker{shape: square, open: true}, h.Shape)
}

func TestKnobLooksAreDistinct(t *testing.T) {
	for n := 1; n <= 6; n++ {
		ls := KnobLooks(n)
		require.Len(t, ls, n)
		seen := map[string]bool{}
		for _, l := range ls {
			k := fmt.Sprint(l.Line.Color, l.Line.Dashes, l.l.shape, l.l.open)
			require.False(t, seen[k], "n=%d: two knob values look the same", n)
			seen[k] = true
			for _, p := range policies.Default.Names() {
				require.NotEqual(t, fmt.Sprint(style(p).Line.Color), fmt.Sprint(l.Line.Color), "a knob's line looks like %s", p)
			}
		}
	}
}

// A fraction's interval [−0.04, 1.07] is drawn as [0, 1] and reported
// clipped; one inside the range, or with NaN ends, is left alone.
func TestClipInterval(t *testing.T) {
	lo, hi, c := ClipInterval(-0.04, 1.07, 0, 1)
	require.Equal(t, []float64{0, 1}, []float64{lo, hi})
	require.True(t, c)
	lo, hi, c = ClipInterval(0.2, 0.9, 0, 1)
	require.Equal(t, []float64{0.2, 0.9}, []float64{lo, hi})
	require.False(t, c)
	lo, hi, c = ClipInterval(-3, 12, 0, math.Inf(1))
	require.Equal(t, []float64{0, 12}, []float64{lo, hi})
	require.True(t, c)
	lo, hi, c = ClipInterval(math.NaN(), math.NaN(), 0, 1)
	require.True(t, math.IsNaN(lo) && math.IsNaN(hi))
	require.False(t, c)
}

// A comparison panel with a range clips its intervals there and says so;
// one without leaves them alone.
func TestPoliciesPanelClipsToItsRange(t *testing.T) {
	pn := PoliciesPanel{Series: []PoliciesSeries{{Ys: []float64{0.98, 0.5}, CI: []Interval{{Lo: 0.95, Hi: 1.01}, {Lo: 0.4, Hi: 0.6}}}}, Floor: 0, Ceil: 1}
	got, c := pn.clipped()
	require.True(t, c)
	require.Equal(t, []Interval{{Lo: 0.95, Hi: 1}, {Lo: 0.4, Hi: 0.6}}, got.Series[0].CI)
	require.Equal(t, 1.01, pn.Series[0].CI[0].Hi, "the caller's data is not changed")
	pn.Floor, pn.Ceil = 0, 0
	got, c = pn.clipped()
	require.False(t, c)
	require.Equal(t, pn.Series[0].CI, got.Series[0].CI)
}
