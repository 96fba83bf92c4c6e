package figures

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Colours come from the Okabe–Ito palette (safe for colour-blind readers),
// picked so that the series sharing a figure also differ in lightness: in
// a grey-scale print black, blue (L* ≈ 46), vermillion (L* ≈ 54) and orange
// (L* ≈ 71) stay apart, and no figure puts blue next to vermillion. Every
// series additionally has its own dash pattern and marker shape, so the
// figures survive a black-and-white printer too.
var (
	black      = color.Gray{Y: 0}
	blue       = color.RGBA{R: 0x00, G: 0x72, B: 0xB2, A: 0xff}
	vermillion = color.RGBA{R: 0xD5, G: 0x5E, B: 0x00, A: 0xff}
	orange     = color.RGBA{R: 0xE6, G: 0x9F, B: 0x00, A: 0xff}
	refGrey    = color.Gray{Y: 0x60}
	gridGrey   = color.Gray{Y: 0xe6}
	// bandGrey is the utilization band: light enough that the lines on
	// top of it keep their contrast.
	bandGrey = color.Gray{Y: 0xd4}
)

// Font sizes, in points, chosen for a figure printed at its nominal size
// (one column of a two-column paper for the 6.5 in figures, the full text
// width for the 10 in one).
const (
	titleSize      = 12.5
	panelTitleSize = 10.5
	labelSize      = 10
	tickSize       = 9
	legendSize     = 9
	noteSize       = 9
)

// Dash patterns: solid, dashed, dash-dot, dotted and long-dashed.
var (
	solid    []vg.Length
	dashed   = []vg.Length{vg.Points(5), vg.Points(2.5)}
	dashDot  = []vg.Length{vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2)}
	dotted   = []vg.Length{vg.Points(1.2), vg.Points(2)}
	longDash = []vg.Length{vg.Points(9), vg.Points(3)}
)

const (
	seriesWidth = 1.4 // points
	refWidth    = 0.9 // points
	markRadius  = 3.2 // points
	capWidth    = 5   // points
)

// look is how one data series is drawn.
type look struct {
	color  color.Color
	dashes []vg.Length
	shape  shape
	open   bool    // an open marker is filled white and outlined
	radius float64 // marker radius in points; 0 means markRadius
}

// The series looks are shared between figures so that the same quantity
// (the probe's p50, say) looks the same everywhere in the paper.
var (
	lookMain = look{color: black, dashes: solid, shape: circle}
	lookP50  = look{color: vermillion, dashes: dashed, shape: triangle}
	lookP95  = look{color: orange, dashes: dashDot, shape: square, open: true}
	// The prepaid series lies on top of the contended one in fig_bucket;
	// its larger open square frames the contended dot instead of hiding it.
	lookPrepaid = look{color: blue, dashes: dashed, shape: square, open: true, radius: 4.6}
	lookLeaky   = look{color: orange, dashes: dashDot, shape: triangle}
)

func (l look) line() draw.LineStyle {
	return draw.LineStyle{Color: l.color, Width: vg.Points(seriesWidth), Dashes: l.dashes}
}

func (l look) glyph() draw.GlyphStyle {
	r := l.radius
	if r == 0 {
		r = markRadius
	}
	return draw.GlyphStyle{Color: l.color, Radius: vg.Points(r), Shape: marker{shape: l.shape, open: l.open}}
}

// bar is the style of the look's error bars: solid even for a dashed
// series, because a dashed 10-point bar would look like two dots.
func (l look) bar() draw.LineStyle {
	return draw.LineStyle{Color: l.color, Width: vg.Points(1)}
}

func refLine(dashes []vg.Length) draw.LineStyle {
	return draw.LineStyle{Color: refGrey, Width: vg.Points(refWidth), Dashes: dashes}
}

// shape is a marker outline.
type shape int

const (
	circle shape = iota
	square
	triangle
	diamond
	triangleDown
)

// marker draws a marker shape, filled in the series colour or, when open,
// filled white and outlined so that the line through it does not show.
// gonum's own open glyphs are hollow, which lets the connecting line cross
// the marker and makes open and filled shapes hard to tell apart.
type marker struct {
	shape shape
	open  bool
}

func (m marker) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius
	var p vg.Path
	switch m.shape {
	case circle:
		p.Move(vg.Point{X: pt.X + r, Y: pt.Y})
		p.Arc(pt, r, 0, 2*math.Pi)
	case square:
		// Same area as the circle, so no shape looks heavier than another.
		h := r * vg.Length(math.Sqrt(math.Pi)/2)
		p.Move(vg.Point{X: pt.X - h, Y: pt.Y - h})
		p.Line(vg.Point{X: pt.X + h, Y: pt.Y - h})
		p.Line(vg.Point{X: pt.X + h, Y: pt.Y + h})
		p.Line(vg.Point{X: pt.X - h, Y: pt.Y + h})
	case triangle:
		t := r * 1.35
		p.Move(vg.Point{X: pt.X, Y: pt.Y + t})
		p.Line(vg.Point{X: pt.X - t*0.866, Y: pt.Y - t*0.5})
		p.Line(vg.Point{X: pt.X + t*0.866, Y: pt.Y - t*0.5})
	case triangleDown:
		t := r * 1.35
		p.Move(vg.Point{X: pt.X, Y: pt.Y - t})
		p.Line(vg.Point{X: pt.X + t*0.866, Y: pt.Y + t*0.5})
		p.Line(vg.Point{X: pt.X - t*0.866, Y: pt.Y + t*0.5})
	case diamond:
		d := r * 1.25
		p.Move(vg.Point{X: pt.X, Y: pt.Y + d})
		p.Line(vg.Point{X: pt.X + d, Y: pt.Y})
		p.Line(vg.Point{X: pt.X, Y: pt.Y - d})
		p.Line(vg.Point{X: pt.X - d, Y: pt.Y})
	}
	p.Close()
	if !m.open {
		c.SetColor(sty.Color)
		c.Fill(p)
		return
	}
	c.SetColor(color.White)
	c.Fill(p)
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1)})
	c.Stroke(p)
}

// textStyle is a Liberation Serif style: a serif face sits well next to
// the body text of a LaTeX paper, and the font is embedded in gonum/plot,
// so every machine renders the same glyphs. There is no bold: gonum/plot
// v0.17.0's PDF canvas registers every font under the regular style and
// then fails with "undefined font" on a bold one, so titles are set larger
// instead, the same in every format.
func textStyle(size float64) text.Style {
	f := font.From(plot.DefaultFont, vg.Points(size))
	return text.Style{
		Color:   color.Black,
		Font:    f,
		XAlign:  draw.XLeft,
		YAlign:  draw.YBottom,
		Handler: plot.DefaultTextHandler,
	}
}

// newPanel returns a panel whose plot has the paper's axis styling. The
// axis titles are kept on the panel and drawn by it (see panel.draw).
func newPanel(title, xLabel, yLabel string) *panel {
	p := plot.New()
	p.BackgroundColor = nil // the figure background is painted once
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Tick.Label.Font = font.From(plot.DefaultFont, vg.Points(tickSize))
		a.Tick.Length = vg.Points(4)
		// No padding between axis and data: the axis lines then frame the
		// data area exactly, which the right-hand axis and the box rely
		// on. The ranges carry their own margins instead.
		a.Padding = 0
	}
	return &panel{plot: p, title: title, xLabel: xLabel, yLabel: yLabel}
}
