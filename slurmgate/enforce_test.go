package slurmgate

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/internal/slurmtoken"
)

// fakeCluster is Slurm as the tests set it: a queue, its running steps,
// and every scancel made, in order. A scancel whose arguments start with
// failOn fails.
type fakeCluster struct {
	mu     sync.Mutex
	queue  []QueuedJob
	steps  []string
	calls  []string
	failOn string
}

func (f *fakeCluster) Queue(context.Context) ([]QueuedJob, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]QueuedJob(nil), f.queue...), nil
}

func (f *fakeCluster) Steps(context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.steps...), nil
}

func (f *fakeCluster) Running(context.Context) ([]Job, error) { return nil, nil }

func (f *fakeCluster) Scancel(_ context.Context, args ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	line := strings.Join(args, " ")
	f.calls = append(f.calls, line)
	if f.failOn != "" && strings.HasPrefix(line, f.failOn) {
		return errors.New("scancel failed")
	}
	return nil
}

// took returns the scancels made since the last call.
func (f *fakeCluster) took() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

// fakeLeases is the service: the leases held (by id), those under
// notice, and the journal's bindings.
type fakeLeases struct {
	// releasing: released by their user while their job runs, which
	// the service still holds (held) but tells the enforcer are not.
	held, notice, releasing map[int]bool
	holds                   []fakeHold
	bound                   map[int]string
}

func (l *fakeLeases) SlurmLeaseHeld(_ context.Context, _ string, lease int) (bool, bool, error) {
	return l.held[lease] && !l.releasing[lease], l.notice[lease], nil
}

func (l *fakeLeases) BindSlurmJob(_ context.Context, _ string, lease int, job string) (string, error) {
	if b, ok := l.bound[lease]; ok {
		return b, nil
	}
	l.bound[lease] = job
	return job, nil
}

var testKey = []byte("0123456789abcdef0123456789abcdef")

// token signs lease (of campaign sci, 2 GPUs) to end at expires.
func token(lease int, expires time.Time) string {
	return slurmtoken.Sign(testKey, slurmtoken.Lease{Lease: lease, Campaign: "sci", GPUs: 2, Expires: expires.Unix()})
}

