package replay

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/policy"
)

// The page's structure is a template; its style and script are separate
// embedded files inserted verbatim, so that html/template does not have to
// parse several hundred lines of JavaScript as a template (and so they can be
// read and linted as what they are).
var (
	//go:embed report.html.tmpl
	pageTemplate string
	//go:embed report.css
	pageCSS string
	//go:embed report.js
	pageJS string
)

var tmpl = template.Must(template.New("report.html").Parse(pageTemplate))

// maxSamples bounds the series embedded in the page. A chart a thousand
// pixels wide cannot show more, and the bound keeps the file small for long
// runs; the default run (1440 samples) is embedded whole.
const maxSamples = 3000

// Write renders the report of one run as a self-contained HTML page.
func Write(w io.Writer, r *engine.Result) error {
	if r == nil {
		return fmt.Errorf("replay: no result")
	}
	return render(w, build(r))
}

func render(w io.Writer, p *page) error {
	if err := tmpl.Execute(w, p); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	return nil
}

// page is everything the template reads.
type page struct {
	Title     string
	Subtitle  string
	Campaigns []campaignView
	Paths     []swatch
	Shade     string
	Narrative []paragraph
	Knobs     []knobView
	Metrics   []metricView
	// Note says how the series were thinned, when they were.
	Note string
	// Data goes into a script element; html/template writes it as JSON
	// and escapes it for that context.
	Data data
	CSS  template.CSS
	JS   template.JS
}

type swatch struct{ Name, Color string }

type campaignView struct {
	Index int
	Name  string
	Color string
	// Flows describes the campaign's flow envelope in words.
	Flows string
}

type knobView struct {
	Name, Value, Default, Usage string
	Changed                     bool
}

type metricView struct{ Key, Value string }

// data is the run as the script needs it: columnar arrays, rounded to what
// a chart can show, so the default run stays a few hundred kilobytes.
type data struct {
	Names      []string `json:"names"`
	Colors     []string `json:"colors"`
	PathNames  []string `json:"pathNames"`
	PathColors []string `json:"pathColors"`
	Shade      string   `json:"shade"`
	Pool       int      `json:"pool"`
	Ticks      int      `json:"ticks"`
	Storms     int      `json:"storms"`
	// Victim and Storm are the display groups the page singles out (the
	// first victim's and the first storm's; -1 when there is none).
	Victim      int    `json:"victim"`
	Storm       int    `json:"storm"`
	StormWindow [2]int `json:"stormWindow"`
	// Step is the ticks between two embedded samples.
	Step  int      `json:"step"`
	T     []int    `json:"t"`
	Mult  column   `json:"mult"`
	Held  [][]int  `json:"held"`
	Fill  []column `json:"fill"` // percent of B
	Spent []column `json:"spent"`
	IO    []column `json:"io"`
	Inf   []column `json:"inf"`
	// IORate and InfRate are each campaign's sustained flow rate (null:
	// no envelope).
	IORate  column    `json:"ioRate"`
	InfRate column    `json:"infRate"`
	Grants  grantCols `json:"grants"`
}

// grantCols is the grant log by column. C is the display campaign (-1 for
// one that is not displayed, such as the probe); P is the policy.Path.
type grantCols struct {
	T    []int `json:"t"`
	C    []int `json:"c"`
	GPUs []int `json:"gpus"`
	Lat  []int `json:"lat"`
	P    []int `json:"p"`
}

// column is a float series written with at most prec decimals, trailing
// zeros dropped, and null for a value that is not finite (JSON has no NaN,
// and html/template would replace the whole value with an error comment).
type column struct {
	xs   []float64
	prec int
}

func (c column) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 1+len(c.xs)*(c.prec+4))
	b = append(b, '[')
	for i, x := range c.xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendNumber(b, x, c.prec)
	}
	return append(b, ']'), nil
}

