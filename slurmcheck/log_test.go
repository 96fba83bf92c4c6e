package slurmcheck

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// A drawn log is the same for the same spec, in submit order from 0,
// every job fits the pool and its limit covers its run, and its offered
// load is the one asked for (to the rounding of times to 0.1 s).
func TestGenerateKeepsItsPromises(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := LogSpec{
			Jobs: rapid.IntRange(2, 80).Draw(t, "jobs"), Nodes: rapid.IntRange(1, 32).Draw(t, "nodes"),
			Load: rapid.Float64Range(0.3, 2).Draw(t, "load"), Scale: 60,
			RunMin: 120, RunMax: rapid.Float64Range(120, 7200).Draw(t, "runMax"),
			Seed: rapid.Uint64().Draw(t, "seed"), Overask: rapid.Float64Range(0, 1).Draw(t, "overask"),
		}
		require.NoError(t, s.Validate())
		jobs := Generate(s)
		require.Equal(t, jobs, Generate(s))
		require.Len(t, jobs, s.Jobs)
		require.Zero(t, jobs[0].Submit)
		for i, j := range jobs {
			require.Equal(t, i+1, j.ID)
			require.True(t, j.CPUs >= 1 && j.CPUs <= s.Nodes, "cpus %d on %d nodes", j.CPUs, s.Nodes)
			require.GreaterOrEqual(t, float64(j.Limit*60), j.Run, "the limit covers the run")
			require.True(t, j.Run >= s.RunMin/s.Scale-0.05 && j.Run <= s.RunMax/s.Scale+0.05, "run %v", j.Run)
			if i > 0 {
				require.GreaterOrEqual(t, j.Submit, jobs[i-1].Submit)
			}
		}
		if span := jobs[len(jobs)-1].Submit; span >= 10 {
			require.InDelta(t, s.Load, OfferedLoad(jobs, s.Nodes), s.Load*0.05/span*10+1e-9)
		}
	})
}

// Without over-askers the limits are 1.2 to 3 times the runs, rounded up
// to minutes.
func TestGenerateLimitsWithoutOverask(t *testing.T) {
	for _, j := range Generate(LogSpec{Jobs: 200, Nodes: 8, Load: 0.9, Scale: 60, RunMin: 120, RunMax: 7200, Seed: 3}) {
		require.LessOrEqual(t, j.Limit, int(math.Ceil(3*j.Run/60)))
		require.GreaterOrEqual(t, j.Limit, int(math.Ceil(1.2*j.Run/60-1e-9)))
	}
}
