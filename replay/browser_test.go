package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/internal/atomicfile"
)

// The viewport of a common laptop screen; the page must tell its story there.
const viewW, viewH = 1440, 900

// browser is one headless Debian chromium with a fresh profile, and what it
// reported: console errors, uncaught exceptions, error log entries, and every
// request the page made.
type browser struct {
	ctx      context.Context
	mu       sync.Mutex
	problems []string
	requests []string
}

func (b *browser) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var parts []string
			for _, a := range ev.Args {
				var str string
				switch {
				case json.Unmarshal(a.Value, &str) == nil:
					parts = append(parts, str)
				case a.Value != nil:
					parts = append(parts, string(a.Value))
				default:
					parts = append(parts, a.Description)
				}
			}
			b.problems = append(b.problems, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(parts, " ")))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		b.problems = append(b.problems, fmt.Sprintf("exception at %s:%d:%d: %s", d.URL, d.LineNumber+1, d.ColumnNumber+1, msg))
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError {
			b.problems = append(b.problems, fmt.Sprintf("log error (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
		}
	case *network.EventRequestWillBeSent:
		b.requests = append(b.requests, ev.Request.URL)
	}
}

func (b *browser) check(t *testing.T, page string) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		t.Errorf("%s: %s", page, p)
	}
	for _, u := range b.requests {
		if !strings.HasPrefix(u, "file://") {
			t.Errorf("%s fetched %s; the report must not touch the network", page, u)
		}
	}
	b.problems, b.requests = nil, nil
}

// skipBrowser skips a browser test, or fails it where BURSAR_REQUIRE_BROWSER
// is set (CI sets it after installing chromium, so a broken install cannot
// pass as a skip).
func skipBrowser(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("BURSAR_REQUIRE_BROWSER") != "" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// startBrowser starts chromium headless. It skips the test only when
// chromium cannot be started at all (not installed, or it dies at once);
// anything that goes wrong after that is a failure.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		skipBrowser(t, "skipping the browser test: Debian's chromium is not installed (%v); .ci/run installs it", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), // the test machine runs as root
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	b := &browser{}
	// WithListener sees the tab from its first message, so an error thrown
	// while the page loads is caught too.
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithListener(b.listen))
	t.Cleanup(bcancel)
	start := time.Now()
	if err := chromedp.Do(bctx); err != nil {
		skipBrowser(t, "skipping the browser test: chromium (%s) cannot be started: %v", path, err)
	}
	t.Logf("chromium started in %v", time.Since(start).Round(time.Millisecond))
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(viewW, viewH)); err != nil {
		t.Fatal(err)
	}
	b.ctx = bctx
	return b
}

func (b *browser) open(t *testing.T, path string) {
	t.Helper()
	u := url.URL{Scheme: "file", Path: path}
	start := time.Now()
	if err := chromedp.Do(b.ctx,
		chromedp.Navigate(u.String()),
		chromedp.Poll[chromedp.Void]("window.bursarReplay && window.bursarReplay.ready", chromedp.WithPollingTimeout(20*time.Second)),
	); err != nil {
		t.Fatalf("open %s: %v", u.String(), err)
	}
	t.Logf("%s loaded and drawn in %v", filepath.Base(path), time.Since(start).Round(time.Millisecond))
}

func eval[T any](t *testing.T, b *browser, js string) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

