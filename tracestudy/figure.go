package tracestudy

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/bursar-hpc/bursar/figures"
)

// palette: the Okabe–Ito colours (safe for colour-blind readers) and black,
// one per policy in policies.Names order; dashes tell them apart in grey.
var palette = []color.Color{
	color.Gray{Y: 0},
	color.RGBA{R: 0x00, G: 0x72, B: 0xB2, A: 0xff},
	color.RGBA{R: 0xD5, G: 0x5E, B: 0x00, A: 0xff},
	color.RGBA{R: 0xE6, G: 0x9F, B: 0x00, A: 0xff},
	color.RGBA{R: 0x00, G: 0x9E, B: 0x73, A: 0xff},
	color.RGBA{R: 0xCC, G: 0x79, B: 0xA7, A: 0xff},
	color.RGBA{R: 0x56, G: 0xB4, B: 0xE9, A: 0xff},
}

var dashes = [][]vg.Length{nil, {vg.Points(5), vg.Points(2.5)}, {vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2)},
	{vg.Points(1.2), vg.Points(2)}, {vg.Points(9), vg.Points(3)}, {vg.Points(3), vg.Points(3)}, {vg.Points(12), vg.Points(2), vg.Points(2), vg.Points(2)}}

func lineStyle(i int) draw.LineStyle {
	return draw.LineStyle{Color: palette[i%len(palette)], Width: vg.Points(1.4), Dashes: dashes[i%len(dashes)]}
}

func newPanel(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	return p
}

// specLabels are the specs' labels, a horizon mark ("†") on every spec
// with a replay that stopped at its horizon (docs/studies.md §4.3).
func specLabels(s Summary) (labels []string, anyStopped bool) {
	nw := len(s.Study.Windows)
	for si, sp := range s.Study.Specs {
		l := sp.Policy
		if sp.WindowDays > 0 {
			l = fmt.Sprintf("W %dd m %s", sp.WindowDays, fmtDur(sp.MinRuntime))
		}
		for k := range nw {
			if !s.Runs[si*nw+k].Summary.Converged {
				l += " †"
				anyStopped = true
				break
			}
		}
		labels = append(labels, l)
	}
	return labels, anyStopped
}

// ivBars is a bar panel of one estimate per spec with its 95 % interval
// over windows as an error bar; log y when the positive values span more
// than a decade and a half (a zero is then drawn at the axis' floor and
// labelled).
func ivBars(title, y string, names []string, ivs []Interval, scale float64) (*plot.Plot, error) {
	p := newPanel(title, "", y)
	vals := make(plotter.Values, len(ivs))
	lo, hi := math.Inf(1), 0.0
	for i, iv := range ivs {
		v := iv.Mean * scale
		if math.IsNaN(v) {
			v = 0
		}
		vals[i] = v
		top := v
		if !math.IsNaN(iv.Hi) {
			top = iv.Hi * scale
		}
		hi = max(hi, top)
		if v > 0 {
			lo = min(lo, v)
		}
	}
	logY := hi > 0 && lo < math.Inf(1) && hi/lo > 30
	floor := 0.0
	if logY {
		floor = math.Pow(10, math.Floor(math.Log10(lo))-0.3)
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Label.Text = y + " (log scale)"
		for i := range vals {
			vals[i] = max(vals[i], floor)
		}
	}
	if logY {
		// Bars on a log axis have no base: a marker per spec instead.
		pts := make(plotter.XYs, len(vals))
		for i, v := range vals {
			pts[i] = plotter.XY{X: float64(i), Y: v}
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: palette[1], Radius: vg.Points(4), Shape: draw.BoxGlyph{}}
		p.Add(sc)
	} else {
		b, err := plotter.NewBarChart(vals, vg.Points(14))
		if err != nil {
			return nil, err
		}
		b.Color = palette[1]
		b.LineStyle.Width = 0
		p.Add(b)
	}
	for i, iv := range ivs {
		if math.IsNaN(iv.Lo) {
			continue
		}
		l, h := max(iv.Lo*scale, floor), iv.Hi*scale
		if logY && l <= 0 {
			l = floor
		}
		seg, err := plotter.NewLine(plotter.XYs{{X: float64(i), Y: l}, {X: float64(i), Y: h}})
		if err != nil {
			return nil, err
		}
		seg.LineStyle = draw.LineStyle{Color: color.Black, Width: vg.Points(1.2)}
		p.Add(seg)
	}
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	if logY {
		p.Y.Min, p.Y.Max = floor, hi*2
	} else {
		p.Y.Min, p.Y.Max = 0, max(hi*1.08, 1e-9)
		p.Y.Tick.Marker = cleanTicks{}
	}
	return p, nil
}

