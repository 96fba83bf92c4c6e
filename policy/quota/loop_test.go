package quota_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/quota"
)

// A preemption loop that Kueue's fair-sharing strategies allow, worked by
// hand; it is where quota's churn on SDSC-SP2 comes from (docs/policies.md).
// Kueue's fair-sharing page proves that "if workload A preempts workload
// B, then workload B will not be able to preempt workload A afterwards",
// and states as a corollary that none of a set {B_1, …, B_k} that A
// preempted may preempt A afterwards. The corollary fails when the second
// strategy, LessThanInitialShare (rule S2-b), takes the set's second
// workload: its removal lowers the share the first one comes back with.
//
// Pool 12; queues A, B, C with nominal quotas 5, 1, 6 (lendable 12; a
// share is the GPUs held above nominal ÷ 12, written below as GPUs above
// nominal). C is idle and lends its 6. B holds L2 (8 GPUs), then the newer
// L1 (4): 11 above its nominal. A's J (10 GPUs) waits: with it A would be
// 5 above. Nothing is free. Every preempted job is requeued with its
// submit time, as a trace replay does (docs/studies.md §6.7) and as Kueue
// does: it orders a workload preempted by fair sharing by its creation
// time, not its eviction time (GetQueueOrderTimestamp, docs/policies.md),
// so the loop is Kueue's, not an artefact of the replay's requeue rule.
//
//  1. J preempts. B is the only borrower. L1 (newest first): B would
//     keep 8, 7 above ≥ 5: S2-a takes it; 4 of the 10 GPUs. L2: B would
//     keep 0 < 5, set aside. S2-b: B's share now (7) > A's with J (5):
//     L2 goes too. The minimal set keeps both (L2 alone frees 8 < 10).
//     After it A is 5 above, B 0.
//  2. L2 (B's older job) cannot start (2 GPUs free) or preempt: with it B
//     would be 7 above, not below A's 5 (S2-b), and J's removal would
//     leave A at 0 (S2-a). BestEffortFIFO tries L1: with it B is 3 above
//     < 5: S2-b takes J. That is one of J's victims preempting J.
//  3. L1 starts in J's GPUs; L2 then fits in the rest and starts too; J,
//     requeued, has the lowest share with its request (5 < 7) but does
//     not fit, and neither strategy lets it preempt yet (B holds only L1:
//     3 above). After L2 starts the holdings are those of step 1 with L1
//     and L2 in the other age order, and J preempts both again: S2-a now
//     sets L2 aside (B would keep 4, 3 above < 5) and takes L1 (B keeps
//     8, 7 above ≥ 5), and S2-b takes L2.
//
// So the three jobs preempt one another for ever, one round every two
// grace periods and a tick or two, and none of them finishes. With
// LessThanOrEqualToFinalShare alone step 1 fails (no S2-b) and nobody is
// preempted: J waits for B's jobs to end.
func TestFairSharingPreemptionLoop(t *testing.T) {
	const grace, ticks = 10, 200
	for _, tc := range []struct {
		strategies []string
		loops      bool
	}{{nil, true}, {[]string{quota.LessThanOrEqualToFinalShare}, false}} {
		k := quota.FairKnobs()
		k.PreemptionStrategies = tc.strategies
		n := preemptionLoop(t, k, grace, ticks)
		if !tc.loops {
			require.Zero(t, n, "LessThanOrEqualToFinalShare alone preempts nobody")
		}
	}
}