func appendNumber(b []byte, x float64, prec int) []byte {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return append(b, "null"...)
	}
	start := len(b)
	b = strconv.AppendFloat(b, x, 'f', prec, 64)
	if prec > 0 {
		for b[len(b)-1] == '0' {
			b = b[:len(b)-1]
		}
		if b[len(b)-1] == '.' {
			b = b[:len(b)-1]
		}
	}
	if string(b[start:]) == "-0" {
		b = append(b[:start], '0')
	}
	return b
}

// groupIndex maps each campaign name of the run's cast to its display
// group; a grant of any other campaign shows as -1 ("other").
func groupIndex(r *engine.Result) map[string]int {
	m := make(map[string]int, len(r.Cast))
	for g := range r.Groups {
		for _, i := range r.Groups[g].Members {
			m[r.Cast[i].Name] = g
		}
	}
	return m
}

func build(r *engine.Result) *page {
	s := &r.Scenario
	p := &page{
		Title:    "Bursar replay",
		Subtitle: fmt.Sprintf("seed %d · %d-GPU pool · %s simulated · %s", s.Seed, s.Pool, clock(s.Ticks), enforcement(s)),
		Shade:    Hex(StormWindowShade),
		CSS:      template.CSS(pageCSS),
		JS:       template.JS(pageJS),
	}
	if b := s.Baseline(); b != "" {
		// The same workload under a baseline: the page names the policy
		// that ran, not Bursar.
		p.Title = b + " replay (a baseline admission policy)"
		p.Subtitle = fmt.Sprintf("seed %d · %d-GPU pool · %s simulated · admission by %s", s.Seed, s.Pool, clock(s.Ticks), b)
	}
	ioRate, infRate := r.DisplayFlowRates()
	colors := GroupColors(r.Groups)
	for d, g := range r.Groups {
		p.Campaigns = append(p.Campaigns, campaignView{
			Index: d, Name: g.Name, Color: Hex(colors[d]),
			Flows: flowWords(ioRate[d], infRate[d]),
		})
	}
	for path := range policy.Path(policy.NumPaths) {
		p.Paths = append(p.Paths, swatch{Name: path.String(), Color: Hex(PathColors[path])})
	}
	p.Narrative = narrative(r)
	p.Knobs = knobs(s)
	p.Metrics = metrics(r)
	p.Data, p.Note = series(r, ioRate, infRate)
	for _, c := range p.Campaigns {
		p.Data.Names = append(p.Data.Names, c.Name)
		p.Data.Colors = append(p.Data.Colors, c.Color)
	}
	for _, sw := range p.Paths {
		p.Data.PathNames = append(p.Data.PathNames, sw.Name)
		p.Data.PathColors = append(p.Data.PathColors, sw.Color)
	}
	p.Data.Shade = p.Shade
	return p
}

func enforcement(s *engine.Scenario) string {
	if s.Leaky {
		return "grant-time-only enforcement"
	}
	return "prepaid leases"
}

func flowWords(io, inf float64) string {
	var parts []string
	if !math.IsNaN(io) {
		parts = append(parts, "io R "+num(io, 0)+" GB/s")
	}
	if !math.IsNaN(inf) {
		parts = append(parts, "inference R "+num(inf, 0)+" tok/s")
	}
	if len(parts) == 0 {
		return "no flow envelope"
	}
	return strings.Join(parts, ", ")
}

