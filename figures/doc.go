// Package figures draws the paper's three figures with gonum/plot from
// already-reduced sweep data: fig_latency_price, fig_overbooking and
// fig_bucket (docs/model.md §11). It computes nothing of the
// experiments itself.
//
// # Files
//
// Each Write function renders one figure in the requested Format and
// writes it atomically (internal/atomicfile): the file at path is either
// the previous one or the complete new figure, never a partial one.
//
//	figure             size (in)   PNG pixels at 150 dpi
//	fig_latency_price  10 × 4.5    1500 × 675
//	fig_overbooking    6.5 × 4.5    975 × 675
//	fig_bucket         6.5 × 4.5    975 × 675
//
// PNG is the default; SVG (fonts embedded, so it looks like the PNG in
// any viewer) and PDF (fonts embedded) are vector versions of the same
// layout. The same data always give byte-identical PNG and SVG files; a
// PDF carries its creation time and so differs from run to run.
//
// A PNG is drawn by gonum's vgimg on an image the package allocates once,
// and written by the package's own encoder (png.go: RGB rows with no
// filter, deflated in four strips at once), which any PNG decoder reads
// back to the pixels drawn. vgimg's copy of its image and image/png's
// per-row filter search had taken a third of a whole `trace` run (its
// 11 × 12 in figure).
//
// # What is drawn
//
// Every estimate carries its 95 % interval (Band.CI, Interval): a t
// interval of a mean over seeds, a bootstrap interval over seeds of a
// pooled percentile (computed by the sweep package). Intervals are drawn
// as error bars, the utilization's as a band; an interval that does not
// hold its estimate (the zero Interval, NaN bounds from a single seed) is
// not drawn. Min and Max of a Band are not drawn.
//
// fig_latency_price has two panels. Left: mean pool utilization (%) with
// its interval band on the left axis, fixed at 0–100, and the probe's
// pooled p50 and p95 time to 128 GPUs on a second axis on the right, whose
// ticks sit at the left axis's 0, 20, …, 100; the panel has vertical grid
// lines only, since a horizontal line would belong to one of the two
// axes. Right: the probe's pooled p50 against the preemption grace, with
// y = x, on equal axes.
//
// fig_overbooking plots, against φ (labelled at each swept φ with its
// storm count beneath), the probe's pooled in-window p50 and p95 and the
// victim's in-window p95, each with its interval, on a log latency axis
// that starts at 0.5 s, with the victim bound (OverbookingData.VictimBound,
// 60 s by default) and, when OverbookingData.Censor is set, the probe's
// censor as reference lines. A note in the top-left corner gives the total
// number of victim violations; the y range leaves that corner free of
// data.
//
// fig_bucket plots each series' mean storm excess with its interval
// against the storm bucket B, both in thousands of GPU-seconds on log
// axes labelled at the swept B values, with y = x and the refill-assisted
// bound y = x + R·W/1000, explained in words in the legend.
//
// WriteSweep draws the small multiples of any other sweep (`bursar-sweep
// sweep --config`, fig_sweep): a panel per metric, four to a row, 12 in
// wide and 2.3 in per row, every panel with the same x (a swept knob) and
// the same lines (SweepData.Series), error bars for the intervals and one
// legend below.
//
// Censoring and floors: a probe percentile at or above the censor
// (LatencyPriceData.Censor, OverbookingData.Censor) is a lower bound and
// is drawn as an open marker with an upward arrow, with no line into it
// and no upper error bar; a value below a log axis's floor is drawn on the
// floor as an open marker with a downward arrow. Each appears in the
// legend only when some point needs it.
//
// The "log" axes map v to log(1 + v) rather than log v: above a few units
// they read as ordinary log axes, and a value of zero is still placed.
// They never carry a 0 tick: a log axis reads as running on below its
// lowest label, so the floor is shown as described above instead.
//
// Ticks: a linear axis carries LinearTicks, every log axis (the log(1 +
// v) ones above one, and the trace, agents-arrive and comparison
// figures' gonum log axes) LogTicks, each at least MinLabels labels that
// do not crowd. In a grid (WriteGrid, WriteTitledGrid) a log axis' label
// takes room beside its axis only (centredLabels): gonum's own layout
// reserved it off-centre and left a gap under the panel's title.
//
// # Conventions
//
// Legends sit below the axes, never over data. Series differ in colour
// lightness, dash pattern and marker shape, so they stay apart in a
// grey-scale print. A NaN value (a pooled percentile with no sample) is
// skipped: the line breaks there instead of bridging the gap. A figure
// with no point at all (either sweep, for fig_latency_price) is an error,
// and so is a negative value on a log axis; nothing is written then.
//
// # Example
//
//	d := figures.BucketData{
//		Points: []figures.BucketPoint{{
//			StormBucket: 25e3,
//			Contended:   figures.Band{Mean: 26e3, Min: 25.5e3, Max: 26.4e3, CI: figures.Interval{Lo: 25.2e3, Hi: 26.8e3}},
//			IdlePrepaid: figures.Band{Mean: 26e3, Min: 26e3, Max: 26e3},
//			IdleLeaky:   figures.Band{Mean: 167e3, Min: 161e3, Max: 171e3},
//		}},
//		StormRate: 64, Window: 1800,
//	}
//	if err := figures.WriteBucket("results/bucket/fig_bucket.png", figures.PNG, d); err != nil {
//		return err
//	}
package figures
