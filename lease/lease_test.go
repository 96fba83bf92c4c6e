//go:build unix

package lease

import (
	"bytes"
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
)

// fakeService is the service as a test sets it: each request is granted
// the next of grants (GPUs) at broker time t, with speed broker seconds
// per wall-clock second; free is what the supply shows. It records the
// calls that give something back.
type fakeService struct {
	mu        sync.Mutex
	grants    []int
	speed     float64
	free      int
	withdrawn []int
	released  []int
	// withdrawErr is WithdrawRequest's answer (a grant that won the race:
	// client.ErrConflict).
	withdrawErr error
	// pending: requests stay pending (no grant ever comes).
	pending bool
	filed   int
	// leases answers Leases (nil: none held).
	leases func() *client.Leases
	// ceiling is the campaign's burst ceiling (0: 1024).
	ceiling int
}

func (f *fakeService) Campaign(_ context.Context, name string) (*client.CampaignOut, error) {
	c := f.ceiling
	if c == 0 {
		c = 1024
	}
	return &client.CampaignOut{T: 100, Campaign: client.Campaign{Name: name, Envelope: client.CampaignSpec{BurstCeiling: c}}}, nil
}

func (f *fakeService) BaseURL() string { return "http://fake" }

func (f *fakeService) Request(_ context.Context, _ string, r client.LeaseRequest) (*client.RequestAccepted, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.filed++
	return &client.RequestAccepted{RequestID: f.filed, State: client.StatePending, T: 100, GPUs: r.GPUs, Duration: r.Duration, Class: "agent-burst"}, nil
}

func (f *fakeService) AwaitRequest(ctx context.Context, _ string, id int, wait time.Duration) (*client.RequestWait, error) {
	f.mu.Lock()
	pending := f.pending
	f.mu.Unlock()
	if pending {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(wait, 50*time.Millisecond)):
		}
		return &client.RequestWait{T: 100, RequestID: id, State: client.StatePending}, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	gpus := f.grants[id-1]
	return &client.RequestWait{T: 100, RequestID: id, State: client.StateGranted, Speed: f.speed,
		Grant: &client.Grant{T: 100, Lease: id, GPUs: gpus, Path: "warm"},
		Lease: &client.Lease{ID: id, GPUs: gpus, Granted: 100, Expires: 160}}, nil
}

func (f *fakeService) WithdrawRequest(_ context.Context, _ string, id int) (*client.WithdrawResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.withdrawn = append(f.withdrawn, id)
	return &client.WithdrawResult{RequestID: id}, f.withdrawErr
}

func (f *fakeService) ReleaseLease(_ context.Context, _ string, id int) (*client.ReleaseResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, id)
	return &client.ReleaseResult{ReleasedLeases: 1}, nil
}

func (f *fakeService) Supply(context.Context, string) (*client.Supply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &client.Supply{T: 100, Free: f.free}, nil
}

func (f *fakeService) Leases(context.Context, string) (*client.Leases, error) {
	if f.leases != nil {
		return f.leases(), nil
	}
	return &client.Leases{}, nil
}

func (f *fakeService) SlurmToken(context.Context, string, int) (*client.SlurmToken, error) {
	return nil, errors.New("no Slurm here")
}

// wrapper is a leaseRun on f asking for gpus, at least minGPUs, without a
// watchdog, its messages in out.
func wrapper(f *fakeService, gpus, minGPUs int, o Options) (*leaseRun, *bytes.Buffer) {
	var out bytes.Buffer
	o.Client, o.Campaign, o.GPUs, o.MinGPUs, o.Duration = f, "sci", gpus, minGPUs, 60
	return &leaseRun{opts: o, cl: f, campaign: "sci", gpus: gpus, minGPUs: minGPUs, out: &out, sigs: make(chan os.Signal, 1)}, &out
}

// TestAcquireBelowMinGPUs: a grant smaller than MinGPUs is released at
// once; with NoWait the wrapper gives up with 75, without it waits until
// the supply shows MinGPUs free and asks again.
func TestAcquireBelowMinGPUs(t *testing.T) {
	f := &fakeService{grants: []int{2}, speed: 1}
	r, out := wrapper(f, 4, 4, Options{NoWait: true})
	g, code, err := r.acquire()
	assert.Nil(t, g)
	assert.Equal(t, ExitNoGrant, code)
	assert.EqualError(t, err, "granted 2 GPUs, fewer than --min-gpus 4, and --no-wait was given")
	assert.Equal(t, []int{1}, f.released, "the small grant is given back")
	assert.Contains(t, out.String(), "lease 1 has 2 GPUs, fewer than --min-gpus 4: released it")

	f = &fakeService{grants: []int{2, 4}, speed: 2, free: 4}
	r, _ = wrapper(f, 4, 4, Options{})
	start := time.Now()
	g, code, err = r.acquire()
	require.NoError(t, err)
	require.Equal(t, 0, code)
	assert.Equal(t, 2, g.lease.ID)
	assert.Equal(t, 4, g.lease.GPUs)
	assert.Equal(t, []int{1}, f.released)
	// 60 broker seconds left at speed 2: 30 s of wall clock from the poll.
	left := time.Until(g.deadline)
	assert.InDelta(t, 30, left.Seconds(), 2, "the deadline is the broker's expiry in wall-clock time")
	assert.GreaterOrEqual(t, time.Since(start), time.Second, "the supply is read after a backoff")
}

