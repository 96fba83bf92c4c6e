package slurmgate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestEnforcerHoldsReleasedLeases: a lease its user released while its
// job runs (the service still holds it but says it is not held) is held
// at every read of the queue while the job is listed, running or
// completing, whatever its end; the job gets its notice, and the ledger
// records no release, since the broker never counted its GPUs free. A
// lease the broker dropped (nothing to hold) is recorded released.
// Running answers yes before the first read, then for the leases with a
// job running or completing, not for one whose job is pending.
func TestEnforcerHoldsReleasedLeases(t *testing.T) {
	now := time.Now()
	ledger := filepath.Join(t.TempDir(), "ledger.jsonl")
	f := &fakeCluster{queue: []QueuedJob{
		{ID: "5", Comment: token(7, now.Add(time.Hour)), State: "RUNNING", CPUs: "2"},
		{ID: "6", Comment: token(8, now.Add(time.Hour)), State: "RUNNING", CPUs: "2"},
		{ID: "10", Comment: token(10, now.Add(time.Hour)), State: "PENDING", CPUs: "2"},
	}}
	ls := leases(7, 8, 10)
	e := newEnforcer(t, f, ls, ledger, now)
	assert.True(t, e.Running("sci", 7), "before the first read of the queue")
	e.pass(context.Background(), now)
	assert.Empty(t, ls.holds, "leases far from their end, not released")
	assert.True(t, e.Running("sci", 7))
	assert.False(t, e.Running("sci", 10), "a pending job holds nothing")
	assert.False(t, e.Running("sci", 99))
	f.took()

	ls.releasing[7] = true // released by its user; the service holds it
	delete(ls.held, 8)     // dropped by the broker
	e.pass(context.Background(), now.Add(time.Second))
	assert.ElementsMatch(t, []fakeHold{{7, now.Add(time.Second + slurmHoldFor)}, {8, now.Add(time.Second + slurmHoldFor)}}, ls.holds)
	assert.Contains(t, strings.Join(f.took(), "\n"), "5", "the job of the released lease gets its notice")
	b, err := os.ReadFile(ledger)
	require.NoError(t, err)
	assert.NotContains(t, string(b), `"job":"5","event":"released"`, "the broker still holds lease 7")
	assert.Contains(t, string(b), `"job":"6","event":"released"`, "lease 8 is gone")

	ls.holds = nil
	f.queue[0].State = "COMPLETING"
	e.pass(context.Background(), now.Add(2*time.Second))
	assert.Contains(t, ls.holds, fakeHold{7, now.Add(2*time.Second + slurmHoldFor)}, "held while it completes")
	assert.True(t, e.Running("sci", 7), "a completing job still runs")
	ls.holds = nil
	f.queue = f.queue[2:]
	e.pass(context.Background(), now.Add(3*time.Second))
	assert.Empty(t, ls.holds, "its job gone, the hold lapses")
	assert.False(t, e.Running("sci", 7))
}

// TestEnforcerHoldsReclaimedLeases: the lease of a job running under
// preemption notice is held (the service moves its preemption time on
// only once the hold reaches past it) while the job is listed; a pending
// job's is not.
func TestEnforcerHoldsReclaimedLeases(t *testing.T) {
	now := time.Now()
	f := &fakeCluster{queue: []QueuedJob{
		{ID: "5", Comment: token(7, now.Add(time.Hour)), State: "RUNNING", CPUs: "2"},
		{ID: "6", Comment: token(8, now.Add(time.Hour)), State: "PENDING", CPUs: "2"},
	}}
	ls := leases(7, 8)
	ls.notice[7], ls.notice[8] = true, true
	e := newEnforcer(t, f, ls, "", now)
	e.pass(context.Background(), now)
	assert.Equal(t, []fakeHold{{7, now.Add(slurmHoldFor)}}, ls.holds)
}