// countBars is the served, denied and unfinished jobs per spec, summed
// over the windows, as stacked bars (every job counted, §4.1).
func countBars(s Summary, names []string) (*plot.Plot, error) {
	p := newPanel("Every job counted (summed over windows)", "", "jobs")
	nw := len(s.Study.Windows)
	var served, denied, unfinished plotter.Values
	total := 0.0
	for si := range s.Study.Specs {
		var a, b, c float64
		for k := range nw {
			r := &s.Runs[si*nw+k]
			a += float64(r.Summary.Served)
			b += float64(r.Summary.Denied)
			c += float64(r.Summary.Unfinished)
		}
		served, denied, unfinished = append(served, a), append(denied, b), append(unfinished, c)
		total = max(total, a+b+c)
	}
	colors := []color.Color{palette[4], palette[2], palette[3]}
	var prev *plotter.BarChart
	for i, v := range []plotter.Values{served, denied, unfinished} {
		b, err := plotter.NewBarChart(v, vg.Points(14))
		if err != nil {
			return nil, err
		}
		b.Color = colors[i]
		b.LineStyle.Width = 0
		if prev != nil {
			b.StackOn(prev)
		}
		prev = b
		p.Add(b)
		p.Legend.Add([]string{"served", "denied", "unfinished"}[i], b)
	}
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	// Room above the bars for the legend, so that it covers no bar.
	p.Y.Min, p.Y.Max = 0, total*1.45
	p.Y.Tick.Marker = cleanTicks{}
	p.Legend.Top = true
	return p, nil
}

// groupedUtil is useful, lost and idle-while-waiting per spec, as
// fractions of pool × the measured interval, grouped bars with their
// intervals.
func groupedUtil(names []string, ests []Estimates) (*plot.Plot, error) {
	p := newPanel("One interval: GPU time", "", "fraction of pool × measured interval")
	keys := []string{"useful_utilization", "lost_utilization", "idle_while_waiting"}
	labels := []string{"useful", "lost", "idle while a job would fit"}
	colors := []color.Color{palette[4], palette[2], palette[6]}
	w := vg.Points(7)
	top := 0.0
	for g, key := range keys {
		m := -1
		for i := range Metrics {
			if Metrics[i].Key == key {
				m = i
			}
		}
		vals := make(plotter.Values, len(ests))
		for i, e := range ests {
			vals[i] = max(0, nanTo0(e.Intervals[m].Mean))
			top = max(top, vals[i], nanTo0(e.Intervals[m].Hi))
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, err
		}
		b.Color = colors[g]
		b.LineStyle.Width = 0
		b.Offset = vg.Length(g-1) * w
		p.Add(b)
		p.Legend.Add(labels[g], b)
	}
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	p.Y.Min, p.Y.Max = 0, max(1, top)*1.4
	p.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 0.25, Label: "0.25"}, {Value: 0.5, Label: "0.5"},
		{Value: 0.75, Label: "0.75"}, {Value: 1, Label: "1"}}
	p.Legend.Top = true
	return p, nil
}

