package quota_test

import (
	"bytes"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/quota"
)

// A pass skipped because the last one changed nothing and nothing it reads
// has changed since (quiet) decides what the pass would have: two
// allocators given the same random cohort, the same arrivals and the same
// cancellations, one of them running every pass (Plain), write the same
// journal tick by tick, under both queueing strategies, every borrowing
// limit and list of preemption strategies, with and without a filler.
func TestQuietPassesChangeNothing(t *testing.T) {
	skipped := 0
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.SampledFrom([]int{8, 16, 64}).Draw(t, "pool")
		k := quota.DefaultKnobs()
		k.BorrowingLimit = rapid.SampledFrom([]int{-1, 0, 8}).Draw(t, "borrowing-limit")
		k.QueueingStrategy = rapid.SampledFrom([]string{quota.BestEffortFIFO, quota.StrictFIFO}).Draw(t, "strategy")
		k.PreemptionStrategies = rapid.SampledFrom(quota.ValidPreemptionStrategies).Draw(t, "preemption-strategies")
		grace := rapid.IntRange(0, 10).Draw(t, "grace")
		var as [2]*baseline.Core
		var js [2]*bt.Journal
		for x := range as {
			a, err := quota.New(bt.Config(pool, grace), k)
			if err != nil {
				t.Fatal(err)
			}
			as[x], js[x] = a, &bt.Journal{}
			a.SetRecorder(js[x])
		}
		quota.Plain(as[1])
		both := func(f func(a *baseline.Core)) {
			for _, a := range as {
				f(a)
			}
		}
		n := rapid.IntRange(2, 5).Draw(t, "queues")
		var ids []policy.CampaignID
		for i := range n {
			env := bt.Env(fmt.Sprintf("q%d", i), float64(rapid.IntRange(1, 6).Draw(t, "R")), policy.AgentBurst)
			both(func(a *baseline.Core) {
				id, err := a.Register(env)
				if err != nil {
					t.Fatal(err)
				}
				if a == as[0] {
					ids = append(ids, id)
				}
			})
		}
		filler := policy.CampaignID(-1)
		if rapid.Bool().Draw(t, "filler") {
			both(func(a *baseline.Core) {
				id, err := a.Register(bt.Env("filler", 1, policy.Opportunistic))
				if err != nil {
					t.Fatal(err)
				}
				filler = id
			})
		}
		classes := []policy.Class{policy.Interactive, policy.AgentBurst, policy.Opportunistic}
		for range rapid.IntRange(10, 200).Draw(t, "ticks") {
			for range rapid.IntRange(0, 3).Draw(t, "arrivals") {
				g := rapid.IntRange(1, pool).Draw(t, "gpus")
				d := rapid.IntRange(1, 60).Draw(t, "run")
				if filler >= 0 && rapid.IntRange(0, 4).Draw(t, "to-filler") == 0 {
					both(func(a *baseline.Core) { _, _ = a.Request(filler, g, d, policy.Opportunistic) })
					continue
				}
				c := ids[rapid.IntRange(0, n-1).Draw(t, "c")]
				cls := rapid.SampledFrom(classes).Draw(t, "class")
				if rapid.Bool().Draw(t, "rigid") {
					both(func(a *baseline.Core) { _, _ = a.RequestRigid(c, g, d, d, cls, a.Now()+1) })
				} else {
					both(func(a *baseline.Core) { _, _ = a.Request(c, g, d, cls) })
				}
			}
			if rapid.IntRange(0, 9).Draw(t, "cancel") == 0 {
				c := ids[rapid.IntRange(0, n-1).Draw(t, "cancelled")]
				cls := rapid.SampledFrom(classes).Draw(t, "cancelled-class")
				both(func(a *baseline.Core) { _ = a.ReleaseAll(c, cls) })
			}
			both(func(a *baseline.Core) { a.Tick() })
			if !bytes.Equal(js[0].Bytes, js[1].Bytes) {
				t.Fatalf("tick %d: the journals differ:\n%s\nwith every pass:\n%s", as[0].Now(), js[0].Bytes, js[1].Bytes)
			}
		}
		skipped += quota.Skipped(as[0])
		if quota.Skipped(as[1]) != 0 {
			t.Fatal("Plain skipped a pass")
		}
	})
	if skipped == 0 {
		t.Fatal("no pass was skipped: the test compared nothing")
	}
	t.Logf("%d passes skipped", skipped)
}
