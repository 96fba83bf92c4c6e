package story

import (
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/bursar-hpc/bursar/figures"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/tracestudy"
)

type figureFormat = figures.Format

func newPanel(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	return p
}

func look(pol string) figures.PolicyLook { return figures.PolicyStyle(policies.Default.Style(pol)) }

// findPoint is the study's point of a line and a population, or nil.
func findPoint(ps []Point, line, users string) *Point {
	for i := range ps {
		if ps[i].Line == line && ps[i].Users == users {
			return &ps[i]
		}
	}
	return nil
}

// weeklyPanel draws a weekly series per policy: strategic users solid,
// honest dashed in the same colour.
// With floor > 0 the y axis is logarithmic and values below floor are
// drawn at it.
func weeklyPanel(ps []Point, pols []string, title, y string, scale, floor float64, get func(*Point) []float64) (*plot.Plot, error) {
	p := newPanel(title, "week of submits", y)
	for _, pol := range pols {
		for _, u := range []string{StrategicName, HonestName} {
			pt := findPoint(ps, pol, u)
			if pt == nil {
				continue
			}
			var xy plotter.XYs
			for k, v := range get(pt) {
				if !math.IsNaN(v) {
					xy = append(xy, plotter.XY{X: float64(k + 1), Y: max(v*scale, floor)})
				}
			}
			if len(xy) == 0 {
				continue
			}
			l, err := plotter.NewLine(xy)
			if err != nil {
				return nil, err
			}
			l.LineStyle = look(pol).Line
			l.LineStyle.Dashes = nil
			if u == HonestName {
				l.LineStyle.Dashes = []vg.Length{vg.Points(2), vg.Points(3)}
				l.LineStyle.Width = vg.Points(1)
			}
			p.Add(l)
		}
	}
	p.Y.Min = 0
	if floor > 0 {
		p.Y.Min = floor
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	return p, nil
}

// ivPanel draws metric key per policy: honest users hollow on the left,
// strategic filled on the right, each with its 95 % interval over seeds.
func ivPanel(ps []Point, pols []string, title, y, key string, scale float64) (*plot.Plot, error) {
	p := newPanel(title, "left hollow: honest; right filled: strategic", y)
	top := 0.0
	for i, pol := range pols {
		for k, u := range []string{HonestName, StrategicName} {
			pt := findPoint(ps, pol, u)
			if pt == nil {
				continue
			}
			iv := pt.Value(key)
			if math.IsNaN(iv.Mean) {
				continue
			}
			x := float64(i) + 0.3*(float64(k)-0.5)
			if err := drawIV(p, x, iv, scale, look(pt.Policy), u == HonestName); err != nil {
				return nil, err
			}
			top = max(top, iv.Mean*scale)
			if !math.IsNaN(iv.Hi) {
				top = max(top, iv.Hi*scale)
			}
		}
	}
	p.NominalX(pols...)
	p.X.Min, p.X.Max = -0.6, float64(len(pols))-0.4
	p.Y.Min, p.Y.Max = 0, max(top*1.08, 1e-9)
	// Five labels or more of a line each ("budget, contract off") overlap
	// when drawn level.
	if len(pols) > 5 || slices.ContainsFunc(pols, func(l string) bool { return len(l) > 12 }) {
		p.X.Tick.Label.Rotation = 0.35
		p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	}
	return p, nil
}

func drawIV(p *plot.Plot, x float64, iv tracestudy.Interval, scale float64, lk figures.PolicyLook, hollow bool) error {
	if !math.IsNaN(iv.Lo) {
		bar, err := plotter.NewLine(plotter.XYs{{X: x, Y: iv.Lo * scale}, {X: x, Y: iv.Hi * scale}})
		if err != nil {
			return err
		}
		bar.LineStyle = draw.LineStyle{Color: lk.Line.Color, Width: vg.Points(1.2)}
		p.Add(bar)
	}
	sc, err := plotter.NewScatter(plotter.XYs{{X: x, Y: iv.Mean * scale}})
	if err != nil {
		return err
	}
	sc.GlyphStyle = lk.Filled()
	if hollow {
		sc.GlyphStyle = lk.Hollow()
	}
	sc.GlyphStyle.Radius = vg.Points(3.5)
	p.Add(sc)
	return nil
}

// ratioPanel is each team's usage ÷ entitlement per policy, strategic
// users, with a line at 1.
func ratioPanel(ps []Point, pols []string, teams []string, users string) (*plot.Plot, error) {
	p := newPanel(fmt.Sprintf("Usage ÷ entitlement per team (%s users)", users), "team", "GPU-hours held ÷ entitled")
	top := 1.0
	for i, pol := range pols {
		pt := findPoint(ps, pol, users)
		if pt == nil {
			continue
		}
		for g, iv := range pt.UsageRatio {
			x := float64(g) + 0.6*(float64(i)/float64(max(len(pols)-1, 1))-0.5)
			if err := drawIV(p, x, iv, 1, look(pol), false); err != nil {
				return nil, err
			}
			top = max(top, iv.Mean)
			if !math.IsNaN(iv.Hi) {
				top = max(top, iv.Hi)
			}
		}
	}
	one, err := plotter.NewLine(plotter.XYs{{X: -0.6, Y: 1}, {X: float64(len(teams)) - 0.4, Y: 1}})
	if err != nil {
		return nil, err
	}
	one.LineStyle = draw.LineStyle{Color: color.Black, Width: vg.Points(0.8)}
	p.Add(one)
	p.NominalX(teams...)
	p.X.Min, p.X.Max = -0.6, float64(len(teams))-0.4
	p.Y.Min, p.Y.Max = 0, top*1.08
	return p, nil
}

// keyPanel is the figure's key: each policy's colour and marker, and how
// honest and strategic users are drawn.
func keyPanel(pols []string) *plot.Plot {
	p := plot.New()
	p.HideAxes()
	p.Title.Text = "key"
	for _, pol := range pols {
		l, _ := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}})
		l.LineStyle = look(pol).Line
		l.LineStyle.Dashes = nil
		sc, _ := plotter.NewScatter(plotter.XYs{{X: 0, Y: 0}})
		sc.GlyphStyle = look(pol).Filled()
		p.Legend.Add(pol, l, sc)
	}
	p.Legend.Add("weekly lines: strategic users solid,")
	p.Legend.Add("honest users dashed")
	p.Legend.Add("points: hollow honest, filled strategic;")
	p.Legend.Add("bars: 95 % t interval over seeds")
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	return p
}