// newEnforcer is an enforcer on f whose service holds the leases held,
// started (its state made) at now; its timers stop with the test.
func newEnforcer(t *testing.T, f *fakeCluster, ls *fakeLeases, ledger string, now time.Time) *Enforcer {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := &Enforcer{Key: testKey, Leases: ls, Cluster: f, Grace: 10 * time.Second, Ledger: ledger,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	e.start(ctx, now)
	return e
}

func leases(held ...int) *fakeLeases {
	l := &fakeLeases{held: map[int]bool{}, notice: map[int]bool{}, releasing: map[int]bool{}, bound: map[int]string{}}
	for _, id := range held {
		l.held[id] = true
	}
	return l
}

// TestEnforcerKillsJobPastItsLease: a running job whose token expired is
// killed in the pass that sees it: SIGKILL to its numbered steps, then to
// its batch shell, then its cancellation (Kill: never a cancellation
// first, which would give a job that ignores SIGTERM KillWait more). A
// job on a live lease and a job without a token are left alone; the
// dead job is cancelled again only once Recancel has passed.
func TestEnforcerKillsJobPastItsLease(t *testing.T) {
	now := time.Now()
	f := &fakeCluster{
		queue: []QueuedJob{
			{ID: "5", Comment: token(7, now.Add(-2*time.Second)), State: "RUNNING", CPUs: "2"},
			{ID: "6", Comment: token(8, now.Add(time.Hour)), State: "RUNNING", CPUs: "2"},
			{ID: "9", Comment: "no token here", State: "RUNNING", CPUs: "1"},
		},
		steps: []string{"5.0", "5.batch", "5.extern", "6.0", "9.0"},
	}
	e := newEnforcer(t, f, leases(7, 8), "", now)
	e.pass(context.Background(), now)
	assert.Equal(t, []string{"--signal=KILL 5.0", "--signal=KILL --batch 5", "5"}, f.took())

	// Still listed: within Recancel nothing more; after it, again (the
	// second time with a plain cancellation of what the kill left).
	e.pass(context.Background(), now.Add(Recancel/2))
	assert.Empty(t, f.took())
	e.pass(context.Background(), time.Now().Add(Recancel))
	assert.Equal(t, []string{"--signal=KILL 5.0", "--signal=KILL --batch 5", "5", "5"}, f.took())
}

// TestEnforcerFirstSeenAfterRelease: a job the enforcer sees for the
// first time when its lease is already released (its token got past a
// gate without the release's record, or it was submitted just before)
// runs on resources the broker has freed: killed at once, no SIGTERM, no
// grace. One under notice, still held, gets its notice.
func TestEnforcerFirstSeenAfterRelease(t *testing.T) {
	now := time.Now()
	f := &fakeCluster{
		queue: []QueuedJob{
			{ID: "5", Comment: token(7, now.Add(time.Hour)), State: "RUNNING", CPUs: "2"},
			{ID: "6", Comment: token(9, now.Add(time.Hour)), State: "RUNNING", CPUs: "2"},
		},
		steps: []string{"5.0", "6.0"},
	}
	ls := leases(9)
	ls.notice[9] = true
	e := newEnforcer(t, f, ls, "", now)
	e.pass(context.Background(), now)
	assert.Equal(t, []string{"--signal=KILL 5.0", "5", "--signal=TERM 6.0"}, f.took())
}

// TestEnforcerLeaseGone: a running job whose lease is no longer held gets
// SIGTERM through Slurm (every process: --full) in the first pass and the
// kill once Grace has passed; a pending one is cancelled at once (a
// pending job takes no signal); a job whose lease is under notice is
// treated as one whose lease is gone.
func TestEnforcerLeaseGone(t *testing.T) {
	now := time.Now()
	f := &fakeCluster{
		queue: []QueuedJob{
			{ID: "5", Comment: token(7, now.Add(time.Hour)), State: "RUNNING", CPUs: "2"},
			{ID: "6", Comment: token(8, now.Add(time.Hour)), State: "PENDING", CPUs: "2"},
			{ID: "7", Comment: token(9, now.Add(time.Hour)), State: "RUNNING", CPUs: "2"},
		},
		steps: []string{"5.0", "7.0"},
	}
	ls := leases(7, 8, 9)
	e := newEnforcer(t, f, ls, "", now)
	e.pass(context.Background(), now)
	assert.Empty(t, f.took(), "seen while their leases are held")
	ls.held = map[int]bool{9: true} // 7 and 8 are gone; 9 is held, under notice
	ls.notice[9] = true
	e.pass(context.Background(), now)
	assert.Equal(t, []string{"6", "--signal=TERM 5.0 7.0"}, f.took(),
		"the pending job is cancelled, the running ones get their notice")

	f.queue = f.queue[:1:1]
	f.queue = append(f.queue, QueuedJob{ID: "7", Comment: token(9, now.Add(time.Hour)), State: "RUNNING", CPUs: "2"}) // 6 is gone
	e.pass(context.Background(), now.Add(e.Grace/2))
	assert.Empty(t, f.took(), "within the grace nothing more")
	e.pass(context.Background(), now.Add(e.Grace))
	assert.Equal(t, []string{"--signal=KILL 5.0 7.0", "5 7"}, f.took(), "the grace is over: killed")
}

// TestEnforcerOneJobPerToken: a second job on a token that admitted
// another is cancelled at once, whatever its lease's state, and the
// journal's binding decides which job is the first.
func TestEnforcerOneJobPerToken(t *testing.T) {
	now := time.Now()
	tok := token(7, now.Add(time.Hour))
	f := &fakeCluster{queue: []QueuedJob{
		{ID: "5", Comment: tok, State: "RUNNING", CPUs: "2"},
		{ID: "6", Comment: tok, State: "RUNNING", CPUs: "2"},
	}}
	ls := leases(7)
	ls.bound[7] = "6" // the journal bound lease 7 to job 6 before a restart
	e := newEnforcer(t, f, ls, "", now)
	e.pass(context.Background(), now)
	assert.Equal(t, []string{"5"}, f.took(), "job 5 came second (it has no step to kill: cancelled)")
	e.pass(context.Background(), now.Add(Recancel/2))
	assert.Empty(t, f.took())
}

// TestEnforcerLedgerRoundTrip: the enforcer writes each job it sees on a
// token to the ledger once, and one started later from that ledger binds
// the lease to that job again: a new job on the token is a second job,
// even when the service (no journal) binds nothing. A binding whose lease
// ended more than a minute ago is not read back.
func TestEnforcerLedgerRoundTrip(t *testing.T) {
	now := time.Now()
	ledger := filepath.Join(t.TempDir(), "ledger")
	tok := token(7, now.Add(time.Hour))
	f := &fakeCluster{queue: []QueuedJob{{ID: "5", Comment: tok, State: "RUNNING", CPUs: "2"}}}
	e := newEnforcer(t, f, leases(7), ledger, now)
	e.pass(context.Background(), now)
	e.pass(context.Background(), now.Add(time.Second))
	assert.Empty(t, f.took())
	b, err := os.ReadFile(ledger)
	require.NoError(t, err)
	var lines []string // the bindings; the events (ledgerread.go) are lines of their own
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !strings.Contains(line, `"event":`) {
			lines = append(lines, line)
		}
	}
	require.Len(t, lines, 1, "one binding per job, however often it is seen")
	var en LedgerEntry
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &en))
	assert.Equal(t, LedgerEntry{Job: "5", Lease: 7, Campaign: "sci", GPUs: 2, Expires: now.Add(time.Hour).Unix(), CPUs: "2", Seen: now.Unix()}, en)

	f.queue = []QueuedJob{{ID: "8", Comment: tok, State: "RUNNING", CPUs: "2"}}
	e2 := newEnforcer(t, f, leases(7), ledger, now.Add(time.Minute))
	e2.pass(context.Background(), now.Add(time.Minute))
	assert.Equal(t, []string{"8"}, f.took(), "the restarted enforcer knows job 5 had the token")

	// A ledger whose lease ended over a minute before the restart binds
	// nothing: its token is refused as expired anyway.
	e3 := newEnforcer(t, f, leases(7), ledger, now.Add(time.Hour+61*time.Second))
	assert.Empty(t, e3.bound)
	e4 := newEnforcer(t, f, leases(7), ledger, now.Add(time.Hour+59*time.Second))
	assert.Equal(t, map[string]string{slurmtoken.WCKey(slurmtoken.Lease{Lease: 7, Campaign: "sci", GPUs: 2, Expires: now.Add(time.Hour).Unix()}): "5"}, e4.bound)
}

