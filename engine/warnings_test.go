package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWarningsNameTheDegenerateCampaign: the paper's scenario has no
// warning; on a 300-GPU pool the storm's 384-GPU target cannot fit, a
// storm rate of 8 below its guarantee of 16 contradicts the envelope,
// and a headroom of 301 leaves the backfill idle — each named, and each
// scenario still runs (issue 34 §7–8).
func TestWarningsNameTheDegenerateCampaign(t *testing.T) {
	def := DefaultScenario()
	assert.Empty(t, def.Warnings(), "the paper's scenario is sound")
	defCast := def.Explicit()
	assert.Empty(t, defCast.Warnings(), "and so is its written-out cast")

	s := DefaultScenario()
	s.Pool, s.StormRate, s.Headroom, s.Ticks = 300, 8, 301, 400
	require.NoError(t, s.Validate(), "a degenerate scenario is not an invalid one")
	w := s.Warnings()
	require.Len(t, w, 3, "%q", w)
	assert.Contains(t, w[0], "campaign storm: its target of 384 outstanding GPUs is above the pool of 300 GPUs")
	assert.Contains(t, w[1], "campaign storm: guaranteed 16 GPUs is above its sustained rate of 8 GPUs")
	assert.Contains(t, w[2], "campaign backfill: headroom 301 GPUs is above the pool of 300: the backfill never fills")
	cast := s.Explicit()
	assert.Equal(t, w, cast.Warnings(), "the knobs' form and the written cast say the same")

	res, err := Run(s, Options{})
	require.NoError(t, err)
	assert.Contains(t, string(MetricsFile(res)), "\"warnings\": [\n  \"campaign storm: its target of 384")
	assert.NotContains(t, string(MetricsFile(mustRun(t, DefaultScenarioShort()))), "warnings", "a sound run keeps the prototype's bytes")
}

// DefaultScenarioShort is the paper's scenario over a few hundred ticks.
func DefaultScenarioShort() Scenario {
	s := DefaultScenario()
	s.Ticks = 400
	return s
}

func mustRun(t *testing.T, s Scenario) *Result {
	t.Helper()
	res, err := Run(s, Options{})
	require.NoError(t, err)
	return res
}

// TestHeadroomAbovePoolNeverFills: the prototype runs a headroom above
// the pool, and its backfill then never holds a GPU.
func TestHeadroomAbovePoolNeverFills(t *testing.T) {
	s := DefaultScenarioShort()
	s.Headroom = s.Pool + 1
	res, err := Run(s, Options{Series: true})
	require.NoError(t, err)
	for g, grp := range res.Groups {
		if grp.Name == "backfill" {
			for _, h := range res.Series.Held[g] {
				require.Zero(t, h, "the backfill filled with headroom above the pool")
			}
			return
		}
	}
	t.Fatal("no backfill group")
}
