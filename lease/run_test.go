//go:build unix

package lease

import (
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
)

// fakeProc is the command as a test plays it: it notes each signal to
// its group with the time since it started, ends at SIGKILL, and at
// SIGTERM unless it ignores it.
type fakeProc struct {
	mu         sync.Mutex
	began      time.Time
	got        []string
	at         []time.Duration // when each of got was sent
	ev         chan procEvent
	ended      bool
	ignoreTerm bool
	env        []string
}

func (p *fakeProc) group() int                { return 4242 }
func (p *fakeProc) events() <-chan procEvent  { return p.ev }
func (p *fakeProc) release()                  {}
func (p *fakeProc) left() []int               { return nil }
func (p *fakeProc) end(ws syscall.WaitStatus) { p.ev <- procEvent{ws: ws} }

func (p *fakeProc) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, sig.String())
	p.at = append(p.at, time.Since(p.began))
	if !p.ended && (sig == syscall.SIGKILL || sig == syscall.SIGTERM && !p.ignoreTerm) {
		p.ended = true
		p.end(syscall.WaitStatus(sig)) // ended by the signal
	}
}

func (p *fakeProc) signals() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.got...)
}

// sentAt checks that the signals went out at the wall-clock times want
// (from the command's start), none early and none later than a loaded
// machine's scheduling could make it.
func (p *fakeProc) sentAt(t *testing.T, want ...time.Duration) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	require.Len(t, p.at, len(want))
	for i, w := range want {
		assert.GreaterOrEqual(t, p.at[i], w-5*time.Millisecond, "signal %d (%s) early", i, p.got[i])
		assert.Less(t, p.at[i], w+250*time.Millisecond, "signal %d (%s) late", i, p.got[i])
	}
}

// runOn runs a fake command on lease 1 (expiring at t=160, deadline
// after d of wall-clock time at speed 10) with options o.
func runOn(t *testing.T, f *fakeService, p *fakeProc, d time.Duration, o Options) (int, string, error) {
	t.Helper()
	r, out := wrapper(f, 4, 4, o)
	if p.ev == nil {
		p.ev = make(chan procEvent, 4)
	}
	r.start = func(args, env []string, tty int, keep []int) (process, error) {
		p.mu.Lock()
		p.began, p.env = time.Now(), env
		p.mu.Unlock()
		return p, nil
	}
	g := &grant{lease: client.Lease{ID: 1, GPUs: 4, Class: "agent-burst", Expires: 160}, deadline: time.Now().Add(d), speed: 10}
	code, err := r.run(g, []string{"train"})
	return code, out.String(), err
}

// TestRunNoticeAndDeadline: SIGTERM (with SIGCONT, for a stopped command)
// ExpiryNotice broker seconds before the local deadline, SIGKILL at it,
// with no read of the lease needed; the command's status is 128+9.
func TestRunNoticeAndDeadline(t *testing.T) {
	p := &fakeProc{ignoreTerm: true}
	code, out, err := runOn(t, &fakeService{}, p, 600*time.Millisecond, Options{ExpiryNotice: 3, KillAfter: 10 * time.Second, Poll: time.Hour})
	require.NoError(t, err)
	assert.Equal(t, 128+9, code)
	assert.Equal(t, []string{"terminated", "continued", "killed"}, p.signals())
	p.sentAt(t, 300*time.Millisecond, 300*time.Millisecond, 600*time.Millisecond) // 3 broker seconds at speed 10 before the deadline, then the deadline
	assert.Contains(t, out, "lease 1 expires at t=160 (in 3 broker s): sending SIGTERM")
	assert.Contains(t, out, "lease 1 is over (its local deadline): sending SIGKILL")
	assert.Contains(t, p.env, "BURSAR_LEASE_ID=1")
	assert.Contains(t, p.env, "BURSAR_GPUS=4")
	assert.Contains(t, p.env, "BURSAR_LEASE_EXPIRES=160")
}

// TestRunLeaseGone: a lease the poll no longer finds gets SIGTERM at that
// poll and SIGKILL KillAfter later, long before its deadline; a lease
// under preemption notice gets SIGTERM and SIGKILL when the notice runs
// out, counted from when the poll was sent.
func TestRunLeaseGone(t *testing.T) {
	p := &fakeProc{ignoreTerm: true}
	f := &fakeService{leases: func() *client.Leases { return &client.Leases{T: 120} }}
	code, out, err := runOn(t, f, p, time.Hour, Options{ExpiryNotice: 3, KillAfter: 300 * time.Millisecond, Poll: 100 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, 137, code)
	assert.Equal(t, []string{"terminated", "continued", "killed"}, p.signals())
	p.sentAt(t, 100*time.Millisecond, 100*time.Millisecond, 400*time.Millisecond)
	assert.Contains(t, out, "lease 1 is gone at t=120: sending SIGTERM")

	p = &fakeProc{ignoreTerm: true}
	f = &fakeService{leases: func() *client.Leases {
		return &client.Leases{T: 120, Leases: []client.Lease{{ID: 1, GPUs: 4, Expires: 160, UnderNotice: true, PreemptAt: 125}}}
	}}
	code, out, err = runOn(t, f, p, time.Hour, Options{ExpiryNotice: 3, KillAfter: 10 * time.Second, Poll: 100 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, 137, code)
	assert.Equal(t, []string{"terminated", "continued", "killed"}, p.signals())
	p.sentAt(t, 100*time.Millisecond, 100*time.Millisecond, 600*time.Millisecond) // 5 broker seconds of notice at speed 10
	assert.Contains(t, out, "lease 1 is being preempted (notice until t=125): sending SIGTERM")
}

// TestRunCommandEnds: a command that ends by itself gets no signal, and
// its own status is the wrapper's.
func TestRunCommandEnds(t *testing.T) {
	p := &fakeProc{ev: make(chan procEvent, 4)}
	f := &fakeService{leases: func() *client.Leases {
		return &client.Leases{T: 120, Leases: []client.Lease{{ID: 1, GPUs: 4, Expires: 160}}}
	}}
	go func() {
		time.Sleep(200 * time.Millisecond)
		p.end(syscall.WaitStatus(3 << 8)) // exit status 3
	}()
	code, out, err := runOn(t, f, p, time.Hour, Options{ExpiryNotice: 3, KillAfter: time.Second, Poll: 50 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, 3, code)
	assert.Empty(t, p.signals())
	assert.False(t, strings.Contains(out, "sending"), out)
}
