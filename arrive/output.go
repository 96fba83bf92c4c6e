package arrive

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/bursar-hpc/bursar/figures"
	"github.com/bursar-hpc/bursar/internal/atomicfile"
	"github.com/bursar-hpc/bursar/sweep"
	"github.com/bursar-hpc/bursar/tracestudy"
)

// Point is one (policy, mode, k): the trace users' mean bounded slowdown
// and p95 wait, each the mean over the seeds with its 95 % Student t
// interval (NaN bounds with one seed: k < 2, where seeds do not matter).
type Point struct {
	Policy       string  `json:"policy"`
	Mode         string  `json:"mode"`
	K            int     `json:"k"`
	Seeds        int     `json:"seeds"`
	MeanBSLD     float64 `json:"mean_bsld"`
	MeanBSLDLo   float64 `json:"mean_bsld_lo"`
	MeanBSLDHi   float64 `json:"mean_bsld_hi"`
	P95Wait      float64 `json:"p95_wait"`
	P95WaitLo    float64 `json:"p95_wait_lo"`
	P95WaitHi    float64 `json:"p95_wait_hi"`
	Unserved     float64 `json:"unserved"`
	AgentGPUSecs float64 `json:"agent_gpu_seconds"`
}

// Points reduces the runs (in Specs order) to one point per policy, mode
// and k, in first-appearance order; means are summed in seed order.
func Points(rs []Result) []Point {
	var ps []Point
	for i := 0; i < len(rs); {
		j := i
		for j < len(rs) && rs[j].Policy == rs[i].Policy && rs[j].Mode == rs[i].Mode && rs[j].K == rs[i].K {
			j++
		}
		var bsld, p95, un, ag []float64
		for _, r := range rs[i:j] {
			bsld = append(bsld, r.Users.MeanBSLD)
			p95 = append(p95, r.Users.P95Wait)
			un = append(un, float64(r.Unserved))
			ag = append(ag, float64(r.AgentGPUSeconds))
		}
		b, p := sweep.TInterval(bsld), sweep.TInterval(p95)
		ps = append(ps, Point{Policy: rs[i].Policy, Mode: rs[i].Mode, K: rs[i].K, Seeds: j - i,
			MeanBSLD: sweep.BandOf(bsld).Mean, MeanBSLDLo: b.Lo, MeanBSLDHi: b.Hi,
			P95Wait: sweep.BandOf(p95).Mean, P95WaitLo: p.Lo, P95WaitHi: p.Hi,
			Unserved: sweep.BandOf(un).Mean, AgentGPUSecs: sweep.BandOf(ag).Mean})
		i = j
	}
	return ps
}

// Summary is summary.json.
type Summary struct {
	Experiment string               `json:"experiment"`
	Trace      tracestudy.TraceInfo `json:"trace"`
	Stay       Stay                 `json:"stay"`
	Mix        []string             `json:"mix"`
	Points     []map[string]any     `json:"points"`
	Runs       []map[string]any     `json:"runs"`
}

// num writes NaN and ±Inf as null (JSON has no NaN).
func num(x float64) any {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return x
}

func pointMap(p Point) map[string]any {
	return map[string]any{"policy": p.Policy, "mode": p.Mode, "k": p.K, "seeds": p.Seeds,
		"mean_bsld": num(p.MeanBSLD), "mean_bsld_lo": num(p.MeanBSLDLo), "mean_bsld_hi": num(p.MeanBSLDHi),
		"p95_wait": num(p.P95Wait), "p95_wait_lo": num(p.P95WaitLo), "p95_wait_hi": num(p.P95WaitHi),
		"unserved": num(p.Unserved), "agent_gpu_seconds": num(p.AgentGPUSecs)}
}