// TestAcquireBeyondCeilingFailsAtOnce: a lease the campaign's burst
// ceiling can never allow fails before anything is filed, naming the
// ceiling, instead of grant, release and retry for ever; at the ceiling
// (or with a --min-gpus under it) the request goes ahead.
func TestAcquireBeyondCeilingFailsAtOnce(t *testing.T) {
	f := &fakeService{grants: []int{16}, speed: 1, ceiling: 16}
	// --wait bounds the test should the check go: it would retry for ever.
	r, _ := wrapper(f, 400, 400, Options{Wait: 2 * time.Second})
	start := time.Now()
	g, code, err := r.acquire()
	assert.Nil(t, g)
	assert.Equal(t, ExitError, code)
	assert.EqualError(t, err, "--gpus 400 can never be granted: campaign sci may hold at most 16 GPUs (its burst ceiling); ask for at most 16")
	assert.Zero(t, f.filed, "nothing is filed")
	assert.Less(t, time.Since(start), time.Second, "at once")

	r, _ = wrapper(f, 400, 17, Options{})
	_, _, err = r.acquire()
	assert.ErrorContains(t, err, "--min-gpus 17 can never be granted")

	r, _ = wrapper(f, 400, 16, Options{})
	g, code, err = r.acquire()
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Equal(t, 16, g.lease.GPUs)
}

// TestAcquireSignalWithdraws: a signal while waiting withdraws the request
// and ends the wait with 128+N; when the grant won the race (the
// withdrawal is refused with a conflict) the lease is released instead.
func TestAcquireSignalWithdraws(t *testing.T) {
	for _, race := range []bool{false, true} {
		f := &fakeService{pending: true}
		if race {
			f.withdrawErr = client.ErrConflict
		}
		r, out := wrapper(f, 4, 4, Options{})
		r.sigs <- syscall.SIGINT
		g, code, err := r.acquire()
		require.NoError(t, err)
		assert.Nil(t, g)
		assert.Equal(t, 128+int(syscall.SIGINT), code)
		assert.Equal(t, []int{1}, f.withdrawn)
		if race {
			assert.Equal(t, []int{1}, f.released, "granted meanwhile: released")
			assert.Contains(t, out.String(), "request 1 was granted meanwhile")
		} else {
			assert.Empty(t, f.released)
			assert.Contains(t, out.String(), "withdrew request 1")
		}
	}
}

// TestAcquireWait: Wait running out withdraws the request and exits 75.
func TestAcquireWait(t *testing.T) {
	f := &fakeService{pending: true}
	r, _ := wrapper(f, 4, 4, Options{Wait: 100 * time.Millisecond})
	_, code, err := r.acquire()
	assert.Equal(t, ExitNoGrant, code)
	assert.EqualError(t, err, "no grant within --wait 100ms")
	assert.Equal(t, []int{1}, f.withdrawn)
}

// TestChildEnv: the command gets the environment without any token.
func TestChildEnv(t *testing.T) {
	env := []string{"PATH=/bin", "BURSAR_TOKEN=x", "BURSAR_TOKEN_FILE=/t", "BURSAR_ADMIN_TOKEN=y",
		"BURSAR_ADMIN_TOKEN_FILE=/a", "BURSAR_SERVER=http://s", "BURSAR_TOKENS=kept"}
	assert.Equal(t, []string{"PATH=/bin", "BURSAR_SERVER=http://s", "BURSAR_TOKENS=kept"}, ChildEnv(env))
}

// TestWatchdogApply: a note sets what it names and leaves the rest, -1
// clears, the first note's fields come together; a deadline arms the
// backstop, which fires watchdogSlack after it.
func TestWatchdogApply(t *testing.T) {
	s := &watchdogState{fire: make(chan struct{}, 1)}
	s.apply(Note{Server: "http://s", Campaign: "sci", Token: "tok", KillAfter: time.Second})
	s.apply(Note{Request: 3})
	s.apply(Note{Lease: 3})
	s.apply(Note{Request: -1, Pgid: 77})
	s.apply(Note{SlurmToken: "bursar1:x"})
	s.apply(Note{Lease: 0}) // says nothing
	assert.Equal(t, Note{Server: "http://s", Campaign: "sci", Token: "tok", KillAfter: time.Second, Lease: 3, Pgid: 77, SlurmToken: "bursar1:x"}, s.Note)
	s.apply(Note{Lease: -1, Pgid: -1})
	assert.Zero(t, s.Lease)
	assert.Zero(t, s.Pgid)

	select {
	case <-s.fire:
		t.Fatal("fired without a deadline")
	default:
	}
	s.apply(Note{KillAt: time.Now().Add(-watchdogSlack + 50*time.Millisecond).UnixNano()})
	select {
	case <-s.fire:
	case <-time.After(5 * time.Second):
		t.Fatal("the backstop did not fire watchdogSlack after the deadline")
	}
	s.apply(Note{KillAt: time.Now().Add(time.Hour).UnixNano()})
	s.apply(Note{KillAt: time.Now().Add(2 * time.Hour).UnixNano()}) // replaces, never adds
	select {
	case <-s.fire:
		t.Fatal("fired before the deadline")
	case <-time.After(100 * time.Millisecond):
	}
	s.backstop.Stop()
}

// TestRunWatchdogGoodbye: the goodbye ends the watchdog quietly, with
// nothing cleaned up; the end of the pipe without one is the wrapper's
// death, and a watchdog that holds nothing just exits.
func TestRunWatchdogGoodbye(t *testing.T) {
	var out bytes.Buffer
	in := bytes.NewBufferString(`{"server":"http://127.0.0.1:1","campaign":"sci","token":"t","lease":4}` + "\n" + `{"goodbye":true}` + "\n")
	require.NoError(t, RunWatchdog(in, &out, nil))
	assert.Empty(t, out.String())
	require.NoError(t, RunWatchdog(bytes.NewBufferString(`{"campaign":"sci"}`+"\n"), &out, nil))
	assert.Empty(t, out.String())
}
