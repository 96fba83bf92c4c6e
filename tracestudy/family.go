package tracestudy

import (
	"math"

	"github.com/bursar-hpc/bursar/internal/stats"
)

// Contrast is one comparison of a policy with fifo over a study's
// windows: per window, Policy's value of Metric against fifo's on the
// same window, as log(policy ÷ fifo) when Ratio (waits, whose spread
// grows with their size) or as policy − fifo otherwise.
type Contrast struct {
	Policy, Metric string
	Ratio          bool
	// Finding is the README finding the contrast tests, in a few words.
	Finding string
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

// TestedFamily tests each contrast of fam whose policy st ran (by its
// label) against fifo, window by window, and adjusts their p-values by
// Holm's method across those tested; nil when the study has no fifo or
// fewer than two windows.
func TestedFamily(st *Study, rs []Result, fam []Contrast) []Tested {
	nw := len(st.Windows)
	ref := specByLabel(st.Specs, "fifo")
	if ref < 0 || nw < 2 {
		return nil
	}
	var out []Tested
	for _, c := range fam {
		s := specByLabel(st.Specs, c.Policy)
		m := MetricByKey(c.Metric)
		if s < 0 || m == nil {
			continue
		}
		t := Tested{Contrast: c, Values: make([]float64, nw)}
		for k := range nw {
			a, b := &rs[s*nw+k], &rs[ref*nw+k]
			x, y := m.Get(a), m.Get(b)
			if c.Ratio {
				t.Values[k] = math.Log(x / y)
				if x <= 0 || y <= 0 {
					t.Values[k] = math.NaN()
				}
			} else {
				t.Values[k] = x - y
			}
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