// preemptionLoop runs the example under knobs k for ticks ticks and
// returns the preemption notices; with both strategies it checks the
// loop.
func preemptionLoop(t *testing.T, k quota.Knobs, grace, ticks int) int {
	a, j, ids := newQuota(t, 12, grace, k, 5, 1, 6)
	require.Equal(t, []int{5, 1, 6}, nominal(a))
	var seen []quota.Decision
	quota.OnDecision(a, func(d quota.Decision) { seen = append(seen, d) })
	type job struct {
		c            policy.CampaignID
		gpus, submit int
		name         string
	}
	const run = 1000
	l2 := job{ids[1], 8, 1, "L2"}
	l1 := job{ids[1], 4, 1, "L1"}
	jj := job{ids[0], 10, 2, "J"}
	jobOf := map[int]job{}
	file := func(x job) {
		id, err := a.RequestRigid(x.c, x.gpus, run, run, policy.AgentBurst, x.submit)
		require.NoError(t, err)
		jobOf[id] = x
	}
	file(l2)
	file(l1)
	a.Tick()
	file(jj)
	var order []string // the preempted jobs, in notice order
	requeued := 0
	for range ticks {
		a.Tick()
		// A preempted trace job is filed again with its submit time.
		for _, e := range j.Events[requeued:] {
			if e.Kind == policy.EventRelease && e.Reason == policy.ReasonPreempted {
				file(jobOf[e.Lease])
			}
		}
		requeued = len(j.Events)
	}
	for _, n := range j.Of(policy.EventPreemptNotice) {
		order = append(order, jobOf[n.Lease].name)
	}
	if k.PreemptionStrategies != nil {
		return len(order)
	}
	t.Logf("%d preemption notices in %d ticks: %v", len(order), ticks, order[:min(9, len(order))])
	require.GreaterOrEqual(t, len(order), 3*(ticks/(2*grace+2)), "the loop goes on: %v", order)
	for i := 0; i+3 <= len(order); i += 3 {
		require.ElementsMatch(t, []string{"L1", "L2", "J"}, order[i:i+3], "round %d: %v", i/3, order)
		require.Equal(t, "J", order[i+2], "round %d: J's victims, then J", i/3)
	}
	// Step 1's decisions, then step 2's, by the strategies above.
	require.Equal(t, []quota.Decision{
		{Preemptor: 0, Victim: 1, PreemptorShare: 5.0 / 12, VictimBefore: 11.0 / 12, VictimAfter: 7.0 / 12, Strategy: quota.LessThanOrEqualToFinalShare},
		{Preemptor: 0, Victim: 1, PreemptorShare: 5.0 / 12, VictimBefore: 7.0 / 12, VictimAfter: 0, Strategy: quota.LessThanInitialShare},
		{Preemptor: 1, Victim: 0, PreemptorShare: 3.0 / 12, VictimBefore: 5.0 / 12, VictimAfter: 0, Strategy: quota.LessThanInitialShare},
	}, seen[:3])
	for _, g := range j.Of(policy.EventRelease) {
		require.NotEqual(t, policy.ReasonExpired, g.Reason, "no job finishes")
	}
	return len(order)
}

// StrictFIFO keeps the GPUs a preemption freed for the preemptor. Pool 8,
// queues A and B with nominal 4 each, grace 10. B's b1 (8 GPUs) borrows
// A's idle quota from t = 1. At t = 2 A's a1 (4 GPUs, 10 s) arrives;
// within its nominal quota A reclaims: b1 is noticed, and ends at 12 with
// its GPUs reserved for a1. At t = 3 A's a0 (6 GPUs) is filed with submit
// time 1, as a trace replay requeues a preempted job with its original
// submit time (docs/studies.md §6.7): it comes before a1 in A's queue.
// a0 cannot start (the free GPUs are a1's) nor preempt (nobody borrows).
// The preemptor in flight goes first: a1 starts at 12 and ends at 22,
// and a0 starts then. (Before, a0 as head blocked the queue and a1's 8
// reserved GPUs were never used: neither job ever started.)
func TestStrictFIFOPreemptorGoesFirst(t *testing.T) {
	k := quota.FairKnobs()
	k.QueueingStrategy = quota.StrictFIFO
	a, j, ids := newQuota(t, 8, 10, k, 1, 1)
	require.Equal(t, []int{4, 4}, nominal(a))
	b1, err := a.RequestRigid(ids[1], 8, 1000, 1000, policy.AgentBurst, 1)
	require.NoError(t, err)
	a.Tick()
	a1, err := a.RequestRigid(ids[0], 4, 10, 10, policy.AgentBurst, 2)
	require.NoError(t, err)
	a.Tick()
	a0, err := a.RequestRigid(ids[0], 6, 100, 100, policy.AgentBurst, 1)
	require.NoError(t, err)
	for range 30 {
		a.Tick()
	}
	n := j.Of(policy.EventPreemptNotice)
	require.Len(t, n, 1)
	require.Equal(t, b1, n[0].Lease)
	for _, w := range []struct{ id, t int }{{a1, 12}, {a0, 22}} {
		g, ok := j.Grant(w.id)
		require.True(t, ok, "request %d never started", w.id)
		require.Equal(t, w.t, g.T, "request %d", w.id)
	}
}
