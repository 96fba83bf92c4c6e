package static_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/static"
)

// newCondo is a static allocator on pool GPUs with three groups a, b, c
// of one campaign each (a0, b0, c0), entitled to the given shares, whose
// widest jobs are the given widths, and the given partitions knob.
func newCondo(t *testing.T, pool int, partitions string, shares []float64, widest []int) (*baseline.Core, []policy.CampaignID) {
	t.Helper()
	k := static.DefaultKnobs()
	k.Partitions = partitions
	a, err := static.New(bt.Config(pool, 60), k)
	require.NoError(t, err)
	e := &baseline.Entitlements{}
	for i, name := range []string{"a", "b", "c"} {
		e.Groups = append(e.Groups, baseline.GroupShare{Name: name, Share: shares[i], Widest: widest[i],
			Members: []baseline.MemberShare{{Name: name + "0", Share: shares[i]}}})
	}
	require.NoError(t, a.SetEntitlements(e))
	var ids []policy.CampaignID
	for _, g := range e.Groups {
		id, err := a.Register(bt.Env(g.Members[0].Name, 1, policy.AgentBurst))
		require.NoError(t, err)
		ids = append(ids, id)
	}
	return a, ids
}

// Pool 10, shares 0.5, 0.3, 0.2, widest jobs 2, 6 and 1 GPUs. By share
// alone the partitions are 5, 3, 2 and b's 6-GPU job is denied. Condo:
// the minima are 2, 6, 1 (9 GPUs); the 1 GPU left is split by share,
// exact parts 0.5, 0.3, 0.2, floors 0, 0, 0, and it goes to the largest
// remainder, a's 0.5: partitions 3, 6, 1, which cover the pool, and b's
// widest job fits its own partition.
func TestCondoPartitionsHandWorked(t *testing.T) {
	shares, widest := []float64{0.5, 0.3, 0.2}, []int{2, 6, 1}

	a, ids := newCondo(t, 10, static.PartitionsShare, shares, widest)
	require.Equal(t, []int{5, 3, 2}, rule(a).Sizes())
	_, err := a.RequestRigid(ids[1], 6, 100, 100, policy.AgentBurst, 1)
	require.ErrorIs(t, err, policy.ErrExceedsLimit)
	require.False(t, rule(a).MinimaScaled())

	a, ids = newCondo(t, 10, static.PartitionsCondo, shares, widest)
	require.Equal(t, []int{3, 6, 1}, rule(a).Sizes())
	require.False(t, rule(a).MinimaScaled())
	_, err = a.RequestRigid(ids[1], 6, 100, 100, policy.AgentBurst, 1)
	require.NoError(t, err)
	_, err = a.RequestRigid(ids[1], 7, 100, 100, policy.AgentBurst, 1)
	require.ErrorIs(t, err, policy.ErrExceedsLimit)
}

// Pool 10, widest jobs 8, 6 and 1: the minima sum to 15 > 10, so they
// are scaled down in proportion: exact parts 80/15 = 5.33, 60/15 = 4 and
// 10/15 = 0.67, floors 5, 4, 0 (9), and the GPU left goes to the largest
// remainder, c's .67: 5, 4, 1. Nothing is left to split by share, and
// the run is marked.
func TestCondoMinimaScaledDown(t *testing.T) {
	a, _ := newCondo(t, 10, static.PartitionsCondo, []float64{0.5, 0.3, 0.2}, []int{8, 6, 1})
	require.Equal(t, []int{5, 4, 1}, rule(a).Sizes())
	require.True(t, rule(a).MinimaScaled())
	require.Equal(t, []string{static.MarkMinimaScaled}, a.Marks(), "the Core reports the rule's mark")

	// A widest job wider than the pool asks for the pool: min(12, 10) and
	// 0 are 10 exactly, so nothing is scaled and nothing is left.
	a, _ = newCondo(t, 10, static.PartitionsCondo, []float64{0.5, 0.3, 0.2}, []int{12, 0, 0})
	require.Equal(t, []int{10, 0, 0}, rule(a).Sizes())
	require.False(t, rule(a).MinimaScaled())
	require.Nil(t, a.Marks())
}

// The condo split covers the pool exactly; unscaled, every partition is
// at least its owners' widest job (capped at the pool); scaled, at least
// the floor of its minimum's proportional part; the same input gives the
// same sizes.
func TestCondoSizesProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 9).Draw(t, "partitions")
		pool := rapid.IntRange(1, 512).Draw(t, "pool")
		shares := make([]float64, n)
		widest := make([]int, n)
		for p := range n {
			shares[p] = rapid.Float64Range(0, 1).Draw(t, "share")
			widest[p] = rapid.IntRange(0, 2*pool).Draw(t, "widest")
		}
		sizes, scaled := static.CondoSizes(shares, widest, pool)
		again, scaledAgain := static.CondoSizes(shares, widest, pool)
		if scaled != scaledAgain || len(again) != n {
			t.Fatalf("not deterministic: %v %v, then %v %v", sizes, scaled, again, scaledAgain)
		}
		need, sum := 0, 0
		for p := range n {
			need += min(widest[p], pool)
			sum += sizes[p]
			if sizes[p] != again[p] {
				t.Fatalf("not deterministic: %v, then %v", sizes, again)
			}
		}
		if sum != pool {
			t.Fatalf("sizes %v sum to %d, not the pool %d", sizes, sum, pool)
		}
		if scaled != (need > pool) {
			t.Fatalf("scaled %v, but the minima sum to %d on a pool of %d", scaled, need, pool)
		}
		for p := range n {
			m := min(widest[p], pool)
			floor := m
			if scaled {
				floor = m * pool / need
			}
			if sizes[p] < floor {
				t.Fatalf("partition %d: %d GPUs, below its minimum %d (widest %d, scaled %v): %v", p, sizes[p], floor, widest[p], scaled, sizes)
			}
		}
	})
}

func TestPartitionsKnobIsChecked(t *testing.T) {
	_, err := static.New(bt.Config(8, 0), static.Knobs{Owners: 8, Lend: static.LendNone, Partitions: "buy"})
	require.ErrorContains(t, err, `partitions must be "share" or "condo", got "buy"`)
}

func TestNegativeWidestIsRefused(t *testing.T) {
	e := &baseline.Entitlements{Groups: []baseline.GroupShare{{Name: "a", Share: 1, Widest: -1, Members: []baseline.MemberShare{{Name: "a0", Share: 1}}}}}
	require.ErrorContains(t, e.Validate(), "group a: widest -1: must be ≥ 0 GPUs")
}
