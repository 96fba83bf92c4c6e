package arrive

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/bursar-hpc/bursar/figures"
)

// Okabe–Ito colours (safe for colour-blind readers): unmetered blue,
// metered vermilion, the bursar line grey, an unconverged point's mark
// black.
var (
	colUnmetered = color.RGBA{R: 0x00, G: 0x72, B: 0xB2, A: 0xff}
	colMetered   = color.RGBA{R: 0xD5, G: 0x5E, B: 0x00, A: 0xff}
	colBursar    = color.Gray{Y: 0x70}
)

type lineDef struct {
	policy, mode, name string
	style              draw.LineStyle
	glyph              draw.GlyphDrawer
}

func lineDefs(policy string) []lineDef {
	return []lineDef{
		{policy, ModeUnmetered, "agents unmetered", draw.LineStyle{Color: colUnmetered, Width: vg.Points(1.6)}, draw.CircleGlyph{}},
		{policy, ModeMetered, "agents metered by Bursar", draw.LineStyle{Color: colMetered, Width: vg.Points(1.6), Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}, draw.TriangleGlyph{}},
		{BursarLine, ModeMetered, "bursar as the whole policy", draw.LineStyle{Color: colBursar, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(1.5), vg.Points(2)}}, draw.SquareGlyph{}},
	}
}

// series is one line's points of metric key (× scale), with the
// intervals and the unconverged points.
func series(ps []Point, policy, mode, key string, scale float64) (xy plotter.XYs, lo, hi []float64, stopped plotter.XYs) {
	mi := MetricIndex(key)
	for i := range ps {
		p := &ps[i]
		if p.Policy != policy || p.Mode != mode {
			continue
		}
		iv := p.Values[mi]
		if math.IsNaN(iv.Mean) {
			continue
		}
		v := iv.Mean * scale
		xy = append(xy, plotter.XY{X: float64(p.K), Y: v})
		l, h := v, v
		if !math.IsNaN(iv.Lo) {
			l, h = iv.Lo*scale, iv.Hi*scale
		}
		lo, hi = append(lo, l), append(hi, h)
		if !p.Converged() {
			stopped = append(stopped, plotter.XY{X: float64(p.K), Y: v})
		}
	}
	return xy, lo, hi, stopped
}

// axis picks a log y axis where the values spread over more than 20×
// (docs/studies.md §5) and all are positive; it returns the floor a lower
// interval end is clipped to on a log axis (0 on a linear one).
func axis(p *plot.Plot, label string, vals []float64) float64 {
	lo, hi := math.Inf(1), 0.0
	allPos := true
	for _, v := range vals {
		if math.IsNaN(v) {
			continue
		}
		hi = max(hi, v)
		if v > 0 {
			lo = min(lo, v)
		} else {
			allPos = false
		}
	}
	p.Y.Label.Text = label
	if hi > 0 && allPos && lo < math.Inf(1) && hi/lo > 20 {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Label.Text = label + " (log)"
		floor := lo / 1.5
		p.Y.Min, p.Y.Max = floor, hi*1.5
		return floor
	}
	p.Y.Min = 0
	if hi > 0 {
		p.Y.Max = hi * 1.08
	}
	return 0
}

func newPanel(title, x string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.Text = x
	p.Add(plotter.NewGrid())
	return p
}

