package figures

import (
	"fmt"

	"github.com/bursar-hpc/bursar/internal/stats"
)

// Format is a figure file format.
type Format string

const (
	PNG Format = "png"
	SVG Format = "svg"
	PDF Format = "pdf"
)

// ParseFormat reads a --format value.
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case PNG, SVG, PDF:
		return Format(s), nil
	}
	return "", fmt.Errorf("unknown figure format %q (want png, svg or pdf)", s)
}

// Interval is a confidence interval, as absolute bounds (not distances):
// the studies' one interval type. The figures draw it only when it holds
// its estimate: the zero Interval, or one of NaN bounds (fewer than two
// seeds), draws nothing.
type Interval = stats.Interval

// holds reports whether the interval is drawable around v.
func holds(iv Interval, v float64) bool {
	return finite(iv.Lo) && finite(iv.Hi) && finite(v) && iv.Lo <= v && v <= iv.Hi && iv.Lo < iv.Hi
}

// Band is a mean over seeds with its spread: Min and Max are the smallest
// and largest per-seed values (absolute values, not distances), CI the
// 95 % interval of the mean that the figures draw.
type Band struct {
	Mean, Min, Max float64
	CI             Interval
}

// HeadroomPoint is one point of the headroom sweep (latency-price, left
// panel).
type HeadroomPoint struct {
	Headroom float64
	// Utilization is the mean pool utilization as a fraction (0–1).
	Utilization Band
	// ProbeP50 and ProbeP95 are pooled percentiles of the probe's time to
	// 128 GPUs outside the storm window, in seconds (NaN when no sample),
	// with their 95 % intervals.
	ProbeP50, ProbeP95     float64
	ProbeP50CI, ProbeP95CI Interval
}

// GracePoint is one point of the grace sweep (latency-price, right panel).
type GracePoint struct {
	Grace      float64
	ProbeP50   float64
	ProbeP50CI Interval
}

// LatencyPriceData is everything fig_latency_price draws.
type LatencyPriceData struct {
	Headroom []HeadroomPoint
	Grace    []GracePoint
	// Censor is the latency at which the probe's observations are
	// censored (591 s); a percentile at or above it is drawn as a lower
	// bound. 0 means none.
	Censor float64
}

// OverbookingPoint is one point of the overbooking sweep.
type OverbookingPoint struct {
	Storms int
	// Phi is the sum of burst ceilings over the pool.
	Phi float64
	// ProbeP50In and ProbeP95In are pooled percentiles of the probe's
	// in-window latencies (censored at 591 s), with their 95 % intervals.
	ProbeP50In, ProbeP95In     float64
	ProbeP50InCI, ProbeP95InCI Interval
	// VictimP95In is the victim's in-window p95 latency over seeds.
	VictimP95In Band
}

// OverbookingData is everything fig_overbooking draws.
type OverbookingData struct {
	Points []OverbookingPoint
	// Violations is the total number of victim grants slower than 60 s in
	// the storm window, over every point and seed.
	Violations int
	// VictimBound is the latency in seconds behind Violations, drawn as a
	// reference line; 0 means the model's 60 s.
	VictimBound float64
	// Censor is the latency in seconds at which the probe's observations
	// are censored (591 s in the published scenario), drawn as a reference
	// line; a percentile at or above it is drawn as a lower bound (an open
	// marker with an upward arrow). 0 draws none.
	Censor float64
}

// BucketPoint is one storm bucket size of the enforcement sweep; the bands
// are storm excess GPU-seconds.
type BucketPoint struct {
	StormBucket                       float64
	Contended, IdlePrepaid, IdleLeaky Band
}

// BucketData is everything fig_bucket draws.
type BucketData struct {
	Points []BucketPoint
	// StormRate (GPUs) and Window (seconds) give the refill-assisted bound
	// y = x + StormRate·Window. When either is 0 that bound coincides with
	// y = x and is not drawn.
	StormRate, Window float64
}

// WriteLatencyPrice draws fig_latency_price into path (atomically): the
// headroom panel on the left and the grace panel on the right, 10×4.5 in.
// It fails, writing nothing, when either sweep has no point.
func WriteLatencyPrice(path string, f Format, d LatencyPriceData) error {
	paint, err := drawLatencyPrice(d)
	if err != nil {
		return fmt.Errorf("figures: latency-price: %w", err)
	}
	return render("latency-price", path, f, wideWidth, figHeight, paint)
}

// WriteOverbooking draws fig_overbooking into path (atomically), 6.5×4.5 in.
// It fails, writing nothing, when there is no point.
func WriteOverbooking(path string, f Format, d OverbookingData) error {
	paint, err := drawOverbooking(d)
	if err != nil {
		return fmt.Errorf("figures: overbooking: %w", err)
	}
	return render("overbooking", path, f, narrowWidth, figHeight, paint)
}

// WriteBucket draws fig_bucket into path (atomically), 6.5×4.5 in. It
// fails, writing nothing, when there is no point.
func WriteBucket(path string, f Format, d BucketData) error {
	paint, err := drawBucket(d)
	if err != nil {
		return fmt.Errorf("figures: bucket: %w", err)
	}
	return render("bucket", path, f, narrowWidth, figHeight, paint)
}
