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

// PolicyCost is a trace run's expected cost per job, by policy, for the
// shards' balance (sweep.AssignStudyShards). Every policy skips from event
// to event now, so the cost follows the jobs and what each executed tick
// costs: the factors are the single-run CPU times on the embedded excerpt
// (2,661 jobs) and on the full SDSC-SP2 log (54k jobs), relative to fifo,
// rounded (BenchmarkReplayPolicyExcerpt, BenchmarkReplayPolicySDSC on this
// 2-core machine, December 2026): static 0.4–0.5, priority 1.4–2.9,
// fairshare 1.6–2.5, quota 1.1–8, bursar 3.1–3.2, budget 6–41 (budget on
// a contended trace preempts and requeues, and its queue grows). Only the
// ordering and rough ratios matter; an unknown policy costs as much as
// budget.
var PolicyCost = map[string]float64{
	"fifo": 1, "static": 0.5, "priority": 2, "quota": 2,
	"fairshare": 2, "bursar": 3, "budget": 10,
}

// PolicyFactor is PolicyCost[name], or budget's for a name it lacks.
func PolicyFactor(name string) float64 {
	if f, ok := PolicyCost[name]; ok {
		return f
	}
	return PolicyCost["budget"]
}

// Digest is the SHA-256 of a trace file's content (as stored: the gzip
// bytes of a .gz log, the embedded excerpt's included), for a plan's
// inputs.
func Digest(content []byte) string {
	sum := sha256.Sum256(content)
	return "sha256:" + hex.EncodeToString(sum[:])
}

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

// Label names the run: the policy, and for a budget-knobs run its W and m.
func (s Spec) Label() string {
	if s.WindowDays > 0 {
		return fmt.Sprintf("%s W=%dd m=%ds", s.Policy, s.WindowDays, s.MinRuntime)
	}
	return s.Policy
}

// Inputs is the canonical text of the run's own inputs: the policy and
// every knob (all policies' knobs, so that no knob a policy reads is ever
// left out), and the W and m it records.
func (s Spec) Inputs() string {
	k, err := json.Marshal(s.Knobs)
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf("policy %s\nknobs %s\nwindow_days %d min_runtime_s %d", s.Policy, k, s.WindowDays, s.MinRuntime)
}

// NewPlan is the study plan of specs on w: command names the experiment
// (trace or budget-knobs), shared is SharedInputs. Each run costs the
// jobs times its policy's factor.
func NewPlan(command, shared string, w *trace.Workload, specs []Spec) *sweep.StudyPlan {
	p := &sweep.StudyPlan{Command: command, Inputs: shared, Runs: make([]sweep.StudyRun, len(specs))}
	for i, s := range specs {
		p.Runs[i] = sweep.StudyRun{Label: s.Label(), Inputs: s.Inputs(), Cost: float64(len(w.Jobs)) * PolicyFactor(s.Policy)}
	}
	return p
}

// ExecutePlan runs plan (NewPlan of specs on w) with opt: every run, one
// shard's, from the cache or computed.
func ExecutePlan(ctx context.Context, w *trace.Workload, specs []Spec, plan *sweep.StudyPlan, opt sweep.StudyOptions) ([]Result, error) {
	if len(plan.Runs) != len(specs) {
		return nil, fmt.Errorf("internal: a plan of %d runs for %d specs", len(plan.Runs), len(specs))
	}
	return sweep.ExecuteStudy(ctx, plan, func(i int) (Result, error) { return RunOne(w, specs[i]) }, Codec, opt)
}

// Codec writes a Result to shard files and cache entries exactly: every
// float as sweep.ExactFloat (NaN, a class with no job, as null), BSLD
// (the figure's CDF) included.
var Codec = sweep.StudyCodec[Result]{Encode: encodeResult, Decode: decodeResult}

// WireStats is trace.Stats as a codec writes it (arrive's too).
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

type wireResult struct {
	Policy         string               `json:"policy"`
	WindowDays     int                  `json:"window_days"`
	MinRuntime     int                  `json:"min_runtime_s"`
	Jobs           int                  `json:"jobs"`
	Unserved       int                  `json:"unserved"`
	Unfinished     int                  `json:"unfinished"`
	Preemptions    int                  `json:"preemptions"`
	LostGPUSeconds int64                `json:"lost_gpu_seconds"`
	All            WireStats            `json:"all"`
	ByClass        map[string]WireStats `json:"by_class"`
	Utilization    sweep.ExactFloat     `json:"utilization"`
	HeldUtil       sweep.ExactFloat     `json:"held_utilization"`
	Jain           sweep.ExactFloat     `json:"jain"`
	Makespan       int64                `json:"makespan"`
	Ticks          int64                `json:"ticks"`
	BSLD           []sweep.ExactFloat   `json:"bsld"`
}

func encodeResult(r *Result) ([]byte, error) {
	w := wireResult{Policy: r.Policy, WindowDays: r.WindowDays, MinRuntime: r.MinRuntime, Jobs: r.Jobs, Unserved: r.Unserved,
		Unfinished: r.Unfinished, Preemptions: r.Preemptions, LostGPUSeconds: r.LostGPUSeconds, All: ToWireStats(r.All),
		Utilization: sweep.ExactFloat(r.Utilization), HeldUtil: sweep.ExactFloat(r.HeldUtil), Jain: sweep.ExactFloat(r.Jain),
		Makespan: r.Makespan, Ticks: r.Ticks}
	if r.ByClass != nil {
		w.ByClass = make(map[string]WireStats, len(r.ByClass))
		for k, s := range r.ByClass {
			w.ByClass[k] = ToWireStats(s)
		}
	}
	if r.BSLD != nil {
		w.BSLD = make([]sweep.ExactFloat, len(r.BSLD))
		for i, x := range r.BSLD {
			w.BSLD[i] = sweep.ExactFloat(x)
		}
	}
	return json.Marshal(&w)
}

func decodeResult(b []byte) (Result, error) {
	var w wireResult
	if err := json.Unmarshal(b, &w); err != nil {
		return Result{}, err
	}
	r := Result{Policy: w.Policy, WindowDays: w.WindowDays, MinRuntime: w.MinRuntime, Jobs: w.Jobs, Unserved: w.Unserved,
		Unfinished: w.Unfinished, Preemptions: w.Preemptions, LostGPUSeconds: w.LostGPUSeconds, All: w.All.Stats(),
		Utilization: float64(w.Utilization), HeldUtil: float64(w.HeldUtil), Jain: float64(w.Jain),
		Makespan: w.Makespan, Ticks: w.Ticks}
	if w.ByClass != nil {
		r.ByClass = make(map[string]Stats, len(w.ByClass))
		for k, s := range w.ByClass {
			r.ByClass[k] = s.Stats()
		}
	}
	if w.BSLD != nil {
		r.BSLD = make([]float64, len(w.BSLD))
		for i, x := range w.BSLD {
			r.BSLD[i] = float64(x)
		}
	}
	return r, nil
}
