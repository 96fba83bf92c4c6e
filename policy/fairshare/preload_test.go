package fairshare_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/fairshare"
)

// The usage before a window (docs/studies.md §6.16) is the usage a replay
// of it would leave. TestFactorTwoUsersHalfLife's schedule moved before
// time 0: A holds 10 GPUs in ticks −19…−10, B in −9…0. At tick 0 the
// usages are that test's at tick 20, U_B = 10·Σ_{j<10} d^j and U_A =
// U_B/2, and so are the factors.
func TestPreloadIsTheReplayedUsage(t *testing.T) {
	knobs := fairshare.DefaultKnobs()
	knobs.HalfLife = 10
	rule := fairshare.NewRule(knobs)
	a, err := baseline.New(bt.Config(10, 60), rule)
	require.NoError(t, err)
	require.NoError(t, a.SetHistory([]baseline.Usage{
		{Campaign: "a", Start: -19, End: -9, GPUs: 10},
		{Campaign: "b", Start: -9, End: 1, GPUs: 10},
		{Campaign: "b", Start: 1, End: 50, GPUs: 10}, // after time 0: not history
	}))
	ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
	cb, _ := a.Register(bt.Env("b", 1, policy.AgentBurst))
	d := math.Exp2(-0.1)
	sum := 0.0
	for k := range 10 {
		sum += 10 * math.Pow(d, float64(k))
	}
	require.InDelta(t, sum, rule.Usage(cb), 1e-9)
	require.InDelta(t, sum/2, rule.Usage(ca), 1e-9)
	require.InDelta(t, math.Exp2(-2.0/3), rule.Factor(a, ca), 1e-12)
	require.InDelta(t, math.Exp2(-4.0/3), rule.Factor(a, cb), 1e-12)
}

// Preload agrees with charging tick by tick, U ← U·2^(−1/h) + held, over
// random histories (overlapping runs, runs past time 0, empty ones).
func TestPreloadPerTickProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := float64(rapid.IntRange(1, 5000).Draw(t, "half-life"))
		var runs []baseline.Usage
		for range rapid.IntRange(0, 6).Draw(t, "runs") {
			s := rapid.IntRange(-3000, 50).Draw(t, "start")
			e := s + rapid.IntRange(0, 800).Draw(t, "length")
			runs = append(runs, baseline.Usage{Campaign: "c", Start: s, End: e, GPUs: rapid.IntRange(0, 64).Draw(t, "gpus")})
		}
		u := 0.0
		d := math.Exp2(-1 / h)
		for tick := -3000; tick <= 0; tick++ {
			held := 0
			for _, r := range runs {
				if r.Start <= tick && tick < r.End {
					held += r.GPUs
				}
			}
			u = u*d + float64(held)
		}
		got := fairshare.Preload(runs, h)
		if math.Abs(got-u) > 1e-9*max(1, u) {
			t.Fatalf("preload %v, per tick %v", got, u)
		}
	})
}

// S is the member entitlement (docs/studies.md §1): group "physics" is
// entitled to 1/2, split between ann and bob (S = 1/4 each); "chem" to
// 1/2, cy alone (S = 1/2). With half-life 10 s each holds 4 GPUs for
// ticks 1–10: equal usage, U = 1/3 of the total each, so F_ann = F_bob =
// 2^(−(1/3)/(1/4)) = 2^(−4/3) and F_cy = 2^(−2/3) — although all three
// registered the same R, which would have given S = 1/3 each.
func TestShareIsTheMemberEntitlement(t *testing.T) {
	knobs := fairshare.DefaultKnobs()
	knobs.HalfLife = 10
	rule := fairshare.NewRule(knobs)
	a, err := baseline.New(bt.Config(12, 60), rule)
	require.NoError(t, err)
	require.NoError(t, a.SetEntitlements(&baseline.Entitlements{Groups: []baseline.GroupShare{
		{Name: "physics", Share: 0.5, Members: []baseline.MemberShare{{Name: "ann", Share: 0.25}, {Name: "bob", Share: 0.25}}},
		{Name: "chem", Share: 0.5, Members: []baseline.MemberShare{{Name: "cy", Share: 0.5}}},
	}}))
	var ids []policy.CampaignID
	for _, n := range []string{"ann", "bob", "cy"} {
		id, err := a.Register(bt.Env(n, 4, policy.AgentBurst))
		require.NoError(t, err)
		ids = append(ids, id)
		_, _ = a.Request(id, 4, 10, policy.AnyClass)
	}
	bt.Ticks(a, 10)
	require.InDelta(t, rule.Usage(ids[0]), rule.Usage(ids[2]), 1e-9)
	require.InDelta(t, math.Exp2(-4.0/3), rule.Factor(a, ids[0]), 1e-12)
	require.InDelta(t, math.Exp2(-4.0/3), rule.Factor(a, ids[1]), 1e-12)
	require.InDelta(t, math.Exp2(-2.0/3), rule.Factor(a, ids[2]), 1e-12)
}
