package arrive

import (
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/bursar-hpc/bursar/figures"
	"github.com/bursar-hpc/bursar/policy/policies"
)

// Every policy is drawn in its fixed colour and marker
// (figures.PolicyStyle, the same as in the trace figures); the mode tells
// the two lines of a site policy apart: unmetered agents a solid line and
// filled markers, metered ones a dashed line and open markers. The bursar
// line has Bursar's own look; an unconverged point's mark is a black ×.
type lineDef struct {
	policy, mode, name string
	style              draw.LineStyle
	glyph              draw.GlyphStyle
}

var meteredDash = []vg.Length{vg.Points(5), vg.Points(3)}

func lineDefs(policy string) []lineDef {
	pl, bl := figures.PolicyStyle(policies.Default.Style(policy)), figures.PolicyStyle(policies.Default.Style(BursarLine))
	return []lineDef{
		{policy, ModeUnmetered, "agents unmetered: solid, filled", draw.LineStyle{Color: pl.Line.Color, Width: vg.Points(1.6)}, pl.Filled()},
		{policy, ModeMetered, "agents metered by Bursar: dashed, open", draw.LineStyle{Color: pl.Line.Color, Width: vg.Points(1.6), Dashes: meteredDash}, pl.Hollow()},
		{BursarLine, ModeMetered, "bursar as the whole policy", bl.Line, bl.Filled()},
	}
}

// withRadius is g at radius r points.
func withRadius(g draw.GlyphStyle, r float64) draw.GlyphStyle {
	g.Radius = vg.Points(r)
	return g
}

// bounds are the ranges the figure's metrics cannot leave: a bounded
// slowdown is at least 1, a wait and a science count at least 0. A t
// interval over a few windows ignores them; the figure clips it there and
// its title says so.
var bounds = map[string]float64{"users_mean_bsld": 1, "users_p95_wait": 0, "adaptive_science": 0}

// clipLo clips an interval's lower end at the metric's bound (after
// scale) and reports whether it did.
func clipLo(key string, lo, scale float64) (float64, bool) {
	b, ok := bounds[key]
	if !ok || lo >= b*scale {
		return lo, false
	}
	return b * scale, true
}

