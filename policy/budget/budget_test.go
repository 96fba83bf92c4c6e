package budget_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/budget"
)

// knobs are the defaults with priorities every tick, W and m as given,
// restart as given.
func knobs(window, burstM int, restart baseline.Restart) budget.Knobs {
	k := budget.DefaultKnobs()
	k.Window, k.CalcPeriod, k.Restart = window, 1, restart
	k.MinRuntime[policy.AgentBurst] = burstM
	return k
}

// The minimum runtime. Pool 10, A and B entitled to 1/2 each (5 GPUs).
// A takes the pool at t=1 as two 5-GPU burst leases; B asks for 5 right
// after. A is above its entitlement (q_A = 10/5 = 2), B below (q_B = 0),
// and after the preemption q_B = 5/5 = 1 ≤ q_A = (10 − 5)/5 = 1: allowed
// once A's leases are m old. Age at tick t is t − 1, so the notice comes
// at t = m + 1 (t = 2 for m = 0: B is filed after tick 1); B is granted
// when the grace of 10 s has run. Both of A's leases lose the same, and
// were granted at the same tick: the newer (larger id) goes. With
// m = Never, no notice ever.
func TestMinimumRuntimeIsNeverPreempted(t *testing.T) {
	for _, tc := range []struct {
		m, notice int
	}{{300, 301}, {0, 2}, {50, 51}, {budget.Never, 0}} {
		a, err := budget.New(bt.Config(10, 10), knobs(1000, tc.m, baseline.Restart{}))
		require.NoError(t, err)
		j := &bt.Journal{}
		a.SetRecorder(j)
		ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
		cb, _ := a.Register(bt.Env("b", 1, policy.AgentBurst))
		_, _ = a.Request(ca, 5, 5000, policy.AnyClass)
		la2, _ := a.Request(ca, 5, 5000, policy.AnyClass)
		a.Tick()
		lb, _ := a.Request(cb, 5, 100, policy.AnyClass)
		if tc.m == budget.Never {
			bt.Ticks(a, 4000)
			require.Empty(t, j.Of(policy.EventPreemptNotice))
			continue
		}
		bt.Ticks(a, tc.notice-2)
		require.Empty(t, j.Of(policy.EventPreemptNotice), "m=%d: notice before the minimum runtime", tc.m)
		a.Tick()
		n := j.Of(policy.EventPreemptNotice)
		require.Len(t, n, 1, "m=%d", tc.m)
		require.Equal(t, la2, n[0].Lease)
		require.Equal(t, tc.notice, n[0].T)
		bt.Ticks(a, 10)
		g, ok := j.Grant(lb)
		require.True(t, ok)
		require.Equal(t, tc.notice+10, g.T)
		bt.Ticks(a, 2000)
		require.Len(t, j.Of(policy.EventPreemptNotice), 1, "m=%d: q_A = q_B = 1 now: nobody is above", tc.m)
	}
}

// Interactive and deadline leases are never preempted by default, however
// far above its entitlement their campaign is.
func TestInteractiveIsNeverPreempted(t *testing.T) {
	a, err := budget.New(bt.Config(10, 10), budget.DefaultKnobs())
	require.NoError(t, err)
	j := &bt.Journal{}
	a.SetRecorder(j)
	ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
	cb, _ := a.Register(bt.Env("b", 1, policy.AgentBurst))
	for range 10 {
		_, _ = a.Request(ca, 1, 100000, policy.Interactive)
	}
	a.Tick()
	_, _ = a.Request(cb, 1, 100, policy.AnyClass)
	bt.Ticks(a, 20000)
	require.Empty(t, j.Of(policy.EventPreemptNotice))
}

