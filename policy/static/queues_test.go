package static_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/static"
)

// TestQueuesAdmitAsThePendingList: the partitions' queues the rule keeps
// (and the backfill candidates their trees find) admit what queues taken
// from the whole pending list at every pass admit: twin allocators, one
// admitting plain, write the same journal tick by tick, under either
// lend and either partitions knob, with rigid jobs of any width and
// estimate (some submitted in the past, as a requeued job is), elastic
// requests (which may put the list out of submit order), the filler,
// releases, and a campaign registered late (the partitions cut again).
func TestQueuesAdmitAsThePendingList(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.SampledFrom([]int{8, 16, 32, 64}).Draw(t, "pool")
		grace := rapid.IntRange(0, 4).Draw(t, "grace")
		kn := static.DefaultKnobs()
		kn.Lend = rapid.SampledFrom([]string{static.LendNone, static.LendScavenger}).Draw(t, "lend")
		kn.Partitions = rapid.SampledFrom([]string{static.PartitionsCondo, static.PartitionsShare}).Draw(t, "partitions")
		kn.Owners = rapid.IntRange(0, 3).Draw(t, "owners")
		elastic := rapid.Bool().Draw(t, "elastic")
		var twins [2]*baseline.Core
		var journals [2]*bt.Journal
		for x := range twins {
			a, err := static.New(bt.Config(pool, grace), kn)
			require.NoError(t, err)
			journals[x] = &bt.Journal{}
			a.SetRecorder(journals[x])
			twins[x] = a
		}
		static.PlainAdmit(rule(twins[1]))
		n := rapid.IntRange(1, 5).Draw(t, "campaigns")
		var ids []policy.CampaignID
		register := func(name string, r float64, cls policy.Class) {
			var id policy.CampaignID
			for _, a := range twins {
				id, _ = a.Register(bt.Env(name, r, cls))
			}
			ids = append(ids, id)
		}
		for i := range n {
			register(fmt.Sprintf("c%d", i), float64(i%3+1), policy.AgentBurst)
		}
		if rapid.Bool().Draw(t, "backfill") {
			register("backfill", 0, policy.Opportunistic)
		}
		late := rapid.IntRange(0, 200).Draw(t, "late")
		for tick := range rapid.IntRange(10, 200).Draw(t, "ticks") {
			if tick == late {
				register("late", float64(rapid.IntRange(1, 4).Draw(t, "lateR")), policy.AgentBurst)
			}
			for range rapid.IntRange(0, 4).Draw(t, "arrivals") {
				c := ids[rapid.IntRange(0, len(ids)-1).Draw(t, "c")]
				g := rapid.IntRange(1, pool).Draw(t, "gpus")
				run := rapid.IntRange(1, 30).Draw(t, "run")
				est := run + rapid.IntRange(0, 30).Draw(t, "slack")
				back := rapid.IntRange(0, 3).Draw(t, "back")
				flex := elastic && rapid.IntRange(0, 3).Draw(t, "flex") == 0
				for _, a := range twins {
					if flex || a.Campaign(c).Filler {
						_, _ = a.Request(c, g, est, policy.AnyClass)
					} else {
						_, _ = a.RequestRigid(c, g, est, run, policy.AgentBurst, max(0, a.Now()+1-back))
					}
				}
			}
			if rapid.IntRange(0, 30).Draw(t, "release") == 0 {
				c := ids[rapid.IntRange(0, len(ids)-1).Draw(t, "rc")]
				for _, a := range twins {
					require.NoError(t, a.ReleaseAll(c, policy.AnyClass))
				}
			}
			for _, a := range twins {
				a.Tick()
			}
			require.Equal(t, journals[1].Events, journals[0].Events, "tick %d", tick)
		}
	})
}
