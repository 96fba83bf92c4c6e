package baseline_test

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
)

// idleRule admits nothing, so that requests pile up.
type idleRule struct{ baseline.Base }

func (idleRule) Name() string                                { return "idle" }
func (idleRule) Admit(*baseline.Core)                        {}
func (idleRule) Limit(*baseline.Core, policy.CampaignID) int { return 1 << 20 }

// BuildByKey is the stable sort it replaces, whether the pending list is
// in submit order (the counting sort) or not (agent requests filed after a
// trace job of the next tick: the sort), filler excluded.
func TestBuildByKeyIsTheStableSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k, err := baseline.New(bt.Config(8, 5), idleRule{})
		if err != nil {
			t.Fatal(err)
		}
		n := rapid.IntRange(1, 4).Draw(t, "campaigns")
		for i := range n {
			cls := rapid.SampledFrom([]policy.Class{policy.Interactive, policy.AgentBurst, policy.Opportunistic}).Draw(t, "class")
			if _, err := k.Register(bt.Env(fmt.Sprintf("c%d", i), 1, cls)); err != nil {
				t.Fatal(err)
			}
		}
		for range rapid.IntRange(0, 40).Draw(t, "ops") {
			c := policy.CampaignID(rapid.IntRange(0, n-1).Draw(t, "c"))
			cls := rapid.SampledFrom([]policy.Class{policy.Interactive, policy.AgentBurst, policy.Opportunistic}).Draw(t, "req-class")
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				_, _ = k.Request(c, 1, 1000, cls)
			case 1:
				_, _ = k.RequestRigid(c, 1, 10, 10, cls, k.Now()+rapid.IntRange(0, 1).Draw(t, "next"))
			default:
				k.Tick()
			}
		}
		rank := make([]int, n)
		for c := range rank {
			rank[c] = rapid.IntRange(0, 3).Draw(t, "rank")
		}
		key := func(r *baseline.Request) int { return rank[r.Campaign]*4 + int(r.Class) }
		order := func(a, b *baseline.Request) int {
			if c := cmp.Compare(key(a), key(b)); c != 0 {
				return c
			}
			return cmp.Compare(a.Submitted, b.Submitted)
		}
		var q, ref baseline.Queue
		want := slices.Clone(ref.Build(k, order))
		if got := q.BuildByKey(k, key, order); !slices.Equal(got, want) {
			t.Fatalf("BuildByKey %v, the stable sort %v", got, want)
		}
		byID := func(a, b *baseline.Request) int {
			if c := cmp.Compare(rank[a.Campaign], rank[b.Campaign]); c != 0 {
				return c
			}
			if c := cmp.Compare(a.Submitted, b.Submitted); c != 0 {
				return c
			}
			return cmp.Compare(a.ID, b.ID)
		}
		want = slices.Clone(ref.Build(k, byID))
		if got := q.BuildRanked(k, rank); !slices.Equal(got, want) {
			t.Fatalf("BuildRanked %v, the sort %v", got, want)
		}
	})
}