// The window: usage older than W leaves it. Pool 10, W = 5; A (entitled
// to 1/4) holds 4 GPUs in ticks 1–10, B (3/4) 2 in ticks 1–12. After tick
// 10 their window usages are 4 × 5 = 20 and 2 × 5 = 10 GPU-seconds, and
// their usage ratios — usage ÷ (entitlement × pool × W) — 20 ÷ (1/4 × 10
// × 5) = 1.6 and 10 ÷ (3/4 × 50) = 4/15: B goes first. After tick 15, A
// has 0 and B 4 (ticks 11 and 12).
func TestSlidingWindow(t *testing.T) {
	k := knobs(5, 0, baseline.Restart{})
	rule := budget.NewRule(k)
	a, err := baseline.New(bt.Config(10, 10), rule)
	require.NoError(t, err)
	ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
	cb, _ := a.Register(bt.Env("b", 3, policy.AgentBurst))
	_, _ = a.Request(ca, 4, 10, policy.AnyClass)
	_, _ = a.Request(cb, 2, 12, policy.AnyClass)
	bt.Ticks(a, 10)
	require.Equal(t, 20, rule.WindowUsage(ca))
	require.Equal(t, 10, rule.WindowUsage(cb))
	require.InDelta(t, 1.6, rule.Priority(a, ca), 1e-12)
	require.InDelta(t, 4.0/15, rule.Priority(a, cb), 1e-12)
	bt.Ticks(a, 5)
	require.Equal(t, 0, rule.WindowUsage(ca))
	require.Equal(t, 4, rule.WindowUsage(cb))
}

// A campaign at its entitlement is never a victim. Pool 10, A and B
// entitled to 5 each and holding 5 each (q = 1): B's further request
// waits, however long.
func TestNoPreemptionOfCampaignAtOrBelowShare(t *testing.T) {
	a, err := budget.New(bt.Config(10, 10), knobs(1000, 0, baseline.Restart{}))
	require.NoError(t, err)
	j := &bt.Journal{}
	a.SetRecorder(j)
	ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
	cb, _ := a.Register(bt.Env("b", 1, policy.AgentBurst))
	_, _ = a.Request(ca, 5, 5000, policy.AnyClass)
	_, _ = a.Request(cb, 5, 5000, policy.AnyClass)
	a.Tick()
	_, _ = a.Request(cb, 5, 100, policy.AnyClass)
	bt.Ticks(a, 100)
	require.Empty(t, j.Of(policy.EventPreemptNotice))
}

// The order is Fair Tree's (https://slurm.schedmd.com/fair_tree.html:
// siblings ranked by Level Fairshare S / U, S the shares and U the usage
// each normalised among the siblings, the tree walked depth first). Pool
// 8, W = 100; group G1 = {a, b} entitled to 1/8 each (1/4 together), c a
// group of its own entitled to 3/4. a and c each hold 4 GPUs in ticks
// 1–100; a, b and c each ask for the whole pool at tick 50.
//
// At tick 101 the windows (ticks 1–100) hold a 400, b 0, c 400. Groups:
// G1's ratio 400 ÷ (1/4 × 8 × 100) = 2, c's 400 ÷ (3/4 × 800) = 2/3, so c
// first (Fair Tree: LF(G1) = 0.25 / 0.5 = 0.5 < LF(c) = 0.75 / 0.5 =
// 1.5). c runs ticks 101–110. At tick 111 (window ticks 11–110) G1 holds
// a's 360; inside G1, b's ratio 0 beats a's 360 ÷ (1/8 × 800) = 3.6
// (Fair Tree: LF(b) = 0.5 / 0 = ∞ > LF(a) = 0.5 / 1): b, then a.
func TestOrderIsFairTree(t *testing.T) {
	k := knobs(100, 0, baseline.Restart{})
	k.Groups = []budget.Group{{Name: "G1", Members: []string{"a", "b"}}}
	rule := budget.NewRule(k)
	a, err := baseline.New(bt.Config(8, 5), rule)
	require.NoError(t, err)
	j := &bt.Journal{}
	a.SetRecorder(j)
	ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
	cb, _ := a.Register(bt.Env("b", 1, policy.AgentBurst))
	cc, _ := a.Register(bt.Env("c", 6, policy.AgentBurst))
	_, _ = a.RequestRigid(ca, 4, 100, 100, policy.AgentBurst, 1)
	_, _ = a.RequestRigid(cc, 4, 100, 100, policy.AgentBurst, 1)
	bt.Ticks(a, 49)
	ra, _ := a.RequestRigid(ca, 8, 10, 10, policy.AgentBurst, 50)
	rb, _ := a.RequestRigid(cb, 8, 10, 10, policy.AgentBurst, 50)
	rc, _ := a.RequestRigid(cc, 8, 10, 10, policy.AgentBurst, 50)
	bt.Ticks(a, 51)
	require.InDelta(t, 2, rule.Priority(a, ca), 1e-12)
	require.InDelta(t, 2.0/3, rule.Priority(a, cc), 1e-12)
	bt.Ticks(a, 30)
	for _, w := range []struct{ id, t int }{{rc, 101}, {rb, 111}, {ra, 121}} {
		g, ok := j.Grant(w.id)
		require.True(t, ok)
		require.Equal(t, w.t, g.T)
	}
	require.Empty(t, j.Of(policy.EventPreemptNotice))
}

