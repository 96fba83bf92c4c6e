package quota_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/quota"
)

// Worked examples of Kueue's ClusterQueue queueing strategies and
// fair-sharing preemption, to be read against
// https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/ (queueingStrategy),
// https://kueue.sigs.k8s.io/docs/concepts/preemption/ (reclaimWithinCohort,
// "Preemption strategies", "Algorithm overview") and
// https://kueue.sigs.k8s.io/docs/concepts/fair_sharing/ (the share value);
// the algorithm is kubernetes-sigs/kueue's pkg/scheduler/preemption
// (runFirstFsStrategy, runSecondFsStrategy, fillBackWorkloads) and
// pkg/scheduler/preemption/fairsharing/strategy.go. One resource (GPUs),
// weight 1: a queue's share is (GPUs held above nominal) ÷ (the cohort's
// lendable quota, the sum of the nominal quotas).

func newQuota(t *testing.T, pool, grace int, knobs quota.Knobs, rs ...float64) (*baseline.Core, *bt.Journal, []policy.CampaignID) {
	t.Helper()
	a, err := quota.New(bt.Config(pool, grace), knobs)
	require.NoError(t, err)
	j := &bt.Journal{}
	a.SetRecorder(j)
	var ids []policy.CampaignID
	for i, r := range rs {
		id, err := a.Register(bt.Env(fmt.Sprintf("q%d", i), r, policy.AgentBurst))
		require.NoError(t, err)
		ids = append(ids, id)
	}
	return a, j, ids
}

// rigid files a trace job of gpus GPUs that runs for ever (as far as
// these examples go), submitted now.
func rigid(t *testing.T, a *baseline.Core, c policy.CampaignID, gpus int) int {
	t.Helper()
	id, err := a.RequestRigid(c, gpus, 1e6, 1e6, policy.AgentBurst, a.Now()+1)
	require.NoError(t, err)
	return id
}

func nominal(a *baseline.Core) []int { return a.Rule().(*quota.Rule).Nominal() }

// Largest remainder (docs/studies.md §6.15): three equal shares of 64 GPUs
// are 21.33 each; floors 21 × 3 = 63, and the last GPU goes to the first
// queue (equal remainders and shares: campaign order). The cohort is the
// whole pool; revision 1's floors left one GPU outside it.
func TestNominalQuotasCoverThePool(t *testing.T) {
	a, _, _ := newQuota(t, 64, 10, quota.FairKnobs(), 1, 1, 1)
	require.Equal(t, []int{22, 21, 21}, nominal(a))
}

// BestEffortFIFO against StrictFIFO: nominal 32 and 32. q1 holds its 32
// and q0 holds 24, so 8 GPUs are free. q0 asks for 16, then 8. The 16 do
// not fit, and no preemption can help (q0 would borrow, q1 does not
// borrow). Under BestEffortFIFO (Kueue's default) the 8 start behind it;
// under StrictFIFO the 16 block q0's queue and the 8 wait.
func TestBestEffortFIFOAgainstStrictFIFO(t *testing.T) {
	for _, tc := range []struct {
		strategy string
		started  bool
	}{{quota.BestEffortFIFO, true}, {quota.StrictFIFO, false}} {
		k := quota.FairKnobs()
		k.QueueingStrategy = tc.strategy
		a, j, ids := newQuota(t, 64, 10, k, 1, 1)
		rigid(t, a, ids[1], 32)
		rigid(t, a, ids[0], 24)
		a.Tick()
		rigid(t, a, ids[0], 16)
		small := rigid(t, a, ids[0], 8)
		bt.Ticks(a, 5)
		_, ok := j.Grant(small)
		require.Equal(t, tc.started, ok, tc.strategy)
		require.Empty(t, j.Of(policy.EventPreemptNotice), tc.strategy)
	}
}

// reclaimWithinCohort: Any. Nominal 32 and 32; q0 borrows all 64 while q1
// is idle. q1 asks for its 32: with them it stays within its nominal
// quota, so it takes from the borrower whatever the shares say. q0's lease
// gets the notice at t = 2 and ends at 2 + grace (10) = 12, and q1 starts
// then.
func TestReclaimWithinNominal(t *testing.T) {
	a, j, ids := newQuota(t, 64, 10, quota.FairKnobs(), 1, 1)
	var seen []quota.Decision
	quota.OnDecision(a, func(d quota.Decision) { seen = append(seen, d) })
	borrower := rigid(t, a, ids[0], 64)
	a.Tick()
	mine := rigid(t, a, ids[1], 32)
	a.Tick()
	n := j.Of(policy.EventPreemptNotice)
	require.Len(t, n, 1)
	require.Equal(t, borrower, n[0].Lease)
	require.Equal(t, 2, n[0].T)
	require.Equal(t, []quota.Decision{{Preemptor: 1, Victim: 0, PreemptorShare: 0,
		VictimBefore: 32.0 / 64, VictimAfter: 0, Strategy: quota.Reclaim}}, seen)
	bt.Ticks(a, 10)
	g, ok := j.Grant(mine)
	require.True(t, ok)
	require.Equal(t, 12, g.T)
}

