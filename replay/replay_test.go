package replay

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/policy"
)

// defaultRun is the default scenario's result, shared by the tests: they
// only read it (a test that changes something changes a copy).
var defaultRun = sync.OnceValues(func() (*engine.Result, error) {
	return engine.Run(engine.DefaultScenario(), engine.Options{Series: true})
})

func mustDefault(t *testing.T) *engine.Result {
	t.Helper()
	r, err := defaultRun()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func writeString(t *testing.T, r *engine.Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// embeddedData pulls the run's data back out of the page's script.
func embeddedData(t *testing.T, html string) map[string]json.RawMessage {
	t.Helper()
	const open, end = "<script>const BURSAR = ", ";</script>"
	i := strings.Index(html, open)
	if i < 0 {
		t.Fatal("no data script in the page")
	}
	rest := html[i+len(open):]
	j := strings.Index(rest, end)
	if j < 0 {
		t.Fatal("data script not closed")
	}
	var d map[string]json.RawMessage
	if err := json.Unmarshal([]byte(rest[:j]), &d); err != nil {
		t.Fatalf("the embedded data is not JSON: %v", err)
	}
	return d
}

func TestDefaultReportIsSmallAndSelfContained(t *testing.T) {
	html := writeString(t, mustDefault(t))
	t.Logf("report.html for the default run: %d bytes", len(html))
	if len(html) >= 1<<20 {
		t.Errorf("report is %d bytes, want under 1 MB", len(html))
	}
	// Nothing may be loaded from anywhere: no attribute that names a
	// resource, no URL at all, and no script API that talks to a network.
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)\b(src|href|srcset|action|formaction|poster|data)\s*=`),
		regexp.MustCompile(`(?i)https?:`),
		regexp.MustCompile(`(?i)<(link|img|iframe|object|embed|audio|video|source|base|meta\s+http-equiv)\b`),
		regexp.MustCompile(`(?i)<script[^>]*\bsrc`),
		regexp.MustCompile(`\bfetch\s*\(|XMLHttpRequest|WebSocket|EventSource|sendBeacon|importScripts|\bimport\s*\(|new\s+Worker`),
		regexp.MustCompile(`(?i)@import|url\s*\(`),
	} {
		if m := re.FindString(html); m != "" {
			t.Errorf("report is not self-contained: found %q (%s)", m, re)
		}
	}
	// The style and the script go in verbatim, as trusted text; neither may
	// end its element early or open a comment the parser would honour.
	for name, text := range map[string]string{"report.js": pageJS, "report.css": pageCSS} {
		for _, bad := range []string{"</script", "</style", "<!--", "<script"} {
			if strings.Contains(strings.ToLower(text), bad) {
				t.Errorf("%s contains %q", name, bad)
			}
		}
	}
	if got := strings.Count(html, "<script>"); got != 2 {
		t.Errorf("%d inline scripts, want 2 (data and code)", got)
	}
	// Every chart the script draws is in the page.
	for _, id := range []string{"chart-occupancy", "chart-grants", "chart-fill", "chart-io", "chart-inference"} {
		if !strings.Contains(html, `<canvas class="chart" id="`+id+`"`) {
			t.Errorf("no canvas %s", id)
		}
	}
}

func TestEmbeddedDataIsTheRun(t *testing.T) {
	r := mustDefault(t)
	d := embeddedData(t, writeString(t, r))
	var ts []int
	var held [][]int
	var fill [][]*float64
	var grants struct {
		T, C, GPUs, Lat, P []int
	}
	var ioRate, infRate []*float64
	for key, dst := range map[string]any{"t": &ts, "held": &held, "fill": &fill, "grants": &grants, "ioRate": &ioRate, "infRate": &infRate} {
		if err := json.Unmarshal(d[key], dst); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
	}
	if len(ts) != r.Series.Len() {
		t.Fatalf("%d samples embedded, the run has %d", len(ts), r.Series.Len())
	}
	for i := range ts {
		if ts[i] != r.Series.T[i] {
			t.Fatalf("t[%d] = %d, want %d", i, ts[i], r.Series.T[i])
		}
		for c := range r.Groups {
			if held[c][i] != r.Series.Held[c][i] {
				t.Fatalf("held[%d][%d] = %d, want %d", c, i, held[c][i], r.Series.Held[c][i])
			}
			if want := r.Series.Fill[c][i] * 100; math.Abs(*fill[c][i]-want) > 0.05+1e-9 {
				t.Fatalf("fill[%d][%d] = %v%%, want %v%%", c, i, *fill[c][i], want)
			}
		}
	}
	if len(grants.T) != len(r.Grants) {
		t.Fatalf("%d grants embedded, the run has %d", len(grants.T), len(r.Grants))
	}
	for i, g := range r.Grants {
		if grants.T[i] != g.T || grants.Lat[i] != g.Latency || grants.GPUs[i] != g.GPUs || grants.P[i] != int(g.Path) {
			t.Fatalf("grant %d embedded as t=%d lat=%d gpus=%d path=%d, want %+v", i, grants.T[i], grants.Lat[i], grants.GPUs[i], grants.P[i], g)
		}
		if gi := grants.C[i]; gi < 0 || gi >= len(r.Groups) || !slices.ContainsFunc(r.Groups[gi].Members, func(m int) bool { return r.Cast[m].Name == g.Name }) {
			t.Fatalf("grant %d of %s embedded as campaign %d", i, g.Name, grants.C[i])
		}
	}
	// Sustained rates: science io 6 GB/s and inference 500 tok/s, storm
	// 50 tok/s per storm; victim and backfill have no envelope (null).
	wantIO := []float64{math.NaN(), 6, 6, math.NaN(), math.NaN()}
	wantInf := []float64{math.NaN(), 500, 500, 50, math.NaN()}
	for c := range r.Groups {
		for _, x := range []struct {
			name string
			got  *float64
			want float64
		}{{"ioRate", ioRate[c], wantIO[c]}, {"infRate", infRate[c], wantInf[c]}} {
			switch {
			case math.IsNaN(x.want) && x.got != nil:
				t.Errorf("%s[%s] = %v, want null", x.name, r.Groups[c].Name, *x.got)
			case !math.IsNaN(x.want) && (x.got == nil || *x.got != x.want):
				t.Errorf("%s[%s] = %v, want %v", x.name, r.Groups[c].Name, x.got, x.want)
			}
		}
	}
}

// The narrative is written from the Result: change the measured numbers
// and the text follows, including the words that compare them.
func TestNarrativeComesFromTheResult(t *testing.T) {
	r := mustDefault(t)
	base := writeString(t, r)
	for _, want := range []string{
		"<b>" + itoa(r.Metrics.StormPeakHeld) + " GPUs</b>",
		"<b>" + itoa(r.StormThrottles) + "</b> times",
		"<b>" + itoa(r.Adaptive.Completed) + "</b> tasks",
		"<b>" + num(r.Metrics.AdaptiveScience, 1) + "</b> science",
		"<b>" + num(100*r.Metrics.Utilization, 1) + "%</b> busy",
		"The victim was isolated",
	} {
		if !strings.Contains(base, want) {
			t.Errorf("default narrative lacks %q", want)
		}
	}

	c := *r
	c.Metrics.StormPeakHeld = 4321
	c.Metrics.AdaptiveScience = 98765.4
	c.Metrics.Utilization = 0.123
	c.Metrics.VictimP95In = c.Metrics.VictimP95Out + 40
	c.Metrics.VictimViolationsIn = 7
	c.StormThrottles = 1
	got := writeString(t, &c)
	for _, want := range []string{
		"<b>4321 GPUs</b>", "<b>98765.4</b> science", "<b>12.3%</b> busy",
		"The victim felt the storm", "<b>7</b> waited longer than 60 s", "<b>1</b> time.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("changed narrative lacks %q", want)
		}
	}
	for _, gone := range []string{
		"<b>" + itoa(r.Metrics.StormPeakHeld) + " GPUs</b>",
		"The victim was isolated",
	} {
		if strings.Contains(got, gone) {
			t.Errorf("changed narrative still says %q", gone)
		}
	}
}

func itoa(n int) string { return num(float64(n), 0) }

// Names reach the page in two contexts, HTML text and the script's JSON;
// html/template must escape both.
func TestCampaignNamesAreEscaped(t *testing.T) {
	const evil = `</script><img src=x onerror="alert(1)">&`
	p := build(mustDefault(t))
	p.Campaigns[1].Name = evil
	p.Data.Names[1] = evil
	p.Knobs[0].Name = evil
	var b bytes.Buffer
	if err := render(&b, p); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	if strings.Contains(html, evil) || strings.Contains(html, "<img") {
		t.Fatal("a campaign name reached the page unescaped")
	}
	if !strings.Contains(html, "&lt;/script&gt;&lt;img src=x onerror=&#34;alert(1)&#34;&gt;&amp;") {
		t.Error("the name is not HTML-escaped in the readout and legend")
	}
	if !strings.Contains(html, `\u003c/script\u003e\u003cimg src=x onerror=\"alert(1)\"\u003e\u0026`) {
		t.Error("the name is not escaped in the script's data")
	}
	if got := strings.Count(html, "</script>"); got != 2 {
		t.Errorf("%d </script> in the page, want 2", got)
	}
	d := embeddedData(t, html)
	var names []string
	if err := json.Unmarshal(d["names"], &names); err != nil || names[1] != evil {
		t.Errorf("the script reads the name back as %q (%v), want %q", names, err, evil)
	}
}

// A run far longer than the default is thinned to at most maxSamples
// samples, keeps every grant, and says so; values that are not finite are
// written as null instead of breaking the page.
func TestLongRunsAreThinned(t *testing.T) {
	const n = 7000
	short := engine.DefaultScenario()
	short.Storms, short.Ticks = 2, 10
	r, err := engine.Run(short, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Grants = nil
	r.Scenario.Ticks = n * r.Scenario.SampleEvery
	sr := &r.Series
	ng := len(r.Groups)
	sr.Held, sr.Fill, sr.Spent = make([][]int, ng), make([][]float64, ng), make([][]float64, ng)
	sr.IO, sr.Inference = make([][]float64, ng), make([][]float64, ng)
	for i := range n {
		sr.T = append(sr.T, (i+1)*r.Scenario.SampleEvery)
		sr.Multiplier = append(sr.Multiplier, 1)
		for c := range ng {
			sr.Held[c] = append(sr.Held[c], i%100)
			sr.Fill[c] = append(sr.Fill[c], 0.5)
			sr.Spent[c] = append(sr.Spent[c], float64(i))
			sr.IO[c] = append(sr.IO[c], 1)
			sr.Inference[c] = append(sr.Inference[c], 1)
		}
	}
	sr.Fill[0][2] = math.NaN()
	for i := range 5000 {
		r.Grants = append(r.Grants, engine.Grant{T: i, Name: "storm2", GPUs: 16, Latency: 1, Path: policy.Warm})
	}
	html := writeString(t, r)
	if len(html) >= 1<<20 {
		t.Errorf("thinned report is %d bytes", len(html))
	}
	d := embeddedData(t, html)
	var ts, gc []int
	var step int
	var fill [][]*float64
	var grants struct{ C []int }
	for key, dst := range map[string]any{"t": &ts, "step": &step, "fill": &fill, "grants": &grants} {
		if err := json.Unmarshal(d[key], dst); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
	}
	gc = grants.C
	if len(ts) > maxSamples || len(ts) < maxSamples/2 {
		t.Fatalf("%d samples embedded for %d, want at most %d", len(ts), n, maxSamples)
	}
	for i := 1; i < len(ts); i++ {
		if ts[i]-ts[i-1] != step {
			t.Fatalf("samples %d and %d are %d ticks apart, step says %d", i-1, i, ts[i]-ts[i-1], step)
		}
	}
	if fill[0][0] != nil {
		t.Errorf("NaN fill embedded as %v, want null", *fill[0][0])
	}
	if len(gc) != 5000 || gc[0] != r.GroupOf(engine.AgentStorm) || gc[0] < 0 {
		t.Errorf("%d grants embedded (first as campaign %v), want 5000 storm grants", len(gc), gc[:1])
	}
	if !strings.Contains(html, "one sample in 3 ") {
		t.Error("the page does not say the series were thinned")
	}
}

// Every campaign of the cast maps to its display group: the paper's
// storms to the one storm group, any other name to none.
func TestGroupIndex(t *testing.T) {
	s := engine.DefaultScenario()
	s.Storms, s.Probe, s.Ticks = 3, true, 10
	r, err := engine.Run(s, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gi := groupIndex(r)
	for name, want := range map[string]int{
		"victim": 0, "adaptive-sci": 1, "naive-sci": 2, "storm": 3, "storm2": 3, "storm3": 3, "probe": 4, "backfill": 5,
	} {
		if got, ok := gi[name]; !ok || got != want {
			t.Errorf("group of %q = %d (%v), want %d", name, got, ok, want)
		}
	}
	for _, name := range []string{"stormy", "storm-2", "", "overbooked"} {
		if _, ok := gi[name]; ok {
			t.Errorf("%q has a display group", name)
		}
	}
}

func TestPalette(t *testing.T) {
	// The paper's cast keeps its colours; the probe is yellow; a second
	// group of one kind gets a shade of the kind's hue.
	want := []string{"#0072b2", "#009e73", "#e69f00", "#d55e00", "#f0e442", "#999999"}
	s := engine.DefaultScenario()
	s.Probe, s.Ticks = true, 10
	r, err := engine.Run(s, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for d, c := range GroupColors(r.Groups) {
		if got := Hex(c); got != want[d] {
			t.Errorf("%s is %s, want %s", r.Groups[d].Name, got, want[d])
		}
		seen[Hex(c)] = true
	}
	two := GroupColors([]engine.DisplayGroup{{Agent: engine.AgentStorm}, {Agent: engine.AgentStorm}, {Agent: engine.AgentStorm}})
	if two[0] == two[1] || two[1] == two[2] || two[0] == two[2] {
		t.Errorf("three storm groups share colours: %v", two)
	}
	if Hex(two[0]) != "#d55e00" {
		t.Errorf("the first storm group is %s", Hex(two[0]))
	}
	for p, c := range PathColors {
		if seen[Hex(c)] {
			t.Errorf("path %s shares a campaign's colour %s", policy.Path(p), Hex(c))
		}
	}
	if got := Hex(StormWindowShade); got != "#d55e001f" {
		t.Errorf("storm shade is %s", got)
	}
}

func TestAppendNumber(t *testing.T) {
	for _, c := range []struct {
		x    float64
		prec int
		want string
	}{
		{1.5, 2, "1.5"}, {2.25, 2, "2.25"}, {3, 2, "3"}, {0.04, 1, "0"}, {-0.04, 1, "0"},
		{12.345, 1, "12.3"}, {100, 0, "100"}, {1e12, 2, "1000000000000"},
		{math.NaN(), 1, "null"}, {math.Inf(1), 1, "null"},
	} {
		if got := string(appendNumber(nil, c.x, c.prec)); got != c.want {
			t.Errorf("appendNumber(%v, %d) = %q, want %q", c.x, c.prec, got, c.want)
		}
	}
}

// TestNarrativeNamesEachCampaignOnce: a cast of the user's own is listed
// as "name (agent)", one campaign per item, so that names and agent kinds
// do not run together ("interactive, victim, physics-sim, adaptive" read
// as four campaigns; issue 34 §11).
func TestNarrativeNamesEachCampaignOnce(t *testing.T) {
	s := engine.DefaultScenario()
	s.Ticks = 300
	victim, _ := engine.DefaultCampaign(engine.AgentVictim)
	victim.Name = "interactive"
	sci, _ := engine.DefaultCampaign(engine.AgentAdaptive)
	sci.Name = "physics-sim"
	storm, _ := engine.DefaultCampaign(engine.AgentStorm)
	storm.Name = "storm"
	s.Cast = []engine.Campaign{victim, sci, storm}
	r, err := engine.Run(s, engine.Options{Series: true})
	if err != nil {
		t.Fatal(err)
	}
	got := writeString(t, r)
	if want := "3</b> campaigns: interactive (victim); physics-sim (adaptive); storm. The storm window"; !strings.Contains(got, want) {
		i := strings.Index(got, "campaigns")
		t.Errorf("narrative lacks %q; it says %q", want, got[max(0, i-40):min(len(got), i+160)])
	}
}
