package tracestudy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/bursar-hpc/bursar/sweep"
	"github.com/bursar-hpc/bursar/trace"
)

// Digest is the SHA-256 of a trace file's content (as stored: the gzip
// bytes of a .gz log, the embedded excerpt's included), for a plan's
// inputs.
func Digest(content []byte) string { return digestText(sha256.Sum256(content)) }

func digestText(sum [sha256.Size]byte) string { return "sha256:" + hex.EncodeToString(sum[:]) }

// SharedInputs is the canonical text of what every run of a study on w
// shares: the trace's content digest, the options it was read with (the
// window, the pool, the campaign mapping, …) and the resulting pool and
// job count. The trace's name is not in it: the same log under another
// path is the same input.
func SharedInputs(traceDigest string, opt trace.Options, w *trace.Workload) string {
	o, err := json.Marshal(opt)
	if err != nil {
		panic(err) // plain fields and a map of strings to ints
	}
	return fmt.Sprintf("trace %s\noptions %s\npool %d jobs %d", traceDigest, o, w.Pool, len(w.Jobs))
}

// Label names the run: the policy, and for a budget-knobs run its W, m
// and restart.
func (s Spec) Label() string {
	if s.WindowDays > 0 {
		l := fmt.Sprintf("%s W=%dd m=%ds", s.Policy, s.WindowDays, s.MinRuntime)
		if s.Restart != "" {
			l += " " + s.Restart
		}
		return l
	}
	return s.Policy
}

// Inputs is the canonical text of the run's own inputs: the policy and
// every knob (all policies' knobs, so that no knob a policy reads is ever
// left out), the W and m it records, and the site's entitlements it
// reads (Spec.Site) if any.
func (s Spec) Inputs() string {
	k, err := json.Marshal(s.Knobs)
	if err != nil {
		panic(err)
	}
	in := fmt.Sprintf("policy %s\nknobs %s\nwindow_days %d min_runtime_s %d", s.Policy, k, s.WindowDays, s.MinRuntime)
	if s.Site != "" {
		in += "\nsite " + s.Site
	}
	return in
}

// NewPlan is the study plan of st: command names the experiment (trace or
// budget-knobs), shared is SharedInputs. Each run's inputs are its spec's
// and its window's (the submits replayed and measured); each costs the
// window's jobs times its policy's cost (registry.Descriptor.Cost).
func NewPlan(command, shared string, st *Study) *sweep.StudyPlan {
	p := &sweep.StudyPlan{Command: command, Inputs: shared, Runs: make([]sweep.StudyRun, st.Runs())}
	for i := range p.Runs {
		s, k := st.Cell(i)
		sp, win := st.Specs[s], st.Windows[k]
		in := fmt.Sprintf("%s\nwindow %d [%d, %d) measured [%d, %d)", sp.Inputs(), win.Index, win.From, win.Until,
			win.MeasureFrom, win.MeasureUntil)
		if win.LeadIn > 0 {
			in += fmt.Sprintf(" lead-in %d", win.LeadIn)
		}
		p.Runs[i] = sweep.StudyRun{
			Label:  sp.Label() + " " + win.Label(),
			Inputs: in,
			Cost:   float64(len(st.Loads[k].Jobs)) * st.registry().Cost(sp.Policy),
		}
	}
	return p
}

// ExecutePlan runs plan (NewPlan of st) with opt: every run, one shard's,
// from the cache or computed.
func ExecutePlan(ctx context.Context, st *Study, plan *sweep.StudyPlan, opt sweep.Options) ([]Result, error) {
	if len(plan.Runs) != st.Runs() {
		return nil, fmt.Errorf("internal: a plan of %d runs for %d replays", len(plan.Runs), st.Runs())
	}
	return sweep.ExecuteStudy(ctx, plan, st.Run, Codec, opt)
}

// Codec writes a Result to shard files and cache entries exactly: the
// result in encoding/gob (every float64 bit for bit, NaN and the denied
// jobs' +Inf slowdowns included; Result holds no map, so the bytes are
// the same for the same result), as a JSON string.
var Codec = sweep.GobCodec[Result]("a trace study result")

// WireStats is trace.Stats as a codec writes it (arrive's).
type WireStats struct {
	Jobs     int              `json:"jobs"`
	MeanWait sweep.ExactFloat `json:"mean_wait"`
	P50Wait  sweep.ExactFloat `json:"p50_wait"`
	P95Wait  sweep.ExactFloat `json:"p95_wait"`
	MeanBSLD sweep.ExactFloat `json:"mean_bsld"`
	P95BSLD  sweep.ExactFloat `json:"p95_bsld"`
}

// ToWireStats converts s for a codec; Stats converts back.
func ToWireStats(s trace.Stats) WireStats {
	return WireStats{s.Jobs, sweep.ExactFloat(s.MeanWait), sweep.ExactFloat(s.P50Wait), sweep.ExactFloat(s.P95Wait),
		sweep.ExactFloat(s.MeanBSLD), sweep.ExactFloat(s.P95BSLD)}
}

func (w WireStats) Stats() trace.Stats {
	return trace.Stats{Jobs: w.Jobs, MeanWait: float64(w.MeanWait), P50Wait: float64(w.P50Wait), P95Wait: float64(w.P95Wait),
		MeanBSLD: float64(w.MeanBSLD), P95BSLD: float64(w.P95BSLD)}
}
