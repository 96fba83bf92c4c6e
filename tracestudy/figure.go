package tracestudy

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/bursar-hpc/bursar/figures"
	"github.com/bursar-hpc/bursar/internal/stats"
	"github.com/bursar-hpc/bursar/trace"
)

// palette: the Okabe–Ito colours (safe for colour-blind readers) and
// black, for bars (a line or marker of a policy takes its fixed
// figures.PolicyStyle instead).
var palette = []color.Color{
	color.Gray{Y: 0},
	color.RGBA{R: 0x00, G: 0x72, B: 0xB2, A: 0xff},
	color.RGBA{R: 0xD5, G: 0x5E, B: 0x00, A: 0xff},
	color.RGBA{R: 0xE6, G: 0x9F, B: 0x00, A: 0xff},
	color.RGBA{R: 0x00, G: 0x9E, B: 0x73, A: 0xff},
	color.RGBA{R: 0xCC, G: 0x79, B: 0xA7, A: 0xff},
	color.RGBA{R: 0x56, G: 0xB4, B: 0xE9, A: 0xff},
}

// clipNote is what a figure's title says when it clipped an interval: a
// t interval over a few windows ignores the range its quantity cannot
// leave (docs/metrics.md), so a figure clips it there and says so.
const clipNote = "; intervals clipped to the quantity's range (fractions to [0, 1], waits and counts to ≥ 0)"

// offsetBar is a vertical interval at data x moved dx on the canvas: the
// interval of one bar of a group, which gonum places by a canvas offset.
type offsetBar struct {
	x, lo, hi float64
	dx        vg.Length
	style     draw.LineStyle
}

func (b offsetBar) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	x := trX(b.x) + b.dx
	c.StrokeLine2(b.style, x, trY(b.lo), x, trY(b.hi))
}

// nominalRange gives a panel of n categories half a category of room on
// either side, so that no bar or interval of the last one is cut by the
// frame.
func nominalRange(p *plot.Plot, n int) {
	p.X.Min, p.X.Max = -0.6, float64(n)-0.4
}

func newPanel(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	return p
}

// specLabels are the specs' labels, a horizon mark ("†") on every spec
// with a replay that stopped at its horizon (docs/studies.md §4.3).
func specLabels(s Summary) (labels []string, anyStopped bool) {
	nw := len(s.Study.Windows)
	flagged := Flagged(findDegenerate(s.Study, s.Runs, s.windowShapes()))
	for si, sp := range s.Study.Specs {
		l := sp.Policy
		if sp.WindowDays > 0 {
			l = fmt.Sprintf("W %dd m %s", sp.WindowDays, fmtDur(sp.MinRuntime))
		}
		for k := range nw {
			if !s.Runs[si*nw+k].Summary.Converged {
				l += " †"
				anyStopped = true
				break
			}
		}
		if flagged[sp.Label()] {
			l += " ‡"
		}
		labels = append(labels, l)
	}
	return labels, anyStopped
}