func nanTo0(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

// intervalsOf is every spec's interval of the metric key.
func intervalsOf(ests []Estimates, key string) []Interval {
	out := make([]Interval, len(ests))
	for i := range Metrics {
		if Metrics[i].Key == key {
			for k, e := range ests {
				out[k] = e.Intervals[i]
			}
		}
	}
	return out
}

// WriteTraceFigure draws fig_trace: the CDF of bounded slowdown over every
// measured job of every window (denied jobs at +∞, so each curve tops
// out at the fraction not denied), the served / denied / unfinished
// counts, the mean wait with its interval over windows, and useful, lost
// and idle-while-waiting GPU time over one interval. "†" marks a policy
// with a replay that stopped at its horizon: its numbers are lower
// bounds.
func WriteTraceFigure(path string, f figures.Format, s Summary) error {
	st := s.Study
	nw := len(st.Windows)
	names, stopped := specLabels(s)
	ests := Estimate(st, s.Runs, -1)
	sub := shortName(s.Trace.Name)
	if nw > 1 {
		sub += fmt.Sprintf(", %d windows of %s days", nw, fmtDay(st.Windows[0].Until-st.Windows[0].From))
	}
	cdf := newPanel("Bounded slowdown CDF, all measured jobs", "bounded slowdown (τ = 10 s, log scale)", "fraction of jobs ≤ x")
	cdf.X.Scale = plot.LogScale{}
	cdf.X.Tick.Marker = plot.LogTicks{Prec: -1}
	cdf.X.Min = 1
	maxX := 10.0
	for si := range st.Specs {
		var xs []float64
		for k := range nw {
			xs = append(xs, s.Runs[si*nw+k].Summary.BSLD...)
		}
		if len(xs) == 0 {
			continue
		}
		slices.Sort(xs)
		n := len(xs)
		var pts plotter.XYs
		step := max(1, n/400)
		last := -1
		for k := 0; k < n; k += step {
			if math.IsInf(xs[k], 1) {
				break
			}
			pts = append(pts, plotter.XY{X: xs[k], Y: float64(k+1) / float64(n)})
			last = k
		}
		// The last finite job, exactly: the curve's top is the fraction
		// not denied.
		fin := sort.SearchFloat64s(xs, math.Inf(1))
		if fin > 0 && fin-1 != last {
			pts = append(pts, plotter.XY{X: xs[fin-1], Y: float64(fin) / float64(n)})
		}
		if len(pts) == 0 {
			continue
		}
		maxX = max(maxX, pts[len(pts)-1].X)
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.LineStyle = lineStyle(si)
		cdf.Add(l)
		cdf.Legend.Add(names[si], l)
	}
	cdf.X.Max = maxX * 1.5
	// The legend sits in a band above the curves (y beyond 1), so it
	// covers none of them.
	cdf.Y.Min, cdf.Y.Max = 0, 1.0+0.09*float64(len(st.Specs))
	cdf.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 0.25, Label: "0.25"}, {Value: 0.5, Label: "0.5"},
		{Value: 0.75, Label: "0.75"}, {Value: 1, Label: "1"}}
	cdf.Legend.Top = true
	cdf.Legend.Left = true
	cdf.Legend.XOffs = vg.Points(6)
	counts, err := countBars(s, names)
	if err != nil {
		return err
	}
	pw, err := ivBars("Mean wait (censored waits included)", "hours", names, intervalsOf(ests, "mean_wait"), 1.0/3600)
	if err != nil {
		return err
	}
	pu, err := groupedUtil(names, ests)
	if err != nil {
		return err
	}
	pl, err := ivBars("Started after their fair start time", "fraction of sampled jobs", names, intervalsOf(ests, "fair_start_late"), 1)
	if err != nil {
		return err
	}
	if nw == 1 {
		// One window: the Wilson interval over the sampled jobs.
		late := intervalsOf(ests, "fair_start_late")
		for si := range late {
			if fs := s.Runs[si].Summary.FairStart; fs != nil {
				late[si].Lo, late[si].Hi = fs.LateLo, fs.LateHi
			}
		}
		if pl, err = ivBars("Started after their fair start time", "fraction of sampled jobs", names, late, 1); err != nil {
			return err
		}
	}
	jain := intervalsOf(ests, "share_jain")
	if nw == 1 {
		// One window: the t interval over its days.
		for si := range jain {
			if sf := s.Runs[si].Summary.Shares; sf != nil {
				jain[si].Lo, jain[si].Hi = sf.Lo, sf.Hi
			}
		}
	}
	pj, err := ivBars("Usage ÷ fair allocation per day (fifo's campaigns)", "Jain's index (1 = fair)", names, jain, 1)
	if err != nil {
		return err
	}
	title := "Each policy on " + sub
	if nw > 1 {
		title += " (bars: means over windows, lines: 95 % intervals)"
	}
	if stopped {
		title += "; † = a replay stopped at its horizon: lower bounds"
	}
	return figures.WriteTitledGrid(path, f, 11*vg.Inch, 12*vg.Inch, title, [][]*plot.Plot{{cdf, counts}, {pw, pu}, {pl, pj}})
}

