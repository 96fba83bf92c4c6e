package fairshare_test

import (
	"bytes"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/fairshare"
)

// The queue order kept within a calculation period (the waiting requests'
// order, the new ones merged in) is the order a full sort gives: on random
// campaigns, requests (agent and rigid, every class), releases and ticks,
// under any period, the journal is byte-identical to the rule's that
// sorts the whole queue at every admission.
func TestKeptOrderIsTheSortedOrder(t *testing.T) {
	rapid.Check(t, keptOrderIsTheSortedOrder)
}

func keptOrderIsTheSortedOrder(t *rapid.T) {
	knobs := fairshare.DefaultKnobs()
	knobs.CalcPeriod = rapid.SampledFrom([]int{1, 2, 7, 300}).Draw(t, "calc-period")
	knobs.HalfLife = rapid.SampledFrom([]float64{1, 5, 600, 604800}).Draw(t, "half-life")
	knobs.WAge = rapid.SampledFrom([]float64{0, 1000, 1e6}).Draw(t, "w-age")
	knobs.MaxAge = rapid.SampledFrom([]float64{10, 604800}).Draw(t, "max-age")
	pool := rapid.IntRange(4, 64).Draw(t, "pool")
	cfg := bt.Config(pool, rapid.IntRange(0, 20).Draw(t, "grace"))
	got, err := baseline.New(cfg, fairshare.NewRule(knobs))
	if err != nil {
		t.Fatal(err)
	}
	want, err := baseline.New(cfg, fairshare.NewPlainRule(knobs))
	if err != nil {
		t.Fatal(err)
	}
	// The oracle builds its queue from the whole pending list at every
	// pass; without this, while no flexible request is pending both
	// Cores would read the same kept queue (baseline.Keyed), and the
	// test would compare that queue with itself.
	want.SetPlainQueue(true)
	var jg, jw bt.Journal
	got.SetRecorder(&jg)
	want.SetRecorder(&jw)
	both := []*baseline.Core{got, want}
	n := rapid.IntRange(1, 6).Draw(t, "campaigns")
	for i := range n {
		cls := rapid.SampledFrom([]policy.Class{policy.Interactive, policy.AgentBurst, policy.Opportunistic}).Draw(t, "class")
		env := bt.Env(fmt.Sprintf("c%d", i), float64(rapid.IntRange(0, 8).Draw(t, "R")), cls)
		for _, a := range both {
			if _, err := a.Register(env); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range rapid.IntRange(1, 80).Draw(t, "steps") {
		c := policy.CampaignID(rapid.IntRange(0, n-1).Draw(t, "c"))
		gpus := rapid.IntRange(1, pool).Draw(t, "gpus")
		switch rapid.IntRange(0, 5).Draw(t, "op") {
		case 5:
			// A burst of narrow rigid requests filed at once: a backfill
			// pass then has more candidates than it keeps in order, and
			// must read the rest again (Keyed's offer and reread).
			for range rapid.IntRange(3, 12).Draw(t, "burst") {
				c := policy.CampaignID(rapid.IntRange(0, n-1).Draw(t, "burst-c"))
				g := rapid.IntRange(1, max(1, pool/8)).Draw(t, "burst-gpus")
				run := rapid.SampledFrom([]int{5, 50, 5000}).Draw(t, "burst-run")
				for _, a := range both {
					_, _ = a.RequestRigid(c, g, run, run, policy.AgentBurst, a.Now()+1)
				}
			}
		case 0:
			cls := rapid.SampledFrom([]policy.Class{policy.AnyClass, policy.Interactive, policy.AgentBurst, policy.Opportunistic}).Draw(t, "req-class")
			d := rapid.IntRange(1, 200).Draw(t, "duration")
			for _, a := range both {
				_, _ = a.Request(c, gpus, d, cls)
			}
		case 1:
			run := rapid.IntRange(1, 200).Draw(t, "run")
			est := run + rapid.IntRange(0, 100).Draw(t, "slack")
			for _, a := range both {
				_, _ = a.RequestRigid(c, gpus, est, run, policy.AgentBurst, a.Now()+1)
			}
		case 2:
			cls := rapid.SampledFrom([]policy.Class{policy.AnyClass, policy.AgentBurst, policy.Opportunistic}).Draw(t, "release-class")
			for _, a := range both {
				_ = a.ReleaseAll(c, cls)
			}
		default:
			ticks := rapid.IntRange(1, 40).Draw(t, "ticks")
			bt.Ticks(got, ticks)
			bt.Ticks(want, ticks)
		}
	}
	if !bytes.Equal(jg.Bytes, jw.Bytes) {
		t.Fatalf("journals differ:\nkept order:\n%s\nsorted every admission:\n%s", jg.Bytes, jw.Bytes)
	}
}