// TestKillWhenTheStepKillFails: when a SIGKILL to the steps fails, only
// the jobs with nothing to kill are cancelled; a job with steps is left
// for the next kill rather than cancelled into KillWait.
func TestKillWhenTheStepKillFails(t *testing.T) {
	f := &fakeCluster{steps: []string{"5.0", "6.batch"}, failOn: "--signal=KILL"}
	err := Kill(f, []string{"5", "6", "7"})
	assert.Error(t, err)
	assert.Equal(t, []string{"--signal=KILL 5.0", "--signal=KILL --batch 6", "7"}, f.took())
}

// TestEndLease: the notice is one scancel by the lease's WcKey, to the
// running jobs only; the end kills the steps of the token's jobs and
// cancels them, then cancels what is pending by WcKey (a job submitted
// after the squeue included).
func TestEndLease(t *testing.T) {
	exp := time.Unix(1800000000, 0)
	tok := token(7, exp)
	f := &fakeCluster{queue: []QueuedJob{{ID: "5", Comment: tok, State: "RUNNING"}, {ID: "6", Comment: "other"}},
		steps: []string{"5.0", "6.0"}}
	what, err := EndLease(f, tok, true)
	require.NoError(t, err)
	assert.Equal(t, "the jobs of WcKey bursar:7:sci:2:1800000000 (5)", what)
	assert.Equal(t, []string{"--signal=TERM 5.0"}, f.took(), "the notice to the step's tasks")
	what, err = EndLease(f, tok, false)
	require.NoError(t, err)
	assert.Equal(t, "the jobs of WcKey bursar:7:sci:2:1800000000 (5)", what)
	assert.Equal(t, []string{"--signal=KILL 5.0", "5", "--state=PENDING --wckey=bursar:7:sci:2:1800000000"}, f.took())
}

