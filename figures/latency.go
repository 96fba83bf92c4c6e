package figures

import (
	"errors"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/draw"
)

const latencyPriceTitle = "Latency is bought with the preemptible tier's grace period, not with idle headroom"

// drawLatencyPrice checks d and returns the painter of fig_latency_price.
func drawLatencyPrice(d LatencyPriceData) (painter, error) {
	if len(d.Headroom) == 0 && len(d.Grace) == 0 {
		return nil, errors.New("no headroom and no grace points")
	}
	if len(d.Headroom) == 0 {
		return nil, errors.New("no headroom points (left panel)")
	}
	if len(d.Grace) == 0 {
		return nil, errors.New("no grace points (right panel)")
	}
	left, right := headroomPanel(d.Headroom, d.Censor), gracePanel(d.Grace, d.Censor)
	return func(c draw.Canvas, tr func(string) string) {
		drawPanels(c, tr, latencyPriceTitle, left, right)
	}, nil
}

// headroomPanel is the left panel: utilization on the left axis (0–100 %)
// and the probe's time to 128 GPUs on a second axis on the right.
func headroomPanel(pts []HeadroomPoint, censor float64) *panel {
	pts = slices.Clone(pts)
	slices.SortStableFunc(pts, func(a, b HeadroomPoint) int { return cmpFloat(a.Headroom, b.Headroom) })
	n := len(pts)
	xs := make([]float64, n)
	um, ulo, uhi := make([]float64, n), make([]float64, n), make([]float64, n)
	p50, p95 := make([]float64, n), make([]float64, n)
	p50iv, p95iv := make([]Interval, n), make([]Interval, n)
	for i, pt := range pts {
		xs[i] = pt.Headroom
		um[i] = 100 * pt.Utilization.Mean
		// The band is the mean's 95 % interval, clipped to the axis's
		// 0–100 %; a point without one (a single seed) has no band.
		ulo[i], uhi[i] = math.NaN(), math.NaN()
		if holds(pt.Utilization.CI, pt.Utilization.Mean) {
			ulo[i], uhi[i] = max(100*pt.Utilization.CI.Lo, 0), min(100*pt.Utilization.CI.Hi, 100)
		}
		p50[i], p95[i] = pt.ProbeP50, pt.ProbeP95
		p50iv[i], p95iv[i] = pt.ProbeP50CI, pt.ProbeP95CI
	}

	pn := newPanel("(a) Backfill headroom", "backfill headroom (GPUs)", "mean pool utilization (%)")
	p := pn.plot
	// The right axis runs from 0 to five round steps, so its ticks land on
	// the left axis's 0, 20, …, 100. The 10 % margin keeps the highest
	// percentile, or its interval, clear of the frame.
	top := 100.0
	hiVals := slices.Clone(p95)
	for i := range n {
		if holds(p95iv[i], p95[i]) {
			hiVals = append(hiVals, p95iv[i].Hi)
		}
		if holds(p50iv[i], p50[i]) {
			hiVals = append(hiVals, p50iv[i].Hi)
		}
	}
	if _, hi, ok := finiteRange(p50, hiVals); ok && hi > 0 {
		top = 5 * niceStep(hi*1.1/5)
	}
	step := top / 5
	toLeft := func(v float64) float64 { return v * 100 / top }
	ra := &rightAxis{label: "probe time to 128 GPUs (s)", toLeft: toLeft}
	for k := 0; k <= 5; k++ {
		v := float64(k) * step
		ra.ticks = append(ra.ticks, plot.Tick{Value: v, Label: formatTick(v, decimals(step))})
	}
	mapped := func(e estimates) estimates {
		out := estimates{xs: e.xs, ys: make([]float64, n), iv: make([]Interval, n), censor: e.censor}
		for i := range n {
			out.ys[i] = toLeft(e.ys[i])
			out.iv[i] = Interval{Lo: toLeft(e.iv[i].Lo), Hi: toLeft(e.iv[i].Hi)}
		}
		if e.censor > 0 {
			out.censor = toLeft(e.censor)
		}
		return out
	}
	e50 := mapped(estimates{xs: xs, ys: p50, iv: p50iv, censor: censor})
	e95 := mapped(estimates{xs: xs, ys: p95, iv: p95iv, censor: censor})

	// Vertical grid lines only: the two y axes have different units, and
	// horizontal lines would belong to one of them while seeming to serve
	// both.
	addGrid(p).Horizontal.Color = nil
	addBand(p, xs, ulo, uhi, bandGrey)
	util := addSeries(p, xs, um, lookMain)
	addEstimateLines(p, e50, lookP50)
	addEstimateLines(p, e95, lookP95)
	addIntervals(p, e50, lookP50.bar())
	addIntervals(p, e95, lookP95.bar())
	i50, c50, _ := addEstimateMarkers(p, e50, lookP50)
	i95, c95, _ := addEstimateMarkers(p, e95, lookP95)

	// Ranges are set after the plotters: plot.Add widens them to the data.
	setXRange(p, xs)
	// The left axis is fixed at 0–100 % so the cost of headroom is read
	// against the whole pool, not magnified by a zoomed-in range.
	p.Y.Min, p.Y.Max = 0, 100
	p.Y.Tick.Marker = LinearTicks{N: 5}
	pn.right = ra
	// A legend promises an interval only where one is drawn: a single seed
	// (--quick) gives no t interval, and a percentile without a bootstrap
	// interval shows none.
	utilLabel := "utilization: mean, 95 % t interval over seeds (left)"
	if !slices.ContainsFunc(ulo, finite) {
		utilLabel = "utilization: mean over seeds; one seed, no interval (left)"
	}
	pctLabel := func(name string, ivs []Interval, vals []float64) string {
		for i := range ivs {
			if holds(ivs[i], vals[i]) {
				return "probe " + name + ", pooled, 95 % bootstrap interval (right)"
			}
		}
		return "probe " + name + ", pooled; no interval (right)"
	}
	pn.legend = []legendItem{
		{utilLabel, util.withFill(bandGrey)},
		{pctLabel("p50", p50iv, p50), i50.withBar(lookP50.bar())},
		{pctLabel("p95", p95iv, p95), i95.withBar(lookP95.bar())},
	}
	if c50 || c95 {
		pn.legend = append(pn.legend, legendItem{"at the " + fmtSeconds(censor) + " censor: a lower bound", boundMarkIcon(true)})
	}
	return pn
}

