package figures

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// estimates is one series of estimates with their 95 % intervals, ready
// to draw: ys[i] at xs[i], iv[i] around it.
type estimates struct {
	xs, ys []float64
	iv     []Interval
	// censor, when positive, is the value at which the observations are
	// censored: an estimate at or above it is only a lower bound.
	censor float64
	// floor, when positive, is the bottom of a log axis: a value below it
	// is drawn on it as an upper bound (its true place is off the axis).
	floor float64
}

func (e estimates) censored(i int) bool { return e.censor > 0 && e.ys[i] >= e.censor }
func (e estimates) belowFloor(i int) bool {
	return e.floor > 0 && e.ys[i] < e.floor
}

// addIntervals draws the error bars of every interval that holds its
// estimate, clipped to the floor. A censored estimate has no upper
// bound, so its bar stops at the marker.
func addIntervals(p *plot.Plot, e estimates, sty draw.LineStyle) {
	var (
		pts  plotter.XYs
		errs plotter.YErrors
	)
	for i := range e.xs {
		y := e.ys[i]
		if !finite(e.xs[i]) || !holds(e.iv[i], y) || e.belowFloor(i) {
			continue
		}
		lo, hi := e.iv[i].Lo, e.iv[i].Hi
		if e.floor > 0 {
			// A t interval can reach below zero for a quantity that
			// cannot; on a log axis the bar stops at the floor.
			lo = max(lo, e.floor)
		}
		if e.censored(i) {
			hi = y
		}
		if hi-lo <= 0 {
			continue
		}
		pts = append(pts, plotter.XY{X: e.xs[i], Y: y})
		errs = append(errs, struct{ Low, High float64 }{Low: y - lo, High: hi - y})
	}
	if len(pts) == 0 {
		return
	}
	p.Add(&plotter.YErrorBars{XYs: pts, YErrors: errs, LineStyle: sty, CapWidth: vg.Points(capWidth)})
}

// addEstimateLines draws the lines of a series through its ordinary
// points. A line never runs into a bound (a censored value or one under
// the floor): it would draw a slope that was never measured.
func addEstimateLines(p *plot.Plot, e estimates, l look) {
	ys := make([]float64, len(e.ys))
	for i, y := range e.ys {
		ys[i] = y
		if e.censored(i) || e.belowFloor(i) {
			ys[i] = math.NaN()
		}
	}
	addLines(p, e.xs, ys, l)
}

// addEstimateMarkers draws the markers of a series: the look's marker at an
// ordinary point, an open marker with an upward arrow at a censored one
// (a lower bound), and an open marker with a downward arrow on the floor
// for a value below it. It returns the series' legend icon and whether any
// point was censored or under the floor.
func addEstimateMarkers(p *plot.Plot, e estimates, l look) (ic icon, censored, floored bool) {
	var plain, up, down plotter.XYs
	for i := range e.xs {
		x, y := e.xs[i], e.ys[i]
		if !finite(x) || !finite(y) {
			continue
		}
		switch {
		case e.censored(i):
			up = append(up, plotter.XY{X: x, Y: y})
		case e.belowFloor(i):
			down = append(down, plotter.XY{X: x, Y: e.floor})
		default:
			plain = append(plain, plotter.XY{X: x, Y: y})
		}
	}
	if len(plain) > 0 {
		p.Add(&plotter.Scatter{XYs: plain, GlyphStyle: l.glyph()})
	}
	if len(up) > 0 {
		p.Add(&plotter.Scatter{XYs: up, GlyphStyle: l.boundGlyph(true)})
	}
	if len(down) > 0 {
		p.Add(&plotter.Scatter{XYs: down, GlyphStyle: l.boundGlyph(false)})
	}
	ls, gs := l.line(), l.glyph()
	return icon{line: &ls, glyph: &gs}, len(up) > 0, len(down) > 0
}

// boundGlyph is the look's marker drawn open, with an arrow pointing up
// (the value is at least here) or down (at most here).
func (l look) boundGlyph(up bool) draw.GlyphStyle {
	g := l.glyph()
	g.Shape = boundMarker{shape: l.shape, up: up}
	return g
}

// boundMarker marks a bound rather than a value: an open marker, so it
// never reads as an ordinary point, with an arrow in the direction the
// true value lies.
type boundMarker struct {
	shape shape
	up    bool
}

func (m boundMarker) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius
	dir := vg.Length(1)
	if !m.up {
		dir = -1
	}
	// The stem starts at the marker's edge (a triangle reaches 1.35 r
	// up) and is three radii long; the head is a filled triangle.
	start := pt.Y + dir*r*1.35
	tip := start + dir*r*3
	// Stroked on the raw canvas: draw.Canvas.StrokeLine2 clips to the
	// canvas, which would cut the arrow off a legend thumbnail.
	var stem vg.Path
	stem.Move(vg.Point{X: pt.X, Y: start})
	stem.Line(vg.Point{X: pt.X, Y: tip - dir*r*0.8})
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.1)})
	c.Stroke(stem)
	var head vg.Path
	head.Move(vg.Point{X: pt.X, Y: tip})
	head.Line(vg.Point{X: pt.X - r*0.7, Y: tip - dir*r*1.1})
	head.Line(vg.Point{X: pt.X + r*0.7, Y: tip - dir*r*1.1})
	head.Close()
	c.SetColor(sty.Color)
	c.Fill(head)
	marker{shape: m.shape, open: true}.DrawGlyph(c, sty, pt)
}

// boundMarkIcon is the legend thumbnail of a bound: the open marker with its
// arrow, in grey, standing for every series.
func boundMarkIcon(up bool) icon {
	g := draw.GlyphStyle{Color: refGrey, Radius: vg.Points(2), Shape: shifted{boundMarker{shape: circle, up: up}, up}}
	return icon{glyph: &g}
}

// shifted moves a bound marker against its arrow by half the arrow's
// length, so marker and arrow together are centred on a legend row.
type shifted struct {
	m  boundMarker
	up bool
}

func (s shifted) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	d := sty.Radius * 2.2
	if !s.up {
		d = -d
	}
	s.m.DrawGlyph(c, sty, vg.Point{X: pt.X, Y: pt.Y - d})
}

// intervalIcon is the legend thumbnail of an error bar alone.
func intervalIcon() icon {
	sty := draw.LineStyle{Color: color.Gray{Y: 0x40}, Width: vg.Points(1)}
	return icon{bar: &sty}
}