func do(t *testing.T, b *browser, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// cursor is the replay's position as the page reports it.
type cursor struct {
	I       int     `json:"i"`
	T       int     `json:"t"`
	Playing bool    `json:"playing"`
	X       float64 `json:"x"`
	Clock   string  `json:"clock"`
	Slider  string  `json:"slider"`
	Held    string  `json:"held"`
}

const cursorJS = `(() => { const r = window.bursarReplay; return {
  i: r.index(), t: r.time(), playing: r.playing(), x: r.cursorX(),
  clock: document.getElementById('clock').textContent,
  slider: document.getElementById('scrub').value,
  held: document.getElementById('ro-held-3').textContent }; })()`

// canvasJS measures every chart canvas: its size, how many pixels are not
// the white background, how many distinct colours it has, and a checksum.
const canvasJS = `Array.from(document.querySelectorAll('canvas.chart')).map(c => {
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let ink = 0, sum = 0; const colours = new Set();
  for (let i = 0; i < d.length; i += 4) {
    if (d[i] !== 255 || d[i+1] !== 255 || d[i+2] !== 255) ink++;
    if (colours.size < 64) colours.add((d[i] << 16) | (d[i+1] << 8) | d[i+2]);
    sum = (sum * 31 + d[i] + 7 * d[i+1] + 13 * d[i+2]) % 1000000007;
  }
  return { id: c.id, w: c.width, h: c.height, ink: ink / (c.width * c.height), colours: colours.size, sum: sum };
})`

type canvasStat struct {
	ID      string  `json:"id"`
	W       int     `json:"w"`
	H       int     `json:"h"`
	Ink     float64 `json:"ink"`
	Colours int     `json:"colours"`
	Sum     int64   `json:"sum"`
}

func TestReportInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the browser test in -short mode")
	}
	r := mustDefault(t)
	dir := t.TempDir()
	report := filepath.Join(dir, "report.html")
	if err := atomicfile.WriteFunc(report, func(w io.Writer) error { return Write(w, r) }); err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t)
	b.open(t, report)

	// Every chart is drawn: not blank, and with more than a couple of
	// colours (axes alone would be grey on white).
	stats := eval[[]canvasStat](t, b, canvasJS)
	if len(stats) != 5 {
		t.Fatalf("%d chart canvases, want 5", len(stats))
	}
	for _, s := range stats {
		t.Logf("%s: %d×%d px, %.1f%% ink, %d colours", s.ID, s.W, s.H, 100*s.Ink, s.Colours)
		if s.W < 300 || s.H < 60 || s.Ink < 0.02 || s.Colours < 4 {
			t.Errorf("chart %s looks blank: %+v", s.ID, s)
		}
	}
	c0 := eval[cursor](t, b, cursorJS)
	if c0.I != 0 || c0.Playing || c0.Clock != clock(r.Series.T[0]) {
		t.Fatalf("page opened at %+v, want the first sample, paused", c0)
	}

	// Play advances the clock; Pause stops it.
	do(t, b, chromedp.Click(chromedp.ID("play")), chromedp.Sleep(700*time.Millisecond))
	c1 := eval[cursor](t, b, cursorJS)
	if !c1.Playing || c1.T <= c0.T || c1.Clock == c0.Clock || c1.X <= c0.X {
		t.Fatalf("Play did not advance the clock: before %+v, after %+v", c0, c1)
	}
	// The button has the focus now: Space presses it, once.
	do(t, b, chromedp.KeyEvent(" "))
	c2 := eval[cursor](t, b, cursorJS)
	do(t, b, chromedp.Sleep(300*time.Millisecond))
	if c3 := eval[cursor](t, b, cursorJS); c2.Playing || c3 != c2 {
		t.Fatalf("Space on the Play button did not pause, or the clock ran on: %+v then %+v", c2, c3)
	}

	// The keyboard, with the focus on the page: Space plays and pauses,
	// the arrows step one sample (ten with Shift), End and Home jump.
	blur := `document.activeElement && document.activeElement.blur(), true`
	eval[bool](t, b, blur)
	do(t, b, chromedp.KeyEvent(" "), chromedp.Sleep(400*time.Millisecond))
	c4 := eval[cursor](t, b, cursorJS)
	if !c4.Playing || c4.T <= c2.T {
		t.Fatalf("Space did not play: %+v then %+v", c2, c4)
	}
	do(t, b, chromedp.KeyEvent(" "))
	c5 := eval[cursor](t, b, cursorJS)
	if c5.Playing {
		t.Fatalf("Space did not pause: %+v", c5)
	}
	do(t, b, chromedp.KeyEvent(kb.ArrowRight))
	if c := eval[cursor](t, b, cursorJS); c.I != c5.I+1 {
		t.Fatalf("ArrowRight moved the cursor from %d to %d, want %d", c5.I, c.I, c5.I+1)
	}
	do(t, b, chromedp.KeyEvent(kb.ArrowRight, chromedp.KeyModifiers(chromedp.ModifierShift)))
	if c := eval[cursor](t, b, cursorJS); c.I != c5.I+11 {
		t.Fatalf("Shift+ArrowRight moved the cursor to %d, want %d", c.I, c5.I+11)
	}
	do(t, b, chromedp.KeyEvent(kb.ArrowLeft))
	if c := eval[cursor](t, b, cursorJS); c.I != c5.I+10 {
		t.Fatalf("ArrowLeft moved the cursor to %d, want %d", c.I, c5.I+10)
	}
	do(t, b, chromedp.KeyEvent(kb.End))
	if c := eval[cursor](t, b, cursorJS); c.I != r.Series.Len()-1 || c.Clock != clock(r.Series.T[r.Series.Len()-1]) {
		t.Fatalf("End moved the cursor to %+v, want the last sample", c)
	}
	do(t, b, chromedp.KeyEvent(kb.Home))
	if c := eval[cursor](t, b, cursorJS); c.I != 0 {
		t.Fatalf("Home moved the cursor to %+v, want the first sample", c)
	}

	// The slider moves the cursor: by keyboard when it has the focus, and by
	// an input event as a drag gives. The charts are redrawn where it went.
	do(t, b, chromedp.Focus(chromedp.ID("scrub")), chromedp.KeyEvent(kb.ArrowRight))
	if c := eval[cursor](t, b, cursorJS); c.I != 1 || c.Slider != "1" {
		t.Fatalf("ArrowRight on the slider gave %+v, want sample 1", c)
	}
	before := eval[[]canvasStat](t, b, canvasJS)
	mid := 0
	// Into the storm window, past the moment the storm's bucket ran dry,
	// so the screenshot shows the surge and the push-back behind the cursor.
	for mid < r.Series.Len()-1 && r.Series.T[mid] < r.Scenario.StormStart+(r.Scenario.StormEnd-r.Scenario.StormStart)*6/10 {
		mid++
	}
	c6 := eval[cursor](t, b, fmt.Sprintf(`(() => { const s = document.getElementById('scrub');
	  s.value = %d; s.dispatchEvent(new Event('input', {bubbles: true})); return %s; })()`, mid, cursorJS))
	if c6.I != mid || c6.T != r.Series.T[mid] || c6.Clock != clock(r.Series.T[mid]) || c6.X <= c0.X {
		t.Fatalf("the slider moved the cursor to %+v, want sample %d at t = %d s", c6, mid, r.Series.T[mid])
	}
	if want := itoa(r.Series.Held[r.GroupOf(engine.AgentStorm)][mid]); c6.Held != want {
		t.Errorf("readout shows the storm holding %s GPUs at the cursor, the run says %s", c6.Held, want)
	}
	after := eval[[]canvasStat](t, b, canvasJS)
	for i := range after {
		if after[i].Sum == before[i].Sum {
			t.Errorf("chart %s did not change when the slider moved", after[i].ID)
		}
	}
	if !eval[bool](t, b, `!document.getElementById('phase').hidden`) {
		t.Error("the clock does not say the cursor is in the storm window")
	}
	b.check(t, "report.html")

	shot, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	saveShot(t, filepath.Join(dir, "replay.png"), shot)
	// A copy outside the test's folder, for a person to look at.
	if d := os.Getenv("BURSAR_SHOT_DIR"); d != "" {
		saveShot(t, filepath.Join(d, "replay-shot.png"), shot)
	}

	// The smaller laptop screen: the charts shrink with the window and are
	// redrawn, still without an error.
	do(t, b, chromedp.EmulateViewport(1366, 768), chromedp.Sleep(300*time.Millisecond))
	small := eval[[]canvasStat](t, b, canvasJS)
	for _, s := range small {
		if s.W >= stats[0].W || s.Ink < 0.02 {
			t.Errorf("at 1366×768, chart %s was not redrawn to fit: %+v", s.ID, s)
		}
	}
	b.check(t, "report.html at 1366×768")
	shot, err = chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	saveShot(t, filepath.Join(dir, "replay-1366.png"), shot)
	if d := os.Getenv("BURSAR_SHOT_DIR"); d != "" {
		saveShot(t, filepath.Join(d, "replay-shot-1366.png"), shot)
	}
}

