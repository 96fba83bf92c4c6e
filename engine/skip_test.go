package engine

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/bursar-hpc/bursar/internal/testlong"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// runBothWays runs s event-driven (the default) and tick by tick (the
// oracle), keeping the series and not (a run without one samples a
// skipped stretch once), and fails unless metrics.json, journal.jsonl,
// series.csv and the report are byte for byte the same. It returns the
// event-driven run that keeps its series.
func runBothWays(t require.TestingT, s Scenario, what string) *Result {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	var first *Result
	for _, series := range []bool{true, false} {
		what := fmt.Sprintf("%s (series %v)", what, series)
		ev, err := Run(s, Options{Journal: true, Series: series})
		require.NoError(t, err, what)
		tbt, err := Run(s, Options{Journal: true, Series: series, TickByTick: true})
		require.NoError(t, err, what)
		require.Zero(t, tbt.TicksSkipped, "%s: the oracle skipped ticks", what)
		require.Equal(t, string(MetricsFile(tbt)), string(MetricsFile(ev)), "%s: metrics.json differs", what)
		require.Equal(t, tbt.JournalRecords, ev.JournalRecords, "%s: journal records", what)
		require.True(t, bytes.Equal(tbt.Journal, ev.Journal), "%s: journal.jsonl differs", what)
		require.Equal(t, string(SeriesCSV(tbt)), string(SeriesCSV(ev)), "%s: series.csv differs", what)
		var rt, re bytes.Buffer
		require.NoError(t, WriteReport(&rt, tbt), what)
		require.NoError(t, WriteReport(&re, ev), what)
		require.Equal(t, rt.String(), re.String(), "%s: report differs", what)
		require.Equal(t, tbt.Probe, ev.Probe, "%s: probe observations", what)
		if first == nil {
			first = ev
		} else {
			require.Equal(t, first.TicksSkipped, ev.TicksSkipped, "%s: the series changes what is skipped", what)
		}
	}
	return first
}

// withoutAdaptive is s with its cast written out and adaptive-sci taken
// out of it: adaptive-sci meters its inference on every tick, so a cast
// with it has no quiet tick to skip.
func withoutAdaptive(s Scenario) Scenario {
	s = s.Explicit()
	s.Cast = slices.DeleteFunc(slices.Clone(s.Cast), func(c Campaign) bool { return c.Agent == AgentAdaptive })
	return s
}

// steadyPolicies are the policies whose state only changes at events
// (policy/baseline.Steady), so that they can skip quiet ticks; the others
// tick every second.
var steadyPolicies = []string{"fifo", "priority", "static", "quota"}

// The paper's scenario, seeds 1–4, probe off and on, under the Bursar
// broker: event-driven and tick by tick print the same bytes. Its cast
// has adaptive-sci, which acts on every tick, so nothing is skipped.
func TestEventSkippingPaperScenarioIsExact(t *testing.T) {
	testlong.Skip(t, "the paper scenario with and without event skipping")
	for _, seed := range []int64{1, 2, 3, 4} {
		for _, probe := range []bool{false, true} {
			s := DefaultScenario()
			s.Seed, s.Probe = seed, probe
			res := runBothWays(t, s, fmt.Sprintf("seed %d probe %v", seed, probe))
			require.Zero(t, res.TicksSkipped, "adaptive-sci acts on every tick")
		}
	}
}

// The paper's scenario under every policy of the registry, and the same
// cast with no science work and without adaptive-sci, where the steady
// baselines do skip. (With work, naive-sci asks on every tick under static
// and quota, whose limits are below its 256-GPU request.)
func TestEventSkippingEveryPolicyIsExact(t *testing.T) {
	testlong.Skip(t, "every policy with and without event skipping")
	for _, name := range Policies {
		t.Run(name, func(t *testing.T) {
			for _, probe := range []bool{false, true} {
				s := DefaultScenario()
				s.Policy, s.Probe = name, probe
				runBothWays(t, s, fmt.Sprintf("paper probe %v", probe))

				s.Tasks = 0
				q := withoutAdaptive(s)
				res := runBothWays(t, q, fmt.Sprintf("no adaptive probe %v", probe))
				if slices.Contains(steadyPolicies, name) {
					require.Positive(t, res.TicksSkipped, "a steady policy skips the quiet ticks")
				}
			}
		})
	}
}

