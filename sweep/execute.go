package sweep

import (
	"context"
	"fmt"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/engine"
)

// Results are the metrics of every run of one plan, by run index (see
// configs.Plan: the seeds of a point are adjacent, in seed order).
type Results struct {
	Plan    *configs.Plan
	Metrics []engine.Metrics
}

// seedsOf returns the metrics of grid point pt, in seed order.
func (r *Results) seedsOf(pt int) []engine.Metrics {
	n := len(r.Plan.Seeds)
	return r.Metrics[pt*n : (pt+1)*n]
}

// runIDs are the runs of plans in order: plan after plan, each in run
// order; Options.Runs index this list.
func runIDs(plans []*configs.Plan) []RunID {
	var ids []RunID
	for i, p := range plans {
		for ri := range p.NumRuns() {
			ids = append(ids, RunID{i, ri})
		}
	}
	return ids
}

// engineRuns are the runs of plans as the pool and the cache see them: a
// run is engine.Run of its scenario, cached under RunKey.
func engineRuns(plans []*configs.Plan) runs[engine.Metrics] {
	ids := runIDs(plans)
	scenario := func(i int) engine.Scenario {
		_, s := plans[ids[i].Plan].Run(ids[i].Run)
		return s
	}
	return runs[engine.Metrics]{
		n: len(ids),
		run: func(i int) (engine.Metrics, error) {
			p, ri := plans[ids[i].Plan], ids[i].Run
			pt, s := p.Run(ri)
			res, err := engine.Run(s, engine.Options{})
			if err != nil {
				return engine.Metrics{}, fmt.Errorf("%s: run %d (%s, seed %d): %w", p.Experiment, ri, pt.Label(), s.Seed, err)
			}
			return res.Metrics, nil
		},
		key: func(i int) string { s := scenario(i); return RunKey(&s) },
		entry: func(i int, key string, m *engine.Metrics) (any, error) {
			return &cacheEntry{Key: key, Program: ProgramVersion(), Scenario: scenario(i), Metrics: toWire(m)}, nil
		},
		decode: decodeCacheBody,
	}
}

// Execute runs every plan's runs on one bounded pool of workers, so that
// the paper's three experiments share the machine without a gap between
// them. Each run's metrics land at its own index, which makes the results
// (and everything reduced from them) the same whatever the worker count
// and the order in which runs finish. opt.Runs index the plans' runs
// counted on from one plan to the next (runIDs).
//
// When ctx is cancelled no new run starts, the runs in flight finish (one
// takes tens of milliseconds), and Execute returns an error wrapping the
// cancellation cause; it never returns partial results.
func Execute(ctx context.Context, plans []*configs.Plan, opt Options) ([]*Results, error) {
	ms, err := engineRuns(plans).execute(ctx, opt)
	if err != nil {
		return nil, err
	}
	out := make([]*Results, len(plans))
	for i, p := range plans {
		n := p.NumRuns()
		out[i] = &Results{Plan: p, Metrics: ms[:n:n]}
		ms = ms[n:]
	}
	return out, nil
}

// SweepJob is a Job of engine runs: the plans of one sweep command (the
// paper's experiments, compare, a config's grid) and the report that
// reduces their results.
type SweepJob struct {
	// Name labels the job in messages (the experiment, or paper).
	Name    string
	Plans   []*configs.Plan
	Write   func(rs []*Results, merged bool) error
	results []*Results
}

func (j *SweepJob) Label() string { return j.Name }
func (j *SweepJob) Len() int      { return len(runIDs(j.Plans)) }

func (j *SweepJob) Shards(n int) [][]int {
	offset := make([]int, len(j.Plans))
	for i := 1; i < len(j.Plans); i++ {
		offset[i] = offset[i-1] + j.Plans[i-1].NumRuns()
	}
	out := make([][]int, n)
	for k, shard := range AssignShards(j.Plans, n) {
		for _, id := range shard {
			out[k] = append(out[k], offset[id.Plan]+id.Run)
		}
	}
	return out
}

func (j *SweepJob) Execute(ctx context.Context, opt Options) (err error) {
	j.results, err = Execute(ctx, j.Plans, opt)
	return err
}

func (j *SweepJob) EncodeShard(command string, args []string, sh Shard, ids []int) ([]byte, error) {
	all := runIDs(j.Plans)
	runs := make([]RunID, len(ids))
	for k, i := range ids {
		runs[k] = all[i]
	}
	return NewShardFile(command, args, j.results, sh, runs).Encode(), nil
}

func (j *SweepJob) Merge(set *ShardSet) (err error) {
	j.results, err = set.Results(j.Plans)
	return err
}

func (j *SweepJob) Report(merged bool) error { return j.Write(j.results, merged) }
