package slurmgate

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// HoldSlurmLease records each hold (lease and until) and answers whether
// the lease is held.
func (l *fakeLeases) HoldSlurmLease(_ context.Context, _ string, lease int, until time.Time) (bool, error) {
	l.holds = append(l.holds, fakeHold{lease, until})
	return l.held[lease], nil
}

type fakeHold struct {
	lease int
	until time.Time
}

// TestEnforcerHoldsEndingLeases: the lease of a job running or completing
// within slurmHoldAhead of its token's expiry, or past it, is held
// slurmHoldFor from now, once per lease however many of its jobs are
// listed, every read of the queue while the job is listed; a pending
// job's lease and a lease far from its end are not held.
func TestEnforcerHoldsEndingLeases(t *testing.T) {
	now := time.Now()
	f := &fakeCluster{queue: []QueuedJob{
		{ID: "5", Comment: token(7, now.Add(time.Second)), State: "RUNNING", CPUs: "2"},
		{ID: "6", Comment: token(8, now.Add(-3*time.Second)), State: "COMPLETING", CPUs: "2"},
		{ID: "9_1", Comment: token(9, now.Add(time.Second)), State: "RUNNING", CPUs: "1"},
		{ID: "9_2", Comment: token(9, now.Add(time.Second)), State: "RUNNING", CPUs: "1"},
		{ID: "10", Comment: token(10, now.Add(time.Second)), State: "PENDING", CPUs: "2"},
		{ID: "11", Comment: token(11, now.Add(time.Hour)), State: "RUNNING", CPUs: "2"},
	}}
	ls := leases(7, 8, 9, 10, 11)
	e := newEnforcer(t, f, ls, "", now)
	e.pass(context.Background(), now)
	var held []int
	for _, h := range ls.holds {
		held = append(held, h.lease)
		assert.Equal(t, now.Add(slurmHoldFor), h.until)
	}
	assert.ElementsMatch(t, []int{7, 8, 9}, held)
	ls.holds = nil
	f.queue = f.queue[1:2] // only the completing job is left
	e.pass(context.Background(), now.Add(time.Second))
	assert.Equal(t, []fakeHold{{8, now.Add(time.Second + slurmHoldFor)}}, ls.holds, "renewed while it is listed")
}
