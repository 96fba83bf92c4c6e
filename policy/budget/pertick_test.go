package budget_test

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/budget"
)

// perTick is the rule as it was before the calculation period: the
// window slid and the priorities recomputed every tick. It is the oracle
// a calculation period of 1 tick must reproduce bit for bit.

// segment is a run of ticks from start on with the same holding.
type oldSegment struct{ start, held int }

// window is one campaign's holdings over the last W ticks, as change
// points, with their running sum: holdings change rarely, so this is
// small where a per-tick ring of a 7-day window would be 600k entries.
type oldWindow struct {
	segs []oldSegment
	head int
	sum  int
}

// Rule is the budget rule.
type perTick struct {
	baseline.Base
	// rule is the preemption contract (Hooks): what campaigns hold now,
	// which no calculation period delays.
	rule  *budget.Rule
	knobs budget.Knobs
	wins  []oldWindow
	// group is each campaign's group: an index into knobs.Groups, or, for
	// a campaign in none, a group of its own (len(knobs.Groups) + its id).
	group []int
	queue baseline.Queue
	easy  baseline.EASY
	// Per pass: each campaign's group-level and member-level priority,
	// and the per-group sums they are made of.
	groupP, memberP []float64
	gShare          []float64
	gUsage          []int
	core            *baseline.Core
}

func (*perTick) Name() string { return budget.Name }

// Registered starts a campaign with an empty window, in its group.
func (r *perTick) Registered(k *baseline.Core, c policy.CampaignID) {
	r.rule.Registered(k, c)
	r.wins = append(r.wins, oldWindow{})
	g := len(r.knobs.Groups) + int(c)
	name := k.Envelope(c).Name
	for i, grp := range r.knobs.Groups {
		if slices.Contains(grp.Members, name) {
			g = i
		}
	}
	r.group = append(r.group, g)
}

// WindowUsage is campaign c's GPU-seconds in the last W ticks.
func (r *perTick) WindowUsage(c policy.CampaignID) int { return r.wins[c].sum }

// Priority is c's share less its usage fraction over the window, at the
// top level: its group's with groups (Σ of the members' shares less Σ of
// their usage fractions), its own without.
func (r *perTick) Priority(k *baseline.Core, c policy.CampaignID) float64 {
	r.priorities(k)
	return r.groupP[c]
}

// MemberPriority is c's priority inside its group: its share of the
// group's shares less its share of the group's window usage.
func (r *perTick) MemberPriority(k *baseline.Core, c policy.CampaignID) float64 {
	r.priorities(k)
	return r.memberP[c]
}

// priorities computes both levels for every campaign; the filler has 0 at
// both and counts in no total (§6.11).
func (r *perTick) priorities(k *baseline.Core) {
	n := k.NumCampaigns()
	ng := len(r.knobs.Groups) + n
	r.gShare = r.gShare[:0]
	r.gUsage = baseline.Ints(r.gUsage, ng)
	for range ng {
		r.gShare = append(r.gShare, 0)
	}
	for c := range n {
		cp := k.Campaign(policy.CampaignID(c))
		if cp.Filler {
			continue
		}
		r.gShare[r.group[c]] += cp.Share
		r.gUsage[r.group[c]] += r.wins[c].sum
	}
	whole := float64(k.Config().Pool) * float64(r.knobs.Window)
	r.groupP, r.memberP = r.groupP[:0], r.memberP[:0]
	for c := range n {
		cp := k.Campaign(policy.CampaignID(c))
		if cp.Filler {
			r.groupP, r.memberP = append(r.groupP, 0), append(r.memberP, 0)
			continue
		}
		g := r.group[c]
		r.groupP = append(r.groupP, oldRatio(r.gUsage[g], r.gShare[g]*whole))
		// The member's own ratio at the member level, also in a group of
		// its own (where it equals the group's), as the rule defines it:
		// two groups tied at the top level (both +Inf: used GPUs with no
		// entitlement) are then ordered by their members' ratios, never
		// by whether a group has one member or several.
		r.memberP = append(r.memberP, oldRatio(r.wins[c].sum, cp.Share*whole))
	}
}