func runMap(r Result) map[string]any {
	return map[string]any{"policy": r.Policy, "mode": r.Mode, "k": r.K, "seed": r.Seed, "jobs": r.Jobs,
		"unserved": r.Unserved, "stranded": r.Stranded, "preemptions": r.Preemptions, "lost_gpu_seconds": r.LostGPUSeconds,
		"users_mean_wait": num(r.Users.MeanWait), "users_p50_wait": num(r.Users.P50Wait), "users_p95_wait": num(r.Users.P95Wait),
		"users_mean_bsld": num(r.Users.MeanBSLD), "users_p95_bsld": num(r.Users.P95BSLD), "jain": num(r.Jain),
		"makespan": r.Makespan, "agent_gpu_seconds": r.AgentGPUSeconds, "science": num(r.Science), "completed": r.Completed,
		"meter_refusals": r.MeterRefusals, "ticks": r.Ticks, "unfinished": r.Unfinished}
}

var csvHeader = []string{"policy", "mode", "k", "seed", "jobs", "unserved", "stranded", "preemptions", "lost_gpu_seconds",
	"users_mean_wait", "users_p50_wait", "users_p95_wait", "users_mean_bsld", "users_p95_bsld", "jain", "makespan",
	"agent_gpu_seconds", "science", "completed", "meter_refusals", "ticks", "unfinished"}

