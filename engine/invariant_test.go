package engine

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/bursar-hpc/bursar/internal/stats"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// drawScenario draws a valid scenario from the whole range of every knob
// of `bursar-sweep run` (ticks kept short so that a draw runs quickly).
func drawScenario(t *rapid.T) Scenario {
	s := DefaultScenario()
	s.Storms = rapid.IntRange(0, 6).Draw(t, "storms")
	s.Pool = rapid.IntRange(guaranteedSum(&s), 2048).Draw(t, "pool")
	s.IOCapacity = rapid.Float64Range(0, 64).Draw(t, "io_capacity")
	s.InferenceCapacity = rapid.Float64Range(0, 20000).Draw(t, "inference_capacity")
	s.Headroom = rapid.IntRange(0, 2*s.Pool).Draw(t, "headroom") // above the pool runs: the backfill never fills
	s.Seed = rapid.Int64Range(0, 1<<40).Draw(t, "seed")
	s.Tasks = rapid.IntRange(0, 400).Draw(t, "tasks")
	s.Leaky = rapid.Bool().Draw(t, "leaky")
	s.Grace = rapid.IntRange(0, 600).Draw(t, "grace")
	s.SciRate = rapid.Float64Range(0, 1024).Draw(t, "sci_rate")
	s.SciBucket = rapid.Float64Range(0, 1e6).Draw(t, "sci_bucket")
	s.SciBurst = rapid.IntRange(64, 2*s.Pool).Draw(t, "sci_burst")
	s.StormRate = rapid.Float64Range(0, 1024).Draw(t, "storm_rate")
	s.StormBucket = rapid.Float64Range(0, 1e6).Draw(t, "storm_bucket")
	s.StormBurst = rapid.IntRange(16, 2*s.Pool).Draw(t, "storm_burst")
	s.Ticks = rapid.IntRange(1, 1500).Draw(t, "ticks")
	s.StormStart = rapid.IntRange(0, s.Ticks+10).Draw(t, "storm_start")
	s.StormEnd = rapid.IntRange(s.StormStart+1, s.Ticks+20).Draw(t, "storm_end")
	s.Probe = rapid.Bool().Draw(t, "probe")
	s.SampleEvery = rapid.IntRange(1, 60).Draw(t, "sample_every")
	return s
}

// TestPropertyOverbookProofNeverChangesTheRun: at any pool, the report's
// overbooking proof is refused, registers nothing, journals nothing, and
// the run (metrics, journal, series) is the run without it.
func TestPropertyOverbookProofNeverChangesTheRun(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := drawScenario(t)
		require.NoError(t, s.Validate())
		with, err := Run(s, Options{Journal: true, Series: true})
		require.NoError(t, err)
		require.NoError(t, with.CheckInvariants())
		require.True(t, errors.Is(with.OverbookRefusal, policy.ErrOverbooked), "refused: %v", with.OverbookRefusal)
		want := 4 + s.Storms // victim, two science, storms, backfill
		if s.Probe {
			want++
		}
		require.Len(t, with.Envelopes, want, "the proof registered no campaign")
		for _, env := range with.Envelopes {
			require.NotEqual(t, "overbooked", env.Name)
		}

		without, err := Run(s, Options{Journal: true, Series: true, skipOverbookProof: true})
		require.NoError(t, err)
		// Compared as written (NaN ≠ NaN in a struct comparison).
		require.Equal(t, string(MetricsFile(without)), string(MetricsFile(with)))
		require.True(t, bytes.Equal(without.Journal, with.Journal), "same journal")
		require.Equal(t, string(SeriesCSV(without)), string(SeriesCSV(with)))

		// The pool is never overdrawn at a sample.
		for i := range with.Series.T {
			held := 0
			for d := range with.Groups {
				held += with.Series.Held[d][i]
			}
			require.LessOrEqual(t, held, s.Pool, "sample %d", i)
		}
	})
}

// The example: at pool 768 the prototype's fixed 400-GPU proof was
// accepted and held 400 GPUs (utilization 43 %, the probe's p50 303 s); it
// is refused now, and the run reads 82 % and 4 s.
func TestOverbookProofAtPool768(t *testing.T) {
	s := DefaultScenario()
	s.Pool, s.Probe = 768, true
	res, err := Run(s, Options{})
	require.NoError(t, err)
	require.NoError(t, res.CheckInvariants())
	require.Equal(t, "82.4", pyFloat(100*res.Metrics.Utilization, 0, 1))
	require.Equal(t, 4.0, stats.Percentile(res.Metrics.ProbeLats, 50))
}