// Other shapes of run must load without an error too: one with no samples
// and no storm, and one with the probe (a campaign that is not displayed)
// and three storms, thinned because it is long.
func TestOtherRunsInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the browser test in -short mode")
	}
	empty := engine.DefaultScenario()
	empty.Ticks, empty.SampleEvery, empty.Storms = 4, 5, 0
	busy := engine.DefaultScenario()
	busy.Probe, busy.Storms, busy.SampleEvery = true, 3, 1
	dir := t.TempDir()
	var pages []string
	// Casts beyond the paper's: the example file (three science campaigns,
	// two storms in their own windows, the probe) and one without a victim.
	cast, err := configs.LoadScenario(filepath.Join("..", "configs", "scenarios", "three-science-two-storms.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	noVictim := cast
	noVictim.Cast = slices.DeleteFunc(slices.Clone(cast.Cast), func(c engine.Campaign) bool { return c.Agent == engine.AgentVictim })
	// And the paper's workload under baselines (docs/policies.md).
	quota, priority := engine.DefaultScenario(), engine.DefaultScenario()
	quota.Policy, priority.Policy = "quota", "priority"
	for name, s := range map[string]engine.Scenario{"empty.html": empty, "probe-3-storms.html": busy, "cast.html": cast, "no-victim.html": noVictim,
		"quota.html": quota, "priority.html": priority} {
		r, err := engine.Run(s, engine.Options{Series: true})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := atomicfile.WriteFunc(path, func(w io.Writer) error { return Write(w, r) }); err != nil {
			t.Fatal(err)
		}
		pages = append(pages, path)
	}
	slices.Sort(pages)
	b := startBrowser(t)
	for _, path := range pages {
		b.open(t, path)
		do(t, b, chromedp.KeyEvent(" "), chromedp.Sleep(200*time.Millisecond), chromedp.KeyEvent(" "), chromedp.KeyEvent(kb.ArrowRight))
		c := eval[cursor](t, b, cursorJS)
		for _, s := range eval[[]canvasStat](t, b, canvasJS) {
			if s.Ink < 0.01 {
				t.Errorf("%s: chart %s has not even its axes", filepath.Base(path), s.ID)
			}
		}
		if filepath.Base(path) == "empty.html" {
			if c.I != -1 || c.Playing || c.Clock != "0:00:00" {
				t.Errorf("empty run: cursor %+v", c)
			}
		} else if c.I < 1 || c.Playing {
			t.Errorf("%s: cursor %+v after play, pause and a step", filepath.Base(path), c)
		}
		b.check(t, filepath.Base(path))
	}
}

func saveShot(t *testing.T, path string, png []byte) {
	t.Helper()
	if err := atomicfile.Write(path, png); err != nil {
		t.Error(err)
		return
	}
	t.Logf("screenshot: %s", path)
}

// The harness itself must see what it is there to catch: a console error,
// an uncaught exception and a request that leaves the machine. Otherwise
// the report test would pass on a broken page.
func TestBrowserHarnessCatchesErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the browser test in -short mode")
	}
	p := build(mustDefault(t))
	p.JS += `;console.error('planted error');
setTimeout(function () { null.planted; }, 0);
fetch('http://127.0.0.1:9/planted').catch(function () {});`
	path := filepath.Join(t.TempDir(), "broken.html")
	if err := atomicfile.WriteFunc(path, func(w io.Writer) error { return render(w, p) }); err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t)
	b.open(t, path)
	do(t, b, chromedp.Sleep(300*time.Millisecond))
	b.mu.Lock()
	defer b.mu.Unlock()
	all := strings.Join(b.problems, "\n")
	for _, want := range []string{"console.error: planted error", "exception", "planted"} {
		if !strings.Contains(all, want) {
			t.Errorf("the harness missed %q; it saw:\n%s", want, all)
		}
	}
	if !slices.ContainsFunc(b.requests, func(u string) bool { return strings.HasPrefix(u, "http://127.0.0.1:9/") }) {
		t.Errorf("the harness missed the request to the network; it saw %q", b.requests)
	}
}
