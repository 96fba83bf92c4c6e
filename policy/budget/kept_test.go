package budget

import (
	"bytes"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
)

// plainRule is the rule as it was before its queue was kept between
// admissions: every admission writes every key, ranks the campaigns
// waiting from the pending list, builds the whole order and runs
// AdmitEASY over it. It is the oracle of the kept queue.
type plainRule struct {
	*Rule
	queue baseline.Queue
	easy  baseline.EASY
	waits []bool
}

func (p *plainRule) Admit(k *baseline.Core) {
	r := p.Rule
	r.core = k
	r.recalc(k)
	for i := range k.Pending() {
		if req := k.Pend(i); !k.Campaign(req.Campaign).Filler {
			req.Key = r.groupPrio(int(req.Campaign))
		}
	}
	n := len(r.memberP)
	r.rank = baseline.Ints(r.rank, n)
	p.waits = baseline.Flags(p.waits, n)
	r.byRank = r.byRank[:0]
	for i := range k.Pending() {
		if c := k.Pend(i).Campaign; !p.waits[c] {
			p.waits[c] = true
			r.byRank = append(r.byRank, int(c))
		}
	}
	r.rankSorted() // the same ranking, from the waiting campaigns found here
	ids := p.queue.BuildRanked(k, r.rank)
	r.Hooks(k, &p.easy)
	k.AdmitEASY(&p.easy, ids, r.Eligibility())
}

// The kept queue (baseline.Ranked, AdmitEASYRanked, the ranks kept while
// the priorities order the campaigns as before) decides as the plain
// admission, which computes every priority at the calculation rather
// than as read: on random campaigns (flat or in a group, the filler among
// them), calculation periods, requests (agent and rigid, every class, some
// denied), releases and ticks, the journals are byte-identical, and so is
// the next tick each would admit at.
func TestKeptQueueIsThePlainAdmission(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		knobs := DefaultKnobs()
		knobs.CalcPeriod = rapid.SampledFrom([]int{1, 2, 7, 300}).Draw(t, "calc-period")
		knobs.Window = rapid.SampledFrom([]int{1, 7, 100, 604800}).Draw(t, "window")
		for _, c := range []policy.Class{policy.Interactive, policy.AgentBurst, policy.Opportunistic} {
			knobs.MinRuntime[c] = rapid.SampledFrom([]int{Never, 0, 5, 300}).Draw(t, "m")
		}
		switch rapid.IntRange(0, 2).Draw(t, "groups") {
		case 1:
			knobs.Groups = []Group{{Name: "g", Members: []string{"c0", "c1"}}}
		case 2: // a group's usage read from more members, in two groups
			knobs.Groups = []Group{{Name: "g", Members: []string{"c0", "c2", "c3"}}, {Name: "h", Members: []string{"c1", "c4"}}}
		}
		pool := rapid.IntRange(4, 64).Draw(t, "pool")
		cfg := bt.Config(pool, rapid.IntRange(0, 20).Draw(t, "grace"))
		got, err := baseline.New(cfg, NewRule(knobs))
		if err != nil {
			t.Fatal(err)
		}
		plain := NewRule(knobs)
		plain.everySearch = true // the oracle searches for victims every time
		plain.eagerCalc = true   // and computes every priority at the calculation
		want, err := baseline.New(cfg, &plainRule{Rule: plain})
		if err != nil {
			t.Fatal(err)
		}
		cores := []*baseline.Core{got, want}
		var jg, jw bt.Journal
		got.SetRecorder(&jg)
		want.SetRecorder(&jw)
		// Entitlements (without the Groups knob), set again with other
		// shares between ticks (op 5): a calculation's ratios not read yet
		// are those of the shares it was made with.
		ents := knobs.Groups == nil && rapid.Bool().Draw(t, "entitlements")
		reshare := func() {
			a := rapid.SampledFrom([]float64{0, 0.1, 0.3}).Draw(t, "share-c0")
			b := rapid.SampledFrom([]float64{0.1, 0.2}).Draw(t, "share-c1")
			e := &baseline.Entitlements{Groups: []baseline.GroupShare{{Name: "e", Share: a + b,
				Members: []baseline.MemberShare{{Name: "c0", Share: a}, {Name: "c1", Share: b}}}}}
			for _, k := range cores {
				if err := k.SetEntitlements(e); err != nil {
					t.Fatal(err)
				}
			}
		}
		if ents {
			reshare()
		}
		n := rapid.IntRange(1, 6).Draw(t, "campaigns")
		for i := range n {
			cls := rapid.SampledFrom([]policy.Class{policy.Interactive, policy.AgentBurst, policy.Opportunistic}).Draw(t, "class")
			env := bt.Env(fmt.Sprintf("c%d", i), float64(rapid.IntRange(0, 3).Draw(t, "R")), cls)
			for _, a := range cores {
				if _, err := a.Register(env); err != nil {
					t.Fatal(err)
				}
			}
		}
		for range rapid.IntRange(1, 80).Draw(t, "steps") {
			c := policy.CampaignID(rapid.IntRange(0, n-1).Draw(t, "c"))
			gpus := rapid.IntRange(1, pool+1).Draw(t, "gpus")
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0:
				cls := rapid.SampledFrom([]policy.Class{policy.AnyClass, policy.Interactive, policy.AgentBurst, policy.Opportunistic}).Draw(t, "req-class")
				d := rapid.IntRange(0, 200).Draw(t, "duration")
				for _, a := range cores {
					_, _ = a.Request(c, gpus, d, cls)
				}
			case 1, 2:
				run := rapid.IntRange(1, 200).Draw(t, "run")
				est := run + rapid.IntRange(0, 100).Draw(t, "slack")
				cls := rapid.SampledFrom([]policy.Class{policy.Interactive, policy.AgentBurst, policy.Opportunistic}).Draw(t, "rigid-class")
				at := rapid.IntRange(0, 1).Draw(t, "at")
				for _, a := range cores {
					_, _ = a.RequestRigid(c, gpus, est, run, cls, a.Now()+at)
				}
			case 3:
				if rapid.IntRange(0, 3).Draw(t, "release") == 0 {
					cls := rapid.SampledFrom([]policy.Class{policy.AnyClass, policy.Interactive, policy.AgentBurst}).Draw(t, "release-class")
					for _, a := range cores {
						_ = a.ReleaseAll(c, cls)
					}
				}
			case 5:
				if ents {
					reshare()
				}
			default:
				ticks := rapid.IntRange(1, 400).Draw(t, "ticks")
				for range ticks {
					got.Tick()
					want.Tick()
					// A victim search skipped (Search) leaves the next
					// tick to admit at (the victim order's next change
					// after a sensitive search) where the search would.
					if g, w := got.NextChange(), want.NextChange(); g != w {
						t.Fatalf("tick %d: next change at tick %d kept, %d plain", got.Now(), g, w)
					}
				}
			}
		}
		if !bytes.Equal(jg.Bytes, jw.Bytes) {
			t.Fatalf("journals differ:\nkept:\n%s\nplain:\n%s", jg.Bytes, jw.Bytes)
		}
	})
}