// ivBars is a bar panel of one estimate per spec with its 95 % interval
// over windows as an error bar, clipped to [floor, ceil] (the quantity's
// range, after scale; clipped reports whether any was); log y when the
// positive values span more than a decade and a half (a zero is then
// drawn at the axis' floor and labelled).
func ivBars(title, y string, names []string, ivs []Interval, scale, floor, ceil float64) (p *plot.Plot, clipped bool, err error) {
	p = newPanel(title, "", y)
	ivs = slices.Clone(ivs)
	for i := range ivs {
		if math.IsNaN(ivs[i].Lo) {
			continue
		}
		var c bool
		ivs[i].Lo, ivs[i].Hi, c = figures.ClipInterval(ivs[i].Lo, ivs[i].Hi, floor/scale, ceil/scale)
		clipped = clipped || c
	}
	vals := make(plotter.Values, len(ivs))
	lo, hi := math.Inf(1), 0.0
	for i, iv := range ivs {
		v := iv.Mean * scale
		if math.IsNaN(v) {
			v = 0
		}
		vals[i] = v
		top := v
		if !math.IsNaN(iv.Hi) {
			top = iv.Hi * scale
		}
		hi = max(hi, top)
		if v > 0 {
			lo = min(lo, v)
		}
	}
	logY := hi > 0 && lo < math.Inf(1) && hi/lo > 30
	axisFloor := 0.0
	if logY {
		axisFloor = math.Pow(10, math.Floor(math.Log10(lo))-0.3)
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = figures.LogTicks{}
		p.Y.Label.Text = y + " (log scale)"
		for i := range vals {
			vals[i] = max(vals[i], axisFloor)
		}
	}
	if logY {
		// Bars on a log axis have no base: a marker per spec instead,
		// open where the estimate is only a lower bound.
		for i, v := range vals {
			sc, err := plotter.NewScatter(plotter.XYs{{X: float64(i), Y: v}})
			if err != nil {
				return nil, false, err
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: palette[1], Radius: vg.Points(4), Shape: draw.BoxGlyph{}}
			if ivs[i].Lower {
				sc.GlyphStyle.Shape = draw.SquareGlyph{}
			}
			p.Add(sc)
		}
	} else {
		solid := slices.Clone(vals)
		for i := range ivs {
			if ivs[i].Lower {
				solid[i] = 0
				// A lower bound is no quantity measured: an open, dashed
				// bar, so that it does not read as one.
				p.Add(boundBar{x: float64(i), y: vals[i], w: vg.Points(14)})
			}
		}
		b, err := plotter.NewBarChart(solid, vg.Points(14))
		if err != nil {
			return nil, false, err
		}
		b.Color = palette[1]
		b.LineStyle.Width = 0
		p.Add(b)
	}
	toFloor := false
	for i, iv := range ivs {
		if math.IsNaN(iv.Lo) {
			continue
		}
		l, h := max(iv.Lo*scale, axisFloor), iv.Hi*scale
		if logY && iv.Lo*scale < axisFloor {
			toFloor = true
		}
		seg, err := plotter.NewLine(plotter.XYs{{X: float64(i), Y: l}, {X: float64(i), Y: h}})
		if err != nil {
			return nil, false, err
		}
		seg.LineStyle = draw.LineStyle{Color: color.Black, Width: vg.Points(1.2)}
		p.Add(seg)
	}
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	if logY {
		p.Y.Min, p.Y.Max = axisFloor, hi*2
		if toFloor {
			// A log axis has no 0: say where a line that runs off it ends.
			p.Title.Text += "; a line to the axis' foot reaches " + strconv.FormatFloat(floor, 'g', -1, 64)
		}
	} else {
		// From 0, never above the quantity's ceiling: a fraction's axis
		// stops at 1.
		p.Y.Min, p.Y.Max = 0, min(max(hi*1.08, 1e-9), ceil)
		p.Y.Tick.Marker = cleanTicks{}
	}
	nominalRange(p, len(names))
	return p, clipped, nil
}

// boundBar is an open, dashed bar from 0 to y at data x, w wide: an
// estimate that is only a lower bound.
type boundBar struct {
	x, y float64
	w    vg.Length
}

func (b boundBar) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	x, y0, y1 := trX(b.x), trY(0), trY(b.y)
	sty := draw.LineStyle{Color: palette[1], Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}
	c.StrokeLines(sty, []vg.Point{{X: x - b.w/2, Y: y0}, {X: x - b.w/2, Y: y1}, {X: x + b.w/2, Y: y1}, {X: x + b.w/2, Y: y0}})
}

// Thumbnail draws the open bar in a legend.
func (b boundBar) Thumbnail(c *draw.Canvas) {
	sty := draw.LineStyle{Color: palette[1], Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}
	r := c.Rectangle
	c.StrokeLines(sty, []vg.Point{{X: r.Min.X + 4, Y: r.Min.Y}, {X: r.Min.X + 4, Y: r.Max.Y}, {X: r.Max.X - 4, Y: r.Max.Y}, {X: r.Max.X - 4, Y: r.Min.Y}})
}

