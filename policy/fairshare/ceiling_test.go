package fairshare_test

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/fairshare"
)

// A key's ceiling holds to the bit for its whole generation (what
// baseline.Keyed relies on to key only the heads that could come first):
// on random campaigns, shares, knobs and load (idle stretches included,
// so that the decayed total falls and then grows), every ceiling taken at
// a pass is at least the key of the same campaign and submit time at
// every later pass while CeilingGen stays, and at least the key then.
func TestKeyCeilingHoldsForItsGeneration(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		knobs := fairshare.DefaultKnobs()
		knobs.HalfLife = rapid.SampledFrom([]float64{1, 60, 3600, 7 * 24 * 3600}).Draw(t, "half life")
		knobs.WFairshare = rapid.SampledFrom([]float64{0, 1, 10000, 1e9}).Draw(t, "w_fairshare")
		knobs.WAge = rapid.SampledFrom([]float64{0, 1, 1000, 1e9}).Draw(t, "w_age")
		knobs.MaxAge = rapid.SampledFrom([]float64{1, 300, 7 * 24 * 3600}).Draw(t, "max age")
		knobs.CalcPeriod = rapid.SampledFrom([]int{1, 7, 60, 300}).Draw(t, "calc period")
		pool := rapid.IntRange(1, 64).Draw(t, "pool")
		rule := fairshare.NewRule(knobs)
		a, err := baseline.New(bt.Config(pool, 60), rule)
		if err != nil {
			t.Fatal(err)
		}
		ncamp := rapid.IntRange(1, 6).Draw(t, "campaigns")
		camps := make([]policy.CampaignID, ncamp)
		for i := range camps {
			r := rapid.SampledFrom([]float64{0.001, 1, 3, 1000}).Draw(t, "R")
			if camps[i], err = a.Register(bt.Env(fmt.Sprintf("c%d", i), r, policy.AgentBurst)); err != nil {
				t.Fatal(err)
			}
		}
		type ceiling struct {
			gen       uint64
			c         policy.CampaignID
			submitted int
			value     float64
		}
		var held []ceiling
		steps := rapid.IntRange(1, 60).Draw(t, "steps")
		for range steps {
			for range rapid.IntRange(0, 3).Draw(t, "requests") {
				c := camps[rapid.IntRange(0, ncamp-1).Draw(t, "campaign")]
				_, _ = a.Request(c, rapid.IntRange(1, pool).Draw(t, "gpus"), rapid.IntRange(1, 5000).Draw(t, "duration"), policy.AnyClass)
			}
			bt.Ticks(a, rapid.IntRange(1, 3000).Draw(t, "ticks"))
			now := a.Now()
			for range rapid.IntRange(1, 4).Draw(t, "probes") {
				c := camps[rapid.IntRange(0, ncamp-1).Draw(t, "probe campaign")]
				s := now - rapid.IntRange(0, 20000).Draw(t, "probe age")
				key := rule.Priority(a, c, s) // a pass's keys, the period's recalculation first
				gen := rule.CeilingGen(a)
				for _, h := range held {
					if h.gen == gen {
						if k := rule.Priority(a, h.c, h.submitted); k > h.value {
							t.Fatalf("tick %d: campaign %d's key for submit time %d is %v, above its ceiling %v of the same generation %d", now, h.c, h.submitted, k, h.value, gen)
						}
					}
				}
				ceil := rule.KeyCeiling(a, c, s)
				if key > ceil {
					t.Fatalf("tick %d: campaign %d's key for submit time %d is %v, above its ceiling %v", now, c, s, key, ceil)
				}
				held = append(held, ceiling{gen: gen, c: c, submitted: s, value: ceil})
			}
		}
	})
}