// linePanel is one site policy's panel of metric key against k: the two
// modes and the bursar line, each with its intervals as error bars and a
// black × on every point with a run stopped at its horizon.
func linePanel(ps []Point, policy, title, xlabel, ylabel, key string, scale float64, withBursar, legend bool) (*plot.Plot, error) {
	p := newPanel(title, xlabel)
	var vals []float64
	type drawn struct {
		d       lineDef
		xy      plotter.XYs
		lo, hi  []float64
		stopped plotter.XYs
	}
	var ds []drawn
	for _, d := range lineDefs(policy) {
		if d.policy == BursarLine && (!withBursar || policy == BursarLine) {
			continue
		}
		xy, lo, hi, st := series(ps, d.policy, d.mode, key, scale)
		if len(xy) == 0 {
			continue
		}
		ds = append(ds, drawn{d, xy, lo, hi, st})
		for i := range xy {
			vals = append(vals, xy[i].Y, hi[i])
			if lo[i] > 0 {
				vals = append(vals, lo[i])
			}
		}
	}
	floor := axis(p, ylabel, vals)
	for _, d := range ds {
		l, err := plotter.NewLine(d.xy)
		if err != nil {
			return nil, err
		}
		l.LineStyle = d.d.style
		sc, err := plotter.NewScatter(d.xy)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: d.d.style.Color, Radius: vg.Points(2.5), Shape: d.d.glyph}
		p.Add(l, sc)
		for i := range d.xy {
			if d.hi[i] == d.lo[i] {
				continue
			}
			bar, err := plotter.NewLine(plotter.XYs{{X: d.xy[i].X, Y: max(d.lo[i], floor)}, {X: d.xy[i].X, Y: d.hi[i]}})
			if err != nil {
				return nil, err
			}
			bar.LineStyle = draw.LineStyle{Color: d.d.style.Color, Width: vg.Points(0.9)}
			p.Add(bar)
		}
		if len(d.stopped) > 0 {
			x, err := plotter.NewScatter(d.stopped)
			if err != nil {
				return nil, err
			}
			x.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(5), Shape: draw.CrossGlyph{}}
			p.Add(x)
			if legend {
				p.Legend.Add("run stopped at its horizon", x)
			}
		}
		if legend {
			p.Legend.Add(d.d.name, l, sc)
		}
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.X.Min, p.X.Max = -0.3, float64(maxK(ps))+0.3
	return p, nil
}

func maxK(ps []Point) int {
	k := 0
	for i := range ps {
		k = max(k, ps[i].K)
	}
	return k
}

// atK is the point of (policy, mode, k), nil when there is none.
func atK(ps []Point, policy, mode string, k int) *Point {
	for i := range ps {
		if ps[i].Policy == policy && ps[i].Mode == mode && ps[i].K == k {
			return &ps[i]
		}
	}
	return nil
}

// summaryPanel is each policy's metric key at k, unmetered (left) and
// metered (right), with intervals; the bursar line as its own column.
func summaryPanel(ps []Point, pols []string, k int, title, ylabel, key string, scale float64) (*plot.Plot, error) {
	p := newPanel(title, "")
	var vals []float64
	type mark struct {
		x         float64
		v, lo, hi float64
		c         color.Color
		glyph     draw.GlyphDrawer
		stopped   bool
	}
	var marks []mark
	for i, pol := range pols {
		for _, d := range lineDefs(pol) {
			if d.policy != pol {
				continue
			}
			if pol == BursarLine && d.mode != ModeMetered {
				continue
			}
			pt := atK(ps, pol, d.mode, k)
			if pt == nil {
				continue
			}
			iv := pt.Value(key)
			if math.IsNaN(iv.Mean) {
				continue
			}
			x := float64(i) - 0.15
			c, g := d.style.Color, d.glyph
			if d.mode == ModeMetered {
				x = float64(i) + 0.15
			}
			if pol == BursarLine {
				x, c = float64(i), colBursar
			}
			m := mark{x: x, v: iv.Mean * scale, lo: iv.Mean * scale, hi: iv.Mean * scale, c: c, glyph: g, stopped: !pt.Converged()}
			if !math.IsNaN(iv.Lo) {
				m.lo, m.hi = iv.Lo*scale, iv.Hi*scale
			}
			marks = append(marks, m)
			vals = append(vals, m.v, m.hi)
			if m.lo > 0 {
				vals = append(vals, m.lo)
			}
		}
	}
	if len(marks) == 0 {
		return nil, nil
	}
	floor := axis(p, ylabel, vals)
	for _, m := range marks {
		sc, err := plotter.NewScatter(plotter.XYs{{X: m.x, Y: m.v}})
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: m.c, Radius: vg.Points(3.5), Shape: m.glyph}
		p.Add(sc)
		if m.hi != m.lo {
			bar, err := plotter.NewLine(plotter.XYs{{X: m.x, Y: max(m.lo, floor)}, {X: m.x, Y: m.hi}})
			if err != nil {
				return nil, err
			}
			bar.LineStyle = draw.LineStyle{Color: m.c, Width: vg.Points(1.2)}
			p.Add(bar)
		}
		if m.stopped {
			x, err := plotter.NewScatter(plotter.XYs{{X: m.x, Y: m.v}})
			if err != nil {
				return nil, err
			}
			x.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(6), Shape: draw.CrossGlyph{}}
			p.Add(x)
		}
	}
	p.NominalX(pols...)
	p.X.Label.Text = "site policy (left unmetered, right metered)"
	p.X.Min, p.X.Max = -0.6, float64(len(pols))-0.4
	return p, nil
}

