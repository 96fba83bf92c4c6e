package figures

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/bursar-hpc/bursar/internal/atomicfile"
)

// dpi is the resolution of PNG figures.
const dpi = 150

// Figure sizes. The two-panel figure spans the text width of a paper; the
// single-panel ones fit one column with room for a caption.
const (
	wideWidth   = 10 * vg.Inch
	narrowWidth = 6.5 * vg.Inch
	figHeight   = 4.5 * vg.Inch
)

// pixelSize is the width and height in pixels of a PNG figure of the given
// size at dpi, rounded as vgimg rounds them.
func pixelSize(w, h vg.Length) (int, int) {
	px := func(l vg.Length) int { return int(l/vg.Inch*dpi + 0.5) }
	return px(w), px(h)
}

// newCanvas returns a blank canvas of the format, ready to be written.
func newCanvas(f Format, w, h vg.Length) (vg.CanvasWriterTo, error) {
	switch f {
	case PNG:
		return newPNGCanvas(w, h), nil
	case SVG:
		// Embedded fonts make the SVG look like the PNG anywhere: without
		// them a viewer substitutes its own serif, whose widths no longer
		// match the ones the layout was computed with.
		return vgsvg.NewWith(vgsvg.UseWH(w, h), vgsvg.EmbedFonts(true)), nil
	case PDF:
		return pdfCanvas{vgpdf.New(w, h)}, nil
	}
	return nil, fmt.Errorf("unknown figure format %q (want png, svg or pdf)", f)
}

// painter draws a figure on c, passing every text through tr first (see
// pdfText for why the text depends on the format).
type painter func(c draw.Canvas, tr func(string) string)

// render draws a figure of size w×h with paint and writes it atomically to
// path in format f. Nothing is written when drawing fails.
func render(name, path string, f Format, w, h vg.Length, paint painter) error {
	cv, err := newCanvas(f, w, h)
	if err != nil {
		return fmt.Errorf("figures: %s: %w", name, err)
	}
	tr := plainText
	if f == PDF {
		tr = pdfText
	}
	if err := paintSafely(cv, paint, tr); err != nil {
		return fmt.Errorf("figures: %s: %w", name, err)
	}
	if err := atomicfile.WriteFunc(path, func(out io.Writer) error {
		_, err := cv.WriteTo(out)
		return err
	}); err != nil {
		return fmt.Errorf("figures: %s: %w", name, err)
	}
	return nil
}

// paintSafely turns a panic inside gonum/plot into an error. The figures
// are drawn at the end of a sweep that may have run for hours; a plotting
// corner case must cost the figure, not the summary and tables written
// next to it.
func paintSafely(cv vg.CanvasWriterTo, paint painter, tr func(string) string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("drawing failed: %v", r)
		}
	}()
	c := draw.New(cv)
	// SVG and PDF canvases start transparent; paint white so every format
	// shows the same figure whatever the viewer's background. A PNG
	// canvas starts white: filling it again would change no pixel, only
	// rasterize the whole canvas once more.
	c.SetColor(color.White)
	if _, white := cv.(pngCanvas); !white {
		c.Fill(c.Rectangle.Path())
	}
	paint(c, tr)
	return nil
}

// Spacing of the layout, in points.
const (
	outerPad   = 6 // around the whole figure
	titleGap   = 6 // below a title
	legendGap  = 6 // between the x axis label and the legend
	rowGap     = 2 // between legend rows
	colGap     = 14
	thumbWidth = 26
	panelGap   = 18 // between the panels of a two-panel figure
	labelPad   = 4  // between an axis title and its tick labels
)

// drawTitle writes txt centred at the top of c, wrapped to c's width, and
// returns c without the space it took.
func drawTitle(c draw.Canvas, txt string, sty text.Style) draw.Canvas {
	if txt == "" {
		return c
	}
	lines := wrap(txt, sty, c.Max.X-c.Min.X)
	e := sty.FontExtents()
	sty.XAlign = draw.XCenter
	y := c.Max.Y
	for _, l := range lines {
		y -= e.Ascent
		c.FillText(sty, vg.Point{X: c.Center().X, Y: y}, l)
		y -= e.Height - e.Ascent
	}
	c.Max.Y = y - vg.Points(titleGap)
	return c
}

