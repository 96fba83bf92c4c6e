package tracestudy

import (
	"fmt"

	"github.com/bursar-hpc/bursar/configs"

	"github.com/bursar-hpc/bursar/trace"
)

// Day is one day in seconds, the unit of windows, warm-ups and
// cool-downs.
const Day = 86400

// DefaultWarmup and DefaultCooldown are the parts of a window replayed but
// not measured (docs/studies.md §4.5, §6.16): one day each.
const (
	DefaultWarmup   = trace.DefaultWarmup
	DefaultCooldown = trace.DefaultCooldown
)

// Window is one replayed stretch of a log: the jobs submitted in
// [From, Until) are replayed (jobs submitted earlier and still running at
// From are not, §6.16); those submitted in [MeasureFrom, MeasureUntil) are
// measured, and the one-interval metrics (§4.2) are taken over that
// interval. Times are seconds after the log's start (SWF field 2).
type Window struct {
	Index                     int   `json:"index"`
	From                      int64 `json:"from"`
	Until                     int64 `json:"until"`
	MeasureFrom, MeasureUntil int64 `json:"-"`
	// LeadIn is the lead-in replayed, unmeasured, before From: the jobs
	// submitted in [From − LeadIn, From) are replayed too, so that the
	// window starts on a machine already running (docs/studies.md §4.5,
	// ChooseLeadIn); 0 none.
	LeadIn int64 `json:"-"`
}

// Days is the window's length in days.
func (w Window) Days() float64 { return float64(w.Until-w.From) / Day }

// Label names the window in run labels and tables: "w0 days 252–266".
// Windows count from 0 everywhere: labels, jobs/ folders, summary.json,
// runs.csv and warnings (issue 34 §10).
func (w Window) Label() string {
	return fmt.Sprintf("w%d days %s–%s", w.Index, fmtDay(w.From), fmtDay(w.Until))
}

func fmtDay(s int64) string {
	if s%Day == 0 {
		return fmt.Sprint(s / Day)
	}
	return fmt.Sprintf("%.2f", float64(s)/Day)
}

// Measure sets the measured interval: the window less its first warmup and
// its last cooldown seconds of submits. It is an error when nothing is
// left to measure.
func (w *Window) Measure(warmup, cooldown int64) error {
	iv, err := trace.MeasureInterval(w.From, w.Until, warmup, cooldown)
	if err != nil {
		return err
	}
	w.MeasureFrom, w.MeasureUntil = iv.From, iv.To
	return nil
}

// MaxDefaultWindows caps the default window count (docs/studies.md
// §5.1): enough for the exact signed-rank test to reach p = 1/2048 and
// for a Hodges–Lehmann interval of 95.8 % coverage, few enough to replay.
const MaxDefaultWindows = 12

// DefaultWindowCount is the default number of windows of d seconds on a
// log whose submits run from first to last: min(12, ⌊span ÷ d⌋), the most
// disjoint windows that fit, at most 12 (docs/studies.md §5.1).
func DefaultWindowCount(first, last, d int64) int {
	if d < 1 || last < first {
		return 0
	}
	return int(min(MaxDefaultWindows, (last-first)/d))
}

// WindowRule names how ws set the number of windows: "given" for N×D,
// the default rule for D alone.
func WindowRule(ws configs.WindowsSpec) string {
	if ws.N == 0 {
		return fmt.Sprintf("min(%d, ⌊span ÷ D⌋)", MaxDefaultWindows)
	}
	return "given"
}

// Windows are n disjoint windows of d seconds whose starts are spread
// evenly over [first, last − d] (docs/studies.md §6.16): start i is
// first + i·(last − d − first) ÷ (n − 1), rounded down to the second; one
// window starts at first. first and last are the log's first and last
// submit; n 0 is DefaultWindowCount. Every window weighs the same in
// every estimate. It is an error when the log is shorter than one window
// or the windows would overlap.
func Windows(first, last int64, n int, d, warmup, cooldown int64) ([]Window, error) {
	if n == 0 && d >= 1 {
		if n = DefaultWindowCount(first, last, d); n == 0 {
			n = 1 // shorter than one window: the error below says so
		}
	}
	if n < 1 || d < 1 {
		return nil, fmt.Errorf("%d windows of %d s: want at least one window of at least a second", n, d)
	}
	span := last - d - first
	if span < 0 {
		return nil, fmt.Errorf("the log's submits span %s days (%d to %d s): shorter than one window of %s days",
			fmtDay(last-first), first, last, fmtDay(d))
	}
	ws := make([]Window, n)
	for i := range ws {
		start := first
		if n > 1 {
			start = first + int64(float64(span)*float64(i)/float64(n-1))
		}
		ws[i] = Window{Index: i, From: start, Until: start + d}
		if i > 0 && ws[i].From < ws[i-1].Until {
			return nil, fmt.Errorf("%d windows of %s days do not fit disjoint in the log's %s days of submits (%d to %d s): at most %d",
				n, fmtDay(d), fmtDay(last-first), first, last, 1+span/d)
		}
		if err := ws[i].Measure(warmup, cooldown); err != nil {
			return nil, err
		}
	}
	return ws, nil
}