// series is one line's points of metric key (× scale), with the
// intervals and the unconverged points.
func series(ps []Point, policy, mode, key string, scale float64) (xy plotter.XYs, lo, hi []float64, stopped plotter.XYs, clipped bool) {
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
			var c bool
			l, c = clipLo(key, iv.Lo*scale, scale)
			h, clipped = iv.Hi*scale, clipped || c
		}
		lo, hi = append(lo, l), append(hi, h)
		if !p.Converged() {
			stopped = append(stopped, plotter.XY{X: float64(p.K), Y: v})
		}
	}
	return xy, lo, hi, stopped, clipped
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
		p.Y.Tick.Marker = figures.LogTicks{}
		p.Y.Label.Text = label + " (log)"
		floor := lo / 1.5
		p.Y.Min, p.Y.Max = floor, hi*1.5
		return floor
	}
	p.Y.Min = 0
	if hi > 0 {
		p.Y.Max = hi * 1.08
	}
	p.Y.Tick.Marker = figures.LinearTicks{N: 4}
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
func linePanel(ps []Point, policy, title, xlabel, ylabel, key string, scale float64, withBursar, legend bool) (p *plot.Plot, clipped bool, err error) {
	p = newPanel(title, xlabel)
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
		xy, lo, hi, st, c := series(ps, d.policy, d.mode, key, scale)
		if len(xy) == 0 {
			continue
		}
		clipped = clipped || c
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
			return nil, false, err
		}
		l.LineStyle = d.d.style
		sc, err := plotter.NewScatter(d.xy)
		if err != nil {
			return nil, false, err
		}
		sc.GlyphStyle = withRadius(d.d.glyph, 2.5)
		p.Add(l, sc)
		// Each mode's intervals a little to its side, so that the two
		// modes' bars at one k do not hide each other.
		dx := map[string]float64{ModeUnmetered: -0.09, ModeMetered: 0.09}[d.d.mode]
		if d.d.policy == BursarLine {
			dx = 0
		}
		for i := range d.xy {
			if d.hi[i] == d.lo[i] {
				continue
			}
			bar, err := plotter.NewLine(plotter.XYs{{X: d.xy[i].X + dx, Y: max(d.lo[i], floor)}, {X: d.xy[i].X + dx, Y: d.hi[i]}})
			if err != nil {
				return nil, false, err
			}
			bar.LineStyle = draw.LineStyle{Color: d.d.style.Color, Width: vg.Points(0.9)}
			p.Add(bar)
		}
		if len(d.stopped) > 0 {
			x, err := plotter.NewScatter(d.stopped)
			if err != nil {
				return nil, false, err
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
	p.X.Tick.Marker = kTicks(maxK(ps))
	return p, clipped, nil
}

// kTicks labels the k axis at whole numbers of agent campaigns: every k
// up to 10, else every 2nd or 5th … (gonum's default labels only 0, 4
// and 8, and a round-number ticker would put one at k = 2.5).
func kTicks(maxK int) plot.ConstantTicks {
	step := 1
	for _, s := range []int{1, 2, 5, 10} {
		if step = s; maxK/s <= 10 {
			break
		}
	}
	var ts plot.ConstantTicks
	for k := 0; k <= maxK; k += step {
		ts = append(ts, plot.Tick{Value: float64(k), Label: strconv.Itoa(k)})
	}
	return ts
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
func summaryPanel(ps []Point, pols []string, k int, title, ylabel, key string, scale float64) (p *plot.Plot, clipped bool, err error) {
	p = newPanel(title, "")
	var vals []float64
	type mark struct {
		x         float64
		v, lo, hi float64
		glyph     draw.GlyphStyle
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
			if d.mode == ModeMetered {
				x = float64(i) + 0.15
			}
			if pol == BursarLine {
				x = float64(i)
			}
			m := mark{x: x, v: iv.Mean * scale, lo: iv.Mean * scale, hi: iv.Mean * scale, glyph: d.glyph, stopped: !pt.Converged()}
			c := false
			if !math.IsNaN(iv.Lo) {
				m.lo, c = clipLo(key, iv.Lo*scale, scale)
				m.hi, clipped = iv.Hi*scale, clipped || c
			}
			marks = append(marks, m)
			vals = append(vals, m.v, m.hi)
			// A lower end clipped to its bound does not choose the axis:
			// the bars then run to the foot of a linear axis.
			if m.lo > 0 && !c {
				vals = append(vals, m.lo)
			}
		}
	}
	if len(marks) == 0 {
		return nil, false, nil
	}
	floor := axis(p, ylabel, vals)
	for _, m := range marks {
		if m.hi != m.lo {
			bar, err := plotter.NewLine(plotter.XYs{{X: m.x, Y: max(m.lo, floor)}, {X: m.x, Y: m.hi}})
			if err != nil {
				return nil, false, err
			}
			bar.LineStyle = draw.LineStyle{Color: m.glyph.Color, Width: vg.Points(1.2)}
			p.Add(bar)
		}
		// The marker over its bar, so that an open marker stays open.
		sc, err := plotter.NewScatter(plotter.XYs{{X: m.x, Y: m.v}})
		if err != nil {
			return nil, false, err
		}
		sc.GlyphStyle = withRadius(m.glyph, 3.5)
		p.Add(sc)
		if m.stopped {
			x, err := plotter.NewScatter(plotter.XYs{{X: m.x, Y: m.v}})
			if err != nil {
				return nil, false, err
			}
			x.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(6), Shape: draw.CrossGlyph{}}
			p.Add(x)
		}
	}
	p.NominalX(pols...)
	p.X.Label.Text = "site policy (left unmetered, filled; right metered, open)"
	p.X.Min, p.X.Max = -0.6, float64(len(pols))-0.4
	return p, clipped, nil
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
	clipped := false
	for i, pol := range panelsOf {
		r, c := i/cols, i%cols
		title := pol
		if pol == BursarLine {
			title = "bursar (everyone metered)"
		}
		b, c1, err := linePanel(ps, pol, title+": users' slowdown", "agent campaigns k", "mean bounded slowdown", "users_mean_bsld", 1, hasBursar, false)
		if err != nil {
			return err
		}
		w, c2, err := linePanel(ps, pol, title+": users' p95 wait", countsLabel(ps, pol, k), "p95 wait (h)", "users_p95_wait", 1.0/3600, hasBursar, false)
		if err != nil {
			return err
		}
		clipped = clipped || c1 || c2
		grid[r][c], grid[rowsPer+r][c] = b, w
	}
	all := append([]string{}, site...)
	if hasBursar {
		all = append(all, BursarLine)
	}
	var column []*plot.Plot
	p, c, err := summaryPanel(ps, all, k, fmt.Sprintf("k=%d: users' mean bounded slowdown", k), "mean bounded slowdown", "users_mean_bsld", 1)
	if err != nil {
		return err
	}
	clipped = clipped || c
	column = append(column, p)
	if p, err = contrastPanel(s.Contrasts(), site, k); err != nil {
		return err
	}
	column = append(column, p)
	if p, c, err = summaryPanel(ps, all, k, fmt.Sprintf("k=%d: adaptive-sci's science", k), "science", "adaptive_science", 1); err != nil {
		return err
	}
	clipped = clipped || c
	column = append(column, p, legendPanel(hasBursar, clipped))
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
	if clipped {
		// The title's one line is as long as it may be; the key says how
		// the bars were clipped.
		title = strings.Replace(title, "bars 95 % t intervals over windows", "bars 95 % t intervals (see the key)", 1)
	}
	return figures.WriteTitledGrid(path, f, width, height, title, grid)
}