// countsLabel is the x label of a p95 panel: k, and at the largest k the
// users' served and unfinished jobs per window, unmetered | metered.
func countsLabel(ps []Point, policy string, k int) string {
	get := func(mode, key string) string {
		pt := atK(ps, policy, mode, k)
		if pt == nil {
			return "–"
		}
		v := pt.Value(key).Mean
		if math.IsNaN(v) {
			return "–"
		}
		return fmt.Sprintf("%.0f", v)
	}
	if policy == BursarLine {
		return fmt.Sprintf("agent campaigns k · k=%d: served %s, unfinished %s", k, get(ModeMetered, "users_served"), get(ModeMetered, "users_unfinished"))
	}
	return fmt.Sprintf("k · at k=%d served %s|%s, unfinished %s|%s (unmetered|metered)", k,
		get(ModeUnmetered, "users_served"), get(ModeMetered, "users_served"), get(ModeUnmetered, "users_unfinished"), get(ModeMetered, "users_unfinished"))
}

// WriteFigure draws fig_agents_arrive: for each site policy a panel of
// the users' mean bounded slowdown against k (unmetered solid, metered
// dashed, the bursar line dotted grey, 95 % intervals over windows) and,
// below, one of their p95 wait with the served and unfinished jobs at the
// largest k; a last column sums up each policy at the largest k: the
// users' slowdown, the agents' GPU-hours and adaptive-sci's science,
// unmetered (left) against metered (right).
func WriteFigure(path string, f figures.Format, s *Summary) error {
	ps := s.Points()
	st := s.Study
	var site []string
	hasBursar := false
	for _, p := range st.Policies {
		if p == BursarLine {
			hasBursar = true
			continue
		}
		site = append(site, p)
	}
	panelsOf := site
	if len(site) == 0 {
		panelsOf = []string{BursarLine}
	}
	const cols = 3
	rowsPer := (len(panelsOf) + cols - 1) / cols
	grid := make([][]*plot.Plot, 2*rowsPer)
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols+1)
	}
	k := st.MaxK
	for i, pol := range panelsOf {
		r, c := i/cols, i%cols
		title := pol
		if pol == BursarLine {
			title = "bursar (everyone metered)"
		}
		b, err := linePanel(ps, pol, title+": users' slowdown", "agent campaigns k", "mean bounded slowdown", "users_mean_bsld", 1, hasBursar, false)
		if err != nil {
			return err
		}
		w, err := linePanel(ps, pol, title+": users' p95 wait", countsLabel(ps, pol, k), "p95 wait (h)", "users_p95_wait", 1.0/3600, hasBursar, false)
		if err != nil {
			return err
		}
		grid[r][c], grid[rowsPer+r][c] = b, w
	}
	all := append([]string{}, site...)
	if hasBursar {
		all = append(all, BursarLine)
	}
	var column []*plot.Plot
	p, err := summaryPanel(ps, all, k, fmt.Sprintf("k=%d: users' mean bounded slowdown", k), "mean bounded slowdown", "users_mean_bsld", 1)
	if err != nil {
		return err
	}
	column = append(column, p)
	if p, err = contrastPanel(s.Contrasts(), site, k); err != nil {
		return err
	}
	column = append(column, p)
	if p, err = summaryPanel(ps, all, k, fmt.Sprintf("k=%d: adaptive-sci's science", k), "science", "adaptive_science", 1); err != nil {
		return err
	}
	column = append(column, p, legendPanel(hasBursar))
	for i, p := range column {
		if i < len(grid) {
			grid[i][cols] = p
		}
	}
	if len(grid) == 0 {
		return fmt.Errorf("%s: no points to draw", path)
	}
	width, height := 20*vg.Inch, vg.Length(len(grid))*3.6*vg.Inch
	title := fmt.Sprintf("Agents arrive on %s: %d window(s) of %s, the agents staying %s, %d seed(s) per window; points are means over windows, bars 95 %% t intervals over windows",
		s.Trace.Name, len(st.Windows), fmtSeconds(int64(st.Windows[0].Days()*86400)), fmtSeconds(st.Stay), len(st.Seeds))
	return figures.WriteTitledGrid(path, f, width, height, title, grid)
}

