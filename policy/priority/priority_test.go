package priority_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/priority"
)

// setup registers an honest interactive victim and an agent-burst storm on
// 64 GPUs with a 10-s grace.
func setup(t *testing.T, knobs priority.Knobs) (*baseline.Core, *bt.Journal, policy.CampaignID, policy.CampaignID) {
	t.Helper()
	a, err := priority.New(bt.Config(64, 10), knobs)
	require.NoError(t, err)
	j := &bt.Journal{}
	a.SetRecorder(j)
	victim, err := a.Register(bt.Env("victim", 16, policy.Interactive))
	require.NoError(t, err)
	storm, err := a.Register(bt.Env("storm", 48, policy.AgentBurst))
	require.NoError(t, err)
	return a, j, victim, storm
}

// The honest victim preempts the storm's burst lease: notice at t=2, the
// lease ends at 2 + grace = 12, and the freed GPUs go to the victim at 12.
func TestInteractivePreemptsBurstWithGrace(t *testing.T) {
	a, j, victim, storm := setup(t, priority.Knobs{})
	stormReq, _ := a.Request(storm, 64, 1000, policy.AnyClass)
	a.Tick() // t=1: the storm takes the pool
	require.Equal(t, 64, a.Held(storm, policy.AnyClass))
	vReq, _ := a.Request(victim, 16, 60, policy.AnyClass)
	a.Tick() // t=2: notice
	notices := j.Of(policy.EventPreemptNotice)
	require.Len(t, notices, 1)
	require.Equal(t, policy.Event{T: 2, Kind: policy.EventPreemptNotice, Campaign: "storm", CampaignID: storm, Lease: stormReq, GPUs: 64, Class: policy.AgentBurst, Grace: 10}, notices[0])
	bt.Ticks(a, 9) // t=11: still under notice
	require.Equal(t, 0, a.Held(victim, policy.AnyClass))
	a.Tick() // t=12
	pre := j.Released(policy.ReasonPreempted)
	require.Len(t, pre, 1)
	require.Equal(t, 12, pre[0].T)
	g, ok := j.Grant(vReq)
	require.True(t, ok)
	require.Equal(t, 12, g.T)
	require.Equal(t, 11, g.Latency)
	require.Equal(t, policy.Reclaim, g.Path)
	// The 48 GPUs the victim did not need are free again for anyone.
	require.Equal(t, 48, a.Free())
}

// Inflation: the storm labels its requests interactive, so the victim is
// behind it in the same tier, FCFS, and cannot preempt it. Its request
// waits out the TTL and expires; the storm's lease is priced as
// interactive.
func TestInflationStarvesHonestInteractive(t *testing.T) {
	a, j, victim, storm := setup(t, priority.Knobs{Inflate: []string{"storm"}})
	_, _ = a.Request(storm, 64, 2000, policy.AgentBurst)
	a.Tick()
	g := j.Of(policy.EventGrant)
	require.Len(t, g, 1)
	require.Equal(t, policy.Interactive, g[0].Class)
	_, _ = a.Request(victim, 16, 60, policy.AnyClass)
	bt.Ticks(a, policy.RequestTTL+1)
	require.Empty(t, j.Of(policy.EventPreemptNotice))
	require.Equal(t, 0, a.Held(victim, policy.AnyClass))
	exp := j.Of(policy.EventRequestExpired)
	require.Len(t, exp, 1)
	require.Equal(t, "victim", exp[0].Campaign)
	require.Equal(t, 1+policy.RequestTTL+1, exp[0].T)
	// Priced at the class it claims: 64 GPUs × 2.0 per GPU-hour.
	// Charged from the tick after the grant on.
	ticks := float64(a.Now() - 1)
	// (the budget of 1e9 credits leaves ~1e-7 of precision per debit)
	require.InDelta(t, 64*2.0*ticks/3600, a.Spent(storm), 1e-3)
	require.Greater(t, a.Spent(storm), 64*2.0*(ticks-1)/3600)
}

// A head that does not fit blocks its own tier only: a later burst request
// starts in what is left (§6.12).
func TestBlockedHeadDoesNotBlockLowerTier(t *testing.T) {
	a, _, victim, storm := setup(t, priority.Knobs{})
	other, err := a.Register(bt.Env("other", 8, policy.Interactive))
	require.NoError(t, err)
	_, _ = a.Request(victim, 56, 1000, policy.AnyClass)
	a.Tick()
	// Interactive, 8 free: not even a partial grant (< 16), and nothing
	// of a lower tier to preempt.
	_, _ = a.Request(other, 32, 100, policy.AnyClass)
	_, _ = a.Request(storm, 8, 100, policy.AnyClass)
	a.Tick()
	require.Equal(t, 0, a.Held(other, policy.AnyClass))
	require.Equal(t, 8, a.Held(storm, policy.AnyClass))
}

// Victims: newest first, as a minimal set. Leases X 32 (t=1), Y 16 (t=2),
// Z 16 (t=3) fill the pool; an interactive request of 40 takes Z, then Y,
// then X greedily (64), and the minimal pass drops Y: Z + X = 48 ≥ 40.
func TestMinimalVictimSetNewestFirst(t *testing.T) {
	a, j, victim, storm := setup(t, priority.Knobs{})
	x, _ := a.Request(storm, 32, 1000, policy.AnyClass)
	a.Tick()
	_, _ = a.Request(storm, 16, 1000, policy.AnyClass)
	a.Tick()
	z, _ := a.Request(storm, 16, 1000, policy.AnyClass)
	a.Tick()
	require.Equal(t, 0, a.Free())
	_, _ = a.Request(victim, 40, 60, policy.AnyClass)
	a.Tick()
	var got []int
	for _, e := range j.Of(policy.EventPreemptNotice) {
		got = append(got, e.Lease)
	}
	require.Equal(t, []int{z, x}, got)
	// No further notice while those are in flight.
	bt.Ticks(a, 5)
	require.Len(t, j.Of(policy.EventPreemptNotice), 2)
}

// An inflating agent keeps its own books by its own label: a request it
// files as agent-burst is served as interactive, yet its Outstanding and
// Held for agent-burst count it, and ReleaseAll(agent-burst) releases it.
// (An agent that tops up "agent-burst outstanding" would otherwise ask
// again every second.)
func TestInflatedAgentKeepsItsOwnBooks(t *testing.T) {
	a, j, _, storm := setup(t, priority.Knobs{Inflate: []string{"storm"}})
	_, _ = a.Request(storm, 16, 100, policy.AgentBurst)
	require.Equal(t, 16, a.Outstanding(storm, policy.AgentBurst))
	require.Equal(t, 0, a.Outstanding(storm, policy.Interactive))
	a.Tick()
	require.Equal(t, 16, a.Held(storm, policy.AgentBurst))
	require.Equal(t, policy.Interactive, j.Of(policy.EventGrant)[0].Class)
	require.NoError(t, a.ReleaseAll(storm, policy.AgentBurst))
	require.Equal(t, 0, a.Held(storm, policy.AnyClass))
}

// priority copies its own rule for a fork (CloneRule): what
// internal/deepcopy would copy, field for field, along a small workload.
func TestCloneRuleCopiesEveryField(t *testing.T) {
	a, err := priority.New(bt.Config(8, 10), priority.Knobs{})
	require.NoError(t, err)
	require.NoError(t, bt.CloneRuleMatchesAlong(a))
}
