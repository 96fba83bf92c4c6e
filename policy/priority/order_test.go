package priority

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

// The admission order is the stable sort by tier, then submit time, of
// the pending requests that are not the filler's, whichever way order
// takes (the partition when the list is in submit order, the sort when
// an agent's request follows a trace job of the next tick).
func TestOrderIsTheStableSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := NewRule(Knobs{})
		k, err := baseline.New(bt.Config(1000, 5), r)
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
		for range rapid.IntRange(0, 40).Draw(t, "requests") {
			c := policy.CampaignID(rapid.IntRange(0, n-1).Draw(t, "c"))
			cls := rapid.SampledFrom([]policy.Class{policy.AnyClass, policy.Deadline, policy.Interactive, policy.AgentBurst, policy.Opportunistic}).Draw(t, "req-class")
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				_, _ = k.Request(c, 2000, 10, cls) // too large: denied, or it waits
				_, _ = k.Request(c, 999, 10, cls)
			case 1:
				if cls == policy.AnyClass {
					cls = policy.AgentBurst
				}
				queue := rapid.SampledFrom([]string{"", "interactive", "Express", "high", "normal", "low", "standby", "No_Class"}).Draw(t, "queue")
				_, _ = k.RequestRigidQueued(c, 999, 10, 10, cls, k.Now()+rapid.IntRange(0, 1).Draw(t, "next"), queue)
			default:
				k.Tick()
			}
		}
		var want []int
		for i := range k.Pending() {
			if q := &k.Pending()[i]; !k.Campaign(q.Campaign).Filler {
				want = append(want, i)
			}
		}
		pend := k.Pending()
		slices.SortStableFunc(want, func(a, b int) int {
			if c := cmp.Compare(r.RequestTier(&pend[a]), r.RequestTier(&pend[b])); c != 0 {
				return c
			}
			return cmp.Compare(pend[a].Submitted, pend[b].Submitted)
		})
		for j, i := range want {
			want[j] = pend[i].ID
		}
		if got := r.order(k); !slices.Equal(got, want) {
			t.Fatalf("order %v, the stable sort %v", got, want)
		}
	})
}
