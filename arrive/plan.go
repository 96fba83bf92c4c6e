package arrive

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bursar-hpc/bursar/sweep"
	"github.com/bursar-hpc/bursar/trace"
	"github.com/bursar-hpc/bursar/tracestudy"
)

// SharedInputs is the canonical text of what every run of the study on w
// shares: tracestudy.SharedInputs and when the agents arrive and stay.
func SharedInputs(traceDigest string, opt trace.Options, w *trace.Workload, st Stay) string {
	return fmt.Sprintf("%s\nagents arrive %d stay %d", tracestudy.SharedInputs(traceDigest, opt, w), st.Arrive, st.Stay)
}

// Label names the run.
func (sp Spec) Label() string {
	return fmt.Sprintf("%s %s k=%d seed %d", sp.Policy, sp.Mode, sp.K, sp.Seed)
}

// Inputs is the canonical text of the run's own inputs.
func (sp Spec) Inputs() string {
	return fmt.Sprintf("policy %s\nmode %s\nk %d\nseed %d", sp.Policy, sp.Mode, sp.K, sp.Seed)
}

// Cost is the run's expected cost for the shards' balance: the trace's
// jobs times the policy's factor (tracestudy.PolicyFactor), raised by a
// quarter per agent campaign, whose requests the policy must also serve
// and which keep it ticking through their stay.
func (sp Spec) Cost(w *trace.Workload) float64 {
	return float64(len(w.Jobs)) * tracestudy.PolicyFactor(sp.Policy) * (1 + float64(sp.K)/4)
}

// NewPlan is the study plan of specs on w; shared is SharedInputs.
func NewPlan(shared string, w *trace.Workload, specs []Spec) *sweep.StudyPlan {
	p := &sweep.StudyPlan{Command: "agents-arrive", Inputs: shared, Runs: make([]sweep.StudyRun, len(specs))}
	for i, sp := range specs {
		p.Runs[i] = sweep.StudyRun{Label: sp.Label(), Inputs: sp.Inputs(), Cost: sp.Cost(w)}
	}
	return p
}

// ExecutePlan runs plan (NewPlan of specs on w) with opt: every run, one
// shard's, from the cache or computed.
func ExecutePlan(ctx context.Context, w *trace.Workload, specs []Spec, st Stay, plan *sweep.StudyPlan, opt sweep.StudyOptions) ([]Result, error) {
	if len(plan.Runs) != len(specs) {
		return nil, fmt.Errorf("internal: a plan of %d runs for %d specs", len(plan.Runs), len(specs))
	}
	return sweep.ExecuteStudy(ctx, plan, func(i int) (Result, error) { return RunOne(w, specs[i], st) }, Codec, opt)
}

// Codec writes a Result to shard files and cache entries exactly (every
// float as sweep.ExactFloat, NaN as null).
var Codec = sweep.StudyCodec[Result]{Encode: encodeResult, Decode: decodeResult}

type wireResult struct {
	Policy          string               `json:"policy"`
	Mode            string               `json:"mode"`
	K               int                  `json:"k"`
	Seed            int64                `json:"seed"`
	Jobs            int                  `json:"jobs"`
	Unserved        int                  `json:"unserved"`
	Preemptions     int                  `json:"preemptions"`
	LostGPUSeconds  int64                `json:"lost_gpu_seconds"`
	Users           tracestudy.WireStats `json:"users"`
	Jain            sweep.ExactFloat     `json:"jain"`
	Makespan        int64                `json:"makespan"`
	AgentGPUSeconds int64                `json:"agent_gpu_seconds"`
	Science         sweep.ExactFloat     `json:"science"`
	Completed       int                  `json:"completed"`
	MeterRefusals   int                  `json:"meter_refusals"`
	Stranded        int                  `json:"stranded"`
	Ticks           int64                `json:"ticks"`
	Unfinished      int                  `json:"unfinished"`
}

func encodeResult(r *Result) ([]byte, error) {
	return json.Marshal(&wireResult{Policy: r.Policy, Mode: r.Mode, K: r.K, Seed: r.Seed, Jobs: r.Jobs, Unserved: r.Unserved,
		Preemptions: r.Preemptions, LostGPUSeconds: r.LostGPUSeconds, Users: tracestudy.ToWireStats(r.Users),
		Jain: sweep.ExactFloat(r.Jain), Makespan: r.Makespan, AgentGPUSeconds: r.AgentGPUSeconds,
		Science: sweep.ExactFloat(r.Science), Completed: r.Completed, MeterRefusals: r.MeterRefusals,
		Stranded: r.Stranded, Ticks: r.Ticks, Unfinished: r.Unfinished})
}

func decodeResult(b []byte) (Result, error) {
	var w wireResult
	if err := json.Unmarshal(b, &w); err != nil {
		return Result{}, err
	}
	return Result{Policy: w.Policy, Mode: w.Mode, K: w.K, Seed: w.Seed, Jobs: w.Jobs, Unserved: w.Unserved,
		Preemptions: w.Preemptions, LostGPUSeconds: w.LostGPUSeconds, Users: w.Users.Stats(),
		Jain: float64(w.Jain), Makespan: w.Makespan, AgentGPUSeconds: w.AgentGPUSeconds,
		Science: float64(w.Science), Completed: w.Completed, MeterRefusals: w.MeterRefusals,
		Stranded: w.Stranded, Ticks: w.Ticks, Unfinished: w.Unfinished}, nil
}