// openSquare is the legend thumbnail of a lower-bound mean on a log axis.
type openSquare struct{}

func (openSquare) Thumbnail(c *draw.Canvas) {
	c.DrawGlyph(draw.GlyphStyle{Color: palette[1], Radius: vg.Points(4), Shape: draw.SquareGlyph{}}, c.Center())
}

// windowPoints draws each window's own value of a metric over its spec's
// bar, spread across the bar: a filled dot where the window measured
// it, an open triangle pointing up where the window's value is only a
// lower bound (jobs still queued at the horizon, §4.3). It returns the
// legend entries of the marks drawn.
func windowPoints(p *plot.Plot, s Summary, key string, scale float64) ([]figures.LegendEntry, error) {
	m := MetricByKey(key)
	nw := len(s.Study.Windows)
	exact := draw.GlyphStyle{Color: color.Gray{Y: 0x40}, Radius: vg.Points(1.8), Shape: draw.CircleGlyph{}}
	bound := draw.GlyphStyle{Color: palette[2], Radius: vg.Points(3), Shape: draw.TriangleGlyph{}}
	var pts, lower plotter.XYs
	for si := range s.Study.Specs {
		for k := range nw {
			r := &s.Runs[si*nw+k]
			v := m.Get(r) * scale
			if math.IsNaN(v) {
				continue
			}
			x := float64(si)
			if nw > 1 {
				x += 0.5 * (float64(k)/float64(nw-1) - 0.5)
			}
			if m.Lower != nil && m.Lower(r) {
				lower = append(lower, plotter.XY{X: x, Y: v})
			} else {
				pts = append(pts, plotter.XY{X: x, Y: v})
			}
		}
	}
	// The axis holds every window's mark, not only the means.
	_, linear := p.Y.Scale.(plot.LinearScale)
	for _, xy := range append(slices.Clone(pts), lower...) {
		if linear {
			p.Y.Max = max(p.Y.Max, xy.Y*1.05)
		} else if xy.Y > 0 {
			p.Y.Min, p.Y.Max = min(p.Y.Min, xy.Y/1.3), max(p.Y.Max, xy.Y*1.3)
		}
	}
	if !linear {
		// A window with no wait at all has no place on a log axis: at
		// its foot.
		for _, set := range []plotter.XYs{pts, lower} {
			for i := range set {
				set[i].Y = max(set[i].Y, p.Y.Min)
			}
		}
	}
	var legend []figures.LegendEntry
	for _, set := range []struct {
		xy    plotter.XYs
		sty   draw.GlyphStyle
		label string
	}{{pts, exact, "one window's value"}, {lower, bound, "one window's lower bound (jobs unfinished at the horizon)"}} {
		if len(set.xy) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(set.xy)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = set.sty
		p.Add(sc)
		legend = append(legend, figures.LegendEntry{Label: set.label, Icons: []plot.Thumbnailer{sc}})
	}
	if len(lower) > 0 {
		if linear {
			legend = append(legend, figures.LegendEntry{Label: "mean of lower bounds (open bar)", Icons: []plot.Thumbnailer{boundBar{}}})
		} else {
			legend = append(legend, figures.LegendEntry{Label: "mean of lower bounds (open square)", Icons: []plot.Thumbnailer{openSquare{}}})
		}
	}
	return legend, nil
}

