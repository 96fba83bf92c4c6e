package baseline_test

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
)

// docs/studies.md §6.15 by hand.
func TestLargestRemainderByHand(t *testing.T) {
	for _, c := range []struct {
		shares []float64
		pool   int
		want   []int
	}{
		// 3.5, 2.1, 1.4 → 3 + 2 + 1 = 6; the one GPU left goes to the
		// largest remainder, 0.5.
		{[]float64{0.5, 0.3, 0.2}, 7, []int{4, 2, 1}},
		// 0.5, 1.5, 2 → 0 + 1 + 2 = 3; remainders 0.5 and 0.5 tie, the
		// larger share (0.375) wins.
		{[]float64{0.125, 0.375, 0.5}, 4, []int{0, 2, 2}},
		// 0.5, 0.5, 1 → 0 + 0 + 1; a tie in remainder and share goes to
		// the earlier part.
		{[]float64{0.25, 0.25, 0.5}, 2, []int{1, 0, 1}},
		// Revision 1's floors: 81 users on 128 GPUs, most below one GPU.
		// Three equal thirds of 128: 42.67 each → 42 + 42 + 42, two left,
		// to the first two.
		{[]float64{1.0 / 3, 1.0 / 3, 1.0 / 3}, 128, []int{43, 43, 42}},
		// Nothing to split.
		{[]float64{0, 0}, 5, []int{0, 0}},
		{nil, 5, []int{}},
	} {
		require.Equal(t, c.want, baseline.LargestRemainder(c.shares, c.pool), "%v of %d", c.shares, c.pool)
	}
}

// The parts sum to the pool; each is its floor or one more; a part that
// got the extra GPU has a remainder at least that of every part that did
// not.
func TestLargestRemainderProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 60).Draw(t, "parts")
		pool := rapid.IntRange(0, 100_000).Draw(t, "pool")
		w := make([]float64, n)
		sum := 0.0
		for i := range w {
			w[i] = float64(rapid.IntRange(0, 1000).Draw(t, "weight"))
			sum += w[i]
		}
		if sum == 0 {
			w[0], sum = 1, 1
		}
		for i := range w {
			w[i] /= sum
		}
		parts := baseline.LargestRemainder(w, pool)
		total := 0
		for i, p := range parts {
			fl := int(math.Floor(w[i] * float64(pool)))
			if p != fl && p != fl+1 {
				t.Fatalf("part %d: %d GPUs for share %v of %d", i, p, w[i], pool)
			}
			total += p
		}
		if total != pool {
			t.Fatalf("parts %v sum to %d, not %d", parts, total, pool)
		}
		rem := func(i int) float64 { q := w[i] * float64(pool); return q - math.Floor(q) }
		for i, p := range parts {
			for j, q := range parts {
				up := p > int(math.Floor(w[i]*float64(pool)))
				down := q == int(math.Floor(w[j]*float64(pool)))
				if up && down && rem(i) < rem(j) {
					t.Fatalf("part %d got the extra GPU with remainder %v, part %d did not with %v", i, rem(i), j, rem(j))
				}
			}
		}
	})
}

// Entitlements as the rules read them: a named campaign's share is its
// member share, its group the named one; campaigns in no group split
// what the groups leave by R, each a group of its own; the filler has
// none.
func TestEntitlementsAsRulesReadThem(t *testing.T) {
	a := newFIFOCore(t)
	require.NoError(t, a.SetEntitlements(&baseline.Entitlements{Groups: []baseline.GroupShare{
		{Name: "physics", Share: 0.6, Members: []baseline.MemberShare{{Name: "ann", Share: 0.3}, {Name: "bob", Share: 0.3}}},
		{Name: "chem", Share: 0.2, Members: []baseline.MemberShare{{Name: "cy", Share: 0.2}}},
	}}))
	for _, name := range []string{"bob", "agent-1", "cy", "agent-2", "ann"} {
		_, err := a.Register(bt.Env(name, 10, policy.AgentBurst))
		require.NoError(t, err)
	}
	filler, err := a.Register(bt.Env("backfill", 10, policy.Opportunistic))
	require.NoError(t, err)
	// What is left, 0.2, split by R (10 and 10) between the two agents.
	want := map[string]struct {
		share float64
		group string
	}{"bob": {0.3, "physics"}, "ann": {0.3, "physics"}, "cy": {0.2, "chem"}, "agent-1": {0.1, "agent-1"}, "agent-2": {0.1, "agent-2"}}
	for name, x := range want {
		id, _ := a.Lookup(name)
		cp := a.Campaign(id)
		require.InDelta(t, x.share, cp.Share, 1e-15, name)
		require.Equal(t, x.group, a.Groups()[cp.Group].Name, name)
	}
	require.Equal(t, -1, a.Campaign(filler).Group)
	require.Zero(t, a.Campaign(filler).Share)
	gs := a.Groups()
	require.Len(t, gs, 4)
	bob, _ := a.Lookup("bob")
	ann, _ := a.Lookup("ann")
	require.Equal(t, []policy.CampaignID{bob, ann}, gs[0].Members) // registration order
	require.Equal(t, 0.6, gs[0].Share)

	// Without entitlements: R normalised over all but the filler, each
	// campaign a group of its own.
	require.NoError(t, a.SetEntitlements(nil))
	require.Len(t, a.Groups(), 5)
	for _, g := range a.Groups() {
		require.Len(t, g.Members, 1)
		require.InDelta(t, 0.2, g.Share, 1e-15)
	}
}

func TestEntitlementsValidate(t *testing.T) {
	for _, c := range []struct {
		e    baseline.Entitlements
		want string
	}{
		{baseline.Entitlements{Groups: []baseline.GroupShare{{Share: 1}}}, "name must not be empty"},
		{baseline.Entitlements{Groups: []baseline.GroupShare{{Name: "g", Share: math.NaN()}}}, "finite"},
		{baseline.Entitlements{Groups: []baseline.GroupShare{{Name: "g", Share: 0.5, Members: []baseline.MemberShare{{Name: "a", Share: 0.4}}}}}, "sum to 0.4"},
		{baseline.Entitlements{Groups: []baseline.GroupShare{
			{Name: "g", Share: 0.5, Members: []baseline.MemberShare{{Name: "a", Share: 0.5}}},
			{Name: "h", Share: 0.5, Members: []baseline.MemberShare{{Name: "a", Share: 0.5}}}}}, "in two groups"},
		{baseline.Entitlements{Groups: []baseline.GroupShare{
			{Name: "g", Share: 0.7, Members: []baseline.MemberShare{{Name: "a", Share: 0.7}}},
			{Name: "h", Share: 0.7, Members: []baseline.MemberShare{{Name: "b", Share: 0.7}}}}}, "above 1"},
	} {
		require.ErrorContains(t, c.e.Validate(), c.want)
	}
	a := newFIFOCore(t)
	require.ErrorContains(t, a.SetHistory([]baseline.Usage{{Campaign: "a", Start: 0, End: -5, GPUs: 1}}), "history[0] (a)")
	require.NoError(t, a.SetHistory([]baseline.Usage{{Campaign: "a", Start: -5, End: 0, GPUs: 1}}))
	id, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
	require.True(t, slices.Equal(a.History(id), []baseline.Usage{{Campaign: "a", Start: -5, End: 0, GPUs: 1}}))
}

func newFIFOCore(t *testing.T) *baseline.Core {
	t.Helper()
	a, _ := newFIFO(t, bt.Config(64, 60))
	return a
}