// WriteFigure draws fig_story: the top tier's share and the debug
// latency week by week, idle-while-waiting, owners' idle GPUs, squatted
// GPU-hours, the urgent jobs' wait and each team's usage ÷ entitlement,
// for every policy with honest and strategic users (docs/story.md).
func WriteFigure(path string, f figures.Format, s *Summary) error {
	ps := s.Points()
	pols := s.Study.Policies
	var teams []string
	for _, t := range s.Study.Lab.Teams {
		teams = append(teams, t.Name)
	}
	var panels []*plot.Plot
	add := func(p *plot.Plot, err error) error {
		if err == nil {
			panels = append(panels, p)
		}
		return err
	}
	if err := add(weeklyPanel(ps, pols, "Top tier's share of GPU-hours submitted (strategic solid, honest dashed)", "% at deadline or interactive", 100, 0,
		func(p *Point) []float64 { return p.TopShare })); err != nil {
		return err
	}
	if err := add(weeklyPanel(ps, pols, "Debug launch latency (strategic solid, honest dashed; below 36 s drawn at 36 s)", "mean latency (h, log)", 1, 0.01,
		func(p *Point) []float64 { return p.DebugWeekly })); err != nil {
		return err
	}
	for _, m := range []struct{ title, y, key string }{
		{"Idle while jobs waited (honest vs strategic)", "% of the pool's GPU-hours", "idle_while_waiting"},
		{"Owners' idle GPUs while another team waited (honest vs strategic)", "% of the pool's GPU-hours", "owners_idle"},
		{"Squatted: parked GPU-hours with no debug job (honest vs strategic)", "% of the pool's GPU-hours", "squatted"},
		{"Urgent training jobs' mean wait (honest vs strategic)", "hours", "urgent_wait_h"},
	} {
		scale := 100.0
		if m.key == "urgent_wait_h" {
			scale = 1
		}
		if err := add(ivPanel(ps, pols, m.title, m.y, m.key, scale)); err != nil {
			return err
		}
	}
	if err := add(ratioPanel(ps, pols, teams, StrategicName)); err != nil {
		return err
	}
	if st := s.Study; st.Hosts != nil {
		var lines []string
		for _, l := range []string{"priority", "priority, contract on", "budget, contract off", "budget", "bursar"} {
			if findPoint(ps, l, HonestName) != nil {
				lines = append(lines, l)
			}
		}
		if err := add(ivPanel(ps, lines, "Interventions per drain: the lab's contrast and the contract (honest vs strategic)", "jobs a human ended ÷ degradations", "interventions_per_drain", 1)); err != nil {
			return err
		}
		if err := add(ivPanel(ps, lines, "Drain time: degradation to empty node (honest vs strategic)", "hours", "drain_h", 1)); err != nil {
			return err
		}
	}
	panels = append(panels, keyPanel(pols))
	const cols = 4
	var grid [][]*plot.Plot
	for i, p := range panels {
		if i%cols == 0 {
			grid = append(grid, make([]*plot.Plot, cols))
		}
		grid[i/cols][i%cols] = p
	}
	st := s.Study
	title := fmt.Sprintf("The lab's story: %d GPUs%s, %d days, %d seed(s); honest users declare their own class and never park, strategic users inflate and squat by docs/story.md's rules (ν_w %g, ν_l %g)",
		st.Lab.Pool, nodesNote(st), st.Lab.Days, len(st.Seeds), DefaultRules().WaitValue, DefaultRules().LatencyValue)
	width, height := 22*vg.Inch, vg.Length(len(grid))*4.2*vg.Inch
	return figures.WriteTitledGrid(path, f, width, height, title, grid)
}

// nodesNote says the platform and its failures in the title.
func nodesNote(st *Study) string {
	if st.Hosts == nil {
		return ""
	}
	return fmt.Sprintf(" on %d nodes × %d with failures and drains (docs/story.md)", st.Platform.Nodes, st.Platform.GPUsPerNode)
}