// gracePanel is the right panel: the probe's p50 against the grace period,
// with y = x: a point on that line means the probe waited exactly as long
// as the preempted tier was allowed to take to yield.
func gracePanel(pts []GracePoint, censor float64) *panel {
	pts = slices.Clone(pts)
	slices.SortStableFunc(pts, func(a, b GracePoint) int { return cmpFloat(a.Grace, b.Grace) })
	xs, ys := make([]float64, len(pts)), make([]float64, len(pts))
	ivs := make([]Interval, len(pts))
	for i, pt := range pts {
		xs[i], ys[i], ivs[i] = pt.Grace, pt.ProbeP50, pt.ProbeP50CI
	}
	e := estimates{xs: xs, ys: ys, iv: ivs, censor: censor}
	pn := newPanel("(b) Preemption grace", "preemption grace (s)", "probe time to 128 GPUs, p50 (s)")
	p := pn.plot
	// Both axes start at zero and share their top, so y = x is the
	// diagonal of the data area and the offset from it reads directly.
	hi := 1.0
	if _, h, ok := finiteRange(xs, ys); ok && h > 0 {
		hi = h
	}
	for i, iv := range ivs {
		if holds(iv, ys[i]) {
			hi = max(hi, iv.Hi)
		}
	}
	top := hi * 1.08

	addGrid(p)
	ref := addFunction(p, func(x float64) float64 { return x }, refLine(solid))
	addEstimateLines(p, e, lookP50)
	addIntervals(p, e, lookP50.bar())
	i50, censored, _ := addEstimateMarkers(p, e, lookP50)

	p.X.Min, p.X.Max = 0, top
	p.Y.Min, p.Y.Max = 0, top
	// The same ticks on both axes, at the sweep's grace values when they
	// can be labelled, so the grid is square and y = x runs through its
	// corners: p50 − grace is then read off the grid directly.
	var ticks plot.Ticker = LinearTicks{N: 6}
	if ts := sweepTicks(append([]float64{0}, xs...), func(v float64) float64 { return v / top }, 0.06); ts != nil {
		ticks = ts
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = ticks, ticks
	label := "probe p50, pooled over seeds; no interval"
	for i, iv := range ivs {
		if holds(iv, ys[i]) {
			label = "probe p50, pooled over seeds, 95 % bootstrap interval"
			break
		}
	}
	pn.legend = []legendItem{
		{label, i50.withBar(lookP50.bar())},
		{"y = x (the grace period)", ref},
	}
	if censored {
		pn.legend = append(pn.legend, legendItem{"at the " + fmtSeconds(censor) + " censor: a lower bound", boundMarkIcon(true)})
	}
	return pn
}

// setXRange sets a linear x axis over xs with a margin, labelled at the
// sweep values when they are far enough apart.
func setXRange(p *plot.Plot, xs []float64) {
	lo, hi, ok := finiteRange(xs)
	if !ok {
		lo, hi = 0, 1
	}
	p.X.Min, p.X.Max = padLinear(lo, hi, 0.05)
	p.X.Tick.Marker = LinearTicks{N: 6}
	span := p.X.Max - p.X.Min
	if ts := sweepTicks(xs, func(v float64) float64 { return (v - p.X.Min) / span }, 0.05); ts != nil {
		p.X.Tick.Marker = ts
	}
}

// cmpFloat orders NaN last so sorting never panics or mixes NaN x values
// into the middle of a line.
func cmpFloat(a, b float64) int {
	switch {
	case math.IsNaN(a) && math.IsNaN(b):
		return 0
	case math.IsNaN(a):
		return 1
	case math.IsNaN(b):
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