// The contract is judged where the paths split (§6.11). Pool 20; a and b
// entitled to 1/4 each (5 GPUs), c to 1/2 (10). a holds two 4-GPU burst
// leases (8), c three 4-GPU opportunistic ones (12); b asks for 4.
//
//   - Flat: b's q is 0 < 1; c's 12/10 = 1.2 > 1 and after losing a lease
//     (12 − 4)/10 = 0.8 ≥ b's (0 + 4)/5 = 0.8; a's 8/5 = 1.6 > 1 and
//     (8 − 4)/5 = 0.8 ≥ 0.8 too. Both may lose a lease; the lowest class
//     goes first: c's.
//   - With G1 = {a, b}: against c the paths split at the groups: G1
//     holds 8 of its 10 (q 0.8 < 1), c 12 of 10 (1.2 > 1), but after the
//     preemption G1 would hold (8 + 4)/10 = 1.2 > c's (12 − 4)/10 = 0.8:
//     Kueue's LessThanOrEqualToFinalShare refuses, c's leases stay. Inside
//     G1, b (0/5) against a (8/5 = 1.6): (0 + 4)/5 = 0.8 ≤ (8 − 4)/5 = 0.8,
//     so a loses a lease.
func TestHierarchyJudgesWherePathsSplit(t *testing.T) {
	// The same hierarchy from the entitlements (baseline.Entitlements, as
	// a trace's (user, group) associations give it) instead of the knob.
	ent := &baseline.Entitlements{Groups: []baseline.GroupShare{
		{Name: "G1", Share: 0.5, Members: []baseline.MemberShare{{Name: "a", Share: 0.25}, {Name: "b", Share: 0.25}}},
		{Name: "G2", Share: 0.5, Members: []baseline.MemberShare{{Name: "c", Share: 0.5}}},
	}}
	for _, tc := range []struct {
		groups []budget.Group
		ent    *baseline.Entitlements
		victim string
	}{
		{nil, nil, "c"},
		{[]budget.Group{{Name: "G1", Members: []string{"a", "b"}}}, nil, "a"},
		{nil, ent, "a"},
	} {
		k := knobs(1000, 0, baseline.Restart{})
		k.Groups = tc.groups
		a, err := baseline.New(bt.Config(20, 5), budget.NewRule(k))
		require.NoError(t, err)
		require.NoError(t, a.SetEntitlements(tc.ent))
		j := &bt.Journal{}
		a.SetRecorder(j)
		ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
		cb, _ := a.Register(bt.Env("b", 1, policy.AgentBurst))
		cc, _ := a.Register(bt.Env("c", 2, policy.AgentBurst))
		for range 2 {
			_, _ = a.Request(ca, 4, 1000, policy.AgentBurst)
		}
		for range 3 {
			_, _ = a.Request(cc, 4, 1000, policy.Opportunistic)
		}
		a.Tick()
		_, _ = a.Request(cb, 4, 100, policy.AnyClass)
		a.Tick()
		n := j.Of(policy.EventPreemptNotice)
		require.Len(t, n, 1, "groups %v", tc.groups)
		require.Equal(t, tc.victim, n[0].Campaign, "groups %v", tc.groups)
	}
}

