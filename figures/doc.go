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
// # What is drawn
//
// fig_latency_price has two panels. Left: mean pool utilization (%) with
// its min–max band over seeds on the left axis, fixed at 0–100, and the
// probe's pooled p50 and p95 time to 128 GPUs on a second axis on the
// right, whose ticks line up with the left axis's grid. Right: the probe's
// pooled p50 against the preemption grace, with y = x, on equal axes.
//
// fig_overbooking plots, against φ, the probe's pooled in-window p50 and
// p95 and the victim's in-window p95 with min–max error bars, on a log
// latency axis, with the victim bound (OverbookingData.VictimBound, 60 s
// by default) and, when OverbookingData.Censor is set, the probe's censor
// as reference lines. A note in the top-left corner gives the total number
// of victim violations; the y range leaves that corner free of data.
//
// fig_bucket plots each series' mean storm excess with min–max error bars
// against the storm bucket B, both in thousands of GPU-seconds on log
// axes, with y = x and the refill-assisted bound y = x + R·W/1000.
//
// The "log" axes map v to log(1 + v) rather than log v: above a few units
// they read as ordinary log axes, and a value of zero, which a p95 latency
// or an excess may be, is still drawn (at the bottom of the axis).
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
//			Contended:   figures.Band{Mean: 26e3, Min: 25.5e3, Max: 26.4e3},
//			IdlePrepaid: figures.Band{Mean: 26e3, Min: 26e3, Max: 26e3},
//			IdleLeaky:   figures.Band{Mean: 167e3, Min: 161e3, Max: 171e3},
//		}},
//		StormRate: 64, Window: 1800,
//	}
//	if err := figures.WriteBucket("results/bucket/fig_bucket.png", figures.PNG, d); err != nil {
//		return err
//	}
package figures
