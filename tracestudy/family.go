package tracestudy

import (
	"math"

	"github.com/bursar-hpc/bursar/internal/stats"
)

// Contrast is one comparison of a spec with a reference over a study's
// windows: per window, Policy's value of Metric against Versus's (fifo
// when Versus is "") on the same window, as log(policy ÷ versus) when
// Ratio (waits, whose spread grows with their size) or as policy −
// versus otherwise (Paired). Policy and Versus are spec labels
// (Spec.Label): a policy's name in trace, a cell such as "budget W=7d
// m=3600s zero" in budget-knobs.
type Contrast struct {
	Policy, Metric string
	Ratio          bool
	// Finding is the README finding the contrast tests, in a few words.
	Finding string
	// Versus is the reference's label; "" is fifo.
	Versus string
}

// Against is the label of the contrast's reference.
func (c Contrast) Against() string {
	if c.Versus == "" {
		return "fifo"
	}
	return c.Versus
}

// Paired is one window's statistic of a contrast: log(x ÷ y) when ratio
// (NaN unless both are above 0: a window where either wait is 0 gives no
// ratio, docs/studies.md §5.1), else x − y.
func Paired(x, y float64, ratio bool) float64 {
	if !ratio {
		return x - y
	}
	if x <= 0 || y <= 0 {
		return math.NaN()
	}
	return math.Log(x / y)
}

// PrimaryFamily is the trace study's primary family of contrasts
// (docs/studies.md §5.1): the README's headline findings on the trace
// windows, fixed before the windows were rerun. Each is tested by the
// exact Wilcoxon signed-rank test over the windows, Holm's adjustment
// across the family; every other comparison a study prints is
// descriptive. At most ten, so that Holm's adjustment leaves power.
//
// The lost-work contrast names quota-fair: when quota took Kueue's
// defaults (issue 30 item 3, no preemption across queues) the rule the
// finding was about, fair-sharing preemption, kept its name there; quota
// at Kueue's defaults loses no work by construction.
var PrimaryFamily = []Contrast{
	{Policy: "fairshare", Metric: "mean_wait", Ratio: true, Finding: "fairshare waits no longer than fifo"},
	{Policy: "budget", Metric: "mean_wait", Ratio: true, Finding: "budget waits no longer than fifo"},
	{Policy: "quota", Metric: "mean_wait", Ratio: true, Finding: "quota waits longer than fifo"},
	{Policy: "quota-fair", Metric: "lost_utilization", Finding: "quota-fair's preemptions throw work away"},
	{Policy: "static", Metric: "denied", Finding: "static partitions refuse jobs"},
	{Policy: "static", Metric: "idle_while_waiting", Finding: "static partitions idle while jobs wait"},
	{Policy: "bursar", Metric: "mean_wait", Ratio: true, Finding: "Bursar's jobs wait longer than fifo's"},
	{Policy: "bursar", Metric: "idle_while_waiting", Finding: "Bursar leaves less of the pool idle while jobs wait"},
	{Policy: "fairshare", Metric: "fair_start_late", Finding: "fairshare is late more often than fifo"},
	{Policy: "budget", Metric: "fair_start_late", Finding: "budget is late more often than fifo"},
}

// bkCell is the label of budget-knobs' cell W days, m seconds, restart
// (Spec.Label).
func bkCell(w, m int, restart string) string {
	return Spec{Policy: "budget", WindowDays: w, MinRuntime: m, Restart: restart}.Label()
}