// countBars is the served, denied and unfinished jobs per spec, summed
// over the windows, as stacked bars (every job counted, §4.1).
func countBars(s Summary, names []string) (*plot.Plot, []figures.LegendEntry, error) {
	nw := len(s.Study.Windows)
	title := "Every job counted"
	if nw > 1 {
		title += fmt.Sprintf(" (summed over the %d windows)", nw)
	}
	p := newPanel(title, "", "jobs")
	var served, denied, unfinished plotter.Values
	total := 0.0
	for si := range s.Study.Specs {
		var a, b, c float64
		for k := range nw {
			r := &s.Runs[si*nw+k]
			a += float64(r.Summary.Served)
			b += float64(r.Summary.Denied)
			c += float64(r.Summary.Unfinished)
		}
		served, denied, unfinished = append(served, a), append(denied, b), append(unfinished, c)
		total = max(total, a+b+c)
	}
	colors := []color.Color{palette[4], palette[2], palette[3]}
	var prev *plotter.BarChart
	var legend []figures.LegendEntry
	for i, v := range []plotter.Values{served, denied, unfinished} {
		b, err := plotter.NewBarChart(v, vg.Points(14))
		if err != nil {
			return nil, nil, err
		}
		b.Color = colors[i]
		b.LineStyle.Width = 0
		if prev != nil {
			b.StackOn(prev)
		}
		prev = b
		p.Add(b)
		legend = append(legend, figures.LegendEntry{Label: []string{"served", "denied", "unfinished"}[i], Icons: []plot.Thumbnailer{b}})
	}
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	p.Y.Min, p.Y.Max = 0, max(total*1.05, 1)
	p.Y.Tick.Marker = cleanTicks{}
	nominalRange(p, len(names))
	return p, legend, nil
}

// groupedUtil is useful, lost and idle-while-waiting per spec, as
// fractions of pool × the measured interval, grouped bars with their
// intervals over windows (clipped to [0, 1]; clipped reports whether any
// was).
func groupedUtil(names []string, ests []Estimates) (p *plot.Plot, legend []figures.LegendEntry, clipped bool, err error) {
	p = newPanel("One interval: GPU time", "", "fraction of pool × measured interval")
	keys := []string{"useful_utilization", "lost_utilization", "idle_while_waiting"}
	labels := []string{"useful", "lost", "idle while a job would fit"}
	colors := []color.Color{palette[4], palette[2], palette[6]}
	w := vg.Points(7)
	for g, key := range keys {
		m := -1
		for i := range Metrics {
			if Metrics[i].Key == key {
				m = i
			}
		}
		vals := make(plotter.Values, len(ests))
		var bars []plot.Plotter
		for i, e := range ests {
			iv := e.Intervals[m]
			vals[i] = max(0, nanTo0(iv.Mean))
			if math.IsNaN(iv.Lo) {
				continue
			}
			lo, hi, c := figures.ClipInterval(iv.Lo, iv.Hi, 0, 1)
			clipped = clipped || c
			bars = append(bars, offsetBar{x: float64(i), lo: lo, hi: hi, dx: vg.Length(g-1) * w,
				style: draw.LineStyle{Color: color.Black, Width: vg.Points(1)}})
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, nil, false, err
		}
		b.Color = colors[g]
		b.LineStyle.Width = 0
		b.Offset = vg.Length(g-1) * w
		p.Add(b)
		p.Add(bars...)
		legend = append(legend, figures.LegendEntry{Label: labels[g], Icons: []plot.Thumbnailer{b}})
	}
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	// The whole of the pool, 0 to 1, and no more: these are fractions.
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 0.25, Label: "0.25"}, {Value: 0.5, Label: "0.5"},
		{Value: 0.75, Label: "0.75"}, {Value: 1, Label: "1"}}
	nominalRange(p, len(names))
	return p, legend, clipped, nil
}