func cell(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// Write writes summary.json, runs.csv and fig_agents_arrive into out and
// returns the files written, relative to out.
func Write(out string, f figures.Format, info tracestudy.TraceInfo, st Stay, rs []Result) ([]string, error) {
	s := Summary{Experiment: "agents-arrive", Trace: info, Stay: st, Mix: Mix[:]}
	for _, p := range Points(rs) {
		s.Points = append(s.Points, pointMap(p))
	}
	for _, r := range rs {
		s.Runs = append(s.Runs, runMap(r))
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(filepath.Join(out, "summary.json"), append(b, '\n')); err != nil {
		return nil, err
	}
	err = atomicfile.WriteFunc(filepath.Join(out, "runs.csv"), func(w io.Writer) error {
		cw := csv.NewWriter(w)
		if err := cw.Write(csvHeader); err != nil {
			return err
		}
		for _, r := range rs {
			row := []string{r.Policy, r.Mode, strconv.Itoa(r.K), strconv.FormatInt(r.Seed, 10), strconv.Itoa(r.Jobs),
				strconv.Itoa(r.Unserved), strconv.Itoa(r.Stranded), strconv.Itoa(r.Preemptions), strconv.FormatInt(r.LostGPUSeconds, 10),
				cell(r.Users.MeanWait), cell(r.Users.P50Wait), cell(r.Users.P95Wait), cell(r.Users.MeanBSLD), cell(r.Users.P95BSLD),
				cell(r.Jain), strconv.FormatInt(r.Makespan, 10), strconv.FormatInt(r.AgentGPUSeconds, 10), cell(r.Science),
				strconv.Itoa(r.Completed), strconv.Itoa(r.MeterRefusals), strconv.FormatInt(r.Ticks, 10), strconv.Itoa(r.Unfinished)}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	})
	if err != nil {
		return nil, err
	}
	fig := "fig_agents_arrive." + string(f)
	if err := WriteFigure(filepath.Join(out, fig), f, info.Name, Points(rs)); err != nil {
		return nil, err
	}
	return []string{"summary.json", "runs.csv", fig}, nil
}

// PrintTable prints one row per point.
func PrintTable(w io.Writer, ps []Point) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tmode\tk\tseeds\tmean bsld\t95% CI\tp95 wait s\t95% CI\tunserved\tagent GPU-h\t")
	ci := func(lo, hi float64, prec int) string {
		if math.IsNaN(lo) {
			return "–"
		}
		return fmt.Sprintf("[%.*f, %.*f]", prec, lo, prec, hi)
	}
	for _, p := range ps {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f\t%s\t%.0f\t%s\t%.1f\t%.1f\t\n", p.Policy, p.Mode, p.K, p.Seeds,
			p.MeanBSLD, ci(p.MeanBSLDLo, p.MeanBSLDHi, 2), p.P95Wait, ci(p.P95WaitLo, p.P95WaitHi, 0), p.Unserved, p.AgentGPUSecs/3600)
	}
	return tw.Flush()
}

// palette: Okabe–Ito and black, one per policy in order of appearance.
var palette = []color.Color{
	color.Gray{Y: 0},
	color.RGBA{R: 0x00, G: 0x72, B: 0xB2, A: 0xff},
	color.RGBA{R: 0xD5, G: 0x5E, B: 0x00, A: 0xff},
	color.RGBA{R: 0xE6, G: 0x9F, B: 0x00, A: 0xff},
	color.RGBA{R: 0x00, G: 0x9E, B: 0x73, A: 0xff},
	color.RGBA{R: 0xCC, G: 0x79, B: 0xA7, A: 0xff},
	color.RGBA{R: 0x56, G: 0xB4, B: 0xE9, A: 0xff},
}

// WriteFigure draws fig_agents_arrive: one panel per metric and mode (the
// trace users' mean bounded slowdown and p95 wait), one line per policy,
// k on the x axis, 95 % intervals as error bars.
func WriteFigure(path string, f figures.Format, traceName string, ps []Point) error {
	var modes, pols []string
	for _, p := range ps {
		if !contains(modes, p.Mode) {
			modes = append(modes, p.Mode)
		}
		if !contains(pols, p.Policy) {
			pols = append(pols, p.Policy)
		}
	}
	metrics := []struct {
		name      string
		v, lo, hi func(Point) float64
	}{
		{"trace users' mean bounded slowdown", func(p Point) float64 { return p.MeanBSLD }, func(p Point) float64 { return p.MeanBSLDLo }, func(p Point) float64 { return p.MeanBSLDHi }},
		{"trace users' p95 wait (h)", func(p Point) float64 { return p.P95Wait / 3600 }, func(p Point) float64 { return p.P95WaitLo / 3600 }, func(p Point) float64 { return p.P95WaitHi / 3600 }},
	}
	var grid [][]*plot.Plot
	for _, m := range modes {
		var row []*plot.Plot
		for _, mt := range metrics {
			pl := plot.New()
			pl.Title.Text = fmt.Sprintf("%s — agents %s", mt.name, modeLabel(m))
			pl.X.Label.Text = "agent campaigns k"
			pl.Add(plotter.NewGrid())
			for i, pol := range pols {
				var xys plotter.XYs
				var errs plotter.YErrors
				for _, p := range ps {
					if p.Mode != m || p.Policy != pol || math.IsNaN(mt.v(p)) {
						continue
					}
					xys = append(xys, plotter.XY{X: float64(p.K), Y: mt.v(p)})
					lo, hi := mt.lo(p), mt.hi(p)
					if math.IsNaN(lo) {
						lo, hi = mt.v(p), mt.v(p)
					}
					errs = append(errs, struct{ Low, High float64 }{mt.v(p) - lo, hi - mt.v(p)})
				}
				if len(xys) == 0 {
					continue
				}
				l, err := plotter.NewLine(xys)
				if err != nil {
					return err
				}
				l.LineStyle = draw.LineStyle{Color: palette[i%len(palette)], Width: vg.Points(1.4), Dashes: []vg.Length{vg.Points(float64(i)), vg.Points(float64(i))}}
				if i == 0 {
					l.LineStyle.Dashes = nil
				}
				eb, err := plotter.NewYErrorBars(struct {
					plotter.XYer
					plotter.YErrorer
				}{xys, errs})
				if err != nil {
					return err
				}
				eb.LineStyle.Color = palette[i%len(palette)]
				pl.Add(l, eb)
				if len(grid) == 0 && len(row) == 0 {
					pl.Legend.Add(pol, l)
				}
			}
			pl.Legend.Top, pl.Legend.Left = true, true
			row = append(row, pl)
		}
		grid = append(grid, row)
	}
	if len(grid) == 0 {
		return fmt.Errorf("%s: no points to draw", path)
	}
	width, height := 11*vg.Inch, vg.Length(len(grid))*3.6*vg.Inch
	_ = traceName
	return figures.WriteGrid(path, f, width, height, grid)
}

func modeLabel(m string) string {
	if m == ModeMetered {
		return "metered by Bursar"
	}
	return "as site users"
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