// Off-default scenarios where skipping really happens: little science
// work (naive-sci idles early), no storms, a long horizon, small and
// large pools; every one exact, under Bursar, two steady baselines and a
// ticking one. fifo skips in every one of them; quota's per-campaign limit
// on a 256-GPU pool is below naive-sci's 256-GPU request, which it then
// files, and is denied, on every tick, so nothing is quiet there.
func TestEventSkippingOffDefaultScenarios(t *testing.T) {
	testlong.Skip(t, "random scenarios with and without event skipping")
	variants := []struct {
		name  string
		tweak func(*Scenario)
	}{
		{"little work", func(s *Scenario) { s.Tasks = 30 }},
		{"no work", func(s *Scenario) { s.Tasks = 0 }},
		{"no storms", func(s *Scenario) { s.Storms = 0; s.Tasks = 30 }},
		{"long run", func(s *Scenario) { s.Ticks = 86400; s.Tasks = 100; s.Probe = true }},
		{"pool 256", func(s *Scenario) { s.Pool = 256; s.Tasks = 30; s.Probe = true }},
		{"pool 2048", func(s *Scenario) { s.Pool = 2048; s.Tasks = 30; s.Storms = 3 }},
		{"sample every 60", func(s *Scenario) { s.SampleEvery = 60; s.Tasks = 30 }},
		{"leaky", func(s *Scenario) { s.Leaky = true; s.Tasks = 30 }},
	}
	for _, v := range variants {
		for _, policy := range []string{"", "fifo", "quota", "fairshare"} {
			t.Run(v.name+"/"+policy, func(t *testing.T) {
				s := DefaultScenario()
				s.Policy = policy
				v.tweak(&s)
				runBothWays(t, s, "paper cast")
				res := runBothWays(t, withoutAdaptive(s), "no adaptive")
				if policy == "fifo" || policy == "" {
					require.Positive(t, res.TicksSkipped)
				}
				if policy != "fairshare" {
					t.Logf("%s under %s: %d of %d ticks skipped (%.1f %%)", v.name, policyLabel(policy), res.TicksSkipped, s.Ticks, 100*float64(res.TicksSkipped)/float64(s.Ticks))
				}
			})
		}
	}
}

// Any scenario the knobs can describe, as is, without adaptive-sci or
// with a hog instead of the science and the storms, with any patience of
// the probe, under any policy:
// event-driven and tick by tick print the same bytes.
func TestPropertyEventSkippingIsExact(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := DefaultScenario()
		s.Policy = rapid.SampledFrom(append([]string{""}, Policies...)).Draw(rt, "policy")
		s.Seed = rapid.Int64Range(0, 1000).Draw(rt, "seed")
		s.Storms = rapid.IntRange(0, 4).Draw(rt, "storms")
		s.Pool = rapid.IntRange(guaranteedSum(&s), 2048).Draw(rt, "pool")
		s.Headroom = rapid.IntRange(0, s.Pool).Draw(rt, "headroom")
		s.Tasks = rapid.IntRange(0, 400).Draw(rt, "tasks")
		s.Leaky = rapid.Bool().Draw(rt, "leaky")
		s.Grace = rapid.IntRange(0, 300).Draw(rt, "grace")
		s.SciRate = float64(rapid.IntRange(0, 512).Draw(rt, "sci_rate"))
		s.SciBucket = float64(rapid.IntRange(0, 400000).Draw(rt, "sci_bucket"))
		s.SciBurst = rapid.IntRange(64, 512).Draw(rt, "sci_burst")
		s.StormRate = float64(rapid.IntRange(0, 256).Draw(rt, "storm_rate"))
		s.StormBucket = float64(rapid.IntRange(0, 200000).Draw(rt, "storm_bucket"))
		s.StormBurst = rapid.IntRange(16, 512).Draw(rt, "storm_burst")
		s.Ticks = rapid.IntRange(1, 12000).Draw(rt, "ticks")
		s.StormStart = rapid.IntRange(0, s.Ticks).Draw(rt, "storm_start")
		s.StormEnd = rapid.IntRange(s.StormStart+1, s.Ticks+600).Draw(rt, "storm_end")
		s.SampleEvery = rapid.IntRange(1, 120).Draw(rt, "sample_every")
		s.Probe = rapid.Bool().Draw(rt, "probe")
		s.IOCapacity = float64(rapid.IntRange(0, 64).Draw(rt, "io_capacity"))
		s.InferenceCapacity = float64(rapid.IntRange(0, 10000).Draw(rt, "inference_capacity"))
		switch rapid.IntRange(0, 2).Draw(rt, "cast") {
		case 1:
			s = withoutAdaptive(s)
		case 2:
			s = withHog(s, rapid.IntRange(64, s.Pool-32).Draw(rt, "hog gpus"), rapid.IntRange(1, 3000).Draw(rt, "hog lease"))
			if rapid.Bool().Draw(rt, "no victim") {
				s.Cast = slices.DeleteFunc(s.Cast, func(c Campaign) bool { return c.Name == "victim" })
			}
		}
		if s.Probe && rapid.Bool().Draw(rt, "probe patience") {
			// A probe that outwaits the request TTL sees its request
			// expire and asks again.
			s = s.Explicit()
			s.Cast = slices.Clone(s.Cast)
			for i := range s.Cast {
				if s.Cast[i].Agent == AgentProbe {
					s.Cast[i].GiveUp = rapid.IntRange(1, 3000).Draw(rt, "probe give_up")
				}
			}
		}
		runBothWays(rt, s, "drawn scenario")
	})
}