// wrap breaks txt at spaces into lines no wider than w.
func wrap(txt string, sty text.Style, w vg.Length) []string {
	var lines []string
	cur := ""
	for _, word := range strings.Fields(txt) {
		try := word
		if cur != "" {
			try = cur + " " + word
		}
		if cur != "" && sty.Width(try) > w {
			lines = append(lines, cur)
			try = word
		}
		cur = try
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// legendItem is one legend entry.
type legendItem struct {
	label string
	icon  plot.Thumbnailer
}

// legendLayout places legend entries in columns under the plot, filled
// top to bottom, so the data series (listed first) share a column and the
// reference lines (listed last) gather in the next. gonum's plot.Legend
// stacks entries in one column inside the data area, where it can hide
// data; a legend outside the axes cannot.
type legendLayout struct {
	items []legendItem
	sty   text.Style
	rows  int
	colW  []vg.Length
	rowH  vg.Length
}

func newLegend(items []legendItem, maxW vg.Length) legendLayout {
	l := legendLayout{items: items, sty: textStyle(legendSize)}
	if len(items) == 0 {
		return l
	}
	l.rowH = l.sty.FontExtents().Height
	// The fewest rows whose columns fit the width; one column at worst.
	for rows := 1; rows <= len(items); rows++ {
		l.rows = rows
		l.colW = l.colW[:0]
		for start := 0; start < len(items); start += rows {
			var w vg.Length
			for _, it := range items[start:min(start+rows, len(items))] {
				w = max(w, vg.Points(thumbWidth)+l.sty.Width(" "+it.label))
			}
			l.colW = append(l.colW, w)
		}
		if l.width() <= maxW {
			break
		}
	}
	return l
}

func (l legendLayout) width() vg.Length {
	var w vg.Length
	for i, cw := range l.colW {
		if i > 0 {
			w += vg.Points(colGap)
		}
		w += cw
	}
	return w
}

func (l legendLayout) height() vg.Length {
	if l.rows == 0 {
		return 0
	}
	return vg.Length(l.rows)*l.rowH + vg.Length(l.rows-1)*vg.Points(rowGap)
}

// draw draws the legend with its top edge at top, centred on centerX but
// kept inside [minX, maxX].
func (l legendLayout) draw(c draw.Canvas, centerX, top, minX, maxX vg.Length) {
	w := l.width()
	x0 := max(min(centerX-w/2, maxX-w), minX)
	e := l.sty.FontExtents()
	for i, it := range l.items {
		col, row := i/l.rows, i%l.rows
		x := x0
		for _, cw := range l.colW[:col] {
			x += cw + vg.Points(colGap)
		}
		yTop := top - vg.Length(row)*(l.rowH+vg.Points(rowGap))
		base := yTop - e.Ascent
		// The thumbnail is centred on the x-height of the text, where the
		// eye reads the middle of a line.
		mid := base + e.Ascent*0.35
		half := e.Ascent * 0.55
		tc := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x, Y: mid - half},
			Max: vg.Point{X: x + vg.Points(thumbWidth), Y: mid + half},
		}}
		it.icon.Thumbnail(&tc)
		c.FillText(l.sty, vg.Point{X: x + vg.Points(thumbWidth) + l.sty.Width(" "), Y: base}, it.label)
	}
}

// rightAxis is a second y axis drawn on the right edge of a plot's data
// area. gonum/plot has one y axis per plot; the series that belong to the
// right axis are therefore mapped into the left axis's coordinates with
// toLeft and added to the same plot (so they share its clipping and glyph
// padding), and this axis only draws the ticks, labels and title that
// translate those positions back into right-axis units.
type rightAxis struct {
	label  string
	ticks  []plot.Tick // in right-axis units
	toLeft func(float64) float64
}

func (r *rightAxis) styles() (tick, label text.Style) {
	tick = textStyle(tickSize)
	tick.YAlign = draw.YCenter
	label = textStyle(labelSize)
	label.XAlign = draw.XCenter
	label.YAlign = draw.YTop
	// Rotated like the left-hand label, so both read bottom to top.
	label.Rotation = math.Pi / 2
	return tick, label
}

const rightTickLen = 4 // points, as the left axis's ticks

// width is the room the axis needs to the right of the data area.
func (r *rightAxis) width() vg.Length {
	if r == nil {
		return 0
	}
	tick, label := r.styles()
	var tw vg.Length
	for _, t := range r.ticks {
		tw = max(tw, tick.Width(t.Label))
	}
	return vg.Points(rightTickLen) + tick.Width(" ") + tw + vg.Points(4) + label.Height(r.label)
}

