package figures

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
)

// The sample data follow the published findings (experiments.md), so the
// figures the tests draw are the ones a reader of the paper would see.

func sampleLatency() LatencyPriceData {
	band := func(m float64) Band {
		return Band{Mean: m, Min: m - 0.006, Max: m + 0.005, CI: Interval{Lo: m - 0.02, Hi: m + 0.02}}
	}
	return LatencyPriceData{
		Censor: 591,
		Headroom: []HeadroomPoint{
			{Headroom: 16, Utilization: band(0.931), ProbeP50: 62, ProbeP95: 298,
				ProbeP50CI: Interval{Lo: 61, Hi: 104}, ProbeP95CI: Interval{Lo: 240, Hi: 591}},
			{Headroom: 32, Utilization: band(0.922), ProbeP50: 62, ProbeP95: 301},
			{Headroom: 64, Utilization: band(0.904), ProbeP50: 61, ProbeP95: 296},
			{Headroom: 128, Utilization: band(0.873), ProbeP50: 62, ProbeP95: 305},
			{Headroom: 192, Utilization: band(0.839), ProbeP50: 63, ProbeP95: 292},
			{Headroom: 256, Utilization: band(0.801), ProbeP50: 61, ProbeP95: 288},
		},
		Grace: []GracePoint{
			{Grace: 15, ProbeP50: 17, ProbeP50CI: Interval{Lo: 8, Hi: 18}}, {Grace: 30, ProbeP50: 32}, {Grace: 60, ProbeP50: 62},
			{Grace: 90, ProbeP50: 92}, {Grace: 120, ProbeP50: 122},
		},
	}
}

func sampleOverbooking() OverbookingData {
	p50 := []float64{41, 88, 190, 362, 540, 591}
	p95 := []float64{236, 480, 591, 591, 591, 591}
	var pts []OverbookingPoint
	for s := 1; s <= 6; s++ {
		pts = append(pts, OverbookingPoint{
			Storms:      s,
			Phi:         (64 + 2*384 + 384*float64(s) + 512) / 512,
			ProbeP50In:  p50[s-1],
			ProbeP95In:  p95[s-1],
			VictimP95In: Band{Mean: 1, Min: 1, Max: 1, CI: Interval{Lo: 1, Hi: 1}},
			// Intervals of varying shape; the censored ones reach the
			// censor.
			ProbeP50InCI: Interval{Lo: p50[s-1] * 0.5, Hi: min(p50[s-1]*1.6, 591)},
			ProbeP95InCI: Interval{Lo: p95[s-1] * 0.7, Hi: 591},
		})
	}
	return OverbookingData{Points: pts, Violations: 0, Censor: 591}
}

func sampleBucket() BucketData {
	band := func(m, spread float64) Band {
		return Band{Mean: m, Min: m - spread, Max: m + 0.6*spread, CI: Interval{Lo: m - 2*spread, Hi: m + 2*spread}}
	}
	bs := []float64{25e3, 50e3, 100e3, 150e3, 300e3, 600e3}
	leaky := []float64{167e3, 191e3, 240e3, 289e3, 437e3, 735e3}
	var pts []BucketPoint
	for i, b := range bs {
		pts = append(pts, BucketPoint{
			StormBucket: b,
			Contended:   band(b+0.8e3, 0.5e3),
			IdlePrepaid: band(b+1.1e3, 0.3e3),
			IdleLeaky:   band(leaky[i], 6e3),
		})
	}
	return BucketData{Points: pts, StormRate: 64, Window: 1800}
}

// writers runs each figure's writer on its sample data.
var writers = map[string]struct {
	write func(path string, f Format) error
	w, h  int
}{
	"latency_price": {func(p string, f Format) error { return WriteLatencyPrice(p, f, sampleLatency()) }, 1500, 675},
	"overbooking":   {func(p string, f Format) error { return WriteOverbooking(p, f, sampleOverbooking()) }, 975, 675},
	"bucket":        {func(p string, f Format) error { return WriteBucket(p, f, sampleBucket()) }, 975, 675},
}