// Victims: fewest GPU-seconds lost first, and a checkpoint keeps work.
// Pool 8, grace 60 s, restart checkpoint:1000, m = 0. A (entitled to
// 1/2) runs two 4-GPU jobs: j1 granted at tick 1, j2 at tick 700. B asks
// for 4 at tick 1200. Noticed then, j1 (ran 1199 s; its checkpoint at
// 1000 s of run keeps 1000) would lose 4 × (1199 + 60 − 1000) = 1036
// GPU-seconds; j2 (ran 500 s, no checkpoint yet) 4 × (500 + 60) = 2240.
// So j1 goes, although it is the older: its release at 1260 keeps 1000 s
// of its run. Under restart zero j1 would lose 4 × 1259 and j2 less: j2,
// the newer, goes, keeping nothing.
func TestFewestLostFirstAndCheckpoints(t *testing.T) {
	for _, tc := range []struct {
		restart baseline.Restart
		victim  int // 0: j1, 1: j2
		kept    int
	}{{baseline.Restart{Checkpoint: 1000}, 0, 1000}, {baseline.Restart{}, 1, 0}} {
		a, err := budget.New(bt.Config(8, 60), knobs(100000, 0, tc.restart))
		require.NoError(t, err)
		j := &bt.Journal{}
		a.SetRecorder(j)
		ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
		cb, _ := a.Register(bt.Env("b", 1, policy.AgentBurst))
		j1, _ := a.RequestRigid(ca, 4, 5000, 5000, policy.AgentBurst, 1)
		bt.Ticks(a, 699)
		j2, _ := a.RequestRigid(ca, 4, 5000, 5000, policy.AgentBurst, 700)
		bt.Ticks(a, 500)
		_, _ = a.RequestRigid(cb, 4, 100, 100, policy.AgentBurst, 1200)
		bt.Ticks(a, 61)
		n := j.Of(policy.EventPreemptNotice)
		require.Len(t, n, 1)
		require.Equal(t, 1200, n[0].T)
		require.Equal(t, []int{j1, j2}[tc.victim], n[0].Lease)
		r := j.Released(policy.ReasonPreempted)
		require.Len(t, r, 1)
		require.Equal(t, 1260, r[0].T)
		require.Equal(t, tc.kept, r[0].Kept)
	}
}

// Preloaded usage (docs/studies.md §6.16) counts as if it had been held
// in the replay. Pool 4, W = 100: A held 4 GPUs in ticks −49 … 0 (200
// GPU-seconds in the window at tick 0; its history's ticks after 0 are
// ignored), B nothing. Both ask for the pool at tick 1: B first. Without
// the history they tie, and A's request (the lower id) goes first.
func TestPreloadedUsageOrders(t *testing.T) {
	for _, preload := range []bool{true, false} {
		rule := budget.NewRule(knobs(100, 0, baseline.Restart{}))
		a, err := baseline.New(bt.Config(4, 5), rule)
		require.NoError(t, err)
		if preload {
			require.NoError(t, a.SetHistory([]baseline.Usage{{Campaign: "a", Start: -49, End: 10, GPUs: 4}}))
		}
		j := &bt.Journal{}
		a.SetRecorder(j)
		ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
		cb, _ := a.Register(bt.Env("b", 1, policy.AgentBurst))
		if preload {
			require.Equal(t, 200, rule.WindowUsage(ca))
		}
		ra, _ := a.RequestRigid(ca, 4, 10, 10, policy.AgentBurst, 1)
		rb, _ := a.RequestRigid(cb, 4, 10, 10, policy.AgentBurst, 1)
		a.Tick()
		first := ra
		if preload {
			first = rb
		}
		g, ok := j.Grant(first)
		require.True(t, ok, "preload %v", preload)
		require.Equal(t, 1, g.T)
	}
}