// draw draws the axis along dc's right edge; p gives the left axis, so
// tick positions agree with the mapped series exactly.
func (r *rightAxis) draw(dc draw.Canvas, p *plot.Plot) {
	tick, label := r.styles()
	axis := draw.LineStyle{Color: color.Black, Width: vg.Points(0.5)}
	x := dc.Max.X
	descent := tick.FontExtents().Descent
	dc.StrokeLine2(axis, x, dc.Min.Y, x, dc.Max.Y)
	var tw vg.Length
	for _, t := range r.ticks {
		y := dc.Y(p.Y.Norm(r.toLeft(t.Value)))
		if !dc.ContainsY(y) {
			continue
		}
		dc.StrokeLine2(axis, x, y, x+vg.Points(rightTickLen), y)
		// Raised by the descent as gonum raises the left axis's labels:
		// digits have no descender, so this centres them on the tick.
		dc.FillText(tick, vg.Point{X: x + vg.Points(rightTickLen) + tick.Width(" "), Y: y + descent}, t.Label)
		tw = max(tw, tick.Width(t.Label))
	}
	lx := x + vg.Points(rightTickLen) + tick.Width(" ") + tw + vg.Points(4)
	// After the quarter turn the text's top edge faces left: YTop puts
	// that edge at lx and the label hangs to the right of the tick labels.
	dc.FillText(label, vg.Point{X: lx, Y: dc.Center().Y}, r.label)
}

// panel is one set of axes with everything drawn around it.
type panel struct {
	plot   *plot.Plot
	title  string
	legend []legendItem
	// xLabel and yLabel are the axis titles. They are drawn here rather
	// than by gonum/plot, which reserves room for an axis title around the
	// midpoint of the data range: on a log axis that is far from the
	// middle of the axis, and the reserved room squeezed the data area.
	xLabel, yLabel string
	right          *rightAxis
	// note is drawn in the top-left corner of the data area; the panel's
	// y range must leave that corner free of data.
	note string
}

// legendFor lays out the panel's legend within width w.
func (pn *panel) legendFor(w vg.Length, tr func(string) string) legendLayout {
	items := make([]legendItem, len(pn.legend))
	for i, it := range pn.legend {
		items[i] = legendItem{label: tr(it.label), icon: it.icon}
	}
	return newLegend(items, w)
}

// draw draws the panel into c, reserving legendH at the bottom for the
// legend (so panels side by side keep aligned data areas).
func (pn *panel) draw(c draw.Canvas, legendH vg.Length, tr func(string) string) {
	c = drawTitle(c, tr(pn.title), textStyle(panelTitleSize))
	leg := pn.legendFor(c.Max.X-c.Min.X, tr)
	xLabel, yLabel := tr(pn.xLabel), tr(pn.yLabel)
	right := pn.right
	if right != nil {
		ra := *right
		ra.label = tr(ra.label)
		right = &ra
	}
	plotC := c
	if legendH > 0 {
		plotC.Min.Y += legendH + vg.Points(legendGap)
	}
	plotC.Max.X -= right.width()
	lsty := textStyle(labelSize)
	lh := lsty.Height(xLabel + yLabel)
	plotC.Min.X += lh + vg.Points(labelPad)
	plotC.Min.Y += lh + vg.Points(labelPad)
	drawPlot(pn.plot, plotC)
	dc := pn.plot.DataCanvas(plotC)

	xs := lsty
	xs.XAlign, xs.YAlign = draw.XCenter, draw.YTop
	c.FillText(xs, vg.Point{X: dc.Center().X, Y: plotC.Min.Y - vg.Points(labelPad)}, xLabel)
	ys := lsty
	ys.XAlign, ys.YAlign = draw.XCenter, draw.YTop
	// A quarter turn makes the text read bottom to top with its top edge
	// facing left; YTop puts that edge at the given x.
	ys.Rotation = math.Pi / 2
	c.FillText(ys, vg.Point{X: plotC.Min.X - vg.Points(labelPad) - lh, Y: dc.Center().Y}, yLabel)

	// Close the frame: gonum draws only the left and bottom axis lines.
	frame := draw.LineStyle{Color: color.Black, Width: vg.Points(0.5)}
	dc.StrokeLine2(frame, dc.Min.X, dc.Max.Y, dc.Max.X, dc.Max.Y)
	if right != nil {
		right.draw(dc, pn.plot)
	} else {
		dc.StrokeLine2(frame, dc.Max.X, dc.Min.Y, dc.Max.X, dc.Max.Y)
	}

	if pn.note != "" {
		drawNote(dc, tr(pn.note))
	}
	if len(leg.items) > 0 {
		leg.draw(c, dc.Center().X, c.Min.Y+legendH, c.Min.X, c.Max.X)
	}
}

// drawNote writes an annotation in a white box in dc's top-left corner.
func drawNote(dc draw.Canvas, note string) {
	sty := textStyle(noteSize)
	e := sty.FontExtents()
	pad := vg.Points(4)
	x := dc.Min.X + vg.Points(6)
	top := dc.Max.Y - vg.Points(5)
	w := sty.Width(note) + 2*pad
	h := e.Height + 2*pad
	box := []vg.Point{
		{X: x, Y: top - h}, {X: x + w, Y: top - h},
		{X: x + w, Y: top}, {X: x, Y: top},
	}
	dc.FillPolygon(color.White, box)
	dc.StrokeLines(draw.LineStyle{Color: refGrey, Width: vg.Points(0.5)}, append(box, box[0]))
	dc.FillText(sty, vg.Point{X: x + pad, Y: top - pad - e.Ascent}, note)
}

