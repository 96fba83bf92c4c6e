package budget_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/budget"
)

// The ping-pong revision 1 allowed, worked by hand, and what the contract
// does instead. Pool 8, grace 60 s, W = 7 days, m = 1 h for burst,
// restart zero. A and B are each entitled to 1/2 (4 GPUs). A runs a1 and
// a2 (4 GPUs, 10 h each) from tick 1 and has a3 waiting; B submits b1 and
// b2 (4 GPUs, 10 h) at tick 2.
//
// Revision 1 (priority = entitlement − share of the window's usage; a
// campaign with priority > 0 may preempt any lease ≥ m old of one with
// priority < 0):
//
//	t = 3601: A used 8 × 3600, B nothing: A 1/2 − 1 < 0, B 1/2 > 0;
//	          b1 preempts a2 (4 GPUs × 3660 s lost).
//	t = 3661: b1 starts; A still has all the window's usage (29,280 of
//	          29,280): b2 preempts a1 (3660 s old ≥ m), 4 × 3720 s lost.
//	          A holds 0, B 8.
//	t ≥ 7381: B's usage 4 × 60 + 8 × (t − 3720) passes A's 29,520:
//	          now B is above, A below, and b1 is 3720 s old: a3 preempts
//	          b1, then a requeued job of A preempts b2, and so on — each
//	          direction in turn, about every two hours, each time an hour
//	          or more of 4 GPUs thrown away, and no 10-hour job finishes.
//
// Revision 2 judges what the campaigns hold now, q = held ÷ (entitlement
// × pool), and requires q_V > 1, q_P < 1 and, after the preemption,
// q_P ≤ q_V (Kueue's LessThanOrEqualToFinalShare):
//
//	t = 3601: q_A = 8/4 = 2 > 1, q_B = 0 < 1, and after it q_B = 4/4 =
//	          1 ≤ q_A = 4/4 = 1: b1 preempts a2 (both of A's leases
//	          would lose 4 × 3660; a2 is the newer).
//	t = 3661: b1 starts. q_A = q_B = 1: nobody is above its entitlement,
//	          so nobody preempts again, in either direction.
//	t = 36001: a1 ends. B's window usage (4 × 32,340) is below A's
//	          (8 × 3660 + 4 × 32,340), so b2 takes the 4 free GPUs: B now
//	          borrows A's idle entitlement (q_B = 8/4 = 2), while A, at
//	          q_A = 0, has a3 waiting. A reclaims — after it q_A = 1 ≤
//	          q_B = 1 — as a Kueue queue below its nominal quota reclaims
//	          from a borrower. b2 is younger than m, so b1 goes.
//	t = 36061: a3 starts. q_A = q_B = 1 again, and stays so.
//
// So the contract stops the back-and-forth while the holdings stand (at
// 3661 neither campaign may preempt the other, whatever its usage); a
// preemption the other way needs the victim to have grown above its
// entitlement since — here by taking the GPUs its victim's own job left.
// That reclaim is what the checkpoint default is for: under restart zero
// b1 (ran 32,340 s when noticed) loses 4 × (32,340 + 60) GPU-seconds;
// under checkpoint:3600 its 8th checkpoint keeps 28,800 s, and it loses
// 4 × (32,400 − 28,800) = 4 × 3600.
func TestPingPongRevisionOneAllowedCannotHappen(t *testing.T) {
	k := budget.DefaultKnobs()
	k.CalcPeriod, k.Restart = 1, baseline.Restart{}
	a, err := budget.New(bt.Config(8, 60), k)
	require.NoError(t, err)
	j := &bt.Journal{}
	a.SetRecorder(j)
	ca, _ := a.Register(bt.Env("A", 1, policy.AgentBurst))
	cb, _ := a.Register(bt.Env("B", 1, policy.AgentBurst))
	const run = 36000
	_, _ = a.RequestRigid(ca, 4, run, run, policy.AgentBurst, 1)
	a2, _ := a.RequestRigid(ca, 4, run, run, policy.AgentBurst, 1)
	a.Tick()
	a3, _ := a.RequestRigid(ca, 4, run, run, policy.AgentBurst, 2)
	b1, _ := a.RequestRigid(cb, 4, run, run, policy.AgentBurst, 2)
	b2, _ := a.RequestRigid(cb, 4, run, run, policy.AgentBurst, 2)
	bt.Ticks(a, 80000)
	n := j.Of(policy.EventPreemptNotice)
	require.Len(t, n, 2, "one preemption, and one reclaim after B borrowed")
	require.Equal(t, a2, n[0].Lease)
	require.Equal(t, 3601, n[0].T)
	require.Equal(t, b1, n[1].Lease)
	require.Equal(t, 36001, n[1].T)
	for _, w := range []struct{ id, t int }{{b1, 3661}, {b2, 36001}, {a3, 36061}} {
		g, ok := j.Grant(w.id)
		require.True(t, ok)
		require.Equal(t, w.t, g.T, "lease %d", w.id)
	}
}