func TestCheckInvariantsReportsAnAcceptedProof(t *testing.T) {
	r := &Result{}
	require.ErrorIs(t, r.CheckInvariants(), ErrInvariantViolated)
}

// drawCast draws an explicit scenario: a random cast of every agent kind
// with random envelopes and parameters, guarantees within the pool.
func drawCast(t *rapid.T) Scenario {
	s := DefaultScenario()
	s.Pool = rapid.IntRange(1, 1500).Draw(t, "pool")
	s.Ticks = rapid.IntRange(1, 1200).Draw(t, "ticks")
	s.SampleEvery = rapid.IntRange(1, 30).Draw(t, "sample_every")
	s.StormStart = rapid.IntRange(0, s.Ticks).Draw(t, "window.start")
	s.StormEnd = rapid.IntRange(s.StormStart+1, s.Ticks+10).Draw(t, "window.end")
	s.Leaky = rapid.Bool().Draw(t, "leaky")
	s.Grace = rapid.IntRange(0, 200).Draw(t, "grace")
	s.Seed = rapid.Int64Range(0, 1000).Draw(t, "seed")
	n := rapid.IntRange(1, 9).Draw(t, "campaigns")
	left := s.Pool
	s.Cast = []Campaign{}
	for i := range n {
		agent := rapid.SampledFrom(AgentKinds).Draw(t, "agent")
		c, _ := DefaultCampaign(agent)
		c.Name = fmt.Sprintf("c%d", i)
		if rapid.Bool().Draw(t, "grouped") {
			c.Group = agent
		}
		c.Guaranteed = rapid.IntRange(0, min(left, 64)).Draw(t, "guaranteed")
		left -= c.Guaranteed
		c.Sustained = rapid.Float64Range(0, float64(s.Pool)).Draw(t, "sustained")
		c.SustainedIsPool, c.CeilingIsPool = false, false
		c.BurstCeiling = rapid.IntRange(c.Guaranteed, s.Pool).Draw(t, "burst_ceiling")
		c.Bucket = rapid.Float64Range(0, 5e5).Draw(t, "bucket")
		c.Budget = rapid.Float64Range(0, 5e4).Draw(t, "budget")
		c.GPUs = rapid.IntRange(1, s.Pool+16).Draw(t, "gpus")
		c.Period = max(1, c.Period*rapid.IntRange(1, 3).Draw(t, "period×")/2)
		c.Lease = rapid.IntRange(1, 900).Draw(t, "lease")
		c.Tasks = rapid.IntRange(0, 200).Draw(t, "tasks")
		c.Stream = rapid.IntRange(0, 2).Draw(t, "stream")
		c.Headroom = rapid.IntRange(0, s.Pool).Draw(t, "headroom")
		c.Window.Start = rapid.IntRange(0, s.Ticks).Draw(t, "window.start")
		c.Window.End = rapid.IntRange(c.Window.Start+1, s.Ticks+10).Draw(t, "window.end")
		s.Cast = append(s.Cast, c)
	}
	return s
}

// On any cast, the proof is refused and changes nothing, and the pool is
// never overdrawn.
func TestPropertyOverbookProofOnAnyCast(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := drawCast(t)
		require.NoError(t, s.Validate())
		with, err := Run(s, Options{Journal: true, Series: true})
		require.NoError(t, err)
		require.NoError(t, with.CheckInvariants())
		require.Len(t, with.Envelopes, len(s.Cast))
		without, err := Run(s, Options{Journal: true, Series: true, skipOverbookProof: true})
		require.NoError(t, err)
		require.Equal(t, string(MetricsFile(without)), string(MetricsFile(with)))
		require.True(t, bytes.Equal(without.Journal, with.Journal))
		require.Equal(t, string(SeriesCSV(without)), string(SeriesCSV(with)))
		for i := range with.Series.T {
			held := 0
			for d := range with.Groups {
				held += with.Series.Held[d][i]
			}
			require.LessOrEqual(t, held, s.Pool)
		}
		var rep bytes.Buffer
		require.NoError(t, WriteReport(&rep, with))
		require.Contains(t, rep.String(), "[invariant ok]")
	})
}
