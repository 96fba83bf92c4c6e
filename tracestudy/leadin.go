package tracestudy

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/trace"
)

// A machine already running at a window's start (docs/studies.md §4.5):
// every policy replays, unmeasured, a lead-in [T − L, T) of the log
// before a window that starts at T, so that the jobs running and queued
// at T are there as they were, charged to their campaigns like any job
// of the replay. L is the shortest whole number of days, at most
// MaxLeadInDays, for which fifo's mean wait over each window's measured
// jobs comes close to the same jobs' mean wait in a replay of the whole
// log (CheckLeadIn): on the median window within max(5 %, 300 s), on
// every window within 15 %.

// MaxLeadInDays is the longest lead-in tried: the lookback
// (trace.DefaultLookback), so that every window of a study, laid out
// after the log's first lookback (LayWindows), has its lead-in.
const MaxLeadInDays = trace.DefaultLookback / Day

// The lead-in rule's tolerances (docs/studies.md §4.5).
const (
	LeadInMedianFrac = 0.05  // on the median window: within 5 % …
	LeadInMedianAbs  = 300.0 // … or 300 s, whichever is larger
	LeadInEveryFrac  = 0.15  // on every window: within 15 %
)

// LeadInWindow is one window's fifo mean wait over its measured jobs, in
// the whole log's replay and in the window's replay with the lead-in.
type LeadInWindow struct {
	Window          int
	Jobs            int
	WholeLog, Study float64
}

// LeadInCheck is the rule checked at one lead-in (seconds): each
// window's waits; Median, the median over windows of |Δ| ÷ max(5 % of
// the whole log's wait, 300 s), passes at most 1; Worst, the largest
// |Δ| ÷ the whole log's wait, passes at most 0.15.
type LeadInCheck struct {
	LeadIn  int64
	Windows []LeadInWindow
	Median  float64
	Worst   float64
	Pass    bool
}

// CheckLeadIn replays fifo (the exact FCFS + EASY) on each window of ws
// with a lead-in of lead seconds, from the jobs of w (the whole log, as
// the study reads it), and checks the rule against whole, the whole
// log's fifo start of each job by its number (WholeLogStarts).
func CheckLeadIn(w *trace.Workload, whole map[int64]int64, ws []Window, lead int64) LeadInCheck {
	c := LeadInCheck{LeadIn: lead}
	med := make([]float64, 0, len(ws))
	bySubmit := func(j trace.Job, t int64) int { return cmp.Compare(j.Submit, t) }
	for _, win := range ws {
		lo, _ := slices.BinarySearchFunc(w.Jobs, win.From-lead, bySubmit)
		hi, _ := slices.BinarySearchFunc(w.Jobs, win.Until, bySubmit)
		sub := &trace.Workload{Pool: w.Pool, Jobs: w.Jobs[lo:hi]}
		start := trace.ReplayEASY(sub)
		lw := LeadInWindow{Window: win.Index}
		for i, j := range sub.Jobs {
			if j.Submit < win.MeasureFrom || j.Submit >= win.MeasureUntil {
				continue
			}
			lw.Jobs++
			lw.Study += float64(start[i] - j.Submit)
			lw.WholeLog += float64(whole[j.Number] - j.Submit)
		}
		if lw.Jobs > 0 {
			lw.Study /= float64(lw.Jobs)
			lw.WholeLog /= float64(lw.Jobs)
		}
		d := math.Abs(lw.Study - lw.WholeLog)
		med = append(med, d/math.Max(LeadInMedianFrac*lw.WholeLog, LeadInMedianAbs))
		switch {
		case lw.WholeLog > 0:
			c.Worst = math.Max(c.Worst, d/lw.WholeLog)
		case d > 0:
			c.Worst = math.Inf(1)
		}
		c.Windows = append(c.Windows, lw)
	}
	c.Median = median(med)
	c.Pass = c.Median <= 1 && c.Worst <= LeadInEveryFrac
	return c
}

// WholeLogStarts is fifo's start of every job of w (the whole log) by
// its number.
func WholeLogStarts(w *trace.Workload) map[int64]int64 {
	start := trace.ReplayEASY(w)
	m := make(map[int64]int64, len(start))
	for i, j := range w.Jobs {
		m[j.Number] = start[i]
	}
	return m
}