// contrastPanel is each site policy's users' mean bounded slowdown
// metered ÷ unmetered at k: the Hodges–Lehmann estimate of the windows'
// log ratios and its interval, drawn as ratios, with a line at 1: below
// it metering protected the users.
func contrastPanel(cs []Contrast, site []string, k int) (*plot.Plot, error) {
	p := newPanel(fmt.Sprintf("k=%d: slowdown, metered ÷ unmetered", k), "")
	p.Y.Label.Text = "ratio, Hodges–Lehmann (below 1: metering helps)"
	lo, hi := 1.0, 1.0
	for i, pol := range site {
		for j := range cs {
			c := &cs[j]
			if c.Policy != pol || c.K != k || c.Metric != "users_mean_bsld" || c.A != ModeMetered || c.B != ModeUnmetered || math.IsNaN(c.Shift.Estimate) {
				continue
			}
			look := figures.PolicyStyle(policies.Default.Style(pol))
			est := math.Exp(c.Shift.Estimate)
			if !math.IsNaN(c.Shift.Lo) {
				l, h := math.Exp(c.Shift.Lo), math.Exp(c.Shift.Hi)
				bar, err := plotter.NewLine(plotter.XYs{{X: float64(i), Y: l}, {X: float64(i), Y: h}})
				if err != nil {
					return nil, err
				}
				bar.LineStyle = draw.LineStyle{Color: look.Line.Color, Width: vg.Points(1.2)}
				p.Add(bar)
				lo, hi = min(lo, l), max(hi, h)
			}
			sc, err := plotter.NewScatter(plotter.XYs{{X: float64(i), Y: est}})
			if err != nil {
				return nil, err
			}
			sc.GlyphStyle = withRadius(look.Filled(), 3.5)
			p.Add(sc)
			lo, hi = min(lo, est), max(hi, est)
			if !c.Converged {
				x, err := plotter.NewScatter(plotter.XYs{{X: float64(i), Y: est}})
				if err != nil {
					return nil, err
				}
				x.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(6), Shape: draw.CrossGlyph{}}
				p.Add(x)
			}
		}
	}
	one, err := plotter.NewLine(plotter.XYs{{X: -0.6, Y: 1}, {X: float64(len(site)) - 0.4, Y: 1}})
	if err != nil {
		return nil, err
	}
	one.LineStyle = draw.LineStyle{Color: color.Black, Width: vg.Points(0.8)}
	p.Add(one)
	pad := max((hi-lo)*0.08, 1e-9)
	p.Y.Min, p.Y.Max = max(0, lo-pad), hi+pad
	p.Y.Tick.Marker = figures.LinearTicks{N: 4}
	p.NominalX(site...)
	p.X.Label.Text = "site policy (paired by window and seed)"
	p.X.Min, p.X.Max = -0.6, float64(len(site))-0.4
	return p, nil
}

// legendPanel is the figure's key, alone in a panel with no axes.
func legendPanel(withBursar, clipped bool) *plot.Plot {
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
		sc.GlyphStyle = withRadius(d.glyph, 3)
		p.Legend.Add(d.name, l, sc)
	}
	p.Legend.Add("colour and marker: the site policy,")
	p.Legend.Add("the same in every figure")
	x, _ := plotter.NewScatter(plotter.XYs{{X: 0, Y: 0}})
	x.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(5), Shape: draw.CrossGlyph{}}
	p.Legend.Add("a run stopped at its horizon (lower bound)", x)
	if clipped {
		// Short lines: the key's panel is a quarter of the figure wide.
		p.Legend.Add("bars: 95 % t interval over windows,")
		p.Legend.Add("clipped at the metric's bound:")
		p.Legend.Add("slowdown ≥ 1, wait and science ≥ 0")
		p.Legend.Add("(a bar down to a log axis' foot reaches 0)")
	} else {
		p.Legend.Add("bars: 95 % t interval over windows")
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	return p
}
