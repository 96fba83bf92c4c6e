package figures

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/draw"
)

const bucketTitle = "Prepaid leases pin extraction to B; grant-time-only checks leak"

// drawBucket checks d and returns the painter of fig_bucket.
func drawBucket(d BucketData) (painter, error) {
	if len(d.Points) == 0 {
		return nil, errors.New("no bucket points")
	}
	if d.StormRate < 0 || d.Window < 0 {
		return nil, fmt.Errorf("negative storm rate %g or window %g", d.StormRate, d.Window)
	}
	// The log axes place values down to zero; a negative bucket or
	// excess cannot be drawn there and would be a bug upstream anyway.
	for _, pt := range d.Points {
		if pt.StormBucket < 0 || negativeBand(pt.Contended) || negativeBand(pt.IdlePrepaid) || negativeBand(pt.IdleLeaky) {
			return nil, fmt.Errorf("negative storm bucket or excess at B = %g", pt.StormBucket)
		}
	}
	pn := bucketPanel(d)
	return func(c draw.Canvas, tr func(string) string) { drawPanels(c, tr, bucketTitle, pn) }, nil
}

func bucketPanel(d BucketData) *panel {
	pts := slices.Clone(d.Points)
	slices.SortStableFunc(pts, func(a, b BucketPoint) int { return cmpFloat(a.StormBucket, b.StormBucket) })
	// Everything is drawn in thousands of GPU-seconds.
	const k = 1000.0
	n := len(pts)
	xs := make([]float64, n)
	type band struct {
		mean []float64
		iv   []Interval
	}
	newBand := func() band { return band{make([]float64, n), make([]Interval, n)} }
	con, pre, leak := newBand(), newBand(), newBand()
	set := func(b band, i int, v Band) {
		b.mean[i], b.iv[i] = v.Mean/k, Interval{Lo: v.CI.Lo / k, Hi: v.CI.Hi / k}
	}
	for i, pt := range pts {
		xs[i] = pt.StormBucket / k
		set(con, i, pt.Contended)
		set(pre, i, pt.IdlePrepaid)
		set(leak, i, pt.IdleLeaky)
	}
	refill := d.StormRate * d.Window / k

	// Log axes on both sides: the bucket sizes span 25k–600k, and on a
	// linear axis the four smallest would crowd into the first quarter.
	// The same log(1 + v) map on both axes keeps y = x a straight
	// diagonal; it also places an excess of zero.
	pn := newPanel("", "storm bucket B (thousand GPU·s, log scale)", "storm excess (thousand GPU·s, log scale)")
	p := pn.plot
	p.X.Scale, p.Y.Scale = log1pScale{}, log1pScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = log1pTicks{}, log1pTicks{}

	// The ranges first: the error bars are clipped to the bottom of the
	// y axis (a t interval over three seeds can reach below zero).
	xlo, xhi, ok := finiteRange(xs)
	if !ok {
		xlo, xhi = 1, 10
	}
	ylo, yhi, ok := finiteRange(con.mean, pre.mean, leak.mean)
	if !ok {
		ylo, yhi = xlo, xhi
	}
	for _, b := range []band{con, pre, leak} {
		for i, iv := range b.iv {
			if holds(iv, b.mean[i]) {
				ylo, yhi = min(ylo, max(iv.Lo, 0)), max(yhi, iv.Hi)
			}
		}
	}
	// The reference lines stay in view over the sweep's x range too.
	ylo, yhi = min(ylo, xlo), max(yhi, xhi+refill)

	addGrid(p)
	capIcon := addFunction(p, func(x float64) float64 { return x }, refLine(solid))
	var boundIcon icon
	if refill > 0 {
		boundIcon = addFunction(p, func(x float64) float64 { return x + refill }, refLine(dotted))
	}
	p.X.Min, p.X.Max = padLog1p(xlo, xhi, 0.06)
	p.Y.Min, p.Y.Max = padLog1p(ylo, yhi, 0.06)
	floor := max(p.Y.Min, 0)
	series := []struct {
		b     band
		l     look
		label string
	}{
		{con, lookMain, "contended (prepaid leases)"},
		{pre, lookPrepaid, "idle, prepaid leases"},
		{leak, lookLeaky, "idle, grant-time-only checks"},
	}
	// Contended and idle prepaid coincide when the bucket holds: their
	// lines go first (the dashed blue over the solid black lets both
	// show), then bars and markers with the contended dot drawn last,
	// inside the larger prepaid square.
	for _, s := range series {
		addLines(p, xs, s.b.mean, s.l)
	}
	legend := make([]legendItem, len(series))
	for i := len(series) - 1; i >= 0; i-- {
		s := series[i]
		addIntervals(p, estimates{xs: xs, ys: s.b.mean, iv: s.b.iv, floor: floor}, s.l.bar())
		ic := addMarkers(p, xs, s.b.mean, s.l).withBar(s.l.bar())
		legend[i] = legendItem{s.label + ": mean, 95 % t interval over seeds", ic}
	}
	legend = append(legend, legendItem{"y = x: the bucket B itself", capIcon})
	if refill > 0 {
		// In words, for a reader who does not know R and W: an idle
		// storm can take its bucket plus everything that refills while
		// the window lasts. The axes are in thousands, hence the /1000.
		legend = append(legend, legendItem{
			"y = x + R·W: B plus what refills during the storm window (R = " +
				strconv.FormatFloat(d.StormRate, 'f', -1, 64) + " GPUs × W = " + fmtSeconds(d.Window) +
				" = " + strconv.FormatFloat(refill, 'f', -1, 64) + "k)",
			boundIcon,
		})
	}

	if ts := sweepTicks(xs, p.X.Norm, 0.06); ts != nil {
		p.X.Tick.Marker = ts
		// The same labels on y, where they fall in range: y = x then runs
		// through the grid's corners, and the smallest bucket (25k), where
		// the prepaid series sit, gets a labelled tick of its own.
		var ys plot.ConstantTicks
		for _, t := range ts {
			if t.Value >= p.Y.Min && t.Value <= p.Y.Max {
				ys = append(ys, t)
			}
		}
		if len(ys) >= 2 {
			p.Y.Tick.Marker = ys
		}
	}
	pn.legend = legend
	return pn
}

// negativeBand reports whether any finite value of b is below zero.
func negativeBand(b Band) bool { return b.Mean < 0 || b.Min < 0 || b.Max < 0 }
