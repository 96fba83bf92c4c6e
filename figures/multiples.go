package figures

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// SweepData is everything the small-multiples figure of a generic sweep
// (`bursar-sweep sweep --config`) draws: one panel per metric, each with
// the same x axis (a swept knob) and the same series (one line per
// combination of the config's series and its other swept knobs).
type SweepData struct {
	// Title heads the figure (the experiment's name, say).
	Title string
	// XLabel names the x axis of every panel (the swept knob).
	XLabel string
	// Series are the lines' names, in legend order.
	Series []string
	// Panels are the metrics, in reading order.
	Panels []SweepPanel
}

// SweepPanel is one metric: per series, its estimates at the series' x
// values.
type SweepPanel struct {
	Metric string
	// Censor, when positive, makes values at or above it lower bounds
	// (the probe's latency percentiles).
	Censor float64
	Lines  []SweepLine // one per SweepData.Series, same order
}

// SweepLine is one series in one panel.
type SweepLine struct {
	Xs, Ys []float64
	CI     []Interval
}

// Small-multiples layout: panelsPerRow panels of multiplesCell width, each
// row multiplesRowH tall, the legend below.
const (
	panelsPerRow   = 4
	multiplesRowH  = 2.3 * vg.Inch
	multiplesWidth = 12 * vg.Inch
)

// sweepLooks cycle over the series of a small-multiples figure: the
// paper's looks first, then more shapes and dashes in the same palette.
var sweepLooks = []look{
	lookMain, lookP50, lookPrepaid, lookLeaky, lookP95,
	{color: blue, dashes: dotted, shape: diamond},
	{color: vermillion, dashes: longDash, shape: circle, open: true},
	{color: black, dashes: dashed, shape: triangle, open: true},
}

// WriteSweep draws the small multiples of a generic sweep into path
// (atomically): each metric against the swept knob, with its 95 %
// intervals as error bars and censored values as lower bounds, 12 in wide
// and 2.3 in per row of four panels. It fails, writing nothing, when there
// is no panel or a panel's lines do not match the series.
func WriteSweep(path string, f Format, d SweepData) error {
	if len(d.Panels) == 0 {
		return errors.New("figures: sweep: no metric to draw")
	}
	for _, pn := range d.Panels {
		if len(pn.Lines) != len(d.Series) {
			return fmt.Errorf("figures: sweep: panel %s has %d lines for %d series", pn.Metric, len(pn.Lines), len(d.Series))
		}
		for i, l := range pn.Lines {
			if len(l.Xs) != len(l.Ys) || len(l.CI) != len(l.Ys) {
				return fmt.Errorf("figures: sweep: panel %s, series %s: %d x values, %d y values, %d intervals", pn.Metric, d.Series[i], len(l.Xs), len(l.Ys), len(l.CI))
			}
		}
	}
	rows := (len(d.Panels) + panelsPerRow - 1) / panelsPerRow
	legendRows := (len(d.Series) + 2 + 2) / 3
	h := vg.Length(rows)*multiplesRowH + vg.Length(legendRows)*vg.Points(14) + vg.Points(40)
	return render("sweep", path, f, multiplesWidth, h, func(c draw.Canvas, tr func(string) string) {
		drawMultiples(c, tr, d, rows)
	})
}

func drawMultiples(c draw.Canvas, tr func(string) string, d SweepData, rows int) {
	c = draw.Crop(c, vg.Points(outerPad), -vg.Points(outerPad), vg.Points(outerPad), -vg.Points(outerPad))
	c = drawTitle(c, tr(d.Title), textStyle(titleSize))

	// One legend for every panel, at the bottom.
	var legend []legendItem
	looks := make([]look, len(d.Series))
	for i, name := range d.Series {
		looks[i] = sweepLooks[i%len(sweepLooks)]
		ls, gs := looks[i].line(), looks[i].glyph()
		legend = append(legend, legendItem{name, icon{line: &ls, glyph: &gs}.withBar(looks[i].bar())})
	}
	legend = append(legend, legendItem{"95 % interval (t over seeds for means, bootstrap over seeds for pooled percentiles)", intervalIcon()})
	censored := false
	for _, pn := range d.Panels {
		for _, l := range pn.Lines {
			for _, y := range l.Ys {
				censored = censored || (pn.Censor > 0 && y >= pn.Censor)
			}
		}
	}
	if censored {
		legend = append(legend, legendItem{"at the censor: a lower bound", boundMarkIcon(true)})
	}
	items := make([]legendItem, len(legend))
	for i, it := range legend {
		items[i] = legendItem{label: tr(it.label), icon: it.icon}
	}
	leg := newLegend(items, c.Max.X-c.Min.X)
	leg.draw(c, c.Center().X, c.Min.Y+leg.height(), c.Min.X, c.Max.X)
	c.Min.Y += leg.height() + vg.Points(legendGap)

	pw := (c.Max.X - c.Min.X - (panelsPerRow-1)*vg.Points(panelGap)) / panelsPerRow
	ph := (c.Max.Y - c.Min.Y) / vg.Length(rows)
	for k, sp := range d.Panels {
		row, col := k/panelsPerRow, k%panelsPerRow
		pc := c
		pc.Min.X = c.Min.X + vg.Length(col)*(pw+vg.Points(panelGap))
		pc.Max.X = pc.Min.X + pw
		pc.Max.Y = c.Max.Y - vg.Length(row)*ph
		// A gap under each row keeps its axis titles clear of the next
		// row's panel titles.
		pc.Min.Y = pc.Max.Y - ph + vg.Points(12)
		sweepPanel(sp, d.XLabel, looks).draw(pc, 0, tr)
	}
}

// sweepPanel is one metric's axes: linear, labelled at the swept values
// when they fit, the y range over the estimates and their intervals.
func sweepPanel(sp SweepPanel, xLabel string, looks []look) *panel {
	pn := newPanel(sp.Metric, xLabel, "")
	p := pn.plot
	addGrid(p)
	var allX, allY []float64
	for i, l := range sp.Lines {
		// In x order, so the line does not double back when the swept
		// knob was not listed in ascending order.
		idx := make([]int, len(l.Xs))
		for j := range idx {
			idx[j] = j
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmpFloat(l.Xs[a], l.Xs[b]) })
		e := estimates{xs: make([]float64, len(idx)), ys: make([]float64, len(idx)), iv: make([]Interval, len(idx)), censor: sp.Censor}
		for j, k := range idx {
			e.xs[j], e.ys[j], e.iv[j] = l.Xs[k], l.Ys[k], l.CI[k]
		}
		addEstimateLines(p, e, looks[i])
		addIntervals(p, e, looks[i].bar())
		addEstimateMarkers(p, e, looks[i])
		allX = append(allX, l.Xs...)
		allY = append(allY, l.Ys...)
		for j, iv := range l.CI {
			if holds(iv, l.Ys[j]) {
				allY = append(allY, iv.Lo, iv.Hi)
			}
		}
	}
	setXRange(p, allX)
	lo, hi, ok := finiteRange(allY)
	if !ok {
		lo, hi = 0, 1
	}
	p.Y.Min, p.Y.Max = padLinear(lo, hi, 0.08)
	if sp.Censor > 0 && hi >= sp.Censor {
		// Room above the censor for the lower-bound arrows.
		p.Y.Max = hi + 0.25*(hi-lo+math.Abs(hi)*0.1)
	}
	p.Y.Tick.Marker = LinearTicks{N: 4}
	return pn
}
