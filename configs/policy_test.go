package configs

import (
	"testing"

	"github.com/bursar-hpc/bursar/policy/quota"
	"github.com/stretchr/testify/require"
)

// Every policy, with and without knobs, prints and parses back to itself.
func TestPolicyKeyRoundTrips(t *testing.T) {
	cases := []struct{ in, printed string }{
		{"bursar", "bursar"},
		{"fifo", "fifo"},
		{"{name: quota, borrowing_limit: 64}", "{name: quota, borrowing_limit: 64}"},
		{"{name: quota, borrowing_limit: -1}", "quota"},
		{"{name: quota, queueing_strategy: StrictFIFO}", "{name: quota, queueing_strategy: StrictFIFO}"},
		{"{name: quota, queueing_strategy: BestEffortFIFO}", "quota"},
		{"{name: quota, preemption_strategies: [LessThanOrEqualToFinalShare]}", `{name: quota, preemption_strategies: ["LessThanOrEqualToFinalShare"]}`},
		{"{name: quota, preemption_strategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]}", "quota"},
		{"static", "static"},
		{"{name: static, owners: 3, lend: scavenger}", "{name: static, owners: 3, lend: scavenger}"},
		{"{name: static, owners: 8, lend: none}", "static"},
		{"{name: priority, inflate: [storm]}", `{name: priority, inflate: ["storm"]}`},
		{"{name: fairshare, half_life: 3600, w_age: 0}", "{name: fairshare, half_life: 3600, w_age: 0}"},
		{"{name: fairshare, calc_period: 1}", "fairshare"},
		{"{name: fairshare, calc_period: 300}", "{name: fairshare, calc_period: 300}"},
		{"{name: budget, calc_period: 60}", "{name: budget, calc_period: 60}"},
		{"{name: budget, window: 3600, min_runtime: {agent-burst: 60}, groups: [{name: sci, members: [victim]}]}",
			`{name: budget, window: 3600, min_runtime: {deadline: never, interactive: never, agent-burst: 60, opportunistic: 0}, groups: [{name: "sci", members: ["victim"]}]}`},
		{"{name: budget, min_runtime: {interactive: 600, opportunistic: never}, restart: zero}",
			`{name: budget, min_runtime: {deadline: never, interactive: 600, agent-burst: 3600, opportunistic: never}, restart: zero}`},
		{"{name: budget, restart: checkpoint}", "budget"},
		{"{name: budget, restart: 'checkpoint:60'}", "{name: budget, restart: checkpoint:60}"},
		{"{name: quota, reclaim_within_cohort: Any, fair_sharing: true}", "{name: quota, reclaim_within_cohort: Any, fair_sharing: true}"},
		{"{name: quota, reclaim_within_cohort: Never, fair_sharing: false}", "quota"},
		{"{name: quota, fair_sharing: true}", "{name: quota, fair_sharing: true}"},
		{"quota-fair", "quota-fair"},
		{"{name: quota-fair, borrowing_limit: 4}", "{name: quota-fair, borrowing_limit: 4}"},
		{"{name: static, partitions: condo}", "static"},
		{"{name: static, partitions: share}", "{name: static, partitions: share}"},
		{"static-share", "static-share"},
		{"{name: static-share, lend: scavenger}", "{name: static-share, lend: scavenger}"},
		{"slurm", "slurm"},
		{"{name: slurm, bf_window: 3600, w_fairshare: 10000, no_fair_tree: true}", "{name: slurm, bf_window: 3600, w_fairshare: 10000, no_fair_tree: true}"},
		{"{name: slurm, bf_max_job_test: 1, calc_period: 60}", "{name: slurm, bf_max_job_test: 1, calc_period: 60}"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			s, err := ParseScenario("s.yaml", []byte("pool: 512\nticks: 100\npolicy: "+c.in+"\ncampaigns:\n  - name: victim\n    agent: victim\n  - name: storm\n    agent: storm\n"))
			require.NoError(t, err)
			require.Equal(t, c.printed, FormatPolicy(&s))
			back, err := ParseScenario("back.yaml", FormatScenario(s))
			require.NoError(t, err)
			require.Equal(t, s.Policy, back.Policy)
			require.Equal(t, *s.PolicyKnobs, *back.PolicyKnobs)
			require.Equal(t, string(FormatScenario(s)), string(FormatScenario(back)))
		})
	}
}

// A config's policy applies to every run; a series' overrides it.
func TestConfigPolicyAndSeriesPolicy(t *testing.T) {
	c, err := Parse("c.yaml", []byte(`experiment: p
policy: {name: quota, borrowing_limit: 8}
seeds: [1]
fixed: {ticks: 100}
series:
  - name: a
  - name: b
    policy: fifo
`))
	require.NoError(t, err)
	plan, err := c.Plan(false, nil)
	require.NoError(t, err)
	require.Len(t, plan.Points, 2)
	require.Equal(t, "quota", plan.Points[0].Scenario.Policy)
	require.Equal(t, 8, quota.Slot.Get(*plan.Points[0].Scenario.PolicyKnobs).BorrowingLimit)
	require.Equal(t, "fifo", plan.Points[1].Scenario.Policy)
	_, err = Parse("c.yaml", []byte("experiment: p\nseeds: [1]\nseries:\n  - name: a\n    policy: {name: fifo, window: 3}\n"))
	require.ErrorContains(t, err, "c.yaml:5: series[0].policy.window: window is a knob of policy budget, not of fifo")
}

// A variant takes its base's knobs but those its preset fixes: setting
// one of those is an error naming the file, line and key.
func TestVariantRefusesItsPresetKeys(t *testing.T) {
	for _, c := range []struct{ in, err string }{
		{"{name: quota-fair, fair_sharing: false}", "s.yaml:3"},
		{"{name: quota-fair, reclaim_within_cohort: Never}", "reclaim_within_cohort"},
		{"{name: static-share, partitions: condo}", "partitions"},
		{"{name: quota, within_cluster_queue: LowerPriority}", "within_cluster_queue LowerPriority is not supported"},
		{"{name: quota, fair_sharing: maybe}", "fair_sharing must be true or false, got"},
	} {
		_, err := ParseScenario("s.yaml", []byte("pool: 512\nticks: 100\npolicy: "+c.in+"\ncampaigns:\n  - name: victim\n    agent: victim\n"))
		require.ErrorContains(t, err, c.err, c.in)
	}
}