func TestGroupKnobsAreChecked(t *testing.T) {
	_, err := budget.New(bt.Config(20, 5), budget.Knobs{Window: 10, CalcPeriod: 1, Groups: []budget.Group{{Name: "x", Members: []string{"a"}}, {Name: "y", Members: []string{"a"}}}})
	require.ErrorContains(t, err, `campaign "a" is in two groups`)
	_, err = budget.New(bt.Config(20, 5), budget.Knobs{Window: 0, CalcPeriod: 1})
	require.ErrorContains(t, err, "window")
	k := budget.DefaultKnobs()
	k.MinRuntime[policy.AgentBurst] = -2
	_, err = budget.New(bt.Config(20, 5), k)
	require.ErrorContains(t, err, "min_runtime of agent-burst")
}

func TestCalcPeriodIsChecked(t *testing.T) {
	k := budget.DefaultKnobs()
	k.CalcPeriod = 0
	_, err := budget.New(bt.Config(10, 5), k)
	require.ErrorContains(t, err, "calc_period")
}

func TestRestartKnob(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want baseline.Restart
	}{{"zero", baseline.Restart{}}, {"checkpoint", baseline.Restart{Checkpoint: 3600}}, {"checkpoint:60", baseline.Restart{Checkpoint: 60}}} {
		r, err := baseline.ParseRestart(tc.in)
		require.NoError(t, err)
		require.Equal(t, tc.want, r)
		if tc.in != "checkpoint" {
			require.Equal(t, tc.in, r.String())
		}
	}
	for _, bad := range []string{"", "checkpoint:0", "checkpoint:-5", "checkpoint:x", "from-zero"} {
		_, err := baseline.ParseRestart(bad)
		require.Error(t, err, bad)
	}
	// Kept: the last checkpoint before the notice.
	r := baseline.Restart{Checkpoint: 100}
	require.Equal(t, 0, r.Kept(10, 109))
	require.Equal(t, 100, r.Kept(10, 110))
	require.Equal(t, 300, r.Kept(10, 399))
	require.Equal(t, 0, baseline.Restart{}.Kept(10, 5000))
}

// The property suite's draw (rapid seed 14324177848823794110, as
// policy/policies' TestPropertiesEveryPolicy found it): a victim below
// its own member entitlement may be preempted by a head of another
// group, for q_V is its group's where the paths split (docs/studies.md
// §2, §6.11). Pool 64, no Groups knob; entitlements G0 = {c0, c2, c3}
// with 1/2 (each member 1/6: 64/6 ≈ 10.67 GPUs) and G1 = {c1} with 1/2
// (32 GPUs). At tick 1 c0 runs 30 GPUs, c2 6 (class opportunistic), c3
// 4, c1 10; 14 free. c1 then asks for 20 (rigid). Paths split at the
// groups: q_G0 = 40/32 > 1, q_G1 = 10/32 < 1, and taking c2's 6
// (lowest class first) leaves (10 + 20) × 1/2 ≤ (40 − 6) × 1/2 and frees
// the 6 GPUs the head lacks: c2's lease is noticed at tick 2 although c2
// holds 6 < 10.67 (q_c2 = 0.5625 at the member level, which orders only
// c0, c2, c3 against each other). After the 10 s grace c1 gets its 20.
func TestVictimBelowItsMemberShareOfAGroupAboveItsShare(t *testing.T) {
	ent := &baseline.Entitlements{Groups: []baseline.GroupShare{
		{Name: "G0", Share: 0.5, Members: []baseline.MemberShare{{Name: "c0", Share: 0.5 / 3}, {Name: "c2", Share: 0.5 / 3}, {Name: "c3", Share: 0.5 / 3}}},
		{Name: "G1", Share: 0.5, Members: []baseline.MemberShare{{Name: "c1", Share: 0.5}}},
	}}
	a, err := baseline.New(bt.Config(64, 10), budget.NewRule(knobs(1000, 0, baseline.Restart{})))
	require.NoError(t, err)
	require.NoError(t, a.SetEntitlements(ent))
	j := &bt.Journal{}
	a.SetRecorder(j)
	var ids []policy.CampaignID
	for _, name := range []string{"c0", "c1", "c2", "c3"} {
		id, err := a.Register(bt.Env(name, 1, policy.AgentBurst))
		require.NoError(t, err)
		ids = append(ids, id)
	}
	for _, job := range []struct {
		c, gpus int
		cls     policy.Class
	}{{0, 30, policy.AgentBurst}, {2, 6, policy.Opportunistic}, {3, 4, policy.AgentBurst}, {1, 10, policy.AgentBurst}} {
		_, err := a.RequestRigid(ids[job.c], job.gpus, 5000, 5000, job.cls, 1)
		require.NoError(t, err)
	}
	a.Tick()
	require.Equal(t, 14, a.Free())
	require.Less(t, float64(a.Held(ids[2], policy.AnyClass)), a.Campaign(ids[2]).Share*64)
	_, err = a.RequestRigid(ids[1], 20, 100, 100, policy.AgentBurst, 2)
	require.NoError(t, err)
	a.Tick()
	n := j.Of(policy.EventPreemptNotice)
	require.Len(t, n, 1)
	require.Equal(t, "c2", n[0].Campaign)
	require.Equal(t, 6, n[0].GPUs)
	require.Equal(t, 2, n[0].T)
	bt.Ticks(a, 10)
	require.Equal(t, 30, a.Held(ids[1], policy.AnyClass), "c1's 10 and its 20 after the grace")
}

