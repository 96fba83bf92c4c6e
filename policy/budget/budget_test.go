package budget_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/budget"
)

// A (share 1/2) takes the whole pool at t=1 for a long burst lease; B
// (share 1/2, no usage: priority +1/2) asks at once. A is above its share
// (priority 1/2 − 1 < 0), but its lease is younger than the 300-s minimum
// runtime of agent-burst: no notice until it is 300 s old, at t=301; the
// lease ends at 301 + grace and B is granted then.
func TestMinimumRuntimeIsNeverPreempted(t *testing.T) {
	for _, tc := range []struct {
		m, notice int
	}{{300, 301}, {0, 2}, {50, 51}} {
		knobs := budget.DefaultKnobs()
		knobs.Window = 1000
		knobs.CalcPeriod = 1 // priorities every tick
		knobs.MinRuntime[policy.AgentBurst] = tc.m
		a, err := budget.New(bt.Config(10, 10), knobs)
		require.NoError(t, err)
		j := &bt.Journal{}
		a.SetRecorder(j)
		ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
		cb, _ := a.Register(bt.Env("b", 1, policy.AgentBurst))
		la, _ := a.Request(ca, 10, 5000, policy.AnyClass)
		a.Tick()
		lb, _ := a.Request(cb, 10, 100, policy.AnyClass)
		bt.Ticks(a, tc.notice-2)
		require.Empty(t, j.Of(policy.EventPreemptNotice), "m=%d: notice before the minimum runtime", tc.m)
		a.Tick()
		n := j.Of(policy.EventPreemptNotice)
		require.Len(t, n, 1, "m=%d", tc.m)
		require.Equal(t, la, n[0].Lease)
		require.Equal(t, tc.notice, n[0].T)
		bt.Ticks(a, 10)
		g, ok := j.Grant(lb)
		require.True(t, ok)
		require.Equal(t, tc.notice+10, g.T)
	}
}

// The window: usage older than W leaves it. A holds 4 GPUs for ticks
// 1–10 and then nothing; with W = 5 its window usage is 20 after tick 10
// and 0 after tick 15.
func TestSlidingWindow(t *testing.T) {
	knobs := budget.DefaultKnobs()
	knobs.Window = 5
	knobs.CalcPeriod = 1
	rule := budget.NewRule(knobs)
	a, err := baseline.New(bt.Config(10, 10), rule)
	require.NoError(t, err)
	ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
	cb, _ := a.Register(bt.Env("b", 3, policy.AgentBurst))
	_, _ = a.Request(ca, 4, 10, policy.AnyClass)
	_, _ = a.Request(cb, 2, 12, policy.AnyClass)
	bt.Ticks(a, 10)
	require.Equal(t, 20, rule.WindowUsage(ca))
	require.Equal(t, 10, rule.WindowUsage(cb))
	// shares 1/4 and 3/4; fractions 2/3 and 1/3.
	require.InDelta(t, 0.25-2.0/3, rule.Priority(a, ca), 1e-12)
	require.InDelta(t, 0.75-1.0/3, rule.Priority(a, cb), 1e-12)
	bt.Ticks(a, 5)
	require.Equal(t, 0, rule.WindowUsage(ca))
	require.Equal(t, 4, rule.WindowUsage(cb)) // ticks 11 and 12
}

// A campaign below its share does not preempt one that is not above it.
func TestNoPreemptionOfCampaignAtOrBelowShare(t *testing.T) {
	a, err := budget.New(bt.Config(10, 10), budget.Knobs{Window: 1000, CalcPeriod: 1})
	require.NoError(t, err)
	j := &bt.Journal{}
	a.SetRecorder(j)
	ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
	cb, _ := a.Register(bt.Env("b", 1, policy.AgentBurst))
	_, _ = a.Request(ca, 5, 5000, policy.AnyClass)
	_, _ = a.Request(cb, 5, 5000, policy.AnyClass)
	a.Tick()
	_, _ = a.Request(cb, 5, 100, policy.AnyClass)
	bt.Ticks(a, 100)
	require.Empty(t, j.Of(policy.EventPreemptNotice))
}

