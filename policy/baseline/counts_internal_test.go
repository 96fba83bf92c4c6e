package baseline

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
)

// greedyRule admits in list order whatever fits: enough to grant, so that
// requests leave the list every way they can.
type greedyRule struct{ Base }

func (greedyRule) Name() string { return "greedy" }
func (greedyRule) Admit(k *Core) {
	for i := 0; i < len(k.pending); i++ {
		if k.camps[k.pending[i].Campaign].Filler {
			continue
		}
		if k.TryStart(i, k.rule.Room(k, k.pending[i].Campaign)) {
			i--
		}
	}
}

// The counts that let admitFiller, expireRequests and NextChange skip the
// pending list are the counts of the list itself after every operation:
// filing (agent requests and trace jobs), grants, partial grants, expiry,
// releases and denials.
func TestPendingCountsAreExact(t *testing.T) {
	classes := []policy.Class{policy.AnyClass, policy.Interactive, policy.AgentBurst, policy.Opportunistic}
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.SampledFrom([]int{4, 16, 64}).Draw(t, "pool")
		k, err := New(policy.Config{Pool: pool, Grace: rapid.IntRange(0, 5).Draw(t, "grace"),
			IOCapacity: policy.Unmetered, InferenceCapacity: policy.Unmetered}, greedyRule{})
		if err != nil {
			t.Fatal(err)
		}
		n := rapid.IntRange(1, 4).Draw(t, "campaigns")
		for i := range n {
			cls := rapid.SampledFrom(classes[1:]).Draw(t, "class")
			budget := rapid.SampledFrom([]float64{1e9, 0}).Draw(t, "budget")
			if _, err := k.Register(policy.Envelope{Name: fmt.Sprintf("c%d", i), Budget: budget, Sustained: 1,
				BurstCeiling: 1 << 20, Bucket: 1e6, Class: cls}); err != nil {
				t.Fatal(err)
			}
		}
		for step := range rapid.IntRange(0, 100).Draw(t, "ops") {
			c := policy.CampaignID(rapid.IntRange(0, n-1).Draw(t, "c"))
			cls := rapid.SampledFrom(classes).Draw(t, "req-class")
			switch rapid.IntRange(0, 4).Draw(t, "op") {
			case 0:
				_, _ = k.Request(c, rapid.IntRange(1, 2*pool).Draw(t, "gpus"), rapid.IntRange(0, 20).Draw(t, "duration"), cls)
			case 1:
				run := rapid.IntRange(1, 20).Draw(t, "run")
				_, _ = k.RequestRigid(c, rapid.IntRange(1, 2*pool).Draw(t, "gpus"), run+3, run, cls, k.now+rapid.IntRange(0, 1).Draw(t, "next"))
			case 2:
				_ = k.ReleaseAll(c, cls)
			default:
				for range rapid.IntRange(1, policy.RequestTTL+5).Draw(t, "ticks") {
					k.Tick()
				}
			}
			filler, flex := 0, 0
			for i := range k.pending {
				if k.camps[k.pending[i].Campaign].Filler {
					filler++
				}
				if !k.pending[i].Rigid {
					flex++
				}
			}
			if filler != k.fillerPending || flex != k.flexPending {
				t.Fatalf("step %d: counts filler %d, flexible %d; the list has %d and %d", step, k.fillerPending, k.flexPending, filler, flex)
			}
		}
	})
}
