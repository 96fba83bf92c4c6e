package figures

import (
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// runs splits 0..n-1 into maximal runs of consecutive indices where ok
// holds. A pooled percentile is NaN when a grid point had no sample; the
// line must break there rather than bridge the gap, which would draw a
// value that was never measured.
func runs(n int, ok func(i int) bool) [][2]int {
	var rs [][2]int
	start := -1
	for i := 0; i <= n; i++ {
		if i < n && ok(i) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			rs = append(rs, [2]int{start, i})
			start = -1
		}
	}
	return rs
}

// addSeries draws ys over xs as line segments through markers, skipping
// non-finite points. It returns the legend icon of the series.
func addSeries(p *plot.Plot, xs, ys []float64, l look) icon {
	addLines(p, xs, ys, l)
	return addMarkers(p, xs, ys, l)
}

// addLines draws the line segments of a series, broken at non-finite
// points. Drawing all lines of a figure before its markers (addMarkers)
// keeps every marker visible where series coincide.
func addLines(p *plot.Plot, xs, ys []float64, l look) {
	ok := func(i int) bool { return finite(xs[i]) && finite(ys[i]) }
	for _, r := range runs(len(xs), ok) {
		if r[1]-r[0] < 2 {
			continue
		}
		seg := make(plotter.XYs, 0, r[1]-r[0])
		for i := r[0]; i < r[1]; i++ {
			seg = append(seg, plotter.XY{X: xs[i], Y: ys[i]})
		}
		p.Add(&plotter.Line{XYs: seg, LineStyle: l.line()})
	}
}

// addMarkers draws a series' markers at its finite points and returns the
// series' legend icon.
func addMarkers(p *plot.Plot, xs, ys []float64, l look) icon {
	var pts plotter.XYs
	for i := range xs {
		if finite(xs[i]) && finite(ys[i]) {
			pts = append(pts, plotter.XY{X: xs[i], Y: ys[i]})
		}
	}
	if len(pts) > 0 {
		p.Add(&plotter.Scatter{XYs: pts, GlyphStyle: l.glyph()})
	}
	ls, gs := l.line(), l.glyph()
	return icon{line: &ls, glyph: &gs}
}

// addBand shades the area between lo and hi, broken where a value is not
// finite. A band of a single isolated point has no area, so it is drawn as
// an error bar in the band's colour instead.
func addBand(p *plot.Plot, xs, lo, hi []float64, fill color.Color) {
	ok := func(i int) bool { return finite(xs[i]) && finite(lo[i]) && finite(hi[i]) }
	for _, r := range runs(len(xs), ok) {
		if r[1]-r[0] == 1 {
			i := r[0]
			p.Add(&plotter.YErrorBars{
				XYs:       plotter.XYs{{X: xs[i], Y: lo[i]}},
				YErrors:   plotter.YErrors{{Low: 0, High: hi[i] - lo[i]}},
				LineStyle: draw.LineStyle{Color: fill, Width: vg.Points(3)},
				CapWidth:  vg.Points(capWidth),
			})
			continue
		}
		ring := make(plotter.XYs, 0, 2*(r[1]-r[0]))
		for i := r[0]; i < r[1]; i++ {
			ring = append(ring, plotter.XY{X: xs[i], Y: hi[i]})
		}
		for i := r[1] - 1; i >= r[0]; i-- {
			ring = append(ring, plotter.XY{X: xs[i], Y: lo[i]})
		}
		p.Add(&plotter.Polygon{XYs: []plotter.XYs{ring}, Color: fill})
	}
}

// addFunction draws a reference curve y = f(x) across the whole x range.
// Enough samples are taken that a curve on a log axis looks smooth.
func addFunction(p *plot.Plot, f func(float64) float64, sty draw.LineStyle) icon {
	fn := plotter.NewFunction(f)
	fn.Samples = 200
	fn.LineStyle = sty
	p.Add(fn)
	return icon{line: &sty}
}

// addGrid draws light major grid lines behind everything else, and
// returns them so that a panel can turn one direction off.
func addGrid(p *plot.Plot) *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical = draw.LineStyle{Color: gridGrey, Width: vg.Points(0.5)}
	g.Horizontal = g.Vertical
	p.Add(g)
	return g
}

// icon is a legend thumbnail. It is composed here rather than taken from
// the plotters because one legend entry often stands for several of them
// (a band, its mean line and its markers).
type icon struct {
	fill  color.Color
	bar   *draw.LineStyle
	line  *draw.LineStyle
	glyph *draw.GlyphStyle
}

func (ic icon) Thumbnail(c *draw.Canvas) {
	mid := c.Center()
	if ic.fill != nil {
		h := (c.Max.Y - c.Min.Y) * 0.4
		c.FillPolygon(ic.fill, []vg.Point{
			{X: c.Min.X, Y: mid.Y - h}, {X: c.Max.X, Y: mid.Y - h},
			{X: c.Max.X, Y: mid.Y + h}, {X: c.Min.X, Y: mid.Y + h},
		})
	}
	if ic.bar != nil {
		h := (c.Max.Y - c.Min.Y) * 0.45
		w := vg.Points(capWidth) / 2
		c.StrokeLine2(*ic.bar, mid.X, mid.Y-h, mid.X, mid.Y+h)
		c.StrokeLine2(*ic.bar, mid.X-w, mid.Y-h, mid.X+w, mid.Y-h)
		c.StrokeLine2(*ic.bar, mid.X-w, mid.Y+h, mid.X+w, mid.Y+h)
	}
	if ic.line != nil {
		c.StrokeLine2(*ic.line, c.Min.X, mid.Y, c.Max.X, mid.Y)
	}
	if ic.glyph != nil {
		c.DrawGlyphNoClip(*ic.glyph, mid)
	}
}

// with returns the icon with an error bar or a band added.
func (ic icon) withBar(sty draw.LineStyle) icon { ic.bar = &sty; return ic }
func (ic icon) withFill(c color.Color) icon     { ic.fill = c; return ic }
