package engine

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScenarioValidationNamesTheKnob(t *testing.T) {
	cases := []struct {
		name  string
		tweak func(*Scenario)
		want  string
	}{
		{"negative pool", func(s *Scenario) { s.Pool = -1 }, "pool"},
		{"zero pool", func(s *Scenario) { s.Pool = 0 }, "pool"},
		{"negative tasks", func(s *Scenario) { s.Tasks = -5 }, "tasks"},
		{"negative seed", func(s *Scenario) { s.Seed = -7 }, "seed"},
		{"empty storm window", func(s *Scenario) { s.StormEnd = s.StormStart }, "storm window"},
		{"inverted storm window", func(s *Scenario) { s.StormStart, s.StormEnd = 5400, 3600 }, "storm window"},
		{"sample period 0", func(s *Scenario) { s.SampleEvery = 0 }, "sample_every"},
		{"no ticks", func(s *Scenario) { s.Ticks = 0 }, "ticks"},
		{"NaN rate", func(s *Scenario) { s.SciRate = math.NaN() }, "sci_rate"},
		{"infinite io", func(s *Scenario) { s.IOCapacity = math.Inf(1) }, "io_capacity"},
		{"negative grace", func(s *Scenario) { s.Grace = -1 }, "grace"},
		{"science burst below guarantee", func(s *Scenario) { s.SciBurst = 32 }, "sci_burst"},
		{"storm burst below guarantee", func(s *Scenario) { s.StormBurst = 8 }, "storm_burst"},
		{"guarantees overbook the pool", func(s *Scenario) { s.Pool = 128 }, "exceed the pool"},
		{"too many storms", func(s *Scenario) { s.Storms = 30 }, "exceed the pool"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := DefaultScenario()
			c.tweak(&s)
			err := s.Validate()
			require.ErrorIs(t, err, ErrInvalidScenario)
			require.Contains(t, err.Error(), c.want)
			_, err = Run(s, Options{})
			require.ErrorIs(t, err, ErrInvalidScenario, "Run refuses what Validate refuses")
		})
	}
	def := DefaultScenario()
	require.NoError(t, def.Validate())
}

func TestKnobSetRefusesWrongKinds(t *testing.T) {
	s := DefaultScenario()
	grace, ok := KnobByName("grace")
	require.True(t, ok)
	require.Error(t, grace.Set(&s, 1.5), "an int knob takes whole numbers")
	require.NoError(t, grace.Set(&s, 90))
	require.Equal(t, 90, s.Grace)
	leaky, _ := KnobByName("leaky")
	require.Error(t, leaky.Set(&s, 2))
	require.NoError(t, leaky.Set(&s, 1))
	require.True(t, s.Leaky)
	require.Equal(t, "true", leaky.Format(&s))
	bucket, _ := KnobByName("storm_bucket")
	require.NoError(t, bucket.Set(&s, 25000))
	require.Equal(t, "25000", bucket.Format(&s))
	require.Error(t, bucket.Set(&s, math.NaN()))
	_, ok = KnobByName("no_such_knob")
	require.False(t, ok)
	require.Contains(t, KnobNames(), "storm_bucket")
}

// Every knob a user can name reads back what was set.
func TestEveryKnobRoundTrips(t *testing.T) {
	for i := range Knobs {
		k := &Knobs[i]
		s := DefaultScenario()
		v := 1.0
		if k.Kind != "bool" {
			v = k.Get(&s) + 1
		}
		require.NoError(t, k.Set(&s, v), k.Name)
		require.Equal(t, v, k.Get(&s), k.Name)
	}
}

func TestRunIsDeterministic(t *testing.T) {
	s := DefaultScenario()
	s.Probe = true
	s.Seed = 11
	a, err := Run(s, Options{Journal: true, Series: true})
	require.NoError(t, err)
	b, err := Run(s, Options{Journal: true, Series: true})
	require.NoError(t, err)
	require.Equal(t, string(a.Journal), string(b.Journal))
	require.Equal(t, string(MetricsFile(a)), string(MetricsFile(b)))
	require.Equal(t, SeriesCSV(a), SeriesCSV(b))
	require.Equal(t, s.Ticks/s.SampleEvery, a.Series.Len())

	// A sweep keeps no series, and measures exactly the same.
	c, err := Run(s, Options{})
	require.NoError(t, err)
	require.Zero(t, c.Series.Len())
	require.Equal(t, string(MetricsFile(a)), string(MetricsFile(c)))
	var ra, rc bytes.Buffer
	require.NoError(t, WriteReport(&ra, a))
	require.NoError(t, WriteReport(&rc, c))
	require.Equal(t, ra.String(), rc.String())
}

func TestSeriesCSVShape(t *testing.T) {
	s := DefaultScenario()
	s.Ticks = 100
	s.SampleEvery = 10
	r, err := Run(s, Options{Series: true})
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(SeriesCSV(r))), "\n")
	require.Len(t, lines, 1+10, "a header and one row per sample")
	header := strings.Split(lines[0], ",")
	require.Equal(t, 2+5*5, len(header), "five display groups: victim, adaptive-sci, naive-sci, storm, backfill")
	require.Contains(t, header, "adaptive_sci_held")
	require.Contains(t, header, "storm_inference")
	for _, l := range lines[1:] {
		require.Len(t, strings.Split(l, ","), len(header))
	}
	require.True(t, strings.HasPrefix(lines[1], "10,"))
}

// Metrics without storm samples or probe have NaN where the model says so,
// and JSON writes them as null.
func TestEmptyMetricsAreNull(t *testing.T) {
	s := DefaultScenario()
	s.Ticks = 600
	s.StormStart, s.StormEnd = 3600, 5400 // never reached
	r, err := Run(s, Options{})
	require.NoError(t, err)
	require.True(t, math.IsNaN(r.Metrics.VictimP50In))
	require.True(t, math.IsNaN(r.Metrics.StormMeanHeld))
	j := string(MetricsFile(r))
	require.Contains(t, j, `"victim_p50_in": null`)
	require.Contains(t, j, `"storm_mean_held": null`)
	require.Contains(t, j, `"probe_lats": []`)
}

// The flow rates the replay marks come from the registered envelopes: the
// science campaigns' io and inference, every storm's inference summed, and
// none for the victim and the backfill.
func TestDisplayFlowRates(t *testing.T) {
	s := DefaultScenario()
	s.Storms, s.Ticks = 3, 10
	r, err := Run(s, Options{})
	require.NoError(t, err)
	io, inf := r.DisplayFlowRates()
	DisplayVictim, DisplayAdaptive, DisplayNaive := r.GroupOf(AgentVictim), r.GroupOf(AgentAdaptive), r.GroupOf(AgentNaive)
	DisplayStorm, DisplayBackfill := r.GroupOf(AgentStorm), r.GroupOf(AgentBackfill)
	require.Equal(t, []int{0, 1, 2, 3, 4}, []int{DisplayVictim, DisplayAdaptive, DisplayNaive, DisplayStorm, DisplayBackfill}, "the paper's display order")
	require.Equal(t, 6.0, io[DisplayAdaptive])
	require.Equal(t, 6.0, io[DisplayNaive])
	require.Equal(t, 500.0, inf[DisplayNaive])
	require.Equal(t, 150.0, inf[DisplayStorm], "three storms of 50 tok/s")
	require.True(t, math.IsNaN(io[DisplayStorm]))
	require.True(t, math.IsNaN(io[DisplayVictim]) && math.IsNaN(inf[DisplayVictim]))
	require.True(t, math.IsNaN(inf[DisplayBackfill]))
	require.Len(t, r.Envelopes, 1+2+3+1)
}