// budget copies its own rule for a fork (CloneRule): what
// internal/deepcopy would copy, field for field, along a small workload.
func TestCloneRuleCopiesEveryField(t *testing.T) {
	k := budget.DefaultKnobs()
	k.CalcPeriod = 1
	a, err := budget.New(bt.Config(8, 10), k)
	require.NoError(t, err)
	require.NoError(t, bt.CloneRuleMatchesAlong(a))
}

// A priority read between ticks (Priority, at the tick now) leaves the
// next admission's calculation its own: it reads the windows at the end
// of the period's previous tick, earlier than the read, and a window
// usage kept as a line from the later tick must not be carried back over
// a change point. Pool 4, W = 1000, P = 300; A and B entitled to half each.
// A holds 1 GPU in ticks 306–325, so its window usage is 20 GPU-seconds
// at tick 350, where Priority reads 20 ÷ (1/2 × 4 × 1000) = 0.01, and 0
// at tick 300, where the calculation of tick 351's admission (the period
// 301–600) reads it: A's request granted at tick 351 records 0 as its
// priority, as it does when nothing was read at tick 350.
func TestPriorityReadLeavesTheCalculation(t *testing.T) {
	k := budget.DefaultKnobs()
	k.Window, k.CalcPeriod = 1000, 300
	var journals [2]bt.Journal
	for i, read := range []bool{false, true} {
		rule := budget.NewRule(k)
		a, err := baseline.New(bt.Config(4, 0), rule)
		require.NoError(t, err)
		a.SetRecorder(&journals[i])
		ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
		_, _ = a.Register(bt.Env("b", 1, policy.AgentBurst))
		bt.Ticks(a, 305)
		_, _ = a.Request(ca, 1, 20, policy.AnyClass)
		bt.Ticks(a, 45)
		require.Equal(t, 350, a.Now())
		if read {
			require.InDelta(t, 0.01, rule.Priority(a, ca), 1e-15)
		}
		_, _ = a.Request(ca, 1, 20, policy.AnyClass)
		a.Tick()
		grants := journals[i].Of(policy.EventGrant)
		require.Len(t, grants, 2)
		require.Equal(t, 306, grants[0].T)
		require.Equal(t, 351, grants[1].T)
		require.Zero(t, grants[1].FairDeficit, "read at tick 350: %v", read)
	}
	require.Equal(t, string(journals[0].Bytes), string(journals[1].Bytes))
}
