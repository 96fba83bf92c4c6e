package figures

import (
	"image/color"
	"math"

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

// Okabe–Ito colours not already taken by the paper's looks (style.go).
var (
	bluishGreen   = color.RGBA{R: 0x00, G: 0x9E, B: 0x73, A: 0xff}
	reddishPurple = color.RGBA{R: 0xCC, G: 0x79, B: 0xA7, A: 0xff}
	skyBlue       = color.RGBA{R: 0x56, G: 0xB4, B: 0xE9, A: 0xff}
)

// More dash patterns, for the seven policies to differ without colour.
var (
	shortDash  = []vg.Length{vg.Points(3), vg.Points(3)}
	dashDotDot = []vg.Length{vg.Points(8), vg.Points(2), vg.Points(1.5), vg.Points(2), vg.Points(1.5), vg.Points(2)}
)

// policyLooks is every policy of policies.Names by name. Bursar is black
// and solid, the reference every figure is read against; the six
// baselines each get an Okabe–Ito colour, a dash pattern and a marker
// (filled for the first three, open for the share-based three).
var policyLooks = map[string]look{
	"bursar":    {color: black, dashes: solid, shape: circle},
	"fifo":      {color: blue, dashes: dashed, shape: square},
	"priority":  {color: vermillion, dashes: dashDot, shape: triangle},
	"static":    {color: orange, dashes: dotted, shape: diamond},
	"fairshare": {color: bluishGreen, dashes: longDash, shape: circle, open: true},
	"quota":     {color: reddishPurple, dashes: shortDash, shape: square, open: true},
	"budget":    {color: skyBlue, dashes: dashDotDot, shape: triangle, open: true},
}

// PolicyStyle is the policy's fixed look. A name outside policies.Names
// (a custom series) is drawn grey and solid with a diamond, the same for
// every unknown name: it is never mistaken for one of the seven.
func PolicyStyle(name string) PolicyLook {
	l, ok := policyLooks[name]
	if !ok {
		l = look{color: refGrey, dashes: solid, shape: diamond, open: true}
	}
	return PolicyLook{Line: l.line(), Glyph: l.glyph(), l: l}
}

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