func TestPNGHasDocumentedPixelSize(t *testing.T) {
	for name, w := range writers {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "fig_"+name+".png")
			require.NoError(t, w.write(path, PNG))
			f, err := os.Open(path)
			require.NoError(t, err)
			defer f.Close()
			img, err := png.Decode(f)
			require.NoError(t, err)
			assert.Equal(t, w.w, img.Bounds().Dx(), "width in pixels")
			assert.Equal(t, w.h, img.Bounds().Dy(), "height in pixels")
		})
	}
}

func TestPixelSizeMatchesConstants(t *testing.T) {
	w, h := pixelSize(wideWidth, figHeight)
	assert.Equal(t, [2]int{1500, 675}, [2]int{w, h})
	w, h = pixelSize(narrowWidth, figHeight)
	assert.Equal(t, [2]int{975, 675}, [2]int{w, h})
}

func TestVectorFormatsHaveMagic(t *testing.T) {
	for name, w := range writers {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			svg := filepath.Join(dir, "fig.svg")
			require.NoError(t, w.write(svg, SVG))
			b, err := os.ReadFile(svg)
			require.NoError(t, err)
			require.NotEmpty(t, b)
			assert.True(t, bytes.HasPrefix(b, []byte("<?xml")), "SVG starts with an XML declaration")
			assert.Contains(t, string(b[:min(len(b), 512)]), "<svg")

			pdf := filepath.Join(dir, "fig.pdf")
			require.NoError(t, w.write(pdf, PDF))
			b, err = os.ReadFile(pdf)
			require.NoError(t, err)
			assert.True(t, bytes.HasPrefix(b, []byte("%PDF-")), "PDF magic")
			assert.True(t, bytes.Contains(b[max(0, len(b)-64):], []byte("%%EOF")), "PDF trailer")
		})
	}
}

func TestPNGAndSVGAreDeterministic(t *testing.T) {
	for name, w := range writers {
		for _, f := range []Format{PNG, SVG} {
			t.Run(name+"/"+string(f), func(t *testing.T) {
				dir := t.TempDir()
				a, b := filepath.Join(dir, "a."+string(f)), filepath.Join(dir, "b."+string(f))
				require.NoError(t, w.write(a, f))
				require.NoError(t, w.write(b, f))
				ba, err := os.ReadFile(a)
				require.NoError(t, err)
				bb, err := os.ReadFile(b)
				require.NoError(t, err)
				assert.True(t, bytes.Equal(ba, bb), "same data must give the same bytes")
			})
		}
	}
}

// The sweep harness may draw its figures from several goroutines.
func TestConcurrentWrites(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 3*len(writers))
	for name, w := range writers {
		for _, f := range []Format{PNG, SVG, PDF} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- w.write(filepath.Join(dir, name+"."+string(f)), f)
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
}

// PDF text goes out in Windows-1252 (see pdf.go): characters of that code
// page are encoded, the others spelled out before layout.
func TestPDFText(t *testing.T) {
	assert.Equal(t, "min\x96max \xb7 phi", toCP1252(pdfText("min–max · φ")))
	assert.Equal(t, "sum of burst ceilings", pdfText("Σ burst ceilings"))
	assert.Equal(t, "a?b", toCP1252("a→b"))
	assert.Equal(t, "same", plainText("same"))
}

func TestEmptyInputIsAClearErrorAndWritesNothing(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct {
		err  func(path string) error
		want string
	}{
		"latency-price all empty": {func(p string) error { return WriteLatencyPrice(p, PNG, LatencyPriceData{}) }, "no headroom and no grace points"},
		"latency-price no headroom": {func(p string) error {
			return WriteLatencyPrice(p, PNG, LatencyPriceData{Grace: sampleLatency().Grace})
		}, "no headroom points"},
		"latency-price no grace": {func(p string) error {
			return WriteLatencyPrice(p, PNG, LatencyPriceData{Headroom: sampleLatency().Headroom})
		}, "no grace points"},
		"overbooking": {func(p string) error { return WriteOverbooking(p, PNG, OverbookingData{}) }, "no overbooking points"},
		"bucket":      {func(p string) error { return WriteBucket(p, PNG, BucketData{StormRate: 64, Window: 1800}) }, "no bucket points"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name+".png")
			err := c.err(path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), "figures: ")
			assert.NoFileExists(t, path)
		})
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "no temporary files left behind")
}

