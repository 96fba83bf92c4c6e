package quota_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/policy"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/quota"
)

// quota's defaults are Kueue's API defaults, field by field. Sources, all
// in kubernetes-sigs/kueue at tag v0.19.2 (commit 8eab6877):
//   - apis/kueue/v1beta1/clusterqueue_types.go line 92:
//     `+kubebuilder:default=BestEffortFIFO` on queueingStrategy;
//   - the same file line 243: borrowingLimit "If null, it means that
//     there is no borrowing limit" (no default marker: null);
//   - line 481: `+kubebuilder:default=Never` on
//     preemption.reclaimWithinCohort;
//   - line 502: `+kubebuilder:default=Never` on
//     preemption.withinClusterQueue;
//   - line 526: `+kubebuilder:default=Never` on
//     preemption.borrowWithinCohort.policy (the struct itself defaults
//     to {}, line 488);
//   - apis/config/v1beta1/configuration_types.go lines 612–614:
//     fairSharing.enable "Defaults to false";
//   - apis/config/v1beta1/defaults.go lines 129–130: the preemption
//     strategies default to [LessThanOrEqualToFinalShare,
//     LessThanInitialShare] only when fair sharing is enabled.
func TestDefaultsAreKueueAPIDefaults(t *testing.T) {
	k := quota.DefaultKnobs()
	require.Equal(t, quota.BestEffortFIFO, k.QueueingStrategy, "clusterqueue_types.go:92")
	require.Equal(t, quota.Unlimited, k.BorrowingLimit, "clusterqueue_types.go:243")
	require.Equal(t, quota.Never, k.ReclaimWithinCohort, "clusterqueue_types.go:481")
	require.Equal(t, quota.Never, k.WithinClusterQueue, "clusterqueue_types.go:502")
	require.Equal(t, quota.Never, k.BorrowWithinCohort, "clusterqueue_types.go:526")
	require.False(t, k.FairSharing, "configuration_types.go:613")
	require.Nil(t, k.PreemptionStrategies, "defaults.go:129 (fair sharing's default, unused while it is off)")
	require.NoError(t, k.Validate())
	// quota-fair: the quota of before, fair sharing with reclaim Any.
	f := quota.FairKnobs()
	require.Equal(t, quota.Any, f.ReclaimWithinCohort)
	require.True(t, f.FairSharing)
	f.ReclaimWithinCohort, f.FairSharing = k.ReclaimWithinCohort, k.FairSharing
	require.Equal(t, k, f, "quota-fair differs from the defaults in those two knobs only")
}

// threeQueues is a pool of 30 in three queues of nominal 10.
func threeQueues(t *testing.T, k quota.Knobs) (*quotaRun, []policy.CampaignID) {
	t.Helper()
	a, err := quota.New(bt.Config(30, 10), k)
	require.NoError(t, err)
	j := &bt.Journal{}
	a.SetRecorder(j)
	var ids []policy.CampaignID
	for _, n := range []string{"a", "b", "c"} {
		id, err := a.Register(bt.Env(n, 1, policy.AgentBurst))
		require.NoError(t, err)
		ids = append(ids, id)
	}
	return &quotaRun{a, j}, ids
}

// Kueue's classical order across ClusterQueues (fair sharing off;
// makeClassicalIterator, pkg/scheduler/scheduler.go lines 1094–1142 at
// v0.19.2): workloads that do not borrow first, then higher priority,
// then FIFO. Hand-worked: pool 30, queues a, b, c of nominal 10. a holds
// 8 and b holds 6 (1,000 s). Then, in one tick, in this submit order:
// a asks 2 at class interactive (8+2 = 10: no borrowing), c asks 6 at
// interactive (no borrowing), b asks 8 at deadline (6+8 = 14: borrows
// 4). Free: 16.
// Classical: a (not borrowing, interactive, first), c (not borrowing,
// interactive, second), b (borrows) — b's higher priority does not put it
// before the workloads that do not borrow. 2+6+8 = 16 fit.
// Under fair sharing (quota-fair) the same shares (0, 0, 4 GPUs above
// nominal) give the same order; the orders part where both candidates
// borrow: below.
func TestClassicalOrderNonBorrowersThenPriorityThenFIFO(t *testing.T) {
	r, ids := threeQueues(t, quota.DefaultKnobs())
	r.request(ids[0], 8, policy.Interactive)
	r.request(ids[1], 6, policy.Interactive)
	r.a.Tick()
	a2 := r.request(ids[0], 2, policy.Interactive)
	c6 := r.request(ids[2], 6, policy.Interactive)
	b8 := r.request(ids[1], 8, policy.Deadline)
	r.a.Tick()
	require.Equal(t, []int{a2, c6, b8}, r.grantsFrom(2))
}