// WriteBudgetKnobsFigure draws fig_budget_knobs: mean wait, lost GPU time
// and unfinished jobs against the window W, one line per minimum runtime
// m, with 95 % intervals over windows; "×" marks, in every panel, a cell with a replay
// that stopped at its horizon.
func WriteBudgetKnobsFigure(path string, f figures.Format, s Summary) error {
	st := s.Study
	nw := len(st.Windows)
	ests := Estimate(st, s.Runs, -1)
	pw := newPanel("Mean wait", "budget window W (days)", "hours")
	pl := newPanel("Work lost to preemption", "budget window W (days)", "fraction of pool × measured interval")
	pu := newPanel("Unfinished at the horizon (summed over windows)", "budget window W (days)", "jobs")
	pf := newPanel("Fairness: usage ÷ fair allocation per day", "budget window W (days)", "Jain's index (1 = fair)")
	pu.Y.Tick.Marker = cleanTicks{}
	var mins []int
	for _, sp := range st.Specs {
		if !containsInt(mins, sp.MinRuntime) {
			mins = append(mins, sp.MinRuntime)
		}
	}
	stopped := false
	tops := [4]float64{}
	for i, m := range mins {
		var xw, xl, xu, xf plotter.XYs
		var marks [4]plotter.XYs // per panel: the cells that stopped at their horizon
		for si, sp := range st.Specs {
			if sp.MinRuntime != m {
				continue
			}
			x := float64(sp.WindowDays)
			e := ests[si]
			mw, ml := intervalsOf([]Estimates{e}, "mean_wait")[0], intervalsOf([]Estimates{e}, "lost_utilization")[0]
			mf := intervalsOf([]Estimates{e}, "share_jain")[0]
			var unf float64
			conv := true
			for k := range nw {
				unf += float64(s.Runs[si*nw+k].Summary.Unfinished)
				conv = conv && s.Runs[si*nw+k].Summary.Converged
			}
			xw = append(xw, plotter.XY{X: x, Y: nanTo0(mw.Mean) / 3600})
			xl = append(xl, plotter.XY{X: x, Y: nanTo0(ml.Mean)})
			xu = append(xu, plotter.XY{X: x, Y: unf})
			xf = append(xf, plotter.XY{X: x, Y: nanTo0(mf.Mean)})
			tops[3] = max(tops[3], nanTo0(mf.Hi), nanTo0(mf.Mean))
			tops[0] = max(tops[0], nanTo0(mw.Hi)/3600, nanTo0(mw.Mean)/3600)
			tops[1] = max(tops[1], nanTo0(ml.Hi), nanTo0(ml.Mean))
			tops[2] = max(tops[2], unf)
			if !conv {
				stopped = true
				marks[0] = append(marks[0], plotter.XY{X: x, Y: nanTo0(mw.Mean) / 3600})
				marks[1] = append(marks[1], plotter.XY{X: x, Y: nanTo0(ml.Mean)})
				marks[2] = append(marks[2], plotter.XY{X: x, Y: unf})
				marks[3] = append(marks[3], plotter.XY{X: x, Y: nanTo0(mf.Mean)})
			}
			for _, bar := range []struct {
				p     *plot.Plot
				iv    Interval
				scale float64
			}{{pw, mw, 1.0 / 3600}, {pl, ml, 1}, {pf, mf, 1}} {
				if math.IsNaN(bar.iv.Lo) {
					continue
				}
				// Each m's interval a little to the side, so that they do
				// not hide one another.
				xo := x + (float64(i)-float64(len(mins)-1)/2)*0.12
				seg, err := plotter.NewLine(plotter.XYs{{X: xo, Y: max(0, bar.iv.Lo*bar.scale)}, {X: xo, Y: bar.iv.Hi * bar.scale}})
				if err != nil {
					return err
				}
				seg.LineStyle = draw.LineStyle{Color: palette[i%len(palette)], Width: vg.Points(0.8)}
				bar.p.Add(seg)
			}
		}
		label := fmt.Sprintf("m = %s", fmtDur(m))
		for k, pp := range []struct {
			p   *plot.Plot
			xys plotter.XYs
		}{{pw, xw}, {pl, xl}, {pu, xu}, {pf, xf}} {
			ln, sc, err := plotter.NewLinePoints(pp.xys)
			if err != nil {
				return err
			}
			ln.LineStyle = lineStyle(i)
			sc.Color = palette[i%len(palette)]
			sc.Shape = draw.CircleGlyph{}
			pp.p.Add(ln, sc)
			if k == 0 {
				pp.p.Legend.Add(label, ln, sc)
			}
		}
		for k, p := range []*plot.Plot{pw, pl, pu, pf} {
			if len(marks[k]) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(marks[k])
			if err != nil {
				return err
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(5), Shape: draw.CrossGlyph{}}
			p.Add(sc)
		}
	}
	var ticks plot.ConstantTicks
	var ws []int
	for _, sp := range st.Specs {
		if !containsInt(ws, sp.WindowDays) {
			ws = append(ws, sp.WindowDays)
			ticks = append(ticks, plot.Tick{Value: float64(sp.WindowDays), Label: fmt.Sprint(sp.WindowDays)})
		}
	}
	for k, p := range []*plot.Plot{pw, pl, pu, pf} {
		p.X.Tick.Marker = ticks
		p.Y.Tick.Marker = cleanTicks{}
		p.Y.Min, p.Y.Max = 0, max(tops[k]*1.15, 1e-9)
		if k == 0 {
			// Room above the lines for the legend.
			p.Y.Max = max(tops[k]*(1.2+0.12*float64(len(mins))), 1e-9)
		}
		if len(ws) > 0 {
			p.X.Min, p.X.Max = float64(slices.Min(ws))-0.5, float64(slices.Max(ws))+0.5
		}
	}
	pw.Legend.Top = true
	title := "Budget policy: lookback window W × minimum runtime m on " + shortName(s.Trace.Name)
	if nw > 1 {
		title += fmt.Sprintf(", %d windows of %s days (lines: 95 %% intervals)", nw, fmtDay(st.Windows[0].Until-st.Windows[0].From))
	}
	if stopped {
		title += "; × = a replay stopped at its horizon: lower bounds"
	}
	return figures.WriteTitledGrid(path, f, 11*vg.Inch, 8.5*vg.Inch, title, [][]*plot.Plot{{pw, pl}, {pu, pf}})
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// fmtDur writes a minimum runtime as the grid names it.
func fmtDur(s int) string {
	switch {
	case s == 0:
		return "0"
	case s%3600 == 0:
		return fmt.Sprintf("%d h", s/3600)
	case s%60 == 0:
		return fmt.Sprintf("%d min", s/60)
	}
	return fmt.Sprintf("%d s", s)
}

// shortName is a trace's file name without its folders, for titles.
func shortName(name string) string {
	return filepath.Base(name)
}

// cleanTicks are gonum's default ticks labelled with the shortest
// decimal ("2500", "2.5"), not a fixed precision ("2500.00").
type cleanTicks struct{}

func (cleanTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			// Rounded first: a tick at 0.1 × 3 is 0.30000000000000004.
			ts[i].Label = strconv.FormatFloat(math.Round(ts[i].Value*1e9)/1e9, 'f', -1, 64)
		}
	}
	return ts
}
