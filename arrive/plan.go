package arrive

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bursar-hpc/bursar/sweep"
	"github.com/bursar-hpc/bursar/trace"
	"github.com/bursar-hpc/bursar/tracestudy"
)

// SharedInputs is the canonical text of what every run of the study
// shares: tracestudy.SharedInputs of the log, the windows, the stay, the
// agents' scale, share and φ, the knobs and the seeds (a k = 0 run measures
// every seed's stay).
func (st *Study) SharedInputs(traceDigest string, w *trace.Workload) string {
	k, err := json.Marshal(st.Knobs)
	if err != nil {
		panic(err) // plain fields
	}
	wins := ""
	for i, win := range st.Windows {
		wins += fmt.Sprintf("\nwindow %d [%d, %d) measured [%d, %d) jobs %d", win.Index, win.From, win.Until, win.MeasureFrom, win.MeasureUntil, len(st.Loads[i].Jobs))
		if win.LeadIn > 0 {
			wins += fmt.Sprintf(" lead-in %d", win.LeadIn)
		}
	}
	return fmt.Sprintf("%s\nagents-arrive stay %d agent_scale %v agent_share %v agent_phi %v seeds %v knobs %s recorded %d%s",
		tracestudy.SharedInputs(traceDigest, st.Options, w), st.Stay, st.AgentScale, st.AgentShare, st.AgentPhi, st.Seeds, k, len(st.Recorded), wins)
}

// Inputs is the canonical text of one run's own inputs.
func (sp Spec) Inputs() string {
	return fmt.Sprintf("policy %s\nmode %s\nk %d\nseed %d\nwindow %d", sp.Policy, sp.Mode, sp.K, sp.Seed, sp.Window)
}

// Cost is a run's expected cost for the shards' balance: the window's
// jobs times the policy's cost (registry.Descriptor.Cost), plus, with
// agents, the ticks of their stay (no tick is skipped while they are on
// the machine), each costing about what a job does per agent.
func (st *Study) Cost(sp Spec) float64 {
	jobs := float64(len(st.Loads[sp.Window].Jobs))
	c := jobs * st.registry().Cost(sp.Policy)
	if sp.K > 0 {
		c += float64(st.Stay) / 100 * (1 + float64(sp.K)/4)
	}
	return c
}

// NewPlan is the study plan of st (Plan called); shared is SharedInputs.
func (st *Study) NewPlan(shared string) *sweep.StudyPlan {
	p := &sweep.StudyPlan{Command: "agents-arrive", Inputs: shared, Runs: make([]sweep.StudyRun, len(st.Specs))}
	for i, sp := range st.Specs {
		p.Runs[i] = sweep.StudyRun{Label: Label(sp, st.Windows[sp.Window]), Inputs: sp.Inputs(), Cost: st.Cost(sp)}
	}
	return p
}

// ExecutePlan runs plan (NewPlan of st) with opt: every run, one shard's,
// from the cache or computed, in spec order whatever the worker count.
func (st *Study) ExecutePlan(ctx context.Context, plan *sweep.StudyPlan, opt sweep.Options) ([]Result, error) {
	if len(plan.Runs) != len(st.Specs) {
		return nil, fmt.Errorf("internal: a plan of %d runs for %d specs", len(plan.Runs), len(st.Specs))
	}
	return sweep.ExecuteStudy(ctx, plan, st.Run, Codec, opt)
}

// Execute plans st and runs it with at most workers at once, without
// shard or cache; progress may be nil.
func (st *Study) Execute(ctx context.Context, workers int, progress func(done, total int)) ([]Result, error) {
	if workers < 1 {
		return nil, fmt.Errorf("workers must be at least 1, got %d", workers)
	}
	if err := st.Check(); err != nil {
		return nil, err
	}
	st.Plan()
	return st.ExecutePlan(ctx, st.NewPlan(""), sweep.Options{Workers: workers, Progress: progress})
}

// Codec writes a Result to shard files and cache entries exactly: the
// result in encoding/gob (every float64 bit for bit, NaN included; Result
// holds no map, so the same result gives the same bytes), as a JSON
// string.
var Codec = sweep.GobCodec[Result]("an agents-arrive result")