func nanTo0(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

// intervalsOf is every spec's interval of the metric key.
func intervalsOf(ests []Estimates, key string) []Interval {
	out := make([]Interval, len(ests))
	for i := range Metrics {
		if Metrics[i].Key == key {
			for k, e := range ests {
				out[k] = e.Intervals[i]
			}
		}
	}
	return out
}

// WriteTraceFigure draws fig_trace: the CDF of bounded slowdown over every
// measured job of every window (denied jobs at +∞, so each curve tops
// out at the fraction not denied), the served / denied / unfinished
// counts, the mean wait with its interval over windows, and useful, lost
// and idle-while-waiting GPU time over one interval. "†" marks a policy
// with a replay that stopped at its horizon: its numbers are lower
// bounds.
func WriteTraceFigure(path string, f figures.Format, s Summary) error {
	st := s.Study
	nw := len(st.Windows)
	names, stopped := specLabels(s)
	ests := Estimate(st, s.Runs, -1)
	sub := shortName(s.Trace.Name)
	if nw > 1 {
		sub += fmt.Sprintf(", %d windows of %s days", nw, fmtDay(st.Windows[0].Until-st.Windows[0].From))
	}
	sub += mappingNote(st.Options)
	cdf := newPanel("Bounded slowdown CDF, all measured jobs", "bounded slowdown (τ = 10 s, log scale)", "fraction of jobs ≤ x")
	cdf.X.Scale = plot.LogScale{}
	cdf.X.Tick.Marker = figures.LogTicks{}
	cdf.X.Min = 1
	maxX := 10.0
	var cdfLegend []figures.LegendEntry
	for si := range st.Specs {
		var xs []float64
		for k := range nw {
			xs = append(xs, s.Runs[si*nw+k].Summary.BSLD...)
		}
		if len(xs) == 0 {
			continue
		}
		slices.Sort(xs)
		n := len(xs)
		var pts plotter.XYs
		step := max(1, n/400)
		last := -1
		for k := 0; k < n; k += step {
			if math.IsInf(xs[k], 1) {
				break
			}
			pts = append(pts, plotter.XY{X: xs[k], Y: float64(k+1) / float64(n)})
			last = k
		}
		// The last finite job, exactly: the curve's top is the fraction
		// not denied.
		fin := sort.SearchFloat64s(xs, math.Inf(1))
		if fin > 0 && fin-1 != last {
			pts = append(pts, plotter.XY{X: xs[fin-1], Y: float64(fin) / float64(n)})
		}
		if len(pts) == 0 {
			continue
		}
		maxX = max(maxX, pts[len(pts)-1].X)
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		look := figures.PolicyStyle(st.registry().Style(st.Specs[si].Policy))
		l.LineStyle = look.Line
		// A marker on the curve every ¾ decade of slowdown, staggered by
		// spec so that curves lying on one another still show each
		// marker, and a grey print tells the policies apart.
		var mks plotter.XYs
		for x := math.Pow(10, 0.3+0.75*float64(si)/float64(len(st.Specs))); x <= pts[len(pts)-1].X; x *= math.Pow(10, 0.75) {
			k := sort.Search(len(pts), func(k int) bool { return pts[k].X > x }) - 1
			if k >= 0 {
				mks = append(mks, plotter.XY{X: x, Y: pts[k].Y})
			}
		}
		sc, err := plotter.NewScatter(mks)
		if err != nil {
			return err
		}
		sc.GlyphStyle = look.Glyph
		cdf.Add(l, sc)
		cdfLegend = append(cdfLegend, figures.LegendEntry{Label: names[si], Icons: []plot.Thumbnailer{l, sc}})
	}
	cdf.X.Max = maxX * 1.5
	// A fraction: 0 to 1; the legend is under the panel, outside the
	// curves.
	cdf.Y.Min, cdf.Y.Max = 0, 1
	cdf.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 0.25, Label: "0.25"}, {Value: 0.5, Label: "0.5"},
		{Value: 0.75, Label: "0.75"}, {Value: 1, Label: "1"}}
	counts, countLegend, err := countBars(s, names)
	if err != nil {
		return err
	}
	pw, c1, err := ivBars("Mean wait (censored waits included)", "hours", names, intervalsOf(ests, "mean_wait"), 1.0/3600, 0, math.Inf(1))
	if err != nil {
		return err
	}
	var waitLegend []figures.LegendEntry
	switch {
	case nw > 1:
		if waitLegend, err = windowPoints(pw, s, "mean_wait", 1.0/3600); err != nil {
			return err
		}
	case stopped:
		waitLegend = []figures.LegendEntry{{Label: "a lower bound: jobs unfinished at the horizon (open bar)", Icons: []plot.Thumbnailer{boundBar{}}}}
	}
	pu, utilLegend, c2, err := groupedUtil(names, ests)
	if err != nil {
		return err
	}
	late := intervalsOf(ests, "fair_start_late")
	lateTitle := "Started after their fair start time"
	if nw == 1 {
		// One window: the Wilson interval over the sampled jobs, which
		// stays within [0, 1] by construction.
		lateTitle += " (Wilson intervals)"
		for si := range late {
			if fs := s.Runs[si].Summary.FairStart; fs != nil {
				late[si].Lo, late[si].Hi = fs.LateLo, fs.LateHi
			}
		}
	}
	jain := intervalsOf(ests, "share_jain")
	if nw == 1 {
		// One window: the t interval over its days.
		for si := range jain {
			if sf := s.Runs[si].Summary.Shares; sf != nil {
				jain[si].Lo, jain[si].Hi = sf.Lo, sf.Hi
			}
		}
	}
	// No fairness bar for a spec with a replay that stopped at its
	// horizon: its label's † stands instead (docs/studies.md §4.4).
	for si := range st.Specs {
		if converged(s.Runs, si, nw) < nw {
			late[si], jain[si] = noInterval(), noInterval()
		}
	}
	pl, c3, err := ivBars(lateTitle, "fraction of sampled jobs", names, late, 1, 0, 1)
	if err != nil {
		return err
	}
	pj, c4, err := ivBars("Usage ÷ fair allocation per day (fifo's campaigns)", "Jain's index (1 = fair)", names, jain, 1, 0, 1)
	if err != nil {
		return err
	}
	// An index's whole scale, 0 to 1 (fair): no truncated axis.
	pj.Y.Max = 1
	title := "Each policy on " + sub
	if nw > 1 {
		title += " (bars: means over windows, lines: 95 % intervals, dots: the windows' own values)"
	} else {
		title += " (lines: 95 % intervals; fair start: Wilson over the sampled jobs, usage: t over the days)"
	}
	if c1 || c2 || c3 || c4 {
		title += clipNote
	}
	if stopped {
		title += "; † = a replay stopped at its horizon: lower bounds, and no fairness bar"
	}
	if len(findDegenerate(st, s.Runs, s.windowShapes())) > 0 {
		title += "; ‡ = a degenerate mapping or a run identical to fifo's (summary.json degenerate): no comparison"
	}
	return figures.WriteTitledGridLegends(path, f, 11*vg.Inch, 13*vg.Inch, title, [][]*plot.Plot{{cdf, counts}, {pw, pu}, {pl, pj}},
		[][][]figures.LegendEntry{{cdfLegend, countLegend}, {waitLegend, utilLegend}})
}