// hogScenario is a cast in which everybody is quiet for long stretches
// while the probe waits: a victim-like hog asks for 448 of the 512 GPUs
// whenever it holds none, for 2000 s at a time, so that the probe's 128
// GPUs rarely fit and it gives up at its censor; the victim comes and
// goes, and the backfill (headroom: the whole pool) never asks. The storm
// window (where the study measures Jain's index) covers the run.
func hogScenario(policy string) Scenario {
	s := DefaultScenario()
	s.Probe = true
	s.Policy = policy
	s.StormStart, s.StormEnd = 0, s.Ticks+1
	return withHog(s, 448, 2000)
}

// withHog is s with its cast written out, the science and storm campaigns
// taken out, a hog of gpus GPUs and leases of lease seconds put in after
// the victim, and a backfill that never asks.
func withHog(s Scenario, gpus, lease int) Scenario {
	s = s.Explicit()
	s.Cast = slices.DeleteFunc(slices.Clone(s.Cast), func(c Campaign) bool {
		return c.Agent == AgentAdaptive || c.Agent == AgentNaive || c.Agent == AgentStorm
	})
	hog := Campaign{Name: "hog", Agent: AgentVictim, Budget: 1e9, Guaranteed: 64, Sustained: float64(gpus) / 2,
		BurstCeiling: gpus, Bucket: 1e9, Class: policy.Interactive, GPUs: gpus, Period: 1, Lease: lease}
	s.Cast = slices.Insert(s.Cast, 1, hog)
	s.Cast[len(s.Cast)-1].Headroom = s.Pool
	return s
}

// The probe gives up, and the study accumulates Jain's terms, inside
// skipped stretches: both come out as tick by tick.
func TestEventSkippingHogIsExact(t *testing.T) {
	for _, policy := range append([]string{""}, Policies...) {
		res := runBothWays(t, hogScenario(policy), policy)
		censored := 0
		for _, o := range res.Probe {
			if o.Latency == ProbeCensor {
				censored++
			}
		}
		if policy == "" || policy == "fifo" || policy == "priority" {
			require.Positive(t, censored, "%s: the probe gives up at least once", policy)
			require.Greater(t, res.TicksSkipped, hogScenario(policy).Ticks/2, policy)
		}
		t.Logf("%s: %d ticks skipped, the probe gave up %d times of %d", policyLabel(policy), res.TicksSkipped, censored, len(res.Probe))
	}
}

// policyLabel names a scenario's policy for a log line.
func policyLabel(policy string) string {
	if policy == "" {
		return "bursar (unnamed)"
	}
	return policy
}

// A patient probe (give-up 2000 s) behind a hog that leaves it 12 GPUs
// sees its request expire after the TTL in a quiet stretch, and must ask
// again on the next tick: the expiry itself changes nothing the policy
// must tick for, so only the probe's answer stops the skip there.
func TestEventSkippingExpiredRequestIsExact(t *testing.T) {
	for _, policy := range append([]string{""}, Policies...) {
		s := DefaultScenario()
		s.Probe, s.Policy = true, policy
		s = withHog(s, 500, 2000)
		s.Cast = slices.DeleteFunc(s.Cast, func(c Campaign) bool { return c.Name == "victim" })
		for i := range s.Cast {
			if s.Cast[i].Agent == AgentProbe {
				s.Cast[i].GiveUp = 2000
			}
		}
		res := runBothWays(t, s, policyLabel(policy))
		if policy == "" || policy == "fifo" {
			require.Greater(t, res.TicksSkipped, s.Ticks*9/10, policy)
		}
	}
}