// LessThanOrEqualToFinalShare (Kueue's rule S2-a). Pool 90, nominal 30
// each, lendable 90. q0 holds 60 in four leases (30, then 10, 10, 10),
// borrowing 30: share 30/90 = 0.333. q1 holds 20, q2 10; nothing is free.
// q1 asks for 20: with them it holds 40, share 10/90 = 0.111 (above its
// nominal quota, so no plain reclaim).
//   - q0 (the only borrower) is the target. Its newest 10: without it q0
//     keeps 50, share 20/90 = 0.222 ≥ 0.111, taken.
//   - q0 is still the highest share; its next 10: q0 would keep 40, share
//     10/90 = 0.111 ≥ 0.111 (equal is enough), taken. 20 GPUs: it fits.
//
// The minimal set keeps both (10 alone would not do). Had q1 asked for
// 30 (share 20/90 with them), only the first 10 would pass (q0 at 50 is
// 20/90), every other lease would leave q0 at or below 10/90, and the
// second strategy needs q1's 20/90 strictly below q0's 20/90 at that
// point: nobody is preempted.
func TestLessThanOrEqualToFinalShare(t *testing.T) {
	setup := func() (*baseline.Core, *bt.Journal, []policy.CampaignID, []int, *[]quota.Decision) {
		a, j, ids := newQuota(t, 90, 10, quota.FairKnobs(), 1, 1, 1)
		require.Equal(t, []int{30, 30, 30}, nominal(a))
		seen := &[]quota.Decision{}
		quota.OnDecision(a, func(d quota.Decision) { *seen = append(*seen, d) })
		rigid(t, a, ids[0], 30)
		rigid(t, a, ids[1], 20)
		rigid(t, a, ids[2], 10)
		a.Tick()
		var tens []int
		for range 3 {
			tens = append(tens, rigid(t, a, ids[0], 10))
			a.Tick()
		}
		return a, j, ids, tens, seen
	}
	a, j, ids, _, _ := setup()
	rigid(t, a, ids[1], 30)
	a.Tick()
	require.Empty(t, j.Of(policy.EventPreemptNotice), "q1 asking 30 preempts nobody")

	a, j, ids, tens, seen := setup()
	rigid(t, a, ids[1], 20)
	a.Tick()
	n := j.Of(policy.EventPreemptNotice)
	require.Len(t, n, 2)
	require.Equal(t, tens[2], n[0].Lease)
	require.Equal(t, tens[1], n[1].Lease)
	require.Len(t, *seen, 2)
	for _, d := range *seen {
		require.Equal(t, quota.LessThanOrEqualToFinalShare, d.Strategy)
		require.InDelta(t, 10.0/90, d.PreemptorShare, 1e-12)
	}
	require.InDelta(t, 20.0/90, (*seen)[0].VictimAfter, 1e-12)
	require.InDelta(t, 10.0/90, (*seen)[1].VictimAfter, 1e-12)
}

// LessThanInitialShare (Kueue's rule S2-b). Pool 90, nominal 30 each. q0
// holds 60 in two leases of 30 (share 0.333), q1 20, q2 10. q1 asks for 20
// (share with them 10/90 = 0.111). Either lease of q0 would leave it at 30,
// share 0 < 0.111: the first strategy takes neither. The second compares
// with q0's share before the preemption, 0.333 > 0.111, and takes q0's
// first candidate, the newer lease. After it q1 (0.111) is above q0 (0):
// the second strategy allows that, the first does not.
func TestLessThanInitialShare(t *testing.T) {
	a, j, ids := newQuota(t, 90, 10, quota.FairKnobs(), 1, 1, 1)
	var seen []quota.Decision
	quota.OnDecision(a, func(d quota.Decision) { seen = append(seen, d) })
	rigid(t, a, ids[0], 30)
	rigid(t, a, ids[1], 20)
	rigid(t, a, ids[2], 10)
	a.Tick()
	newer := rigid(t, a, ids[0], 30)
	a.Tick()
	rigid(t, a, ids[1], 20)
	a.Tick()
	n := j.Of(policy.EventPreemptNotice)
	require.Len(t, n, 1)
	require.Equal(t, newer, n[0].Lease)
	require.Len(t, seen, 1)
	require.Equal(t, quota.LessThanInitialShare, seen[0].Strategy)
	require.InDelta(t, 30.0/90, seen[0].VictimBefore, 1e-12)
	require.Zero(t, seen[0].VictimAfter)
}