// WriteBudgetKnobsFigure draws fig_budget_knobs: the mean wait's paired
// difference from the reference cell (Reference: W = 7 d, m = 1 h, an
// hourly checkpoint), work lost to preemption, preemptions and the
// share-based fairness against the window W, one line per minimum
// runtime m, one column per restart rule (an hourly checkpoint, zero),
// each point the mean over the windows with its 95 % interval; a row
// shares its y axis. "×" marks a cell with a replay that stopped at its
// horizon (not converged: its numbers are lower bounds).
func WriteBudgetKnobsFigure(path string, f figures.Format, s Summary) error {
	st := s.Study
	nw := len(st.Windows)
	ref := Reference(st.Specs)
	ests := Estimate(st, s.Runs, ref)
	var mins, ws []int
	var restarts []string
	for _, sp := range st.Specs {
		if !containsInt(mins, sp.MinRuntime) {
			mins = append(mins, sp.MinRuntime)
		}
		if !containsInt(ws, sp.WindowDays) {
			ws = append(ws, sp.WindowDays)
		}
		if !slices.Contains(restarts, sp.Restart) {
			restarts = append(restarts, sp.Restart)
		}
	}
	// Each row's quantity and the range it cannot leave (a paired
	// difference has none).
	rows := []struct {
		title, unit, key string
		scale            float64
		paired           bool
		floor, ceil      float64
	}{
		{"Mean wait: paired Δ from the reference", "hours", "mean_wait", 1.0 / 3600, true, math.Inf(-1), math.Inf(1)},
		{"Work lost to preemption", "fraction of pool × measured interval", "lost_utilization", 1, false, 0, 1},
		{"Preemptions per window", "leases", "preemptions", 1, false, 0, math.Inf(1)},
		{"Fairness: usage ÷ fair allocation per day", "Jain's index (1 = fair)", "share_jain", 1, false, 0, 1},
	}
	slices.Sort(mins)
	looks := figures.KnobLooks(len(mins))
	clipped := false
	grid := make([][]*plot.Plot, len(rows))
	tops, bottoms := make([]float64, len(rows)), make([]float64, len(rows))
	stopped := false
	var legend []figures.LegendEntry
	for _, rs := range restarts {
		col := "restart " + rs
		if rs == "" {
			col = "restart as knobs"
		}
		if len(col) > 18 {
			col = rs
		}
		for ri, row := range rows {
			p := newPanel(row.title+" — "+col, "budget window W (days)", row.unit)
			for i, m := range mins {
				var xys, marks plotter.XYs
				for si, sp := range st.Specs {
					if sp.MinRuntime != m || sp.Restart != rs {
						continue
					}
					x := float64(sp.WindowDays)
					iv := intervalsOf([]Estimates{ests[si]}, row.key)[0]
					if row.paired {
						// The reference is its own zero, with no interval.
						iv = Interval{Mean: 0, Interval: stats.NoInterval()}
						if si != ref {
							iv = diffOf(ests[si], row.key)
						}
					}
					y := nanTo0(iv.Mean) * row.scale
					xys = append(xys, plotter.XY{X: x, Y: y})
					if !math.IsNaN(iv.Lo) {
						var c bool
						iv.Lo, iv.Hi, c = figures.ClipInterval(iv.Lo, iv.Hi, row.floor/row.scale, row.ceil/row.scale)
						clipped = clipped || c
					}
					tops[ri] = max(tops[ri], y, nanTo0(iv.Hi)*row.scale)
					bottoms[ri] = min(bottoms[ri], y, nanTo0(iv.Lo)*row.scale)
					conv := true
					for k := range nw {
						conv = conv && s.Runs[si*nw+k].Summary.Converged
					}
					if !conv {
						stopped = true
						marks = append(marks, plotter.XY{X: x, Y: y})
					}
					if math.IsNaN(iv.Lo) {
						continue
					}
					// Each m's interval a little to the side, so that
					// they do not hide one another.
					xo := x + (float64(i)-float64(len(mins)-1)/2)*0.12
					seg, err := plotter.NewLine(plotter.XYs{{X: xo, Y: iv.Lo * row.scale}, {X: xo, Y: iv.Hi * row.scale}})
					if err != nil {
						return err
					}
					seg.LineStyle = draw.LineStyle{Color: looks[i].Line.Color, Width: vg.Points(0.8)}
					p.Add(seg)
				}
				if len(xys) == 0 {
					continue
				}
				ln, sc, err := plotter.NewLinePoints(xys)
				if err != nil {
					return err
				}
				ln.LineStyle = looks[i].Line
				sc.GlyphStyle = looks[i].Glyph
				p.Add(ln, sc)
				if ri == 0 && len(grid[0]) == 0 {
					legend = append(legend, figures.LegendEntry{Label: fmt.Sprintf("m = %s", fmtDur(m)), Icons: []plot.Thumbnailer{ln, sc}})
				}
				if len(marks) > 0 {
					mk, err := plotter.NewScatter(marks)
					if err != nil {
						return err
					}
					mk.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(5), Shape: draw.CrossGlyph{}}
					p.Add(mk)
				}
			}
			grid[ri] = append(grid[ri], p)
		}
	}
	var ticks plot.ConstantTicks
	for _, w := range ws {
		ticks = append(ticks, plot.Tick{Value: float64(w), Label: fmt.Sprint(w)})
	}
	for ri, row := range grid {
		for _, p := range row {
			p.X.Tick.Marker = ticks
			p.Y.Tick.Marker = cleanTicks{}
			p.Y.Min, p.Y.Max = bottoms[ri]*1.15, max(tops[ri]*1.15, 1e-9)
			if rows[ri].ceil == 1 {
				// A fraction or an index: from 0, and an index to its
				// whole scale, 1 = fair; never above 1.
				p.Y.Min, p.Y.Max = 0, min(p.Y.Max, 1)
				if rows[ri].key == "share_jain" {
					p.Y.Max = 1
				}
			}
			if len(ws) > 0 {
				p.X.Min, p.X.Max = float64(slices.Min(ws))-0.5, float64(slices.Max(ws))+0.5
			}
		}
	}
	title := "Budget policy: lookback window W × minimum runtime m on " + shortName(s.Trace.Name)
	if nw > 1 {
		title += fmt.Sprintf(", %d windows of %s days (points: means over windows, lines: 95 %% intervals)", nw, fmtDay(st.Windows[0].Until-st.Windows[0].From))
	}
	title += "; reference " + refLabel(st.Specs, ref)
	if stopped {
		title += "; × = a replay stopped at its horizon: lower bounds"
	} else {
		title += "; every replay converged"
	}
	if clipped {
		title += clipNote
	}
	width := 5.5 * vg.Inch * vg.Length(len(restarts))
	// The legend under the first row, outside the data.
	legends := [][][]figures.LegendEntry{make([][]figures.LegendEntry, len(grid[0]))}
	for k := range legends[0] {
		legends[0][k] = legend
	}
	return figures.WriteTitledGridLegends(path, f, max(width, 8*vg.Inch), 13.5*vg.Inch, title, grid, legends)
}

