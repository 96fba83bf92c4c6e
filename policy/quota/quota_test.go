package quota_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/quota"
)

func setup(t *testing.T, knobs quota.Knobs) (*baseline.Core, *bt.Journal, policy.CampaignID, policy.CampaignID) {
	t.Helper()
	a, err := quota.New(bt.Config(64, 10), knobs)
	require.NoError(t, err)
	j := &bt.Journal{}
	a.SetRecorder(j)
	ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
	cb, _ := a.Register(bt.Env("b", 1, policy.AgentBurst))
	return a, j, ca, cb
}

// Nominal quotas 32 and 32. A borrows B's idle quota (64 GPUs); when B
// asks for its 32, it reclaims: A's lease gets the notice at t=2, ends at
// 2 + grace = 12, and B is granted at 12.
func TestReclaimBorrowedQuotaWithGrace(t *testing.T) {
	a, j, ca, cb := setup(t, quota.FairKnobs())
	la, _ := a.Request(ca, 64, 1000, policy.AnyClass)
	a.Tick()
	require.Equal(t, 64, a.Held(ca, policy.AnyClass))
	lb, _ := a.Request(cb, 32, 100, policy.AnyClass)
	a.Tick()
	n := j.Of(policy.EventPreemptNotice)
	require.Len(t, n, 1)
	require.Equal(t, la, n[0].Lease)
	require.Equal(t, 2, n[0].T)
	bt.Ticks(a, 9)
	require.Equal(t, 0, a.Held(cb, policy.AnyClass))
	a.Tick()
	p := j.Released(policy.ReasonPreempted)
	require.Len(t, p, 1)
	require.Equal(t, 12, p[0].T)
	g, ok := j.Grant(lb)
	require.True(t, ok)
	require.Equal(t, 12, g.T)
	require.Equal(t, 32, a.Held(cb, policy.AnyClass))
}

// Only what is borrowed is reclaimed: A holds two leases of 32 (64, 32
// above nominal); B's 32 takes the newer one only.
func TestReclaimTakesOnlyTheBorrowedPart(t *testing.T) {
	a, j, ca, cb := setup(t, quota.FairKnobs())
	_, _ = a.Request(ca, 32, 1000, policy.AnyClass)
	a.Tick()
	newer, _ := a.Request(ca, 32, 1000, policy.AnyClass)
	a.Tick()
	_, _ = a.Request(cb, 32, 100, policy.AnyClass)
	a.Tick()
	n := j.Of(policy.EventPreemptNotice)
	require.Len(t, n, 1)
	require.Equal(t, newer, n[0].Lease)
}

// A borrower cannot reclaim: A at its nominal quota asks for more while B
// uses its own; A waits, nobody is preempted.
func TestBorrowerDoesNotReclaim(t *testing.T) {
	a, j, ca, cb := setup(t, quota.FairKnobs())
	_, _ = a.Request(ca, 32, 1000, policy.AnyClass)
	_, _ = a.Request(cb, 32, 1000, policy.AnyClass)
	a.Tick()
	_, _ = a.Request(ca, 16, 100, policy.AnyClass)
	bt.Ticks(a, 30)
	require.Empty(t, j.Of(policy.EventPreemptNotice))
	require.Equal(t, 32, a.Held(ca, policy.AnyClass))
}

// The borrowing limit: with 8, A may hold 40 at most; 64 is denied.
func TestBorrowingLimit(t *testing.T) {
	a, j, ca, _ := setup(t, quota.Knobs{BorrowingLimit: 8})
	_, err := a.Request(ca, 64, 100, policy.AnyClass)
	require.ErrorIs(t, err, policy.ErrExceedsLimit)
	require.Len(t, j.Of(policy.EventDeny), 1)
	_, _ = a.Request(ca, 40, 100, policy.AnyClass)
	a.Tick()
	require.Equal(t, 40, a.Held(ca, policy.AnyClass))
	require.Equal(t, 0, a.Supply(ca).Free)
}

// Heads across queues: the non-borrower first. A holds 32 (its nominal);
// both ask for 16 with 32 free: B (not borrowing) is admitted before A,
// even though A asked first.
func TestNonBorrowerAdmittedFirst(t *testing.T) {
	a, j, ca, cb := setup(t, quota.FairKnobs())
	_, _ = a.Request(ca, 32, 1000, policy.AnyClass)
	a.Tick()
	ra, _ := a.Request(ca, 16, 100, policy.AnyClass)
	rb, _ := a.Request(cb, 16, 100, policy.AnyClass)
	a.Tick()
	g := j.Of(policy.EventGrant)
	require.Len(t, g, 3)
	require.Equal(t, rb, g[1].Lease)
	require.Equal(t, ra, g[2].Lease)
}