// contractLedger follows the journal: what each campaign holds and not
// under notice, each lease's grant tick and campaign.
type contractLedger struct {
	held    []int
	granted map[int]int
	camp    map[int]policy.CampaignID
	gpus    map[int]int
	noticed map[int]bool
	seen    int
}

// The contract, checked from the journal on random workloads: every
// preemption notice of a lease that is not the filler's was issued for the
// blocked head P (the request its GPUs are reserved for) against a lease
// of V at least m old (never one of a class m protects for ever), and at
// the level where P's and V's paths split, V was above its entitlement
// (q_V > 1), P below (q_P < 1), and after the preemption P, counting its
// request, is not above V, counting all V lost to it:
// (held_P + n) × e_V ≤ (held_V − lost_V) × e_P. In particular no lease is
// preempted while its campaign is at or below its entitlement, or by a
// campaign that would end up above the victim.
func TestPropertyPreemptionKeepsTheContract(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := budget.DefaultKnobs()
		k.CalcPeriod = rapid.SampledFrom([]int{1, 7, 300}).Draw(t, "calc-period")
		k.Window = rapid.SampledFrom([]int{10, 600, 604800}).Draw(t, "window")
		for _, c := range []policy.Class{policy.Interactive, policy.AgentBurst, policy.Opportunistic} {
			k.MinRuntime[c] = rapid.SampledFrom([]int{budget.Never, 0, 30, 300}).Draw(t, "m")
		}
		k.Restart = baseline.Restart{Checkpoint: rapid.SampledFrom([]int{0, 1, 50, 3600}).Draw(t, "checkpoint")}
		n := rapid.IntRange(2, 6).Draw(t, "campaigns")
		if rapid.Bool().Draw(t, "groups") {
			k.Groups = []budget.Group{{Name: "g", Members: []string{"c0", "c1"}}}
			if n >= 4 && rapid.Bool().Draw(t, "two-groups") {
				k.Groups = append(k.Groups, budget.Group{Name: "h", Members: []string{"c2", "c3"}})
			}
		}
		pool := rapid.IntRange(4, 64).Draw(t, "pool")
		grace := rapid.IntRange(0, 30).Draw(t, "grace")
		rule := budget.NewRule(k)
		a, err := baseline.New(bt.Config(pool, grace), rule)
		require.NoError(t, err)
		j := &bt.Journal{}
		a.SetRecorder(j)
		for i := range n {
			cls := policy.AgentBurst
			if i == n-1 && rapid.Bool().Draw(t, "filler") {
				cls = policy.Opportunistic
			}
			_, err := a.Register(bt.Env(fmt.Sprintf("c%d", i), float64(rapid.IntRange(0, 8).Draw(t, "R")), cls))
			require.NoError(t, err)
		}
		group := func(c policy.CampaignID) int {
			name := a.Envelope(c).Name
			for g, grp := range k.Groups {
				if slices.Contains(grp.Members, name) {
					return g
				}
			}
			return len(k.Groups) + int(c)
		}
		l := &contractLedger{held: make([]int, n), granted: map[int]int{}, camp: map[int]policy.CampaignID{}, gpus: map[int]int{}, noticed: map[int]bool{}}
		check := func() {
			events := j.Events[l.seen:]
			l.seen = len(j.Events)
			for x := 0; x < len(events); x++ {
				e := events[x]
				switch e.Kind {
				case policy.EventGrant:
					l.granted[e.Lease], l.camp[e.Lease], l.gpus[e.Lease] = e.T, e.CampaignID, e.GPUs
					l.held[e.CampaignID] += e.GPUs
				case policy.EventRelease:
					if !l.noticed[e.Lease] {
						l.held[e.CampaignID] -= e.GPUs
					}
				case policy.EventPreemptNotice:
					// The batch: this search's notices (one head per
					// admission), all for one request.
					end := x
					for end < len(events) && events[end].Kind == policy.EventPreemptNotice {
						end++
					}
					batch := events[x:end]
					x = end - 1
					var head *baseline.Request
					for _, ls := range a.Leases() {
						if ls.ID == batch[0].Lease {
							i := a.Index(ls.ReservedFor)
							if i < 0 {
								t.Fatalf("t=%d: lease %d noticed for request %d, which is not waiting", e.T, ls.ID, ls.ReservedFor)
							}
							head = a.Pend(i)
						}
					}
					if head == nil {
						t.Fatalf("t=%d: noticed lease %d is gone", e.T, batch[0].Lease)
					}
					p := head.Campaign
					lost := map[int]int{} // by node at the split level
					for _, v := range batch {
						if a.Campaign(v.CampaignID).Filler {
							continue
						}
						if m := k.MinRuntime[v.Class]; m < 0 || e.T-l.granted[v.Lease] < m {
							t.Fatalf("t=%d: lease %d of class %s, %d s old, preempted under m = %d", e.T, v.Lease, v.Class, e.T-l.granted[v.Lease], m)
						}
						if group(p) == group(v.CampaignID) {
							lost[int(v.CampaignID)] += v.GPUs
						} else {
							lost[-1-group(v.CampaignID)] += v.GPUs
						}
					}
					for _, v := range batch {
						vc := v.CampaignID
						if a.Campaign(vc).Filler {
							continue
						}
						hp, hv, ep, ev, node := 0, 0, 0.0, 0.0, int(vc)
						if group(p) == group(vc) {
							hp, hv = l.held[p], l.held[vc]
							ep, ev = a.Campaign(p).Share, a.Campaign(vc).Share
						} else {
							node = -1 - group(vc)
							for c := range n {
								id := policy.CampaignID(c)
								if a.Campaign(id).Filler {
									continue
								}
								if group(id) == group(p) {
									hp += l.held[c]
									ep += a.Campaign(id).Share
								}
								if group(id) == group(vc) {
									hv += l.held[c]
									ev += a.Campaign(id).Share
								}
							}
						}
						fp := float64(pool)
						if !(float64(hv) > ev*fp) {
							t.Fatalf("t=%d: %s preempted %s at q_V = %d/(%v×%d) ≤ 1", e.T, a.Envelope(p).Name, v.Campaign, hv, ev, pool)
						}
						if !(float64(hp) < ep*fp) {
							t.Fatalf("t=%d: %s (q_P = %d/(%v×%d) ≥ 1) preempted %s", e.T, a.Envelope(p).Name, hp, ep, pool, v.Campaign)
						}
						if float64(hp+head.GPUs)*ev > float64(hv-lost[node])*ep*(1+1e-12) {
							t.Fatalf("t=%d: %s would end above %s: (%d + %d)/%v > (%d − %d)/%v", e.T, a.Envelope(p).Name, v.Campaign, hp, head.GPUs, ep, hv, lost[node], ev)
						}
					}
					for _, v := range batch {
						l.noticed[v.Lease] = true
						l.held[v.CampaignID] -= v.GPUs
					}
				}
			}
		}
		for range rapid.IntRange(1, 80).Draw(t, "steps") {
			c := policy.CampaignID(rapid.IntRange(0, n-1).Draw(t, "c"))
			gpus := rapid.IntRange(1, pool).Draw(t, "gpus")
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0:
				cls := rapid.SampledFrom([]policy.Class{policy.AnyClass, policy.Interactive, policy.AgentBurst, policy.Opportunistic}).Draw(t, "req-class")
				_, _ = a.Request(c, gpus, rapid.IntRange(1, 600).Draw(t, "duration"), cls)
			case 1, 2:
				run := rapid.IntRange(1, 600).Draw(t, "run")
				cls := rapid.SampledFrom([]policy.Class{policy.Interactive, policy.AgentBurst, policy.Opportunistic}).Draw(t, "rigid-class")
				_, _ = a.RequestRigid(c, gpus, run+rapid.IntRange(0, 100).Draw(t, "slack"), run, cls, a.Now()+1)
			default:
				for range rapid.IntRange(1, 400).Draw(t, "ticks") {
					a.Tick()
					check()
				}
			}
		}
	})
}