// ChooseLeadIn is the lead-in rule on ws, windows of the whole log w:
// the check at the shortest whole number of days, 0 to MaxLeadInDays,
// that passes, and every check made up to it. When none passes it
// returns the check at MaxLeadInDays and an error that says so.
func ChooseLeadIn(w *trace.Workload, ws []Window) (LeadInCheck, []LeadInCheck, error) {
	whole := WholeLogStarts(w)
	var tried []LeadInCheck
	for d := int64(0); d <= MaxLeadInDays; d++ {
		c := CheckLeadIn(w, whole, ws, d*Day)
		tried = append(tried, c)
		if c.Pass {
			return c, tried, nil
		}
	}
	last := tried[len(tried)-1]
	return last, tried, fmt.Errorf("no lead-in up to %d days brings fifo's mean wait over the windows' measured jobs within max(5 %%, 300 s) of the whole log's on the median window and 15 %% on every window (at %d days: median %.2f of the tolerance, worst %.0f %%)",
		MaxLeadInDays, MaxLeadInDays, last.Median, 100*last.Worst)
}

// median is the median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// LeadIn is a study's lead-in: its length, how it was set, and the rule
// checked at it (and at every shorter whole day when it was chosen).
type LeadIn struct {
	Seconds int64
	// Rule is "shortest passing" (chosen by the rule), "given" (the
	// `lead_in` knob) or "none passes" (the longest tried, with a
	// warning).
	Rule  string
	Check LeadInCheck
	Tried int
}

// The `lead_in` knob's automatic value (trace's default) and its value
// for no lead-in (the other studies' default).
const (
	LeadInAuto = "auto"
	LeadInNone = "none"
)

// LeadInOff is whether the `lead_in` knob spec replays no lead-in: ""
// (not set, where the study's default is none), none, or a zero
// duration.
func LeadInOff(spec string) bool {
	if spec == "" || spec == LeadInNone {
		return true
	}
	d, err := configs.ParseDuration(spec)
	return err == nil && d == 0
}

// PickLeadIn is the lead-in of a study whose windows ws are laid on the
// whole log w (the `lead_in` knob spec; a study without it replays
// none): LeadInAuto chooses it by the rule (ChooseLeadIn); a duration
// sets it, and the rule is checked there for the record. A lead-in that
// no length satisfies is the longest tried, its Rule "none passes" (the
// study warns).
func PickLeadIn(w *trace.Workload, ws []Window, spec string) (LeadIn, error) {
	if spec == LeadInAuto {
		c, tried, err := ChooseLeadIn(w, ws)
		rule := "shortest passing"
		if err != nil {
			rule = "none passes"
		}
		return LeadIn{Seconds: c.LeadIn, Rule: rule, Check: c, Tried: len(tried)}, nil
	}
	d, err := configs.ParseDuration(spec)
	if err != nil {
		return LeadIn{}, err
	}
	if d > MaxLeadInDays*Day {
		return LeadIn{}, fmt.Errorf("%q: at most %dd, the lookback the windows are laid after", spec, MaxLeadInDays)
	}
	return LeadIn{Seconds: d, Rule: "given", Check: CheckLeadIn(w, WholeLogStarts(w), ws, d), Tried: 1}, nil
}

// Apply gives every window of ws the lead-in.
func (l LeadIn) Apply(ws []Window) {
	for i := range ws {
		ws[i].LeadIn = l.Seconds
	}
}

// Warning is what a study prints of the lead-in: where no length up to
// the lookback satisfies the rule, or a given one does not; "" else.
func (l LeadIn) Warning() string {
	if l.Check.Pass {
		return ""
	}
	return fmt.Sprintf("lead-in of %s days (%s): fifo's mean wait over the windows' measured jobs is not within max(5 %%, 300 s) of the whole log's on the median window (%.2f of it) and 15 %% on every window (worst %.0f %%)",
		fmtDay(l.Seconds), l.Rule, l.Check.Median, 100*l.Check.Worst)
}

// LeadInMap is summary.json's lead_in block (nil: none, a study of one
// window): the days, the rule that set them, the check there (median
// and worst as above, pass) and each window's fifo mean wait over its
// measured jobs in the whole log's replay and in the study's.
func LeadInMap(l *LeadIn) map[string]any {
	if l == nil {
		return nil
	}
	ws := make([]any, len(l.Check.Windows))
	for i, x := range l.Check.Windows {
		ws[i] = map[string]any{"window": x.Window, "jobs": x.Jobs, "whole_log_mean_wait": num(x.WholeLog), "study_mean_wait": num(x.Study)}
	}
	return map[string]any{"days": float64(l.Seconds) / Day, "rule": l.Rule, "tried": l.Tried, "median": num(l.Check.Median),
		"worst": num(l.Check.Worst), "pass": l.Check.Pass, "windows": ws}
}
