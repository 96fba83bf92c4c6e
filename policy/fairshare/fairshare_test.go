package fairshare_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/fairshare"
)

// Slurm's F = 2^(−U/S) on two users with equal shares (S = 1/2) and a
// half-life of 10 s. A holds all 10 GPUs for ticks 1–10, B for 11–20.
// After tick 20, with d = 2^(−1/10): U_B = 10·Σ_{j<10} d^j and U_A =
// d^10·U_B = U_B/2, so A's normalised usage is 1/3 and B's 2/3:
// F_A = 2^(−2/3), F_B = 2^(−4/3). A, with the higher factor, is served
// first though B asked first.
func TestFactorTwoUsersHalfLife(t *testing.T) {
	knobs := fairshare.DefaultKnobs()
	knobs.HalfLife = 10
	knobs.CalcPeriod = 1 // §6.9's per-tick rule
	rule := fairshare.NewRule(knobs)
	a, err := baseline.New(bt.Config(10, 60), rule)
	require.NoError(t, err)
	j := &bt.Journal{}
	a.SetRecorder(j)
	ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
	cb, _ := a.Register(bt.Env("b", 1, policy.AgentBurst))
	require.Equal(t, 1.0, rule.Factor(a, ca)) // no usage anywhere: U/S = 0
	_, _ = a.Request(ca, 10, 10, policy.AnyClass)
	_, _ = a.Request(cb, 10, 10, policy.AnyClass)
	bt.Ticks(a, 20)
	d := math.Exp2(-0.1)
	sum := 0.0
	for k := range 10 {
		sum += 10 * math.Pow(d, float64(k))
	}
	require.InDelta(t, sum, rule.Usage(cb), 1e-9)
	require.InDelta(t, sum/2, rule.Usage(ca), 1e-9)
	require.InDelta(t, math.Exp2(-2.0/3), rule.Factor(a, ca), 1e-12)
	require.InDelta(t, math.Exp2(-4.0/3), rule.Factor(a, cb), 1e-12)

	rb, _ := a.Request(cb, 10, 5, policy.AnyClass)
	ra, _ := a.Request(ca, 10, 5, policy.AnyClass)
	a.Tick()
	g, ok := j.Grant(ra)
	require.True(t, ok)
	require.Equal(t, 21, g.T)
	// The grant record carries the priority: W_fs·F + W_age·age/MaxAge.
	require.InDelta(t, 10000*math.Exp2(-2.0/3)+1000*1.0/(7*24*3600), g.FairDeficit, 1e-9)
	_, ok = j.Grant(rb)
	require.False(t, ok)
}

// Only the opportunistic class is preemptible: a blocked burst head
// preempts another campaign's opportunistic lease, never a burst one.
func TestOnlyOpportunisticIsPreempted(t *testing.T) {
	a, err := fairshare.New(bt.Config(10, 5), fairshare.DefaultKnobs())
	require.NoError(t, err)
	j := &bt.Journal{}
	a.SetRecorder(j)
	ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
	cb, _ := a.Register(bt.Env("b", 1, policy.AgentBurst))
	cc, _ := a.Register(bt.Env("c", 1, policy.AgentBurst))
	_, _ = a.Request(ca, 5, 1000, policy.AgentBurst)
	opp, _ := a.Request(cb, 5, 1000, policy.Opportunistic)
	a.Tick()
	_, _ = a.Request(cc, 5, 100, policy.AgentBurst)
	a.Tick()
	n := j.Of(policy.EventPreemptNotice)
	require.Len(t, n, 1)
	require.Equal(t, opp, n[0].Lease)
	require.Equal(t, 5, n[0].Grace)
}

func TestKnobsAreChecked(t *testing.T) {
	k := fairshare.DefaultKnobs()
	k.HalfLife = 0
	_, err := fairshare.New(bt.Config(10, 5), k)
	require.ErrorContains(t, err, "half_life")
}

