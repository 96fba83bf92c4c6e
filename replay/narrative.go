package replay

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/policy"
)

// A paragraph of the narrative is a run of spans; measured numbers are
// spans of their own, so the page can set them in bold and a test can find
// them.
type paragraph []span

type span struct {
	Text string
	Num  bool
}

func (p *paragraph) t(format string, a ...any) *paragraph {
	*p = append(*p, span{Text: fmt.Sprintf(format, a...)})
	return p
}

func (p *paragraph) n(format string, a ...any) *paragraph {
	*p = append(*p, span{Text: fmt.Sprintf(format, a...), Num: true})
	return p
}

// num writes x with prec decimals, or "n/a" when there is nothing to show.
func num(x float64, prec int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "n/a"
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// narrative tells what happened in the run, from the run's own numbers:
// every figure and every comparison word below is computed from the
// Result, so a different run reads differently.
func narrative(r *engine.Result) []paragraph {
	s := &r.Scenario
	m := &r.Metrics
	sr := &r.Series
	var out []paragraph
	storms := stormCount(r)
	stormG, adaptiveG := r.GroupOf(engine.AgentStorm), r.GroupOf(engine.AgentAdaptive)

	// The setting, in one line: the charts and the knobs say the rest.
	var p paragraph
	if paperCast(r) {
		p.n("%d", s.Pool).t(" GPUs for ").n("%s", clock(s.Ticks)).t(": a latency-sensitive victim, two science campaigns on the same tasks, ")
		if storms > 0 {
			p.n("%d", storms).t(" %s from ", plural(storms, "storm", "storms")).n("%d s", s.StormStart).t(" to ").n("%d s", s.StormEnd).t(", ")
		} else {
			p.t("no storm, ")
		}
		p.t("and a backfill that leaves ").n("%d", r.Cast[len(r.Cast)-1].Headroom).t(" GPUs idle as warm headroom.")
	} else {
		// Each campaign as "name (agent)", or its name alone when that is
		// its agent: "interactive, victim, physics-sim, adaptive" read as
		// four campaigns, not two.
		p.n("%d", s.Pool).t(" GPUs for ").n("%s", clock(s.Ticks)).t(": ").n("%d", len(r.Cast)).t(" campaigns: ")
		for i := range r.Cast {
			if i > 0 {
				p.t("; ")
			}
			if c := &r.Cast[i]; c.Name == c.Agent {
				p.t("%s", c.Name)
			} else {
				p.t("%s (%s)", c.Name, c.Agent)
			}
		}
		p.t(". The storm window is ").n("%d s", s.StormStart).t(" to ").n("%d s", s.StormEnd).t(".")
	}
	if b := s.Baseline(); b != "" {
		p.t(" Admission is by %s, a baseline policy (docs/policies.md), not by Bursar's broker: the campaigns and their envelopes are the same, but no token bucket meters them.", b)
	}
	out = append(out, p)

	// The storm and the bucket that stopped it.
	if storms > 0 {
		st := &r.Storms[0]
		lo, hi := s.StormStart, s.StormEnd
		stormR := 0.0
		for i := range r.Cast {
			if r.Cast[i].Agent == engine.AgentStorm {
				stormR += r.Envelopes[i].Sustained
			}
		}
		p = paragraph{}
		// Several storms are one display campaign: say so, and speak of
		// them as one from then on.
		it, its, held := "it", "Its token bucket", "it held"
		if storms > 1 {
			it, its, held = "them", "Their token buckets", "they held"
		}
		if storms == 1 {
			p.t("During its window the storm held up to ").n("%d GPUs", m.StormPeakHeld).t(" (burst ceiling ").n("%d", st.BurstCeiling).t(")")
		} else {
			p.t("During their window the ").n("%d", storms).t(" storms together held up to ").n("%d GPUs", m.StormPeakHeld).t(" (burst ceiling ").n("%d", st.BurstCeiling).t(" each)")
		}
		p.t(" and ").n("%s", num(m.StormMeanHeld, 0)).t(" on average, ").
			n("%s GPU-s", num(m.StormExcessGPUSeconds, 0)).t(" above the sustained rate of ").n("%s GPUs", num(stormR, 0)).t("; admission throttled %s ", it).
			n("%d", r.StormThrottles).t(" %s. ", plural(r.StormThrottles, "time", "times"))
		switch {
		case s.Baseline() != "":
			// No bucket to tell about under a baseline.
		case len(r.Storms) == 1:
			bucketStory(&p, sr, r.GroupOf(engine.AgentStorm), lo, hi, stormR, its, held)
		default:
			// Storm groups with windows of their own: one sentence each,
			// over its own window, against its own rate.
			for i := range r.Storms {
				st := &r.Storms[i]
				g := slices.IndexFunc(r.Groups, func(d engine.DisplayGroup) bool { return d.Name == st.Name })
				w := r.Cast[r.Groups[g].Members[0]].Window
				rate := 0.0
				for _, m := range r.Groups[g].Members {
					rate += r.Envelopes[m].Sustained
				}
				p.t("%s: ", st.Name)
				bucketStory(&p, sr, g, w.Start, w.End, rate, "its token bucket", "it held")
				p.t(" ")
			}
		}
		out = append(out, p)
	}

	// The victim.
	var nIn, nOut int
	for _, g := range r.Grants {
		if r.Cast[g.Campaign].Agent != engine.AgentVictim {
			continue
		}
		if g.T >= s.StormStart && g.T < s.StormEnd+60 {
			nIn++
		} else {
			nOut++
		}
	}
	p = paragraph{}
	switch {
	case nIn == 0:
		p.t("The victim had no grant in the storm window; outside it, its ").n("%d", nOut).t(" grants waited p50 ").n("%s s", num(m.VictimP50Out, 0)).t(", p95 ").n("%s s", num(m.VictimP95Out, 0)).t(".")
	default:
		switch {
		case nOut == 0:
			p.t("The victim: ")
		case m.VictimP95In <= m.VictimP95Out:
			p.t("The victim was isolated: ")
		default:
			p.t("The victim felt the storm: ")
		}
		p.t("its ").n("%d", nIn).t(" grants in the storm window waited p50 ").n("%s s", num(m.VictimP50In, 0)).t(", p95 ").n("%s s", num(m.VictimP95In, 0)).
			t(", against p50 ").n("%s s", num(m.VictimP50Out, 0)).t(", p95 ").n("%s s", num(m.VictimP95Out, 0)).t(" for its ").n("%d", nOut).t(" grants outside it; ")
		if m.VictimViolationsIn == 0 {
			p.t("none waited longer than 60 s.")
		} else {
			p.n("%d", m.VictimViolationsIn).t(" waited longer than 60 s.")
		}
	}
	if r.GroupOf(engine.AgentVictim) >= 0 {
		out = append(out, p) // a cast without a victim has nothing to say here
	}

	// Grant paths and congestion.
	total := m.Warm + m.Reclaim + m.Cold
	maxMult, maxAt, above, aboveIn, inN := 1.0, 0, 0, 0, 0
	for i, x := range sr.Multiplier {
		in := sr.T[i] >= s.StormStart && sr.T[i] < s.StormEnd
		if in {
			inN++
		}
		if x > 1 {
			above++
			if in {
				aboveIn++
			}
		}
		if x > maxMult {
			maxMult, maxAt = x, sr.T[i]
		}
	}
	p = paragraph{}
	p.t("Of ").n("%d", total).t(" grants, ").n("%d", m.Warm).t(" were %s (free GPUs at once), ", policy.Warm).n("%d", m.Reclaim).t(" %s (GPUs taken back from the backfill after a ", policy.Reclaim).
		n("%d s", s.Grace).t(" preemption notice) and ").n("%d", m.Cold).t(" %s. Science bursts waited p50 ", policy.Cold).n("%s s", num(m.SciBurstP50, 0)).t(", p95 ").n("%s s", num(m.SciBurstP95, 0)).
		t(" (p95 ").n("%s s", num(m.SciBurstP95In, 0)).t(" in the storm window). ")
	if above == 0 || sr.Len() == 0 {
		p.t("The congestion multiplier never rose above ×1.")
	} else {
		p.t("The congestion multiplier was above ×1 for ").n("%s%%", num(100*float64(above)/float64(sr.Len()), 0)).t(" of the run")
		if inN > 0 && storms > 0 {
			p.t(" (").n("%s%%", num(100*float64(aboveIn)/float64(inN), 0)).t(" of the storm window)")
		}
		p.t(" and first reached its peak of ").n("×%s", strconv.FormatFloat(maxMult, 'f', -1, 64)).t(" at t = ").n("%d s", maxAt).t(".")
	}
	out = append(out, p)

	// Science per credit.
	p = paragraph{}
	sci := func(name string, science, spent float64, completed int) {
		p.t("%s finished ", name).n("%d", completed).t(" tasks worth ").n("%s", num(science, 1)).t(" science for ").n("%s", num(spent, 1)).t(" credits (")
		p.n("%s", num(perScience(spent, science), 2)).t(" credits per unit)")
	}
	// Adaptive campaigns first, then naive ones (r.Science lists the
	// naive ones first, as the text report does).
	var order []*engine.CampaignReport
	for _, naive := range []bool{false, true} {
		for i := range r.Science {
			c := &r.Science[i]
			if (r.Cast[campaignIndex(r, c.Name)].Agent == engine.AgentNaive) == naive {
				order = append(order, c)
			}
		}
	}
	if paperCast(r) {
		// The measured metrics (one campaign of each kind).
		sci(r.Adaptive.Name, m.AdaptiveScience, m.AdaptiveSpent, r.Adaptive.Completed)
		p.t("; ")
		sci(r.Naive.Name, m.NaiveScience, m.NaiveSpent, r.Naive.Completed)
		order = nil
	}
	for i, c := range order {
		if i > 0 {
			p.t("; ")
		}
		sci(c.Name, c.Science, c.Spent, c.Completed)
	}
	if len(order) == 0 && !paperCast(r) {
		p.t("No science campaign ran")
	}
	p.t(".")
	a, b := perScience(m.AdaptiveSpent, m.AdaptiveScience), perScience(m.NaiveSpent, m.NaiveScience)
	if paperCast(r) && !math.IsNaN(a) && !math.IsNaN(b) && a > 0 {
		if a <= b {
			p.t(" Per credit, adaptive-sci did ").n("%s×", num(b/a, 1)).t(" the science of naive-sci.")
		} else {
			p.t(" Per credit, naive-sci did ").n("%s×", num(a/b, 1)).t(" the science of adaptive-sci.")
		}
	}
	out = append(out, p)

	// The flow envelopes.
	ioRate, infRate := r.DisplayFlowRates()
	p = paragraph{}
	if paperCast(r) {
		p.t("Filesystem: against a sustained rate of ").n("%s GB/s", num(ioRate[adaptiveG], 0)).t(" each, adaptive-sci averaged ").n("%s GB/s", num(r.Adaptive.MeanIO, 1)).
			t(" (io-throttled ").n("%d s", r.Adaptive.IOThrottled).t(") and naive-sci ").n("%s GB/s", num(r.Naive.MeanIO, 1)).t(" (").n("%d s", r.Naive.IOThrottled).t("). ")
		p.t("Inference: adaptive-sci averaged ").n("%s tok/s", num(r.Adaptive.MeanInference, 0)).t(" of its ").n("%s", num(infRate[adaptiveG], 0)).t(" tok/s rate")
	} else {
		for i := range r.Science {
			c := &r.Science[i]
			if i > 0 {
				p.t("; ")
			}
			p.t("%s averaged ", c.Name).n("%s GB/s", num(c.MeanIO, 1)).t(" (io-throttled ").n("%d s", c.IOThrottled).t(") and ").
				n("%s tok/s", num(c.MeanInference, 0)).t(" (inference-throttled ").n("%d s", c.InferenceThrottled).t(")")
		}
	}
	if storms > 0 {
		var sum float64
		var n int
		for i, t := range sr.T {
			if t >= s.StormStart && t < s.StormEnd {
				sum += sr.Inference[stormG][i]
				n++
			}
		}
		p.t("; the storm used ").n("%s tok/s", num(sum/float64(n), 0)).t(" on average during its window against ").n("%s tok/s", num(infRate[stormG], 0)).
			t(" sustained, and was inference-throttled for ").n("%d s", r.Storm.InferenceThrottled).t(".")
	} else {
		p.t(".")
	}
	out = append(out, p)

	// What it cost in utilization.
	p = paragraph{}
	p.t("The pool was ").n("%s%%", num(100*m.Utilization, 1)).t(" busy on average, ").n("%s%%", num(100*m.ProductiveUtilization, 1)).
		t(" with campaigns other than the backfill: the idle headroom and the preemption grace are what the warm path costs.")
	out = append(out, p)
	return out
}

func perScience(spent, science float64) float64 {
	if science == 0 || math.IsNaN(science) {
		return math.NaN()
	}
	return spent / science
}

// paperCast says whether the run's cast has the paper's shape (victim,
// adaptive-sci, naive-sci, storms, optional probe, backfill, by agent and
// name), for which the narrative keeps its paper wording.
func paperCast(r *engine.Result) bool {
	want := []string{"victim", "adaptive-sci", "naive-sci"}
	if len(r.Cast) < 4 {
		return false
	}
	for i, name := range want {
		if r.Cast[i].Name != name {
			return false
		}
	}
	c := r.Cast
	if c[0].Agent != engine.AgentVictim || c[1].Agent != engine.AgentAdaptive || c[2].Agent != engine.AgentNaive || c[len(c)-1].Agent != engine.AgentBackfill {
		return false
	}
	for _, x := range c[3 : len(c)-1] {
		if x.Agent != engine.AgentStorm && x.Agent != engine.AgentProbe {
			return false
		}
	}
	return true
}

// campaignIndex is the cast index of the named campaign (0 if none).
func campaignIndex(r *engine.Result, name string) int {
	for i := range r.Cast {
		if r.Cast[i].Name == name {
			return i
		}
	}
	return 0
}

// bucketStory tells when a storm group's bucket ran dry in [lo, hi) and what
// it held from then on, against its sustained rate.
func bucketStory(p *paragraph, sr *engine.Series, g, lo, hi int, stormR float64, its, held string) {
	drained, minFill, afterSum, afterN := -1, math.Inf(1), 0, 0
	for i, t := range sr.T {
		if t < lo || t >= hi {
			continue
		}
		f := sr.Fill[g][i]
		minFill = min(minFill, f)
		if drained < 0 && f <= 0.01 {
			drained = t
		}
		if drained >= 0 {
			afterSum += sr.Held[g][i]
			afterN++
		}
	}
	switch {
	case drained >= 0:
		after := float64(afterSum) / float64(afterN)
		p.t("%s ran dry at t = ", its).n("%d s", drained).t(", ").n("%d s", drained-lo).t(" into the storm; from then on %s ", held).n("%s GPUs", num(after, 0)).t(" on average")
		if after <= 1.25*stormR {
			p.t(", back near its sustained rate.")
		} else {
			p.t(", still well above its sustained rate.")
		}
	case !math.IsInf(minFill, 1):
		p.t("%s never ran dry (lowest fill ", its).n("%s%%", num(100*minFill, 0)).t(").")
	}
}
