package figures

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

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
	type band struct{ mean, lo, hi []float64 }
	newBand := func() band { return band{make([]float64, n), make([]float64, n), make([]float64, n)} }
	con, pre, leak := newBand(), newBand(), newBand()
	set := func(b band, i int, v Band) { b.mean[i], b.lo[i], b.hi[i] = v.Mean/k, v.Min/k, v.Max/k }
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

	addGrid(p)
	capIcon := addFunction(p, func(x float64) float64 { return x }, refLine(solid))
	var boundIcon icon
	if refill > 0 {
		boundIcon = addFunction(p, func(x float64) float64 { return x + refill }, refLine(dotted))
	}
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
		addErrorBars(p, xs, s.b.mean, s.b.lo, s.b.hi, s.l.bar())
		ic := addMarkers(p, xs, s.b.mean, s.l).withBar(s.l.bar())
		legend[i] = legendItem{s.label + ": mean, min–max", ic}
	}
	legend = append(legend, legendItem{"y = x (bucket capacity)", capIcon})
	if refill > 0 {
		legend = append(legend, legendItem{
			// The axes are in thousands, hence the /1000.
			"y = x + R·W/1000 (refill-assisted; R = " + strconv.FormatFloat(d.StormRate, 'f', -1, 64) +
				", W = " + fmtSeconds(d.Window) + ")",
			boundIcon,
		})
	}

	xlo, xhi, ok := finiteRange(xs)
	if !ok {
		xlo, xhi = 1, 10
	}
	p.X.Min, p.X.Max = padLog1p(xlo, xhi, 0.06)
	ylo, yhi, ok := finiteRange(con.lo, con.hi, pre.lo, pre.hi, leak.lo, leak.hi, con.mean, pre.mean, leak.mean)
	if !ok {
		ylo, yhi = xlo, xhi
	}
	// The reference lines stay in view over the sweep's x range too.
	ylo, yhi = min(ylo, xlo), max(yhi, xhi+refill)
	p.Y.Min, p.Y.Max = padLog1p(ylo, yhi, 0.06)
	if ts := sweepTicks(xs, p.X.Norm, 0.06); ts != nil {
		p.X.Tick.Marker = ts
	}
	pn.legend = legend
	return pn
}

// negativeBand reports whether any finite value of b is below zero.
func negativeBand(b Band) bool { return b.Mean < 0 || b.Min < 0 || b.Max < 0 }