// TestEnforcerKillsOversizedJob: the first time a job is seen running,
// what Slurm allocated it is compared with its lease (2 here): counting
// CPUs, a job given 16 CPUs (--mincpus=16 past a gate that missed it) is
// killed at once, long before its lease ends; a job on its lease's size
// is left alone; counting GPUs, 16 CPUs are fine but 4 GPUs are not. A
// pending job has no allocation yet and is judged once it runs.
func TestEnforcerKillsOversizedJob(t *testing.T) {
	now := time.Now()
	f := &fakeCluster{
		queue: []QueuedJob{
			{ID: "5", Comment: token(7, now.Add(time.Hour)), State: "RUNNING", CPUs: "16", TRES: "cpu=16,node=1,billing=16"},
			{ID: "6", Comment: token(8, now.Add(time.Hour)), State: "RUNNING", CPUs: "2", TRES: "cpu=2,node=1,billing=2"},
			{ID: "7", Comment: token(9, now.Add(time.Hour)), State: "PENDING", CPUs: "16"},
		},
		steps: []string{"5.0", "6.0"},
	}
	e := newEnforcer(t, f, leases(7, 8, 9), "", now)
	e.pass(context.Background(), now)
	assert.Equal(t, []string{"--signal=KILL 5.0", "5"}, f.took())
	f.queue = []QueuedJob{f.queue[1], {ID: "7", Comment: token(9, now.Add(time.Hour)), State: "RUNNING", CPUs: "16", TRES: "cpu=16"}}
	f.steps = []string{"6.0", "7.0"}
	e.pass(context.Background(), now.Add(time.Second))
	assert.Equal(t, []string{"--signal=KILL 7.0", "7"}, f.took(), "judged once it runs")

	g := &fakeCluster{queue: []QueuedJob{
		{ID: "5", Comment: token(7, now.Add(time.Hour)), State: "RUNNING", CPUs: "16", TRES: "cpu=16,gres/gpu=2"},
		{ID: "6", Comment: token(8, now.Add(time.Hour)), State: "RUNNING", CPUs: "1", TRES: "cpu=1,gres/gpu=4,gres/gpu:a100=4"},
	}}
	e = newEnforcer(t, g, leases(7, 8), "", now)
	e.Unit = slurmtoken.UnitGPU
	e.pass(context.Background(), now)
	assert.Equal(t, []string{"6"}, g.took(), "counting GPUs: 4 GPUs on a lease of 2")
}

func TestAllocated(t *testing.T) {
	for _, c := range []struct {
		tres       string
		cpus, gpus int
	}{
		{"", 0, 0},
		{"cpu=16,mem=1000M,node=1,billing=16", 16, 0},
		{"cpu=2,node=1,billing=2,gres/gpu=2,gres/gpu:a100=2", 2, 2},
		{"cpu=x,gres/gpu=", 0, 0},
	} {
		cpus, gpus := Allocated(c.tres)
		assert.Equal(t, c.cpus, cpus, c.tres)
		assert.Equal(t, c.gpus, gpus, c.tres)
	}
}

// TestEnforcerArrayIsOneJob: the tasks of an array admitted on a token
// (9_0, 9_1 running, 9_[2-7] pending) are one submission, bound to the
// lease as job 9; another job on the token is still a second job.
func TestEnforcerArrayIsOneJob(t *testing.T) {
	now := time.Now()
	tok := token(7, now.Add(time.Hour))
	f := &fakeCluster{queue: []QueuedJob{
		{ID: "9_0", Comment: tok, State: "RUNNING", CPUs: "1"},
		{ID: "9_1", Comment: tok, State: "RUNNING", CPUs: "1"},
		{ID: "9_[2-7]", Comment: tok, State: "PENDING", CPUs: "1"},
		{ID: "10", Comment: tok, State: "PENDING", CPUs: "1"},
	}}
	ls := leases(7)
	e := newEnforcer(t, f, ls, "", now)
	e.pass(context.Background(), now)
	assert.Equal(t, []string{"10"}, f.took())
	assert.Equal(t, "9", ls.bound[7])
	assert.Equal(t, "5", ArrayJob("5_[2-7]"))
	assert.Equal(t, "5", ArrayJob("5"))
}
