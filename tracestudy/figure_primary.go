package tracestudy

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/bursar-hpc/bursar/figures"
)

// WritePrimaryFigure draws fig_primary: the primary family's contrasts
// with fifo (docs/studies.md §5.1), one row each — every window's own
// value, the Hodges–Lehmann estimate (a triangle, filled where Holm's
// adjusted p is at most 0.05, open otherwise) and its exact interval — in three
// panels by scale: waits as the ratio policy ÷ fifo on a log axis, GPU
// time and fair-start fractions as policy − fifo, denied jobs as
// policy − fifo. "†" marks a contrast that rests on runs stopped at
// their horizon (§6.20: no finding).
func WritePrimaryFigure(path string, f figures.Format, s Summary, fam []Tested) error {
	type group struct {
		title, x string
		keep     func(t Tested) bool
		ratio    bool
	}
	groups := []group{
		{"Waits: policy ÷ fifo, per window", "mean wait ratio (log scale; 1 = as fifo)", func(t Tested) bool { return t.Ratio }, true},
		{"Fractions of the pool or of the sampled jobs: policy − fifo, per window", "difference (0 = as fifo)",
			func(t Tested) bool { return !t.Ratio && MetricByKey(t.Metric).Unit == "fraction" }, false},
		{"Jobs denied per window: policy − fifo", "jobs (0 = as fifo)",
			func(t Tested) bool { return !t.Ratio && MetricByKey(t.Metric).Unit != "fraction" }, false},
	}
	var grid [][]*plot.Plot
	var legends [][][]figures.LegendEntry
	for _, g := range groups {
		var rows []Tested
		for _, t := range fam {
			if g.keep(t) {
				rows = append(rows, t)
			}
		}
		if len(rows) == 0 {
			continue
		}
		p, legend, err := forestPanel(g.title, g.x, rows, g.ratio)
		if err != nil {
			return err
		}
		grid = append(grid, []*plot.Plot{p})
		legends = append(legends, [][]figures.LegendEntry{legend})
	}
	nw := len(s.Study.Windows)
	title := fmt.Sprintf("The primary family on %s, %d windows of %s days%s: exact Wilcoxon signed-rank test over windows, Holm's adjustment across the family (%s); "+
		"triangle: Hodges–Lehmann estimate (filled: shown after Holm, open: not), line: its interval (coverage %.3f), dots: the windows",
		shortName(s.Trace.Name), nw, fmtDay(s.Study.Windows[0].Until-s.Study.Windows[0].From), mappingNote(s.Study.Options), contrasts(len(fam)), fam[0].Shift.Coverage)
	return figures.WriteTitledGridLegends(path, f, 10*vg.Inch, 3.2*vg.Inch*vg.Length(len(grid)), title, grid, legends)
}

// forestPanel is one panel of fig_primary: a row per contrast.
func forestPanel(title, x string, rows []Tested, ratio bool) (*plot.Plot, []figures.LegendEntry, error) {
	p := newPanel(title, x, "")
	tr := func(v float64) float64 { return v }
	if ratio {
		tr = math.Exp
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = figures.LogTicks{}
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	labels := make([]string, len(rows))
	dotSty := draw.GlyphStyle{Color: color.Gray{Y: 0x70}, Radius: vg.Points(1.8), Shape: draw.CircleGlyph{}}
	shown := draw.GlyphStyle{Color: color.Black, Radius: vg.Points(4.5), Shape: draw.PyramidGlyph{}}
	open := draw.GlyphStyle{Color: color.Black, Radius: vg.Points(4.5), Shape: draw.TriangleGlyph{}}
	lineSty := draw.LineStyle{Color: color.Black, Width: vg.Points(2)}
	var anyStopped bool
	var dots, est, estOpen plotter.XYs
	for i, t := range rows {
		// Top to bottom in family order.
		y := float64(len(rows) - 1 - i)
		l := fmt.Sprintf("%s %s (Holm p %.2g)", t.Policy, t.Metric, t.PHolm)
		if t.Converged == 0 {
			l += " †"
			anyStopped = true
		}
		labels[len(rows)-1-i] = l
		for k, v := range t.Values {
			if math.IsNaN(v) {
				continue
			}
			dy := 0.25 * (float64(k)/float64(max(len(t.Values)-1, 1)) - 0.5)
			dots = append(dots, plotter.XY{X: tr(v), Y: y + dy})
			lo, hi = min(lo, tr(v)), max(hi, tr(v))
		}
		if math.IsNaN(t.Shift.Estimate) {
			continue
		}
		pt := plotter.XY{X: tr(t.Shift.Estimate), Y: y}
		if t.PHolm <= 0.05 {
			est = append(est, pt)
		} else {
			estOpen = append(estOpen, pt)
		}
		seg, err := plotter.NewLine(plotter.XYs{{X: tr(t.Shift.Lo), Y: y}, {X: tr(t.Shift.Hi), Y: y}})
		if err != nil {
			return nil, nil, err
		}
		seg.LineStyle = lineSty
		p.Add(seg)
		lo, hi = min(lo, tr(t.Shift.Lo)), max(hi, tr(t.Shift.Hi))
	}
	ref := 0.0
	if ratio {
		ref = 1
	}
	lo, hi = min(lo, ref), max(hi, ref)
	refLine, err := plotter.NewLine(plotter.XYs{{X: ref, Y: -0.6}, {X: ref, Y: float64(len(rows)) - 0.4}})
	if err != nil {
		return nil, nil, err
	}
	refLine.LineStyle = draw.LineStyle{Color: palette[2], Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
	p.Add(refLine)
	var legend []figures.LegendEntry
	for _, set := range []struct {
		xy    plotter.XYs
		sty   draw.GlyphStyle
		label string
	}{{dots, dotSty, "one window"}, {est, shown, "estimate, Holm p ≤ 0.05"}, {estOpen, open, "estimate, Holm p > 0.05: not shown"}} {
		if len(set.xy) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(set.xy)
		if err != nil {
			return nil, nil, err
		}
		sc.GlyphStyle = set.sty
		p.Add(sc)
		legend = append(legend, figures.LegendEntry{Label: set.label, Icons: []plot.Thumbnailer{sc}})
	}
	iv, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}})
	if err != nil {
		return nil, nil, err
	}
	iv.LineStyle = lineSty
	legend = append(legend, figures.LegendEntry{Label: "its interval", Icons: []plot.Thumbnailer{iv}},
		figures.LegendEntry{Label: "as fifo", Icons: []plot.Thumbnailer{refLine}})
	if anyStopped {
		legend = append(legend, figures.LegendEntry{Label: "† rests on replays stopped at their horizon: no finding (§6.20)", Icons: nil})
	}
	p.NominalY(labels...)
	p.Y.Min, p.Y.Max = -0.6, float64(len(rows))-0.4
	pad := 0.06 * (hi - lo)
	if ratio {
		p.X.Min, p.X.Max = lo/1.15, hi*1.15
	} else {
		p.X.Min, p.X.Max = lo-pad, hi+pad
		p.X.Tick.Marker = cleanTicks{}
	}
	return p, legend, nil
}

// contrasts is "1 contrast" or "n contrasts".
func contrasts(n int) string {
	if n == 1 {
		return "1 contrast"
	}
	return fmt.Sprintf("%d contrasts", n)
}
