package baseline

import (
	"fmt"
	"math"
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
// pending list, and IndexSubmitted's positions, are those of the list
// itself, the list is in submit order unless pendUnsorted, and resetFlows
// skips only zeros, after every operation: filing (agent requests and trace jobs, in
// submit order or not), grants, partial grants, expiry, releases and
// denials.
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
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 4:
				io := rapid.SampledFrom([]float64{0, 1, 50}).Draw(t, "io")
				_, _, _ = k.Consume(c, io, rapid.SampledFrom([]float64{0, 2}).Draw(t, "inference"))
			case 0:
				_, _ = k.Request(c, rapid.IntRange(1, 2*pool).Draw(t, "gpus"), rapid.IntRange(0, 20).Draw(t, "duration"), cls)
			case 1:
				run := rapid.IntRange(1, 20).Draw(t, "run")
				_, _ = k.RequestRigid(c, rapid.IntRange(1, 2*pool).Draw(t, "gpus"), run+3, run, cls, k.now+rapid.IntRange(-30, 1).Draw(t, "next")) // a requeued job's is in the past
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
			// With no reset left to do, every flow use is 0: resetting
			// changes nothing.
			if k.flowResets == 0 {
				for i := range k.camps {
					cp := &k.camps[i]
					if cp.io.usedNow != 0 || cp.io.usedLast != 0 || cp.inf.usedNow != 0 || cp.inf.usedLast != 0 {
						t.Fatalf("step %d: no reset left, but campaign %d used %+v %+v", step, i, cp.io, cp.inf)
					}
				}
			}
			// The list is where pendBase says, and in submit order unless
			// pendUnsorted says it may not be (RequestRigidQueued's binary
			// search).
			if n := len(k.pending); n > 0 && &k.pending[0] != &k.pendBase[k.pendHead] || cap(k.pending) != len(k.pendBase)-k.pendHead {
				t.Fatalf("step %d: the list is not at pendBase[%d:]", step, k.pendHead)
			}
			for i := 1; i < len(k.pending) && !k.pendUnsorted; i++ {
				if k.pending[i].Submitted < k.pending[i-1].Submitted {
					t.Fatalf("step %d: request %d submitted at %d behind one submitted at %d, pendUnsorted false", step, i, k.pending[i].Submitted, k.pending[i-1].Submitted)
				}
			}
			// IndexSubmitted finds every request where it is, whatever its
			// cache holds, and no request that has left (looked up with a
			// submit time near the clock).
			for id := range k.nextID + 1 {
				want := -1
				for i := range k.pending {
					if k.pending[i].ID == id {
						want = i
					}
				}
				sub := k.now + 1 - id%4
				if want >= 0 {
					sub = k.pending[want].Submitted
				}
				if got := k.IndexSubmitted(id, sub); got != want {
					t.Fatalf("step %d: IndexSubmitted(%d, %d) = %d, want %d", step, id, sub, got, want)
				}
			}
		}
	})
}

// greedyRule reads no clock.
func (greedyRule) Steady() {}

// SkipTo leaves every campaign's credits and the utilization bit for bit
// where Tick leaves them: many campaigns (more than one group of four,
// and a part group), several leases each in every class, budgets and
// prices that round, skips of every length.
func TestSkipToDebitsAsTickDoes(t *testing.T) {
	classes := []policy.Class{policy.Deadline, policy.Interactive, policy.AgentBurst, policy.Opportunistic}
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.SampledFrom([]int{7, 64, 1000}).Draw(t, "pool")
		cfg := policy.Config{Pool: pool, IOCapacity: policy.Unmetered, InferenceCapacity: policy.Unmetered}
		ticked, _ := New(cfg, greedyRule{})
		skipped, _ := New(cfg, greedyRule{})
		n := rapid.IntRange(1, 11).Draw(t, "campaigns")
		for i := range n {
			env := policy.Envelope{Name: fmt.Sprintf("c%d", i), Budget: rapid.Float64Range(0, 1e7).Draw(t, "budget"),
				Sustained: 1, BurstCeiling: 1 << 20, Bucket: 1e6, Class: policy.Interactive}
			for _, k := range []*Core{ticked, skipped} {
				if _, err := k.Register(env); err != nil {
					t.Fatal(err)
				}
			}
		}
		for range rapid.IntRange(1, 60).Draw(t, "ops") {
			if rapid.IntRange(0, 2).Draw(t, "op") > 0 {
				c := policy.CampaignID(rapid.IntRange(0, n-1).Draw(t, "c"))
				gpus, run := rapid.IntRange(1, pool/2+1).Draw(t, "gpus"), rapid.IntRange(1, 5000).Draw(t, "run")
				cls := rapid.SampledFrom(classes).Draw(t, "class")
				for _, k := range []*Core{ticked, skipped} {
					_, _ = k.RequestRigid(c, gpus, run, run, cls, k.now+1)
				}
				continue
			}
			to := ticked.now + rapid.IntRange(1, 3000).Draw(t, "ticks")
			for ticked.now < to {
				ticked.Tick()
			}
			for skipped.now < to {
				if next := min(skipped.NextChange()-1, to); next > skipped.now {
					skipped.SkipTo(next)
				} else {
					skipped.Tick()
				}
			}
			for c := range n {
				a, b := ticked.Credits(policy.CampaignID(c)), skipped.Credits(policy.CampaignID(c))
				if math.Float64bits(a) != math.Float64bits(b) {
					t.Fatalf("t=%d: campaign %d's credits %v ticking, %v skipping", to, c, a, b)
				}
			}
			if a, b := ticked.Utilization(), skipped.Utilization(); math.Float64bits(a) != math.Float64bits(b) {
				t.Fatalf("t=%d: utilization %v ticking, %v skipping", to, a, b)
			}
		}
	})
}