// oldRatio is used ÷ entitled: +Inf for a positive use of nothing, 0 for
// no use.
func oldRatio(used int, entitled float64) float64 {
	switch {
	case used == 0:
		return 0
	case entitled <= 0:
		return math.Inf(1)
	}
	return float64(used) / entitled
}

// Admit orders the queue level by level — group priority, then member
// priority inside the group (Slurm's Fair Tree walks the tree the same
// way) — then submit time and id, and runs one EASY pass.
func (r *perTick) Admit(k *baseline.Core) {
	r.priorities(k)
	for _, id := range r.queue.Build(k, nil) {
		req := k.Pend(k.Index(id))
		req.Key = r.groupP[req.Campaign]
	}
	ids := r.queue.Build(k, func(a, b *baseline.Request) int {
		if c := cmp.Compare(r.groupP[a.Campaign], r.groupP[b.Campaign]); c != 0 {
			return c
		}
		if c := cmp.Compare(r.memberP[a.Campaign], r.memberP[b.Campaign]); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Submitted, b.Submitted); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	r.core = k
	r.easy.Key = func(*baseline.Request) {} // written above
	r.rule.Hooks(k, &r.easy)
	k.AdmitEASY(&r.easy, ids, r.rule.Eligibility())
}

// Protected and Restart are the rule's.
func (r *perTick) Protected(k *baseline.Core, l *baseline.Lease) bool { return r.rule.Protected(k, l) }

func (r *perTick) Restart() baseline.Restart { return r.rule.Restart() }

// EndTick slides every campaign's window by one tick.
func (r *perTick) EndTick(k *baseline.Core) {
	now := k.Now()
	out := now - r.knobs.Window // the tick leaving the window
	for c := range r.wins {
		w := &r.wins[c]
		held := k.Held(policy.CampaignID(c), policy.AnyClass)
		if n := len(w.segs); n == 0 || w.segs[n-1].held != held {
			w.segs = append(w.segs, oldSegment{start: now, held: held})
		}
		w.sum += held
		if out < 1 {
			continue
		}
		for w.head+1 < len(w.segs) && w.segs[w.head+1].start <= out {
			w.head++
		}
		if w.segs[w.head].start <= out {
			w.sum -= w.segs[w.head].held
		}
		if w.head > 64 && w.head > len(w.segs)/2 {
			w.segs = append(w.segs[:0], w.segs[w.head:]...)
			w.head = 0
		}
	}
}

// A calculation period of 1 tick is the per-tick rule: on random
// campaigns (flat or in a group), requests (agent and rigid, every class)
// and ticks, the journal is byte-identical to the per-tick oracle's, and
// the window usage is the same.
func TestCalcPeriodOneIsPerTick(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		knobs := budget.DefaultKnobs()
		knobs.CalcPeriod = 1
		knobs.Window = rapid.SampledFrom([]int{1, 7, 100, 604800}).Draw(t, "window")
		for _, c := range []policy.Class{policy.Interactive, policy.AgentBurst, policy.Opportunistic} {
			knobs.MinRuntime[c] = rapid.SampledFrom([]int{budget.Never, 0, 5, 300}).Draw(t, "m")
		}
		if rapid.Bool().Draw(t, "groups") {
			knobs.Groups = []budget.Group{{Name: "g", Members: []string{"c0", "c1"}}}
		}
		pool := rapid.IntRange(4, 64).Draw(t, "pool")
		cfg := bt.Config(pool, rapid.IntRange(0, 20).Draw(t, "grace"))
		rule := budget.NewRule(knobs)
		got, err := baseline.New(cfg, rule)
		if err != nil {
			t.Fatal(err)
		}
		oracle := &perTick{knobs: knobs, rule: budget.NewRule(knobs)}
		want, err := baseline.New(cfg, oracle)
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
				cls := rapid.SampledFrom([]policy.Class{policy.Interactive, policy.AgentBurst, policy.Opportunistic}).Draw(t, "rigid-class")
				for _, a := range []*baseline.Core{got, want} {
					_, _ = a.RequestRigid(c, gpus, est, run, cls, a.Now()+1)
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
			if g, w := rule.WindowUsage(policy.CampaignID(c)), oracle.WindowUsage(policy.CampaignID(c)); g != w {
				t.Fatalf("campaign %d: window usage %d, per tick %d", c, g, w)
			}
		}
	})
}
