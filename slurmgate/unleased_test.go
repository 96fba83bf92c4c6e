package slurmgate

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hold records `hold IDS` among the calls.
func (f *fakeCluster) Hold(_ context.Context, ids ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "hold "+strings.Join(ids, " "))
	return nil
}

// preGate is a queue from before the gate: a pending and a running job
// without a token in gated partition local, one already held by an
// administrator, one with a token of another key, one in ungated
// partition free, and one on a live lease.
func preGate(now time.Time) []QueuedJob {
	other := strings.Replace(token(3, now.Add(time.Hour)), "sci", "scj", 1) // its MAC no longer matches
	return []QueuedJob{
		{ID: "1", State: "PENDING", CPUs: "4", Partition: "local", Reason: "Resources"},
		{ID: "2", State: "RUNNING", CPUs: "2", Partition: "local", Reason: "None"},
		{ID: "3", State: "PENDING", CPUs: "1", Partition: "local", Reason: heldByAdmin},
		{ID: "4", Comment: other, State: "PENDING", CPUs: "1", Partition: "local", Reason: "Priority"},
		{ID: "5", State: "RUNNING", CPUs: "8", Partition: "free", Reason: "None"},
		{ID: "6", Comment: token(7, now.Add(time.Hour)), State: "RUNNING", CPUs: "2", Partition: "local"},
	}
}

// TestEnforcerUnleasedHold: by the hold rule the pending jobs without a
// lease get an administrator's hold in one call (not one held already);
// a running one is left to its end; the ungated partition's job and the
// leased one are not touched. A hold not yet shown is not asked again
// within Recancel; one released by anyone is held again.
func TestEnforcerUnleasedHold(t *testing.T) {
	now := time.Now()
	f := &fakeCluster{queue: preGate(now), steps: []string{"2.0", "5.0", "6.0"}}
	e := newEnforcer(t, f, leases(7), "", now)
	e.Unleased, e.Ungated = UnleasedHold, map[string]bool{"free": true}
	e.pass(context.Background(), now)
	assert.Equal(t, []string{"hold 1 4"}, f.took())
	e.pass(context.Background(), now.Add(Recancel/2))
	assert.Empty(t, f.took(), "asked for already")
	f.queue[0].Reason, f.queue[3].Reason = heldByAdmin, "JobHeldUser"
	e.pass(context.Background(), now.Add(2*Recancel))
	assert.Equal(t, []string{"hold 4"}, f.took(), "a user's own hold is not an administrator's")
}

// TestEnforcerUnleasedCancel: by the cancel rule every pending job
// without a lease (held ones too) is cancelled at once; a running one
// gets SIGTERM through Slurm and the kill once Grace has passed, as a
// job whose lease is gone.
func TestEnforcerUnleasedCancel(t *testing.T) {
	now := time.Now()
	f := &fakeCluster{queue: preGate(now), steps: []string{"2.0", "5.0", "6.0"}}
	e := newEnforcer(t, f, leases(7), "", now)
	e.Unleased, e.Ungated = UnleasedCancel, map[string]bool{"free": true}
	e.pass(context.Background(), now)
	assert.Equal(t, []string{"1 3 4", "--signal=TERM 2.0"}, f.took())
	f.queue = f.queue[1:2]
	e.pass(context.Background(), now.Add(e.Grace/2))
	assert.Empty(t, f.took(), "within the grace")
	e.pass(context.Background(), now.Add(e.Grace))
	assert.Equal(t, []string{"--signal=KILL 2.0", "2"}, f.took())
}

// TestEnforcerUnleasedIgnore: by default nothing is done to jobs without
// a lease.
func TestEnforcerUnleasedIgnore(t *testing.T) {
	now := time.Now()
	f := &fakeCluster{queue: preGate(now), steps: []string{"2.0"}}
	e := newEnforcer(t, f, leases(7), "", now)
	e.pass(context.Background(), now)
	assert.Empty(t, f.took())
	_, err := ParseUnleased("drop")
	assert.EqualError(t, err, `--slurm-unleased is ignore, hold or cancel, not "drop"`)
}

// TestAuditListsJobsWithoutALease: bursar slurm audit's lines for the
// queue of preGate.
func TestAuditListsJobsWithoutALease(t *testing.T) {
	now := time.Now()
	q := preGate(now)
	var b bytes.Buffer
	ReportAudit(&b, q, Audit(q, testKey, map[string]bool{"free": true}, now))
	assert.Equal(t, "job 1 (local, PENDING, 4 CPUs): without a lease: no lease token\n"+
		"job 2 (local, RUNNING, 2 CPUs): without a lease: no lease token\n"+
		"job 3 (local, PENDING (held by an administrator), 1 CPUs): without a lease: no lease token\n"+
		"job 4 (local, PENDING, 1 CPUs): without a lease: a token this key did not sign\n"+
		"6 jobs queued: 4 without a lease\n", b.String())
}

func TestParseQueue(t *testing.T) {
	out := "9_1|12|bursar1:3:sci:2:1900000000:abc|RUNNING|2|cpu=2,node=1|local|None|\n" +
		"13|13||PENDING|1||local|JobHeldAdmin|\n" +
		"14|14|a|comment|PENDING|1||local|None|\n" +
		"6_[1-5%1]|6|bursar1:3:sci:2:1900000000:abc|PENDING|1||local|JobArrayTaskLimit|\n\n"
	q := ParseQueue(out)
	require.Len(t, q, 3, "a comment with | in it is left out")
	assert.Equal(t, "6_[1-5]", q[2].ID, "scancel takes no throttle in an id")
	assert.Equal(t, QueuedJob{ID: "9_1", Number: "12", Comment: "bursar1:3:sci:2:1900000000:abc", State: "RUNNING", CPUs: "2", TRES: "cpu=2,node=1", Partition: "local", Reason: "None"}, q[0])
	assert.Equal(t, heldByAdmin, q[1].Reason)
}

// TestAuditWithoutKey: without the key a comment that reads as a token
// counts as a lease (the audit cannot check its signature).
func TestAuditWithoutKey(t *testing.T) {
	now := time.Now()
	q := preGate(now)
	found := Audit(q, nil, map[string]bool{"free": true}, now)
	var ids []string
	for _, j := range found {
		ids = append(ids, j.ID)
	}
	assert.Equal(t, []string{"1", "2", "3"}, ids)
}

// TestNotice: the notice reaches each kind of job's tasks: a plain srun
// job's step (5.0), a batch job with an srun step (6.0, and its shell
// alone: --batch, not the srun beside it), a batch job without steps
// (7: every process, --full), and a job whose steps are not listed yet.
func TestNotice(t *testing.T) {
	f := &fakeCluster{steps: []string{"5.0", "5.extern", "6.0", "6.batch", "7.batch", "9.0"}}
	require.NoError(t, Notice(f, []string{"5", "6", "7", "8"}))
	assert.Equal(t, []string{"--signal=TERM 5.0 6.0", "--signal=TERM --batch 6", "--signal=TERM --full 7 8"}, f.took())
}