// The hierarchy (§6.11), worked by hand. Shares: a 1/4, b 1/4 (group
// G1), c 1/2 (a group of its own). After tick 1, a holds 4 (an
// opportunistic lease) and c 16 (agent-burst): window usage 4, 0, 16 of
// 20. Flat, a is below its share (1/4 − 1/5 > 0) and c above (1/2 − 4/5),
// so b's blocked request preempts c. With groups, G1 is below its share
// (1/2 − 1/5) and c's group above (1/2 − 4/5), and inside G1 a is above
// its share (1/2 − 4/4) and b below (1/2 − 0): "above its share" is
// judged where the paths split, so a's lease — the lowest class, first in
// line — may go, and one victim covers the need.
func TestHierarchyJudgesWherePathsSplit(t *testing.T) {
	for _, tc := range []struct {
		groups []budget.Group
		victim string
	}{
		{nil, "c"},
		{[]budget.Group{{Name: "G1", Members: []string{"a", "b"}}}, "a"},
	} {
		knobs := budget.Knobs{Window: 1000, Groups: tc.groups, CalcPeriod: 1}
		rule := budget.NewRule(knobs)
		a, err := baseline.New(bt.Config(20, 5), rule)
		require.NoError(t, err)
		j := &bt.Journal{}
		a.SetRecorder(j)
		ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
		cb, _ := a.Register(bt.Env("b", 1, policy.AgentBurst))
		cc, _ := a.Register(bt.Env("c", 2, policy.AgentBurst))
		_, _ = a.Request(ca, 4, 1000, policy.Opportunistic)
		_, _ = a.Request(cc, 16, 1000, policy.AgentBurst)
		a.Tick()
		if tc.groups != nil {
			require.InDelta(t, 0.5-0.2, rule.Priority(a, ca), 1e-12)
			require.InDelta(t, 0.5-0.8, rule.Priority(a, cc), 1e-12)
			require.InDelta(t, 0.5-1, rule.MemberPriority(a, ca), 1e-12)
			require.InDelta(t, 0.5, rule.MemberPriority(a, cb), 1e-12)
		} else {
			require.InDelta(t, 0.25-0.2, rule.Priority(a, ca), 1e-12)
		}
		_, _ = a.Request(cb, 4, 100, policy.AnyClass)
		a.Tick()
		n := j.Of(policy.EventPreemptNotice)
		require.Len(t, n, 1, "groups %v", tc.groups)
		require.Equal(t, tc.victim, n[0].Campaign, "groups %v", tc.groups)
	}
}

func TestGroupKnobsAreChecked(t *testing.T) {
	_, err := budget.New(bt.Config(20, 5), budget.Knobs{Window: 10, CalcPeriod: 1, Groups: []budget.Group{{Name: "x", Members: []string{"a"}}, {Name: "y", Members: []string{"a"}}}})
	require.ErrorContains(t, err, `campaign "a" is in two groups`)
	_, err = budget.New(bt.Config(20, 5), budget.Knobs{Window: 0, CalcPeriod: 1})
	require.ErrorContains(t, err, "window")
}

// The calculation period, worked by hand: P = 10, W = 100, no minimum
// runtime. A takes the whole pool at tick 1; B asks after tick 2. Per
// tick, B's admission at tick 3 would read A at 1/2 − 20/20 < 0 and B at
// 1/2 > 0 and preempt at once; with P = 10 the ticks 1–10 read the
// windows ending at tick 0 — nobody's usage, both at 1/2 — so A is not
// above its share until the period of ticks 11–20, which reads A's 100
// GPU-seconds of 100: the notice comes at tick 11, B starts at 11 + grace.
func TestCalcPeriodDelaysPreemptionToTheBoundary(t *testing.T) {
	for _, tc := range []struct{ period, notice int }{{1, 3}, {10, 11}, {4, 5}} {
		knobs := budget.DefaultKnobs()
		knobs.Window, knobs.CalcPeriod, knobs.MinRuntime = 100, tc.period, [4]int{}
		rule := budget.NewRule(knobs)
		a, err := baseline.New(bt.Config(10, 5), rule)
		require.NoError(t, err)
		j := &bt.Journal{}
		a.SetRecorder(j)
		ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
		cb, _ := a.Register(bt.Env("b", 1, policy.AgentBurst))
		la, _ := a.Request(ca, 10, 5000, policy.AnyClass)
		bt.Ticks(a, 2)
		lb, _ := a.Request(cb, 10, 100, policy.AnyClass)
		bt.Ticks(a, tc.notice-3)
		require.Empty(t, j.Of(policy.EventPreemptNotice), "P=%d", tc.period)
		a.Tick()
		n := j.Of(policy.EventPreemptNotice)
		require.Len(t, n, 1, "P=%d", tc.period)
		require.Equal(t, la, n[0].Lease)
		require.Equal(t, tc.notice, n[0].T, "P=%d", tc.period)
		// The window itself stays exact to the tick.
		require.Equal(t, 10*tc.notice, rule.WindowUsage(ca))
		bt.Ticks(a, 5)
		g, ok := j.Grant(lb)
		require.True(t, ok)
		require.Equal(t, tc.notice+5, g.T)
	}
}

func TestCalcPeriodIsChecked(t *testing.T) {
	k := budget.DefaultKnobs()
	k.CalcPeriod = 0
	_, err := budget.New(bt.Config(10, 5), k)
	require.ErrorContains(t, err, "calc_period")
}