// Where two candidates borrow, classical goes by priority and fair
// sharing by share: pool 30, nominal 10 each; a holds 10, b holds 10, c
// holds 4 (free 6). a asks 2 at interactive (borrows 2), then b asks 6 at
// deadline (borrows 6). 2+6 = 8 > 6: only the first admitted fits. Classical (the default): both borrow, b's
// deadline class first: b gets 6, a waits. Fair sharing (quota-fair):
// a's share with its request (2 above nominal) is below b's (6): a gets
// 2, and b (6 > 4 left) does not fit.
func TestClassicalPriorityVersusFairShare(t *testing.T) {
	for _, c := range []struct {
		name  string
		knobs quota.Knobs
		first int // which request is granted: 0 a's, 1 b's
	}{{"classical", quota.DefaultKnobs(), 1}, {"fair sharing", quota.FairKnobs(), 0}} {
		t.Run(c.name, func(t *testing.T) {
			r, ids := threeQueues(t, c.knobs)
			r.request(ids[0], 10, policy.Interactive)
			r.request(ids[1], 10, policy.Interactive)
			r.request(ids[2], 4, policy.Interactive)
			r.a.Tick()
			a2 := r.request(ids[0], 2, policy.Interactive)
			b6 := r.request(ids[1], 6, policy.Deadline)
			r.a.Tick()
			want := []int{a2, b6}[c.first]
			require.Equal(t, []int{want}, r.grantsFrom(2))
		})
	}
}

// reclaimWithinCohort Never against Any, hand-worked: pool 64, queues a
// and b of nominal 32. a borrows the whole pool (64 GPUs, 100 s from
// t = 1). At t = 2 b asks for its nominal 32. Never (Kueue's default): no
// workload of another queue is a candidate (Kueue's preemption finds no
// target and the workload waits), so b is granted when a's lease ends, at
// t = 101, and nothing is preempted. Any (quota-fair): b is within its
// nominal quota and reclaims: a's lease gets the notice at t = 2, ends at
// 2 + grace (10) = 12, and b is granted at 12.
func TestReclaimNeverWaitsAnyPreempts(t *testing.T) {
	for _, c := range []struct {
		name    string
		knobs   quota.Knobs
		granted int
		notices int
	}{{"never", quota.DefaultKnobs(), 101, 0}, {"any", quota.FairKnobs(), 12, 1}} {
		for _, plain := range []bool{false, true} { // plain: without the bounds that skip candidates
			a, j, ca, cb := setup(t, c.knobs)
			if plain {
				quota.Plain(a)
			}
			_, _ = a.Request(ca, 64, 100, policy.AnyClass)
			a.Tick()
			lb, _ := a.Request(cb, 32, 100, policy.AnyClass)
			bt.Ticks(a, 200)
			require.Len(t, j.Of(policy.EventPreemptNotice), c.notices, "%s plain %v", c.name, plain)
			g, ok := j.Grant(lb)
			require.True(t, ok)
			require.Equal(t, c.granted, g.T, "%s plain %v", c.name, plain)
		}
	}
}

// reclaimWithinCohort LowerPriority (with fair sharing): a lease is a
// candidate only if its class is lower than the preemptor's. a borrows
// the pool at class interactive; b's deadline request reclaims, b's
// interactive request waits for the lease to end (t = 101).
func TestReclaimLowerPriority(t *testing.T) {
	for _, c := range []struct {
		class   policy.Class
		granted int
	}{{policy.Deadline, 12}, {policy.Interactive, 101}} {
		k := quota.FairKnobs()
		k.ReclaimWithinCohort = quota.LowerPriority
		a, j, ca, cb := setup(t, k)
		quota.Plain(a)
		_, _ = a.Request(ca, 64, 100, policy.Interactive)
		a.Tick()
		lb, _ := a.Request(cb, 32, 100, c.class)
		bt.Ticks(a, 200)
		g, ok := j.Grant(lb)
		require.True(t, ok)
		require.Equal(t, c.granted, g.T, "class %v", c.class)
	}
}

// What the rule does not model is refused by name, and so is a value
// Kueue does not accept.
func TestUnsupportedPoliciesRefused(t *testing.T) {
	for _, c := range []struct {
		edit func(*quota.Knobs)
		err  string
	}{
		{func(k *quota.Knobs) { k.WithinClusterQueue = quota.LowerPriority }, "within_cluster_queue LowerPriority is not supported"},
		{func(k *quota.Knobs) { k.WithinClusterQueue = quota.LowerOrNewerEqualPriority }, "within_cluster_queue LowerOrNewerEqualPriority is not supported"},
		{func(k *quota.Knobs) { k.BorrowWithinCohort = quota.LowerPriority }, "borrow_within_cohort LowerPriority is not supported"},
		{func(k *quota.Knobs) { k.ReclaimWithinCohort = quota.Any }, "reclaim_within_cohort Any with fair_sharing false (Kueue's classical preemption) is not supported"},
		{func(k *quota.Knobs) { k.ReclaimWithinCohort = "Sometimes" }, `reclaim_within_cohort must be Never, LowerPriority or Any, got "Sometimes"`},
	} {
		k := quota.DefaultKnobs()
		c.edit(&k)
		_, err := quota.New(bt.Config(8, 10), k)
		require.ErrorContains(t, err, c.err)
	}
}

type quotaRun struct {
	a interface {
		Request(policy.CampaignID, int, int, policy.Class) (int, error)
		Tick()
	}
	j *bt.Journal
}

func (r *quotaRun) request(c policy.CampaignID, gpus int, class policy.Class) int {
	id, err := r.a.Request(c, gpus, 1000, class)
	if err != nil {
		panic(err)
	}
	return id
}

// grantsFrom are the leases granted at tick t or later, in grant order.
func (r *quotaRun) grantsFrom(t int) []int {
	var out []int
	for _, e := range r.j.Of(policy.EventGrant) {
		if e.T >= t {
			out = append(out, e.Lease)
		}
	}
	return out
}
