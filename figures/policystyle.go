package figures

import (
	"image/color"
	"math"

	"github.com/bursar-hpc/bursar/policy/registry"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// PolicyLook is how a policy is drawn wherever it is a line or a marker:
// the same colour, dash pattern and marker in every panel of every figure
// (trace, budget-knobs, agents-arrive), whichever policies a run compares
// and in whatever order, so that a reader who learnt "fifo is the blue
// dashed line with squares" in one figure can read the next one.
type PolicyLook struct {
	Line  draw.LineStyle
	Glyph draw.GlyphStyle
	l     look
}

// Filled is the look's marker filled in its colour, Hollow the same shape
// filled white and outlined: a figure that draws two variants of one
// policy (agents-arrive's unmetered and metered agents) keeps the
// policy's colour and shape and tells the variants apart by the fill.
func (p PolicyLook) Filled() draw.GlyphStyle { l := p.l; l.open = false; return l.glyph() }

// Hollow: see Filled.
func (p PolicyLook) Hollow() draw.GlyphStyle { l := p.l; l.open = true; return l.glyph() }

// PolicyStyle is how a policy is drawn: its descriptor's style
// (registry.Registry.Style; an unknown name's is registry.UnknownStyle,
// grey and solid with a diamond, never mistaken for a policy).
func PolicyStyle(s registry.Style) PolicyLook {
	l := look{color: s.Color, shape: markerShapes[s.Marker], open: s.Open}
	if s.Dashes != nil {
		l.dashes = make([]vg.Length, len(s.Dashes))
		for i, d := range s.Dashes {
			l.dashes[i] = vg.Points(d)
		}
	}
	return PolicyLook{Line: l.line(), Glyph: l.glyph(), l: l}
}

// markerShapes are the shapes of registry's markers, by Marker.
var markerShapes = [...]shape{registry.Circle: circle, registry.Square: square, registry.Triangle: triangle, registry.Diamond: diamond, registry.TriangleDown: triangleDown}

// KnobLooks are n looks for the ordered values of one knob (budget-knobs'
// minimum runtime m, say), smallest first: a sequential ramp from light to
// dark, so that the order reads off the colour, with a dash pattern and a
// marker each so that a grey print still tells them apart. The ramp is
// not among the policies' colours, so a knob's line is never read as a
// policy.
func KnobLooks(n int) []PolicyLook {
	// Viridis at 0.9, 0.65, 0.4 and 0.1, dark enough on white (the
	// lightest, yellow-green, is darkened).
	ramp := []color.RGBA{{R: 0x7A, G: 0xB8, B: 0x2E, A: 0xff}, {R: 0x1F, G: 0x9E, B: 0x89, A: 0xff},
		{R: 0x3E, G: 0x4A, B: 0x89, A: 0xff}, {R: 0x44, G: 0x01, B: 0x54, A: 0xff}}
	dash := [][]vg.Length{dotted, dashed, dashDot, solid}
	shapes := []shape{triangle, square, diamond, circle}
	out := make([]PolicyLook, n)
	for i := range n {
		// Spread n values over the ramp; more than four reuse it.
		j := i % len(ramp)
		if n <= len(ramp) {
			j = int(math.Round(float64(i) * float64(len(ramp)-1) / float64(max(n-1, 1))))
			if n == 1 {
				j = len(ramp) - 1
			}
		}
		l := look{color: ramp[j], dashes: dash[j], shape: shapes[j], open: i >= len(ramp)}
		out[i] = PolicyLook{Line: l.line(), Glyph: l.glyph(), l: l}
	}
	return out
}

// ClipInterval clips an interval [lo, hi] to the range [floor, ceil] its
// quantity cannot leave (a fraction in [0, 1], a wait ≥ 0, a bounded
// slowdown ≥ 1): a t interval over a few windows ignores the bound and
// may cross it. It reports whether it clipped, so that the figure can
// say so. NaN ends are returned as they are.
func ClipInterval(lo, hi, floor, ceil float64) (clo, chi float64, clipped bool) {
	clo, chi = lo, hi
	if lo < floor {
		clo, clipped = floor, true
	}
	if hi > ceil {
		chi, clipped = ceil, true
	}
	return clo, chi, clipped
}