// The calculation period, worked by hand: P = 10 and a half-life of 10 s,
// so one period decays by exactly 1/2. A holds all 10 GPUs in ticks 1–10,
// B in 11–20. At the end of tick 10, U_A = 100 (GPU-seconds, charged at
// once) and U_B = 0, and nothing moves until the end of tick 20, when
// U_A = 100·1/2 = 50 and U_B = 100. The period of ticks 21–30 reads
// F_A = 2^(−(1/3)/(1/2)) = 2^(−2/3) and F_B = 2^(−4/3), and the age as at
// tick 21: 0 for requests filed at 22, so A's grant at 23 records
// 10000·2^(−2/3) exactly, and B, who asked first, waits.
func TestCalcPeriodChargesAndDecaysAtBoundaries(t *testing.T) {
	knobs := fairshare.DefaultKnobs()
	knobs.HalfLife, knobs.CalcPeriod = 10, 10
	rule := fairshare.NewRule(knobs)
	a, err := baseline.New(bt.Config(10, 60), rule)
	require.NoError(t, err)
	j := &bt.Journal{}
	a.SetRecorder(j)
	ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
	cb, _ := a.Register(bt.Env("b", 1, policy.AgentBurst))
	_, _ = a.Request(ca, 10, 10, policy.AnyClass)
	_, _ = a.Request(cb, 10, 10, policy.AnyClass)
	bt.Ticks(a, 9)
	require.Zero(t, rule.Usage(ca)) // nothing charged before the boundary
	a.Tick()
	require.Equal(t, 100.0, rule.Usage(ca))
	require.Zero(t, rule.Usage(cb))
	bt.Ticks(a, 9)
	require.Equal(t, 100.0, rule.Usage(ca)) // B's ticks 11–19 are not charged yet
	require.Zero(t, rule.Usage(cb))
	a.Tick()
	require.Equal(t, 50.0, rule.Usage(ca))
	require.Equal(t, 100.0, rule.Usage(cb))
	require.Equal(t, math.Exp2(-2.0/3), rule.Factor(a, ca))
	require.Equal(t, math.Exp2(-4.0/3), rule.Factor(a, cb))

	a.Tick() // 21: B's lease ends
	a.Tick()
	rb, _ := a.Request(cb, 10, 5, policy.AnyClass)
	ra, _ := a.Request(ca, 10, 5, policy.AnyClass)
	a.Tick()
	g, ok := j.Grant(ra)
	require.True(t, ok)
	require.Equal(t, 23, g.T)
	require.Equal(t, 10000*math.Exp2(-2.0/3), g.FairDeficit)
	_, ok = j.Grant(rb)
	require.False(t, ok)
}

// Between boundaries the order does not move: in ticks 11–20 of a
// 10-tick period the factors are those after tick 10, whatever is held
// since, and the age is frozen at tick 11.
func TestPriorityIsConstantWithinAPeriod(t *testing.T) {
	knobs := fairshare.DefaultKnobs()
	knobs.HalfLife, knobs.CalcPeriod, knobs.MaxAge = 10, 10, 100
	rule := fairshare.NewRule(knobs)
	a, err := baseline.New(bt.Config(10, 60), rule)
	require.NoError(t, err)
	ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
	_, _ = a.Register(bt.Env("b", 1, policy.AgentBurst))
	_, _ = a.Request(ca, 10, 15, policy.AnyClass)
	bt.Ticks(a, 11)
	p := rule.Priority(a, ca, 3)
	// U_A = 100 is all the usage: F_A = 2^(−1/(1/2)) = 1/4; age (11 − 3)/100.
	require.Equal(t, 10000*0.25+1000*0.08, p)
	for range 9 {
		a.Tick()
		require.Equal(t, p, rule.Priority(a, ca, 3), "tick %d", a.Now())
	}
	a.Tick() // 21: a new period, after A held 10 more GPU-seconds per tick
	require.NotEqual(t, p, rule.Priority(a, ca, 3))
}

func TestCalcPeriodIsChecked(t *testing.T) {
	k := fairshare.DefaultKnobs()
	k.CalcPeriod = 0
	_, err := fairshare.New(bt.Config(10, 5), k)
	require.ErrorContains(t, err, "calc_period")
}

// fairshare copies its own rule for a fork (CloneRule): what
// internal/deepcopy would copy, field for field, along a small workload.
func TestCloneRuleCopiesEveryField(t *testing.T) {
	a, err := fairshare.New(bt.Config(8, 10), fairshare.DefaultKnobs())
	require.NoError(t, err)
	require.NoError(t, bt.CloneRuleMatchesAlong(a))
}