// noteFrac is the share of the data area's height, from the bottom, that
// data may use when a panel carries a note: the rest is the note's room.
// At the fixed 4.5 in figure height the data area is about 200 pt tall,
// so the top 18 % (some 36 pt) holds the 24 pt note box and the half of a
// marker that may rise above the highest value.
const noteFrac = 0.82

// drawPanels draws a figure: its title, then the panels side by side with
// legend rows of equal height so their data areas line up.
func drawPanels(c draw.Canvas, tr func(string) string, title string, panels ...*panel) {
	c = draw.Crop(c, vg.Points(outerPad), -vg.Points(outerPad), vg.Points(outerPad), -vg.Points(outerPad))
	c = drawTitle(c, tr(title), textStyle(titleSize))
	n := vg.Length(len(panels))
	pw := (c.Max.X - c.Min.X - (n-1)*vg.Points(panelGap)) / n
	var legendH vg.Length
	for _, pn := range panels {
		legendH = max(legendH, pn.legendFor(pw, tr).height())
	}
	for i, pn := range panels {
		pc := c
		pc.Min.X = c.Min.X + vg.Length(i)*(pw+vg.Points(panelGap))
		pc.Max.X = pc.Min.X + pw
		pn.draw(pc, legendH, tr)
	}
}

// WriteGrid draws a grid of gonum plots (rows of panels, nil cells left
// blank) aligned on one w×h figure and writes it atomically to path in
// format f: the layout the trace studies share, on the same canvases,
// fonts and failure handling as the paper's figures.
func WriteGrid(path string, f Format, w, h vg.Length, grid [][]*plot.Plot) error {
	return render("grid", path, f, w, h, func(c draw.Canvas, _ func(string) string) { drawGrid(c, grid) })
}

// drawGrid aligns and draws the plots of grid on c.
func drawGrid(c draw.Canvas, grid [][]*plot.Plot) {
	drawGridWith(c, grid, func(_, _ int, tile draw.Canvas) draw.Canvas { return tile })
}

// drawPlot is p.Draw(c), without the fill of p's white background where
// c is a PNG canvas already white under it: the fill would change no
// pixel (pngCanvas.whiteUnder) and rasterizing it was about a tenth of
// the trace study's figure (its 11 × 12 in panels). The canvas's colour
// is set as the fill would have set it, so the drawing that follows
// starts from the same state.
func drawPlot(p *plot.Plot, c draw.Canvas) {
	pc, ok := pngUnder(c)
	if !ok || p.BackgroundColor == nil || !opaqueWhite(p.BackgroundColor) || !pc.whiteUnder(c.Rectangle) {
		p.Draw(c)
		return
	}
	bg := p.BackgroundColor
	c.SetColor(bg)
	p.BackgroundColor = nil
	defer func() { p.BackgroundColor = bg }()
	p.Draw(c)
}

// pngUnder is the PNG canvas c draws on, through the draw.Canvas values
// that plot.Align and the layout wrap around it (each passes a fill
// through as it is); ok is false for any other canvas.
func pngUnder(c draw.Canvas) (pngCanvas, bool) {
	cv := c.Canvas
	for {
		switch v := cv.(type) {
		case pngCanvas:
			return v, true
		case draw.Canvas:
			cv = v.Canvas
		case *draw.Canvas:
			cv = v.Canvas
		default:
			return pngCanvas{}, false
		}
	}
}

// opaqueWhite reports whether col is white at full opacity.
func opaqueWhite(col color.Color) bool {
	r, g, b, a := col.RGBA()
	return r == 0xffff && g == 0xffff && b == 0xffff && a == 0xffff
}

// drawGridWith is drawGrid with each tile passed through room first: it
// may draw under the panel and returns what is left for it.
func drawGridWith(c draw.Canvas, grid [][]*plot.Plot, room func(r, k int, tile draw.Canvas) draw.Canvas) {
	rows := len(grid)
	cols := 0
	for _, row := range grid {
		cols = max(cols, len(row))
	}
	full := make([][]*plot.Plot, rows)
	labels := make([][]centredLabels, rows)
	for r, row := range grid {
		full[r] = make([]*plot.Plot, cols)
		labels[r] = make([]centredLabels, cols)
		for k, p := range row {
			full[r][k], labels[r][k] = detachLabels(p)
		}
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(14), PadY: vg.Points(14),
		PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(10)}
	canvases := plot.Align(full, tiles, c)
	for r := range full {
		for k, p := range full[r] {
			if p != nil {
				tile := room(r, k, canvases[r][k])
				drawPlot(p, tile)
				labels[r][k].draw(tile, p)
			}
		}
	}
}