// The filler (the backfill) is preempted first, whatever the shares
// (docs/studies.md §6.2): nominal 32 and 32, the backfill holds 40 of the
// free pool, q0 holds 24; q1 asks for 32 and only the backfill's lease is
// noticed.
func TestFillerGoesFirst(t *testing.T) {
	a, j, ids := newQuota(t, 64, 10, quota.FairKnobs(), 1, 1)
	fill, err := a.Register(bt.Env("backfill", 0, policy.Opportunistic))
	require.NoError(t, err)
	rigid(t, a, ids[0], 24)
	fl, _ := a.Request(fill, 40, 1e6, policy.AnyClass)
	a.Tick()
	rigid(t, a, ids[1], 32)
	a.Tick()
	n := j.Of(policy.EventPreemptNotice)
	require.Len(t, n, 1)
	require.Equal(t, fl, n[0].Lease)
}

// Every fair-sharing preemption, over random workloads and knobs, obeys
// the rule that chose it (Kueue's strategies), takes only from a queue
// that borrows, and never leaves the preemptor's share (with its request)
// above the victim queue's share before the preemption. (After it, the
// second strategy may leave the preemptor above the victim: see
// TestLessThanInitialShare.)
func TestPreemptionNeverLeavesThePreemptorAboveTheVictim(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.SampledFrom([]int{16, 64, 90}).Draw(t, "pool")
		k := quota.FairKnobs()
		k.BorrowingLimit = rapid.SampledFrom([]int{-1, 0, 8, 32}).Draw(t, "borrowing-limit")
		k.QueueingStrategy = rapid.SampledFrom([]string{quota.BestEffortFIFO, quota.StrictFIFO}).Draw(t, "strategy")
		k.PreemptionStrategies = rapid.SampledFrom(quota.ValidPreemptionStrategies).Draw(t, "preemption-strategies")
		a, err := quota.New(bt.Config(pool, rapid.IntRange(0, 10).Draw(t, "grace")), k)
		require.NoError(t, err)
		n := rapid.IntRange(2, 5).Draw(t, "queues")
		var ids []policy.CampaignID
		for i := range n {
			id, _ := a.Register(bt.Env(fmt.Sprintf("q%d", i), float64(rapid.IntRange(1, 6).Draw(t, "R")), policy.AgentBurst))
			ids = append(ids, id)
		}
		decisions := 0
		quota.OnDecision(a, func(d quota.Decision) {
			decisions++
			if d.VictimBefore <= 0 {
				t.Fatalf("%+v: the victim's queue does not borrow", d)
			}
			if d.PreemptorShare > d.VictimBefore {
				t.Fatalf("%+v: the preemptor ends above the victim's share before", d)
			}
			if d.Strategy != quota.Reclaim && !slices.Contains(k.PreemptionStrategies, d.Strategy) {
				t.Fatalf("%+v: a strategy not in %v", d, k.PreemptionStrategies)
			}
			switch d.Strategy {
			case quota.Reclaim:
				if d.PreemptorShare != 0 {
					t.Fatalf("%+v: reclaim by a queue above its nominal quota", d)
				}
			case quota.LessThanOrEqualToFinalShare:
				if d.PreemptorShare > d.VictimAfter {
					t.Fatalf("%+v: S2-a with the preemptor above the victim after", d)
				}
			case quota.LessThanInitialShare:
				if !(d.PreemptorShare < d.VictimBefore) {
					t.Fatalf("%+v: S2-b without the preemptor strictly below", d)
				}
			default:
				t.Fatalf("%+v: unknown strategy", d)
			}
		})
		for range rapid.IntRange(10, 300).Draw(t, "ticks") {
			if rapid.IntRange(0, 2).Draw(t, "arrive") == 0 {
				c := ids[rapid.IntRange(0, n-1).Draw(t, "c")]
				g := rapid.IntRange(1, pool).Draw(t, "gpus")
				d := rapid.IntRange(1, 60).Draw(t, "run")
				_, _ = a.RequestRigid(c, g, d, d, policy.AgentBurst, a.Now()+1)
			}
			a.Tick()
		}
		_ = decisions
	})
}
