package figures

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot/vg/draw"
)

const overbookingTitle = "Guarantees hold under overbooking; scarcity lands on the non-guaranteed tier"

// defaultVictimBound is the victim latency, in seconds, above which a grant
// counts as a violation (model.md §8: victim_violations_in).
const defaultVictimBound = 60

// drawOverbooking checks d and returns the painter of fig_overbooking.
func drawOverbooking(d OverbookingData) (painter, error) {
	if len(d.Points) == 0 {
		return nil, errors.New("no overbooking points")
	}
	if d.Violations < 0 {
		return nil, fmt.Errorf("negative violation count %d", d.Violations)
	}
	// Latencies are drawn on a log(1 + t) axis, which stops at zero.
	for _, pt := range d.Points {
		if pt.ProbeP50In < 0 || pt.ProbeP95In < 0 || negativeBand(pt.VictimP95In) {
			return nil, fmt.Errorf("negative latency at φ = %g", pt.Phi)
		}
	}
	if d.VictimBound < 0 || d.Censor < 0 {
		return nil, fmt.Errorf("negative victim bound %g or censor %g", d.VictimBound, d.Censor)
	}
	pn := overbookingPanel(d)
	return func(c draw.Canvas, tr func(string) string) { drawPanels(c, tr, overbookingTitle, pn) }, nil
}

func overbookingPanel(d OverbookingData) *panel {
	pts := slices.Clone(d.Points)
	slices.SortStableFunc(pts, func(a, b OverbookingPoint) int { return cmpFloat(a.Phi, b.Phi) })
	n := len(pts)
	xs := make([]float64, n)
	p50, p95 := make([]float64, n), make([]float64, n)
	vm, vlo, vhi := make([]float64, n), make([]float64, n), make([]float64, n)
	for i, pt := range pts {
		xs[i] = pt.Phi
		p50[i], p95[i] = pt.ProbeP50In, pt.ProbeP95In
		vm[i], vlo[i], vhi[i] = pt.VictimP95In.Mean, pt.VictimP95In.Min, pt.VictimP95In.Max
	}
	bound := d.VictimBound
	if !(bound > 0) {
		bound = defaultVictimBound
	}

	// A log axis, because the story spans three decades: the victim's
	// p95 of about a second, its 60 s bound and the probe's climb to the
	// 591 s censor. log(1 + t) rather than log t so a p95 of 0 s is drawn.
	pn := newPanel("", "overbooking φ (Σ burst ceilings / pool size)", "in-window latency (s, log scale)")
	p := pn.plot
	p.Y.Scale = log1pScale{}
	p.Y.Tick.Marker = log1pTicks{}

	addGrid(p)
	boundIcon := addFunction(p, func(float64) float64 { return bound }, refLine(dotted))
	var censorIcon icon
	if d.Censor > 0 {
		censorIcon = addFunction(p, func(float64) float64 { return d.Censor }, refLine(longDash))
	}
	addErrorBars(p, xs, vm, vlo, vhi, lookMain.bar())
	vic := addSeries(p, xs, vm, lookMain).withBar(lookMain.bar())
	i50 := addSeries(p, xs, p50, lookP50)
	i95 := addSeries(p, xs, p95, lookP95)

	setXRange(p, xs)
	// The sweep's φ values are not round (3.375, 4.125, …); round ticks
	// read better than their three-decimal labels.
	p.X.Tick.Marker = linearTicks{n: 5}
	// Zero at the bottom; the top leaves the upper (1 − noteFrac) of the
	// axis free for the violation count, so the note never covers data.
	_, hi, ok := finiteRange(p50, p95, vm, vhi, []float64{bound, d.Censor})
	if !ok || hi <= 0 {
		hi = bound
	}
	p.Y.Min = 0
	p.Y.Max = math.Expm1(math.Log1p(hi) / noteFrac)

	legend := []legendItem{
		{"victim p95 (guaranteed), mean and min–max over seeds", vic},
		{"probe p50, pooled (non-guaranteed)", i50},
		{"probe p95, pooled (non-guaranteed)", i95},
		{"victim bound (" + fmtSeconds(bound) + ")", boundIcon},
	}
	if d.Censor > 0 {
		legend = append(legend, legendItem{"probe censor (" + fmtSeconds(d.Censor) + ")", censorIcon})
	}
	pn.legend = legend
	pn.note = fmt.Sprintf("victim violations (> %s), all φ and seeds: %d", fmtSeconds(bound), d.Violations)
	return pn
}

// fmtSeconds prints a duration in seconds the way the text of the paper
// does: "60 s", "2.5 s".
func fmtSeconds(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64) + " s"
}
