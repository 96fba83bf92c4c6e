package fairshare_test

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/fairshare"
)

// perTick is the rule as it was before the calculation period: docs/studies.md
// §6.9 to the letter, usage charged and decayed at the end of every tick
// and the priority (age included) recomputed at every admission. It is
// the oracle a calculation period of 1 tick must reproduce bit for bit.
type perTick struct {
	baseline.Base
	knobs fairshare.Knobs
	decay float64
	usage []float64
	queue baseline.Queue
	easy  baseline.EASY
}

func (*perTick) Name() string { return fairshare.Name }

func (r *perTick) Registered(*baseline.Core, policy.CampaignID) { r.usage = append(r.usage, 0) }

func (r *perTick) factor(k *baseline.Core, c policy.CampaignID) float64 {
	cp := k.Campaign(c)
	if cp.Filler || cp.Share <= 0 {
		return 0
	}
	total := 0.0
	for _, u := range r.usage {
		total += u
	}
	u := 0.0
	if total > 0 {
		u = r.usage[c] / total
	}
	return math.Exp2(-u / cp.Share)
}

func (r *perTick) Admit(k *baseline.Core) {
	for _, id := range r.queue.Build(k, nil) {
		req := k.Pend(k.Index(id))
		age := min(float64(k.Now()-req.Submitted)/r.knobs.MaxAge, 1)
		req.Key = r.knobs.WFairshare*r.factor(k, req.Campaign) + r.knobs.WAge*age
	}
	ids := r.queue.Build(k, func(a, b *baseline.Request) int {
		if c := cmp.Compare(b.Key, a.Key); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Submitted, b.Submitted); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	k.AdmitEASY(&r.easy, ids, func(head *baseline.Request, l *baseline.Lease) bool {
		return head.Class != policy.Opportunistic && l.Class == policy.Opportunistic
	})
}

func (r *perTick) EndTick(k *baseline.Core) {
	for c := range r.usage {
		r.usage[c] = r.usage[c]*r.decay + float64(k.Held(policy.CampaignID(c), policy.AnyClass))
	}
}

// A calculation period of 1 tick is §6.9's per-tick rule: on random
// campaigns, requests (agent and rigid, every class) and ticks, the
// journal is byte-identical to the per-tick oracle's and so is the usage.
func TestCalcPeriodOneIsPerTick(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		knobs := fairshare.DefaultKnobs()
		knobs.CalcPeriod = 1
		knobs.HalfLife = rapid.SampledFrom([]float64{1, 5, 600, 604800}).Draw(t, "half-life")
		knobs.WAge = rapid.SampledFrom([]float64{0, 1000, 1e6}).Draw(t, "w-age")
		knobs.MaxAge = rapid.SampledFrom([]float64{10, 604800}).Draw(t, "max-age")
		pool := rapid.IntRange(4, 64).Draw(t, "pool")
		cfg := bt.Config(pool, rapid.IntRange(0, 20).Draw(t, "grace"))
		rule := fairshare.NewRule(knobs)
		got, err := baseline.New(cfg, rule)
		if err != nil {
			t.Fatal(err)
		}
		want, err := baseline.New(cfg, &perTick{knobs: knobs, decay: math.Exp2(-1 / knobs.HalfLife)})
		if err != nil {
			t.Fatal(err)
		}
		var jg, jw bt.Journal
		got.SetRecorder(&jg)
		want.SetRecorder(&jw)
		n := rapid.IntRange(1, 5).Draw(t, "campaigns")
		for i := range n {
			cls := rapid.SampledFrom([]policy.Class{policy.Interactive, policy.AgentBurst, policy.Opportunistic}).Draw(t, "class")
			env := bt.Env(fmt.Sprintf("c%d", i), float64(rapid.IntRange(0, 8).Draw(t, "R")), cls)
			for _, a := range []*baseline.Core{got, want} {
				if _, err := a.Register(env); err != nil {
					t.Fatal(err)
				}
			}
		}
		steps := rapid.IntRange(1, 60).Draw(t, "steps")
		for range steps {
			c := policy.CampaignID(rapid.IntRange(0, n-1).Draw(t, "c"))
			gpus := rapid.IntRange(1, pool).Draw(t, "gpus")
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				cls := rapid.SampledFrom([]policy.Class{policy.AnyClass, policy.Interactive, policy.AgentBurst, policy.Opportunistic}).Draw(t, "req-class")
				d := rapid.IntRange(1, 200).Draw(t, "duration")
				for _, a := range []*baseline.Core{got, want} {
					_, _ = a.Request(c, gpus, d, cls)
				}
			case 1:
				run := rapid.IntRange(1, 200).Draw(t, "run")
				est := run + rapid.IntRange(0, 100).Draw(t, "slack")
				for _, a := range []*baseline.Core{got, want} {
					_, _ = a.RequestRigid(c, gpus, est, run, policy.AgentBurst, a.Now()+1)
				}
			default:
				ticks := rapid.IntRange(1, 50).Draw(t, "ticks")
				bt.Ticks(got, ticks)
				bt.Ticks(want, ticks)
			}
		}
		if !bytes.Equal(jg.Bytes, jw.Bytes) {
			t.Fatalf("journals differ:\ncalc period 1:\n%s\nper tick:\n%s", jg.Bytes, jw.Bytes)
		}
		for c := range n {
			u := want.Rule().(*perTick).usage[c]
			if g := rule.Usage(policy.CampaignID(c)); g != u {
				t.Fatalf("campaign %d: usage %v, per tick %v", c, g, u)
			}
		}
	})
}