// diffOf is e's paired difference in the metric key.
func diffOf(e Estimates, key string) Interval {
	for i := range Metrics {
		if Metrics[i].Key == key && e.Diffs != nil {
			return e.Diffs[i]
		}
	}
	return Interval{Mean: math.NaN(), Interval: stats.NoInterval()}
}

// refLabel names the reference cell of a budget-knobs figure.
func refLabel(specs []Spec, ref int) string {
	if ref < 0 {
		return "the first cell"
	}
	sp := specs[ref]
	l := fmt.Sprintf("W = %d d, m = %s", sp.WindowDays, fmtDur(sp.MinRuntime))
	if sp.Restart != "" {
		l += ", " + sp.Restart
	}
	return l
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// fmtDur writes a minimum runtime as the grid names it.
func fmtDur(s int) string {
	switch {
	case s == 0:
		return "0"
	case s%3600 == 0:
		return fmt.Sprintf("%d h", s/3600)
	case s%60 == 0:
		return fmt.Sprintf("%d min", s/60)
	}
	return fmt.Sprintf("%d s", s)
}

// mappingNote names the mapping knobs a figure was drawn with where they
// are not the defaults (docs/studies.md §1, §3), so that a sensitivity
// run's figure says which it is.
func mappingNote(o trace.Options) string {
	var n string
	if o.ByGroup {
		n += ", a campaign per group"
	}
	if o.UserCampaigns {
		n += ", a campaign per user"
	}
	if o.Shares != "" && o.Shares != trace.ShareGroups {
		n += ", shares: " + string(o.Shares)
	}
	if o.Bucket != "" && o.Bucket != trace.BucketLargestJob {
		n += ", Bursar's bucket: " + o.Bucket
	}
	return n
}

// shortName is a trace's file name without its folders, for titles.
func shortName(name string) string {
	return filepath.Base(name)
}

// cleanTicks are figures.LinearTicks (at least four labels, where
// gonum's default aims at three) labelled with the shortest decimal
// ("2500", "2.5"), not a fixed precision ("2500.00").
type cleanTicks struct{}

func (cleanTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := figures.LinearTicks{N: 4}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			// Rounded first: a tick at 0.1 × 3 is 0.30000000000000004.
			ts[i].Label = strconv.FormatFloat(math.Round(ts[i].Value*1e9)/1e9, 'f', -1, 64)
		}
	}
	return ts
}

// noInterval is an estimate with no value: no bar, no line.
func noInterval() Interval { return Interval{Mean: math.NaN(), Interval: stats.NoInterval()} }