func TestFailedWriteKeepsPreviousFigure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fig_bucket.png")
	require.NoError(t, os.WriteFile(path, []byte("previous"), 0o644))
	require.Error(t, WriteBucket(path, PNG, BucketData{}))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "previous", string(b))
}

func TestUnknownFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fig.gif")
	err := WriteBucket(path, Format("gif"), sampleBucket())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown figure format "gif"`)
	assert.NoFileExists(t, path)
}

func TestWriteCreatesFolders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results", "bucket", "fig_bucket.svg")
	require.NoError(t, WriteBucket(path, SVG, sampleBucket()))
	assert.FileExists(t, path)
}

// NaN percentiles (a grid point without samples) are skipped: the figure
// still renders, at its documented size.
func TestNaNPointsAreSkipped(t *testing.T) {
	nan := math.NaN()
	lat := sampleLatency()
	lat.Headroom[2].ProbeP50 = nan
	lat.Headroom[3].ProbeP95 = nan
	lat.Headroom[5].Utilization = Band{Mean: nan, Min: nan, Max: nan}
	lat.Grace[0].ProbeP50 = nan
	ob := sampleOverbooking()
	ob.Points[4].ProbeP50In = nan
	ob.Points[5].ProbeP95In = nan
	ob.Points[0].VictimP95In = Band{Mean: nan, Min: nan, Max: nan}
	bk := sampleBucket()
	bk.Points[1].IdleLeaky = Band{Mean: nan, Min: nan, Max: nan}
	bk.Points[3].Contended.Max = nan

	dir := t.TempDir()
	checkPNG(t, filepath.Join(dir, "lat.png"), 1500, 675, func(p string) error { return WriteLatencyPrice(p, PNG, lat) })
	checkPNG(t, filepath.Join(dir, "ob.png"), 975, 675, func(p string) error { return WriteOverbooking(p, PNG, ob) })
	checkPNG(t, filepath.Join(dir, "bk.png"), 975, 675, func(p string) error { return WriteBucket(p, PNG, bk) })
}

// A series with no finite value at all (no probe sample anywhere) leaves
// its line out but keeps the axes and the other series. These and the
// edge cases below render SVG: the layout is the same for every format,
// and rasterizing is the slow part of a test run under -race.
func TestAllNaNSeries(t *testing.T) {
	nan := math.NaN()
	lat := sampleLatency()
	for i := range lat.Headroom {
		lat.Headroom[i].ProbeP50, lat.Headroom[i].ProbeP95 = nan, nan
	}
	for i := range lat.Grace {
		lat.Grace[i].ProbeP50 = nan
	}
	ob := sampleOverbooking()
	for i := range ob.Points {
		ob.Points[i].ProbeP50In, ob.Points[i].ProbeP95In = nan, nan
		ob.Points[i].VictimP95In = Band{Mean: nan, Min: nan, Max: nan}
	}
	bk := sampleBucket()
	for i := range bk.Points {
		bk.Points[i].IdleLeaky = Band{Mean: nan, Min: nan, Max: nan}
	}
	dir := t.TempDir()
	checkSVG(t, filepath.Join(dir, "lat.svg"), func(p string) error { return WriteLatencyPrice(p, SVG, lat) })
	checkSVG(t, filepath.Join(dir, "ob.svg"), func(p string) error { return WriteOverbooking(p, SVG, ob) })
	checkSVG(t, filepath.Join(dir, "bk.svg"), func(p string) error { return WriteBucket(p, SVG, bk) })
}

// Odd but legal inputs: one grid point, zeros on the log axes, unsorted
// points, no refill bound, a custom victim bound.
func TestEdgeInputsRender(t *testing.T) {
	dir := t.TempDir()
	one := LatencyPriceData{
		Headroom: []HeadroomPoint{{Headroom: 128, Utilization: Band{Mean: 0.9, Min: 0.88, Max: 0.91}, ProbeP50: 62, ProbeP95: 300}},
		Grace:    []GracePoint{{Grace: 60, ProbeP50: 62}},
	}
	checkSVG(t, filepath.Join(dir, "lat1.svg"), func(p string) error { return WriteLatencyPrice(p, SVG, one) })

	ob := sampleOverbooking()
	ob.Points[0], ob.Points[5] = ob.Points[5], ob.Points[0]
	ob.Points[2].VictimP95In = Band{Mean: 0, Min: 0, Max: 0}
	ob.VictimBound, ob.Censor, ob.Violations = 30, 0, 3
	checkSVG(t, filepath.Join(dir, "ob.svg"), func(p string) error { return WriteOverbooking(p, SVG, ob) })

	bk := sampleBucket()
	bk.Points[0].Contended = Band{}
	bk.StormRate, bk.Window = 0, 0
	checkSVG(t, filepath.Join(dir, "bk.svg"), func(p string) error { return WriteBucket(p, SVG, bk) })

	single := BucketData{Points: []BucketPoint{{StormBucket: 50e3, Contended: Band{Mean: 50e3, Min: 50e3, Max: 50e3}}}}
	checkSVG(t, filepath.Join(dir, "bk1.svg"), func(p string) error { return WriteBucket(p, SVG, single) })
}

func TestInvalidInputs(t *testing.T) {
	dir := t.TempDir()
	ob := sampleOverbooking()
	ob.Violations = -1
	assert.ErrorContains(t, WriteOverbooking(filepath.Join(dir, "a.png"), PNG, ob), "negative violation count")
	bk := sampleBucket()
	bk.Window = -1
	assert.ErrorContains(t, WriteBucket(filepath.Join(dir, "b.png"), PNG, bk), "negative storm rate")
	bk = sampleBucket()
	bk.Points[2].IdleLeaky.Min = -1
	assert.ErrorContains(t, WriteBucket(filepath.Join(dir, "c.png"), PNG, bk), "negative storm bucket or excess at B = 100000")
	ob = sampleOverbooking()
	ob.Points[1].ProbeP95In = -3
	assert.ErrorContains(t, WriteOverbooking(filepath.Join(dir, "d.png"), PNG, ob), "negative latency")
	ob = sampleOverbooking()
	ob.Censor = -1
	assert.ErrorContains(t, WriteOverbooking(filepath.Join(dir, "e.png"), PNG, ob), "negative victim bound")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

func checkSVG(t *testing.T, path string, write func(string) error) {
	t.Helper()
	require.NoError(t, write(path))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(b, []byte("<?xml")))
}

func checkPNG(t *testing.T, path string, w, h int, write func(string) error) {
	t.Helper()
	require.NoError(t, write(path))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	assert.Equal(t, w, img.Bounds().Dx())
	assert.Equal(t, h, img.Bounds().Dy())
}

// TestWriteSamples writes every figure in every format to $FIGURES_OUT,
// for looking at them; it is skipped when the variable is unset.
func TestWriteSamples(t *testing.T) {
	out := os.Getenv("FIGURES_OUT")
	if out == "" {
		t.Skip("FIGURES_OUT not set")
	}
	for name, w := range writers {
		for _, f := range []Format{PNG, SVG, PDF} {
			require.NoError(t, w.write(filepath.Join(out, "fig_"+name+"."+string(f)), f))
		}
	}
}

// A value at the censor is a lower bound, a value under a log axis's
// floor an upper bound on the floor; neither is an ordinary point, and
// no line runs into either.
func TestCensoredAndFlooredValuesAreBounds(t *testing.T) {
	e := estimates{
		xs:     []float64{1, 2, 3, 4},
		ys:     []float64{40, 591, 0, 600},
		iv:     []Interval{{Lo: 20, Hi: 60}, {Lo: 300, Hi: 591}, {Lo: 0, Hi: 0}, {}},
		censor: 591, floor: 0.5,
	}
	assert.False(t, e.censored(0))
	assert.True(t, e.censored(1))
	assert.True(t, e.censored(3), "above the censor is censored too")
	assert.True(t, e.belowFloor(2))
	_, censored, floored := addEstimateMarkers(plot.New(), e, lookP50)
	assert.True(t, censored)
	assert.True(t, floored)
	_, censored, floored = addEstimateMarkers(plot.New(), estimates{xs: []float64{1}, ys: []float64{40}, iv: []Interval{{}}}, lookP50)
	assert.False(t, censored || floored)
}

// An interval is drawn only around an estimate it holds: the zero value
// (no interval given) or NaN bounds (a single seed) draw nothing.
func TestIntervalHolds(t *testing.T) {
	assert.True(t, holds(Interval{Lo: 1, Hi: 3}, 2))
	assert.True(t, holds(Interval{Lo: 1, Hi: 3}, 3))
	assert.False(t, holds(Interval{}, 26e3))
	assert.False(t, holds(Interval{Lo: math.NaN(), Hi: math.NaN()}, 1))
	assert.False(t, holds(Interval{Lo: 2, Hi: 2}, 2), "no width, nothing to draw")
	assert.False(t, holds(Interval{Lo: 1, Hi: 3}, 4))
}

func TestPhiTicksCarryStormCounts(t *testing.T) {
	ts := phiTicks(sampleOverbooking().Points)
	require.Len(t, ts, 6)
	assert.Equal(t, "3.375\n1 storm", ts[0].Label)
	assert.Equal(t, "7.125\n6 storms", ts[5].Label)
}

func TestNiceStep(t *testing.T) {
	for raw, want := range map[float64]float64{64.8: 100, 20: 20, 21: 25, 0.3: 0.5, 7: 10, 1: 1} {
		assert.InDelta(t, want, niceStep(raw), 1e-12, "niceStep(%g)", raw)
	}
	assert.Equal(t, 1.0, niceStep(math.NaN()))
	assert.Equal(t, 1.0, niceStep(0))
}

func TestLinearTicks(t *testing.T) {
	ts := LinearTicks{N: 5}.Ticks(0, 100)
	assert.Equal(t, []string{"0", "20", "40", "60", "80", "100"}, labels(ts))
	ts = LinearTicks{N: 5}.Ticks(3.2, 7.3)
	assert.Equal(t, []string{"4", "5", "6", "7"}, labels(ts))
	ts = LinearTicks{N: 4}.Ticks(-0.01, 0.35)
	assert.Equal(t, []string{"0", "0.1", "0.2", "0.3"}, labels(ts))
}

func TestLog1pTicks(t *testing.T) {
	// Wide range: decades labelled, the rest minor.
	var major []string
	for _, tk := range (log1pTicks{}).Ticks(0, 1700) {
		if !tk.IsMinor() {
			major = append(major, tk.Label)
		}
	}
	// No zero tick on a log axis, even when the range starts at zero.
	assert.Equal(t, []string{"1", "10", "100", "1000"}, major)
	// Narrow range: the 1–2–5 values are labelled.
	assert.Equal(t, []string{"20", "50", "100", "200", "500"}, labels(nonMinor((log1pTicks{}).Ticks(19, 800))))
	// Within one decade: falls back to round linear ticks.
	assert.NotEmpty(t, (log1pTicks{}).Ticks(0.1, 0.9))
}

func TestLog1pScale(t *testing.T) {
	s := log1pScale{}
	assert.InDelta(t, 0, s.Normalize(0, 999, 0), 1e-12)
	assert.InDelta(t, 1, s.Normalize(0, 999, 999), 1e-12)
	assert.InDelta(t, 2.0/3, s.Normalize(0, 999, 99), 1e-12)
}

func TestRunsSplitAtNaN(t *testing.T) {
	ys := []float64{1, math.NaN(), 2, 3, math.NaN(), math.NaN(), 4}
	rs := runs(len(ys), func(i int) bool { return finite(ys[i]) })
	assert.Equal(t, [][2]int{{0, 1}, {2, 4}, {6, 7}}, rs)
	assert.Empty(t, runs(2, func(int) bool { return false }))
}

func TestSweepTicks(t *testing.T) {
	norm := func(v float64) float64 { return v / 272 }
	ts := sweepTicks([]float64{16, 32, 64, 128, 192, 256, math.NaN()}, norm, 0.05)
	assert.Equal(t, []string{"16", "32", "64", "128", "192", "256"}, labels(ts))
	assert.Nil(t, sweepTicks([]float64{16, 17}, norm, 0.05), "too close to label both")
}

func TestWrap(t *testing.T) {
	sty := textStyle(titleSize)
	lines := wrap(overbookingTitle, sty, sty.Width(overbookingTitle)/2+10)
	assert.Len(t, lines, 2)
	assert.Equal(t, []string{latencyPriceTitle}, wrap(latencyPriceTitle, sty, 1e6))
}

func TestParseFormat(t *testing.T) {
	for _, s := range []string{"png", "svg", "pdf"} {
		f, err := ParseFormat(s)
		require.NoError(t, err)
		assert.Equal(t, Format(s), f)
	}
	_, err := ParseFormat("jpg")
	assert.Error(t, err)
}

func labels(ts []plot.Tick) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Label)
	}
	return out
}

func nonMinor(ts []plot.Tick) []plot.Tick {
	var out []plot.Tick
	for _, t := range ts {
		if !t.IsMinor() {
			out = append(out, t)
		}
	}
	return out
}

func sampleSweep() SweepData {
	ci := func(ys ...float64) []Interval {
		out := make([]Interval, len(ys))
		for i, y := range ys {
			out[i] = Interval{Lo: y * 0.9, Hi: min(y*1.1, 591)}
		}
		return out
	}
	return SweepData{
		Title: "tiny", XLabel: "grace", Series: []string{"prepaid", "leaky"},
		Panels: []SweepPanel{
			{Metric: "probe_p50", Censor: 591, Lines: []SweepLine{
				{Xs: []float64{90, 30, 60}, Ys: []float64{92, 32, 62}, CI: ci(92, 32, 62)},
				{Xs: []float64{30, 60, 90}, Ys: []float64{302, 591, math.NaN()}, CI: ci(302, 591, 1)},
			}},
			{Metric: "utilization", Lines: []SweepLine{
				{Xs: []float64{30, 60, 90}, Ys: []float64{0.8, 0.82, 0.85}, CI: ci(0.8, 0.82, 0.85)},
				{Xs: []float64{30, 60, 90}, Ys: []float64{0.9, 0.9, 0.9}, CI: make([]Interval, 3)},
			}},
		},
	}
}

func TestWriteSweep(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, WriteSweep(filepath.Join(dir, "fig_sweep.png"), PNG, sampleSweep()))
	assert.FileExists(t, filepath.Join(dir, "fig_sweep.png"))
	if out := os.Getenv("FIGURES_OUT"); out != "" {
		require.NoError(t, WriteSweep(filepath.Join(out, "fig_sweep.png"), PNG, sampleSweep()))
	}

	err := WriteSweep(filepath.Join(dir, "empty.png"), PNG, SweepData{})
	assert.EqualError(t, err, "figures: sweep: no metric to draw")
	bad := sampleSweep()
	bad.Panels[1].Lines = bad.Panels[1].Lines[:1]
	assert.ErrorContains(t, WriteSweep(filepath.Join(dir, "bad.png"), PNG, bad), "panel utilization has 1 lines for 2 series")
	bad = sampleSweep()
	bad.Panels[0].Lines[0].CI = nil
	assert.ErrorContains(t, WriteSweep(filepath.Join(dir, "bad.png"), PNG, bad), "series prepaid: 3 x values, 3 y values, 0 intervals")
	assert.NoFileExists(t, filepath.Join(dir, "empty.png"))
	assert.NoFileExists(t, filepath.Join(dir, "bad.png"))
}
