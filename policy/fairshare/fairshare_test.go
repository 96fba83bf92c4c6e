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