// contrastPanel is each site policy's paired difference of the users'
// mean bounded slowdown, metered − unmetered, at k, with its 95 % t
// interval over windows and a line at 0: below it metering protected the
// users.
func contrastPanel(cs []Contrast, site []string, k int) (*plot.Plot, error) {
	p := newPanel(fmt.Sprintf("k=%d: Δ slowdown, metered − unmetered", k), "")
	p.Y.Label.Text = "paired difference (below 0: metering helps)"
	lo, hi := 0.0, 0.0
	for i, pol := range site {
		for j := range cs {
			c := &cs[j]
			if c.Policy != pol || c.K != k || c.Metric != "users_mean_bsld" || c.A != ModeMetered || c.B != ModeUnmetered || math.IsNaN(c.Diff.Mean) {
				continue
			}
			sc, err := plotter.NewScatter(plotter.XYs{{X: float64(i), Y: c.Diff.Mean}})
			if err != nil {
				return nil, err
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: colMetered, Radius: vg.Points(3.5), Shape: draw.TriangleGlyph{}}
			p.Add(sc)
			lo, hi = min(lo, c.Diff.Mean), max(hi, c.Diff.Mean)
			if !math.IsNaN(c.Diff.Lo) {
				bar, err := plotter.NewLine(plotter.XYs{{X: float64(i), Y: c.Diff.Lo}, {X: float64(i), Y: c.Diff.Hi}})
				if err != nil {
					return nil, err
				}
				bar.LineStyle = draw.LineStyle{Color: colMetered, Width: vg.Points(1.2)}
				p.Add(bar)
				lo, hi = min(lo, c.Diff.Lo), max(hi, c.Diff.Hi)
			}
			if !c.Converged {
				x, err := plotter.NewScatter(plotter.XYs{{X: float64(i), Y: c.Diff.Mean}})
				if err != nil {
					return nil, err
				}
				x.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(6), Shape: draw.CrossGlyph{}}
				p.Add(x)
			}
		}
	}
	zero, err := plotter.NewLine(plotter.XYs{{X: -0.6, Y: 0}, {X: float64(len(site)) - 0.4, Y: 0}})
	if err != nil {
		return nil, err
	}
	zero.LineStyle = draw.LineStyle{Color: color.Black, Width: vg.Points(0.8)}
	p.Add(zero)
	pad := max((hi-lo)*0.08, 1e-9)
	p.Y.Min, p.Y.Max = lo-pad, hi+pad
	p.NominalX(site...)
	p.X.Label.Text = "site policy (paired by window and seed)"
	p.X.Min, p.X.Max = -0.6, float64(len(site))-0.4
	return p, nil
}

// legendPanel is the figure's key, alone in a panel with no axes.
func legendPanel(withBursar bool) *plot.Plot {
	p := plot.New()
	p.HideAxes()
	p.Title.Text = "key"
	for _, d := range lineDefs("") {
		if d.policy == BursarLine && !withBursar {
			continue
		}
		l, _ := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}})
		l.LineStyle = d.style
		sc, _ := plotter.NewScatter(plotter.XYs{{X: 0, Y: 0}})
		sc.GlyphStyle = draw.GlyphStyle{Color: d.style.Color, Radius: vg.Points(3), Shape: d.glyph}
		p.Legend.Add(d.name, l, sc)
	}
	x, _ := plotter.NewScatter(plotter.XYs{{X: 0, Y: 0}})
	x.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(5), Shape: draw.CrossGlyph{}}
	p.Legend.Add("a run stopped at its horizon (lower bound)", x)
	p.Legend.Add("bars: 95 % t interval over windows")
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	return p
}
