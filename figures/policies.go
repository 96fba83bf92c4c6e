package figures

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// PoliciesData is the comparison figure of `bursar-sweep compare`
// (fig_policies, docs/studies.md §5): small multiples, one panel per headline
// metric, the policies along every panel's x axis, each estimate with its
// 95 % interval over seeds.
type PoliciesData struct {
	Title string
	// Policies name the x positions, in order.
	Policies []string
	Panels   []PoliciesPanel
}

// PoliciesPanel is one metric; a panel may hold more than one estimate per
// policy (adaptive and naive science per credit), drawn side by side.
type PoliciesPanel struct {
	Title, YLabel string
	Series        []PoliciesSeries
	// Log draws the y axis on a log scale (positive values only), for a
	// metric whose policies differ by orders of magnitude.
	Log bool
	// Floor and Ceil are the range the metric cannot leave (a fraction's
	// [0, 1], a count's [0, +Inf)); an interval that crosses them is drawn
	// clipped there, and the figure says so. Both zero: no range.
	Floor, Ceil float64
}

// clipped is the panel's intervals clipped to its range, and whether any
// was.
func (pn PoliciesPanel) clipped() (PoliciesPanel, bool) {
	if pn.Floor == 0 && pn.Ceil == 0 {
		return pn, false
	}
	was := false
	out := pn
	out.Series = make([]PoliciesSeries, len(pn.Series))
	for k, s := range pn.Series {
		s.CI = append([]Interval(nil), s.CI...)
		for i := range s.CI {
			var c bool
			s.CI[i].Lo, s.CI[i].Hi, c = ClipInterval(s.CI[i].Lo, s.CI[i].Hi, pn.Floor, pn.Ceil)
			was = was || c
		}
		out.Series[k] = s
	}
	return out, was
}

// PoliciesSeries is one estimate per policy (PoliciesData.Policies order).
type PoliciesSeries struct {
	// Name labels the series in the legend when a panel has several.
	Name string
	Ys   []float64
	CI   []Interval
}

// policiesPerRow panels per row, each row policiesRowH tall.
const (
	policiesPerRow = 4
	policiesRowH   = 2.8 * vg.Inch
	policiesWidth  = 13 * vg.Inch
)

// WritePolicies draws the comparison figure into path (atomically). It
// fails, writing nothing, when there is no panel or a series does not have
// one estimate and one interval per policy.
func WritePolicies(path string, f Format, d PoliciesData) error {
	if len(d.Panels) == 0 || len(d.Policies) == 0 {
		return errors.New("figures: policies: nothing to draw")
	}
	for _, pn := range d.Panels {
		for _, s := range pn.Series {
			if len(s.Ys) != len(d.Policies) || len(s.CI) != len(d.Policies) {
				return fmt.Errorf("figures: policies: panel %s, series %q: %d values and %d intervals for %d policies", pn.Title, s.Name, len(s.Ys), len(s.CI), len(d.Policies))
			}
		}
	}
	panels := make([]PoliciesPanel, len(d.Panels))
	note := "95 % t interval of the mean over seeds"
	for k, pn := range d.Panels {
		var c bool
		if panels[k], c = pn.clipped(); c {
			note = "95 % t interval of the mean over seeds, clipped to the metric's range"
		}
	}
	rows := (len(d.Panels) + policiesPerRow - 1) / policiesPerRow
	h := vg.Length(rows)*policiesRowH + vg.Points(70)
	return render("policies", path, f, policiesWidth, h, func(c draw.Canvas, tr func(string) string) {
		c = draw.Crop(c, vg.Points(outerPad), -vg.Points(outerPad), vg.Points(outerPad), -vg.Points(outerPad))
		c = drawTitle(c, tr(d.Title), textStyle(titleSize))
		leg := newLegend([]legendItem{{tr(note), intervalIcon()}}, c.Max.X-c.Min.X)
		leg.draw(c, c.Center().X, c.Min.Y+leg.height(), c.Min.X, c.Max.X)
		c.Min.Y += leg.height() + vg.Points(legendGap)
		pw := (c.Max.X - c.Min.X - (policiesPerRow-1)*vg.Points(panelGap)) / policiesPerRow
		ph := (c.Max.Y - c.Min.Y) / vg.Length(rows)
		for k, pn := range panels {
			row, col := k/policiesPerRow, k%policiesPerRow
			pc := c
			pc.Min.X = c.Min.X + vg.Length(col)*(pw+vg.Points(panelGap))
			pc.Max.X = pc.Min.X + pw
			pc.Max.Y = c.Max.Y - vg.Length(row)*ph
			pc.Min.Y = pc.Max.Y - ph + vg.Points(12)
			policiesPanel(pn, d.Policies).draw(pc, 0, tr)
		}
	})
}

// policiesLooks are the looks of a panel's series, in order.
var policiesLooks = []look{lookMain, {color: vermillion, shape: circle, open: true}, lookP50}

// policiesPanel is one metric's axes: the policies at x = 0, 1, … labelled
// by name (turned, so that seven names fit), the series side by side
// around each position, y over the estimates and their intervals.
func policiesPanel(pn PoliciesPanel, policies []string) *panel {
	p0 := newPanel(pn.Title, "", pn.YLabel)
	p := p0.plot
	addGrid(p)
	var allY []float64
	n := len(pn.Series)
	for si, s := range pn.Series {
		// Several series per policy sit side by side, 0.3 apart in all.
		off := 0.0
		if n > 1 {
			off = -0.15 + 0.3*float64(si)/float64(n-1)
		}
		e := estimates{xs: make([]float64, len(s.Ys)), ys: s.Ys, iv: s.CI}
		for i := range e.xs {
			e.xs[i] = float64(i) + off
		}
		l := policiesLooks[si%len(policiesLooks)]
		addIntervals(p, e, l.bar())
		ic, _, _ := addEstimateMarkers(p, e, l)
		if n > 1 {
			p0.legend = append(p0.legend, legendItem{s.Name, ic})
		}
		allY = append(allY, s.Ys...)
		for j, iv := range s.CI {
			if holds(iv, s.Ys[j]) {
				allY = append(allY, iv.Lo, iv.Hi)
			}
		}
	}
	ticks := make([]plot.Tick, len(policies))
	for i, name := range policies {
		ticks[i] = plot.Tick{Value: float64(i), Label: name}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YTop
	p.X.Min, p.X.Max = -0.6, float64(len(policies))-0.4
	lo, hi, ok := finiteRange(allY)
	if !ok {
		lo, hi = 0, 1
	}
	if pn.Log && lo > 0 {
		p.Y.Scale = plot.LogScale{}
		p.Y.Min, p.Y.Max = lo/1.3, hi*1.3
		p.Y.Tick.Marker = LogTicks{}
		return p0
	}
	// Counts and fractions start at zero when they are all positive, so
	// that the eye compares sizes, not differences.
	if lo > 0 && lo < 0.6*hi {
		lo = 0
	}
	p.Y.Min, p.Y.Max = padLinear(lo, hi, 0.08)
	p.Y.Tick.Marker = LinearTicks{N: 4}
	return p0
}