func series(r *engine.Result, ioRate, infRate []float64) (data, string) {
	s := &r.Scenario
	sr := &r.Series
	n := sr.Len()
	stride := max(1, (n+maxSamples-1)/maxSamples)
	d := data{
		Pool: s.Pool, Ticks: s.Ticks, Storms: stormCount(r),
		StormWindow: [2]int{s.StormStart, s.StormEnd},
		Step:        s.SampleEvery * stride,
		IORate:      column{ioRate, 2},
		InfRate:     column{infRate, 1},
		Victim:      r.GroupOf(engine.AgentVictim),
		Storm:       r.GroupOf(engine.AgentStorm),
	}
	ng := len(r.Groups)
	var idx []int
	for i := stride - 1; i < n; i += stride {
		idx = append(idx, i)
	}
	pick := func(xs []float64, scale float64, prec int) column {
		out := make([]float64, len(idx))
		for j, i := range idx {
			out[j] = xs[i] * scale
		}
		return column{out, prec}
	}
	d.T = make([]int, len(idx))
	for j, i := range idx {
		d.T[j] = sr.T[i]
	}
	d.Mult = pick(sr.Multiplier, 1, 2)
	d.Held = make([][]int, ng)
	d.Fill = make([]column, ng)
	d.Spent = make([]column, ng)
	d.IO = make([]column, ng)
	d.Inf = make([]column, ng)
	for c := range ng {
		d.Held[c] = make([]int, len(idx))
		for j, i := range idx {
			d.Held[c][j] = sr.Held[c][i]
		}
		d.Fill[c] = pick(sr.Fill[c], 100, 1)
		d.Spent[c] = pick(sr.Spent[c], 1, 1)
		d.IO[c] = pick(sr.IO[c], 1, 2)
		d.Inf[c] = pick(sr.Inference[c], 1, 1)
	}
	g := &d.Grants
	groups := groupIndex(r)
	for _, gr := range r.Grants {
		gi, ok := groups[gr.Name]
		if !ok {
			gi = -1
		}
		g.T = append(g.T, gr.T)
		g.C = append(g.C, gi)
		g.GPUs = append(g.GPUs, gr.GPUs)
		g.Lat = append(g.Lat, gr.Latency)
		g.P = append(g.P, int(gr.Path))
	}
	// Empty slices, not nil: the script indexes them without checking.
	if g.T == nil {
		g.T, g.C, g.GPUs, g.Lat, g.P = []int{}, []int{}, []int{}, []int{}, []int{}
	}
	if d.T == nil {
		d.T = []int{}
	}
	note := ""
	if stride > 1 {
		note = fmt.Sprintf("The charts show one sample in %d of the run's %d (one per %d s) to keep the page small; every grant is there.", stride, n, d.Step)
	}
	return d, note
}

func knobs(s *engine.Scenario) []knobView {
	def := engine.DefaultScenario()
	out := make([]knobView, 0, len(engine.Knobs))
	for i := range engine.Knobs {
		k := &engine.Knobs[i]
		v, dv := k.Format(s), k.Format(&def)
		out = append(out, knobView{Name: k.Name, Value: v, Default: dv, Usage: k.Usage, Changed: v != dv})
	}
	return out
}

func metrics(r *engine.Result) []metricView {
	var out []metricView
	scalars := r.Metrics.Scalars()
	if r.Metrics.Study != nil {
		// A run under a named policy shows the study metrics too.
		scalars = append(scalars, r.Metrics.Study.Scalars()...)
	}
	for _, sc := range scalars {
		v := "–"
		if !math.IsNaN(sc.Value) && !math.IsInf(sc.Value, 0) {
			v = strconv.FormatFloat(sc.Value, 'f', -1, 64)
			if sc.Value != math.Trunc(sc.Value) {
				v = strconv.FormatFloat(sc.Value, 'f', 4, 64)
				v = strings.TrimRight(strings.TrimRight(v, "0"), ".")
			}
		}
		out = append(out, metricView{Key: sc.Key, Value: v})
	}
	if r.GroupOf(engine.AgentProbe) >= 0 {
		out = append(out,
			metricView{Key: "probe_lats", Value: ints(r.Metrics.ProbeLats)},
			metricView{Key: "probe_lats_in", Value: ints(r.Metrics.ProbeLatsIn)})
	}
	return out
}

func ints(xs []int) string {
	if len(xs) == 0 {
		return "–"
	}
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ", ")
}

// clock writes seconds as h:mm:ss, as the page's clock does.
func clock(sec int) string {
	return fmt.Sprintf("%d:%02d:%02d", sec/3600, sec/60%60, sec%60)
}

// stormCount is the number of storm campaigns in the run's cast.
func stormCount(r *engine.Result) int {
	n := 0
	for i := range r.Cast {
		if r.Cast[i].Agent == engine.AgentStorm {
			n++
		}
	}
	return n
}
