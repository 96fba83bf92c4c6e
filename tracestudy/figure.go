package tracestudy

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"

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

// render draws the panels on a rows × cols grid, row by row, and writes
// the figure (figures.WriteGrid).
func render(path string, f figures.Format, width, height vg.Length, rows, cols int, panels []*plot.Plot) error {
	grid := make([][]*plot.Plot, rows)
	for r := range rows {
		grid[r] = make([]*plot.Plot, cols)
		for k := range cols {
			if i := r*cols + k; i < len(panels) {
				grid[r][k] = panels[i]
			}
		}
	}
	return figures.WriteGrid(path, f, width, height, grid)
}

func newPanel(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	return p
}

// bars is a bar panel of one value per policy.
func bars(title, y string, names []string, vals []float64) (*plot.Plot, error) {
	p := newPanel(title, "", y)
	xs := make(plotter.Values, len(vals))
	for i, v := range vals {
		if math.IsNaN(v) {
			v = 0
		}
		xs[i] = v
	}
	b, err := plotter.NewBarChart(xs, vg.Points(14))
	if err != nil {
		return nil, err
	}
	b.Color = palette[1]
	b.LineStyle.Width = 0
	p.Add(b)
	p.NominalX(names...)
	p.Y.Min = 0
	return p, nil
}

// WriteTraceFigure draws fig_trace: the CDF of bounded slowdown per policy
// (log x), and mean wait, utilization and Jain's index per policy.
func WriteTraceFigure(path string, f figures.Format, traceName string, rs []Result) error {
	cdf := newPanel("Bounded slowdown CDF — "+shortName(traceName), "bounded slowdown (τ = 10 s, log scale)", "fraction of jobs ≤ x")
	cdf.X.Scale = plot.LogScale{}
	cdf.X.Tick.Marker = plot.LogTicks{Prec: -1}
	cdf.X.Min = 1
	maxX := 10.0
	names := make([]string, len(rs))
	wait, util, jain := make([]float64, len(rs)), make([]float64, len(rs)), make([]float64, len(rs))
	for i, r := range rs {
		names[i] = r.Policy
		wait[i] = r.All.MeanWait / 3600
		util[i] = r.Utilization
		jain[i] = r.Jain
		if len(r.BSLD) == 0 {
			continue
		}
		// The step CDF, thinned to at most ~400 points: one per distinct
		// value where they are few, a quantile grid otherwise.
		n := len(r.BSLD)
		var pts plotter.XYs
		step := max(1, n/400)
		for k := 0; k < n; k += step {
			pts = append(pts, plotter.XY{X: r.BSLD[k], Y: float64(k+1) / float64(n)})
		}
		pts = append(pts, plotter.XY{X: r.BSLD[n-1], Y: 1})
		maxX = max(maxX, r.BSLD[n-1])
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.LineStyle = lineStyle(i)
		cdf.Add(l)
		cdf.Legend.Add(r.Policy, l)
	}
	cdf.X.Max = maxX * 1.2
	cdf.Y.Min, cdf.Y.Max = 0, 1
	// Bottom right, inside the axes: the CDFs leave that corner empty.
	cdf.Legend.Top = false
	cdf.Legend.Left = false
	cdf.Legend.XOffs = -vg.Points(80)
	cdf.Legend.YOffs = vg.Points(44)
	pw, err := bars("Mean wait", "hours", names, wait)
	if err != nil {
		return err
	}
	pu, err := bars("Utilization (useful work)", "fraction of pool × makespan", names, util)
	if err != nil {
		return err
	}
	pj, err := bars("Jain's index of usage ÷ fair allocation", "index (1 = fair)", names, jain)
	if err != nil {
		return err
	}
	pu.Y.Max, pj.Y.Max = 1, 1
	return render(path, f, 10*vg.Inch, 7.5*vg.Inch, 2, 2, []*plot.Plot{cdf, pw, pu, pj})
}

// WriteBudgetKnobsFigure draws fig_budget_knobs: Jain's index, mean wait
// and lost work against W, one line per minimum runtime m.
func WriteBudgetKnobsFigure(path string, f figures.Format, traceName string, rs []Result) error {
	pj := newPanel("Fairness — "+shortName(traceName), "budget window W (days)", "Jain's index")
	pw := newPanel("Mean wait", "budget window W (days)", "hours")
	pl := newPanel("Work lost to preemption", "budget window W (days)", "GPU-hours")
	var mins []int
	for _, r := range rs {
		if !containsInt(mins, r.MinRuntime) {
			mins = append(mins, r.MinRuntime)
		}
	}
	for i, m := range mins {
		var j, w, l plotter.XYs
		for _, r := range rs {
			if r.MinRuntime != m {
				continue
			}
			x := float64(r.WindowDays)
			j = append(j, plotter.XY{X: x, Y: r.Jain})
			w = append(w, plotter.XY{X: x, Y: r.All.MeanWait / 3600})
			l = append(l, plotter.XY{X: x, Y: float64(r.LostGPUSeconds) / 3600})
		}
		label := fmt.Sprintf("m = %s", fmtDur(m))
		for _, pp := range []struct {
			p   *plot.Plot
			xys plotter.XYs
		}{{pj, j}, {pw, w}, {pl, l}} {
			ln, sc, err := plotter.NewLinePoints(pp.xys)
			if err != nil {
				return err
			}
			ln.LineStyle = lineStyle(i)
			sc.Color = palette[i%len(palette)]
			sc.Shape = draw.CircleGlyph{}
			pp.p.Add(ln, sc)
			if pp.p == pl {
				pp.p.Legend.Add(label, ln, sc)
			}
		}
	}
	for _, p := range []*plot.Plot{pj, pw, pl} {
		p.Y.Min = 0
		p.X.Tick.Marker = plot.ConstantTicks{{Value: 1, Label: "1"}, {Value: 3, Label: "3"}, {Value: 7, Label: "7"}, {Value: 14, Label: "14"}}
	}
	pl.Legend.Top = true
	return render(path, f, 12*vg.Inch, 4*vg.Inch, 1, 3, []*plot.Plot{pj, pw, pl})
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
