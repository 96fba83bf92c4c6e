package arrive

import (
	"context"
	"fmt"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/budget"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/sweep"
	"github.com/bursar-hpc/bursar/trace"
	"github.com/bursar-hpc/bursar/tracestudy"
)

// Modes: how the agents reach the site's policy (docs/studies.md §3.3, §6.14).
const (
	// ModeSite: the agents submit to the site's policy as ordinary users.
	ModeSite = "site"
	// ModeMetered: an agent's request must first pass the Bursar broker's
	// cap and token checks for its envelope.
	ModeMetered = "metered"
)

// Spec is one run.
type Spec struct {
	Policy string
	Mode   string // ModeSite or ModeMetered
	K      int    // agent campaigns
	Seed   int64  // the science agents' task seed
}

// Stay is when the agents are on the machine: they arrive at policy tick
// Arrive+1 (the replay's tick t is second t + first submit − 1 of the
// log) and act for Stay seconds.
type Stay struct {
	Arrive, Stay int
}

// Result is one run's outcome: the trace users' metrics (trace.Summarize
// over the trace's jobs only) and what the agents got.
type Result struct {
	Policy         string      `json:"policy"`
	Mode           string      `json:"mode"`
	K              int         `json:"k"`
	Seed           int64       `json:"seed"`
	Jobs           int         `json:"jobs"`
	Unserved       int         `json:"unserved"`
	Preemptions    int         `json:"preemptions"`
	LostGPUSeconds int64       `json:"lost_gpu_seconds"`
	Users          trace.Stats `json:"users"`
	Jain           float64     `json:"jain"`
	Makespan       int64       `json:"makespan"`
	// AgentGPUSeconds is what the agents held, summed over their stay.
	AgentGPUSeconds int64 `json:"agent_gpu_seconds"`
	// Science is the science agents' summed science; Completed their tasks.
	Science   float64 `json:"science"`
	Completed int     `json:"completed"`
	// MeterRefusals counts agent requests the meter refused (metered only).
	MeterRefusals int `json:"meter_refusals"`
	// Stranded counts the trace jobs (among Unserved) that Bursar denied
	// because they are wider than the pool less the agents' guarantees.
	Stranded int   `json:"stranded"`
	Ticks    int64 `json:"ticks"`
	// Unfinished counts the trace jobs still queued or running at the
	// replay's horizon (trace.ReplayOptions.Horizon: by default max(the
	// window's submit span, 7 days) after the last submit); the users'
	// metrics are over the jobs that finished.
	Unfinished int `json:"unfinished"`
}

// SeedsMatter reports whether runs with k agents differ by seed: only the
// science agents draw anything (their task lists), and the first one is
// the second agent of Mix.
func SeedsMatter(k int) bool { return k >= 2 }

// Specs is every run of the study: each policy × mode × k = 0 … maxK ×
// seed, with one seed (the first) where seeds do not matter.
func Specs(names, modes []string, maxK int, seeds []int64) []Spec {
	var specs []Spec
	for _, p := range names {
		for _, m := range modes {
			for k := 0; k <= maxK; k++ {
				ss := seeds
				if !SeedsMatter(k) {
					ss = seeds[:1]
				}
				for _, sd := range ss {
					specs = append(specs, Spec{Policy: p, Mode: m, K: k, Seed: sd})
				}
			}
		}
	}
	return specs
}

// RunOne replays w under the spec's policy (policy.DefaultConfig at the
// trace's pool, default knobs, the trace's groups as budget's hierarchy,
// as the trace study runs it) with its agents on the machine.
func RunOne(w *trace.Workload, sp Spec, st Stay) (Result, error) {
	if sp.Mode != ModeSite && sp.Mode != ModeMetered {
		return Result{}, fmt.Errorf("agents-arrive: mode %q (want %s or %s)", sp.Mode, ModeSite, ModeMetered)
	}
	cast, err := Cast(sp.K, w.Pool, st.Stay)
	if err != nil {
		return Result{}, err
	}
	knobs := policies.TraceKnobs()
	if sp.Policy == budget.Name {
		knobs.Budget.Groups = tracestudy.Hierarchy(w)
	}
	// priority's preempt follows the log's header (docs/studies.md §6.14).
	p := w.Preemptible()
	knobs.Priority.Preempt = &p
	a, err := policies.New(sp.Policy, policy.DefaultConfig(w.Pool), knobs)
	if err != nil {
		return Result{}, err
	}
	s, err := newSite(a, cast, sp.Seed, st.Arrive, st.Stay, sp.Mode == ModeMetered)
	if err != nil {
		return Result{}, err
	}
	run, err := trace.Replay(w, s, trace.ReplayOptions{})
	if err == nil {
		err = s.err
	}
	if err != nil {
		return Result{}, fmt.Errorf("%s, %s, k=%d, seed %d: %w", sp.Policy, sp.Mode, sp.K, sp.Seed, err)
	}
	sw, start := run.Served(w)
	m := trace.Summarize(sw, start)
	r := Result{
		Policy: sp.Policy, Mode: sp.Mode, K: sp.K, Seed: sp.Seed,
		Jobs: len(sw.Jobs), Unserved: run.Unserved, Preemptions: run.Preemptions, LostGPUSeconds: run.LostGPUSeconds,
		Users: m.All, Jain: m.Jain, Makespan: m.Makespan, Ticks: run.Ticks,
		AgentGPUSeconds: s.agentHeld, MeterRefusals: s.refused, Stranded: s.stranded, Unfinished: run.UnfinishedJobs,
	}
	if s.crew != nil {
		for i := range cast {
			sc, n := s.crew.Science(i)
			r.Science += sc
			r.Completed += n
		}
	}
	return r, nil
}

// Execute runs the specs with at most workers at once; results are in
// spec order whatever the worker count (each run is independent and
// deterministic). It is ExecutePlan with no shard and no cache. progress
// may be nil.
func Execute(ctx context.Context, w *trace.Workload, specs []Spec, st Stay, workers int, progress func(done, total int)) ([]Result, error) {
	if workers < 1 {
		return nil, fmt.Errorf("workers must be at least 1, got %d", workers)
	}
	return ExecutePlan(ctx, w, specs, st, NewPlan("", w, specs), sweep.StudyOptions{Workers: workers, Progress: progress})
}