// LayWindows are the windows of a study on the whole log w read with opt
// (--windows N×D: n of d seconds, n 0 by the default rule): spread over
// its submits from its first submit plus the lookback (opt.Lookback, else
// trace.DefaultLookback), so that every window has the lookback's record
// before it (docs/studies.md §1, §5.1). The offset is the same under
// every shares rule, so that a study under an oracle's shares replays the
// same windows as under the default. On a log whose submits after the
// lookback cannot hold the windows (the 28-day excerpt) they are spread
// from its first submit instead, and the study warns of each window
// whose lookback is short (ShortLookback).
func LayWindows(w *trace.Workload, opt trace.Options, n int, d, warmup, cooldown int64) ([]Window, error) {
	first, last := submitRange(w)
	off := opt.Lookback
	if off <= 0 {
		off = trace.DefaultLookback
	}
	if ws, err := Windows(first+off, last, n, d, warmup, cooldown); err == nil {
		return ws, nil
	}
	return Windows(first, last, n, d, warmup, cooldown)
}

// ShortLookback says, for each window whose record before it is shorter
// than the lookback its shares read (the whole log, a window near the
// log's start), how much it had: a study warns of each (the shares are
// then the record's there is, every group's the same where there is
// none).
func ShortLookback(opt trace.Options, ws []Window, loads []*trace.Workload) []string {
	span := opt.LookbackSpan()
	if span == 0 {
		return nil
	}
	var out []string
	for k, win := range ws {
		ld := loads[k]
		have := max(win.From-ld.LookbackFrom, 0)
		if have >= span {
			continue
		}
		rule := "shares from those jobs"
		if ld.LookbackJobs == 0 {
			rule = "every group the same share, Bursar's buckets empty"
		}
		out = append(out, fmt.Sprintf("window %d: the log records %s days of the %s days of lookback before it (%d jobs): %s",
			win.Index, fmtDay(have), fmtDay(span), ld.LookbackJobs, rule))
	}
	return out
}

// WholeWindow is the single window of a study without --windows: from
// opt.From (or the first submit) to opt.Until (or just after the last
// submit), measured as Measure says.
func WholeWindow(w *trace.Workload, opt trace.Options, warmup, cooldown int64) (Window, error) {
	from, until := w.SubmitSpan()
	win := Window{From: from, Until: until}
	if opt.From > 0 {
		win.From = opt.From
	}
	if opt.Until > 0 {
		win.Until = opt.Until
	}
	return win, win.Measure(warmup, cooldown)
}

// submitRange is the first and last submit of w's jobs.
func submitRange(w *trace.Workload) (first, last int64) {
	if len(w.Jobs) == 0 {
		return 0, 0
	}
	return w.Jobs[0].Submit, w.Jobs[len(w.Jobs)-1].Submit
}

// LoadWindows reads one workload per window from the log at path ("" the
// embedded excerpt), each with opt's mapping and the window's submits,
// its lead-in's included.
func LoadWindows(path string, opt trace.Options, ws []Window) ([]*trace.Workload, error) {
	out := make([]*trace.Workload, len(ws))
	for i, win := range ws {
		o := opt
		o.From, o.Until = win.From-win.LeadIn, win.Until
		if win.LeadIn > 0 {
			// The lookback ends at the window's start, the lead-in's jobs
			// in it: what the site knows at T.
			o.LookbackBefore = win.From
		}
		w, err := Load(path, o)
		if err != nil {
			return nil, fmt.Errorf("window %s: %w", win.Label(), err)
		}
		out[i] = w
	}
	return out, nil
}

// LoadRange reads the log with opt (a window in opt.From, opt.Until);
// when that fails and a window was asked for, the error says which
// submits the log has, in seconds and days after its start, so that a
// window on the wrong clock (the excerpt keeps the full log's times: it
// starts at 21,772,800 s, day 252) is easy to fix.
func LoadRange(path string, opt trace.Options) (*trace.Workload, error) {
	w, err := Load(path, opt)
	if err == nil || (opt.From == 0 && opt.Until == 0) {
		return w, err
	}
	whole := opt
	whole.From, whole.Until = 0, 0
	all, err2 := Load(path, whole)
	if err2 != nil {
		return nil, err
	}
	first, last := submitRange(all)
	return nil, fmt.Errorf("window [%d, %d) s: %v; the log's replayable submits run from %d s (day %s) to %d s (day %s)",
		opt.From, opt.Until, err, first, fmtDay(first), last, fmtDay(last))
}
