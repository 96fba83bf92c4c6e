package figures

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
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

// overbookingFloor is the bottom of the latency axis, in seconds: the
// victim's p95 sits at about one second, and a value below the floor (a
// p95 of 0 s, say) is drawn on it as an upper bound instead of on a zero
// tick, which a log axis does not have.
const overbookingFloor = 0.5

func overbookingPanel(d OverbookingData) *panel {
	pts := slices.Clone(d.Points)
	slices.SortStableFunc(pts, func(a, b OverbookingPoint) int { return cmpFloat(a.Phi, b.Phi) })
	n := len(pts)
	xs := make([]float64, n)
	p50, p95, vm := make([]float64, n), make([]float64, n), make([]float64, n)
	p50iv, p95iv, viv := make([]Interval, n), make([]Interval, n), make([]Interval, n)
	for i, pt := range pts {
		xs[i] = pt.Phi
		p50[i], p95[i] = pt.ProbeP50In, pt.ProbeP95In
		p50iv[i], p95iv[i] = pt.ProbeP50InCI, pt.ProbeP95InCI
		vm[i], viv[i] = pt.VictimP95In.Mean, pt.VictimP95In.CI
	}
	bound := d.VictimBound
	if !(bound > 0) {
		bound = defaultVictimBound
	}

	// A log axis, because the story spans three decades: the victim's
	// p95 of about a second, its 60 s bound and the probe's climb to the
	// 591 s censor. It starts at overbookingFloor, not at zero.
	pn := newPanel("", "overbooking φ (Σ burst ceilings / pool size); storms beneath", "in-window latency (s, log scale)")
	p := pn.plot
	p.Y.Scale = log1pScale{}
	p.Y.Tick.Marker = log1pTicks{}

	addGrid(p)
	boundIcon := addFunction(p, func(float64) float64 { return bound }, refLine(dotted))
	var censorIcon icon
	if d.Censor > 0 {
		censorIcon = addFunction(p, func(float64) float64 { return d.Censor }, refLine(longDash))
	}
	vic := estimates{xs: xs, ys: vm, iv: viv, floor: overbookingFloor}
	e50 := estimates{xs: xs, ys: p50, iv: p50iv, censor: d.Censor, floor: overbookingFloor}
	e95 := estimates{xs: xs, ys: p95, iv: p95iv, censor: d.Censor, floor: overbookingFloor}
	series := []struct {
		e estimates
		l look
	}{{vic, lookMain}, {e50, lookP50}, {e95, lookP95}}
	for _, s := range series {
		addEstimateLines(p, s.e, s.l)
	}
	icons := make([]icon, len(series))
	anyCensored, anyFloored := false, false
	for i, s := range series {
		addIntervals(p, s.e, s.l.bar())
		ic, c, f := addEstimateMarkers(p, s.e, s.l)
		icons[i] = ic.withBar(s.l.bar())
		anyCensored, anyFloored = anyCensored || c, anyFloored || f
	}

	p.X.Min, p.X.Max = 0, 1
	if lo, hi, ok := finiteRange(xs); ok {
		p.X.Min, p.X.Max = padLinear(lo, hi, 0.05)
	}
	// Labelled at the sweep's own φ values, each with its storm count
	// beneath, so a reader finds the runs without converting φ.
	p.X.Tick.Marker = phiTicks(pts)
	// The top leaves the upper (1 − noteFrac) of the axis free for the
	// violation count, so the note never covers data; the arrows of
	// censored points also need that room.
	_, hi, ok := finiteRange(p50, p95, vm, []float64{bound, d.Censor})
	if !ok || hi <= 0 {
		hi = bound
	}
	p.Y.Min = overbookingFloor
	lo1 := math.Log1p(overbookingFloor)
	p.Y.Max = math.Expm1(lo1 + (math.Log1p(hi)-lo1)/noteFrac)

	legend := []legendItem{
		{"victim p95 (guaranteed), mean over seeds", icons[0]},
		{"probe p50, pooled (non-guaranteed)", icons[1]},
		{"probe p95, pooled (non-guaranteed)", icons[2]},
		{"victim bound (" + fmtSeconds(bound) + ")", boundIcon},
	}
	if d.Censor > 0 {
		legend = append(legend, legendItem{"probe censor (" + fmtSeconds(d.Censor) + ")", censorIcon})
	}
	legend = append(legend, legendItem{"95 % interval (t over seeds; bootstrap over seeds for pooled)", intervalIcon()})
	if anyCensored {
		legend = append(legend, legendItem{"at the censor: a lower bound", boundMarkIcon(true)})
	}
	if anyFloored {
		legend = append(legend, legendItem{"below " + fmtSeconds(overbookingFloor) + ": drawn on the axis floor", boundMarkIcon(false)})
	}
	pn.legend = legend
	pn.note = fmt.Sprintf("victim violations (> %s), all φ and seeds: %d", fmtSeconds(bound), d.Violations)
	return pn
}

// phiTicks labels the φ axis at every swept φ, with the storm count on a
// second line.
func phiTicks(pts []OverbookingPoint) plot.ConstantTicks {
	var ts plot.ConstantTicks
	for i, pt := range pts {
		if !finite(pt.Phi) || (i > 0 && pt.Phi == pts[i-1].Phi) {
			continue
		}
		storms := strconv.Itoa(pt.Storms) + " storms"
		if pt.Storms == 1 {
			storms = "1 storm"
		}
		ts = append(ts, plot.Tick{Value: pt.Phi, Label: strconv.FormatFloat(pt.Phi, 'f', -1, 64) + "\n" + storms})
	}
	return ts
}

// fmtSeconds prints a duration in seconds the way the text of the paper
// does: "60 s", "2.5 s".
func fmtSeconds(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64) + " s"
}