// BudgetKnobsFamily is budget-knobs' primary family (docs/studies.md
// §5.1): the README's headline findings on the budget policy's knobs,
// fixed from the README's findings of the eight-window run before the
// windows were rerun by rule. Each compares two cells of the grid, W in
// days, m in seconds, at the default W = 7 d or m = 1 h where the other
// knob moves. The claims that a knob "hardly matters" are in it too: the
// test cannot show that, but the Hodges–Lehmann interval bounds how much
// it can matter.
var BudgetKnobsFamily = []Contrast{
	{Policy: bkCell(7, 3600, "zero"), Versus: bkCell(7, 3600, "checkpoint:3600"), Metric: "mean_wait", Ratio: true,
		Finding: "jobs that restart from zero wait longer than jobs that checkpoint"},
	{Policy: bkCell(7, 14400, "zero"), Versus: bkCell(7, 0, "zero"), Metric: "mean_wait", Ratio: true,
		Finding: "without checkpoints a 4 h minimum runtime lengthens waits"},
	{Policy: bkCell(7, 3600, "zero"), Versus: bkCell(7, 0, "zero"), Metric: "lost_utilization",
		Finding: "without checkpoints a 1 h minimum runtime throws more work away"},
	{Policy: bkCell(7, 14400, "checkpoint:3600"), Versus: bkCell(7, 0, "checkpoint:3600"), Metric: "preemptions",
		Finding: "a 4 h minimum runtime cuts preemptions"},
	{Policy: bkCell(7, 14400, "checkpoint:3600"), Versus: bkCell(7, 0, "checkpoint:3600"), Metric: "mean_wait", Ratio: true,
		Finding: "with hourly checkpoints m hardly moves waits"},
	{Policy: bkCell(14, 3600, "checkpoint:3600"), Versus: bkCell(1, 3600, "checkpoint:3600"), Metric: "mean_wait", Ratio: true,
		Finding: "with hourly checkpoints W hardly moves waits"},
	{Policy: bkCell(14, 3600, "checkpoint:3600"), Versus: bkCell(1, 3600, "checkpoint:3600"), Metric: "share_jain",
		Finding: "with hourly checkpoints W hardly moves fairness"},
}

// FamilyOf is the primary family of a trace study's experiment: trace's
// PrimaryFamily, budget-knobs' BudgetKnobsFamily.
func FamilyOf(experiment string) []Contrast {
	if experiment == "budget-knobs" {
		return BudgetKnobsFamily
	}
	return PrimaryFamily
}

// Tested is one contrast of a family over a study's windows.
type Tested struct {
	Contrast
	// Values are the per-window statistics (NaN where a window has no
	// value, or a ratio with a zero); Converged counts the windows in
	// which both runs converged.
	Values    []float64
	Converged int
	// Test is the exact signed-rank test of Values (Pratt's zeros), Shift
	// their Hodges–Lehmann estimate and interval, PHolm Test.P adjusted
	// by Holm across the family.
	Test  stats.SignedRank
	Shift stats.Shift
	PHolm float64
}

// TestedFamily tests each contrast of fam whose spec and reference st
// ran (by their labels), window by window, and adjusts their p-values by
// Holm's method across those tested; nil when st has fewer than two
// windows or runs none of them.
func TestedFamily(st *Study, rs []Result, fam []Contrast) []Tested {
	nw := len(st.Windows)
	if nw < 2 {
		return nil
	}
	var out []Tested
	for _, c := range fam {
		s, ref := specByLabel(st.Specs, c.Policy), specByLabel(st.Specs, c.Against())
		m := MetricByKey(c.Metric)
		if s < 0 || ref < 0 || m == nil {
			continue
		}
		t := Tested{Contrast: c, Values: make([]float64, nw)}
		for k := range nw {
			a, b := &rs[s*nw+k], &rs[ref*nw+k]
			t.Values[k] = Paired(m.Get(a), m.Get(b), c.Ratio)
			if a.Summary.Converged && b.Summary.Converged {
				t.Converged++
			}
		}
		t.Test = stats.SignedRankTest(t.Values)
		t.Shift = stats.HodgesLehmann(t.Values)
		out = append(out, t)
	}
	ps := make([]float64, len(out))
	for i := range out {
		ps[i] = out[i].Test.P
	}
	for i, p := range stats.Holm(ps) {
		out[i].PHolm = p
	}
	return out
}

// specByLabel is the index of the spec labelled label, −1 for none.
func specByLabel(specs []Spec, label string) int {
	for i := range specs {
		if specs[i].Label() == label {
			return i
		}
	}
	return -1
}
