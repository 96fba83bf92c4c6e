package service_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/service"
)

type awaited struct {
	w   *client.RequestWait
	err error
	at  time.Time
}

func await(c *client.Client, campaign string, id int, wait time.Duration) <-chan awaited {
	ch := make(chan awaited, 1)
	go func() {
		w, err := c.AwaitRequest(context.Background(), campaign, id, wait)
		ch <- awaited{w, err, time.Now()}
	}()
	return ch
}

// TestAwaitRequest: the long poll answers at once when asked not to wait
// (as GET …/requests/{id} does), holds a pending request until the tick
// that grants it and answers then with the lease, answers 404 as soon as
// the request is withdrawn, and answers still pending when the wait runs
// out.
func TestAwaitRequest(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, service.Options{})
	sci := e.register(t, spec("sci"))
	acc, err := sci.Request(ctx, "sci", client.LeaseRequest{GPUs: 48, Duration: 100})
	require.NoError(t, err)

	w, err := sci.AwaitRequest(ctx, "sci", acc.RequestID, 0)
	require.NoError(t, err)
	st, err := sci.RequestStatus(ctx, "sci", acc.RequestID)
	require.NoError(t, err)
	assert.Equal(t, client.RequestWait{T: st.T, RequestID: st.RequestID, State: st.State, Pending: st.Pending}, *w)

	// The wait runs out: still pending, after about the wait.
	start := time.Now()
	w, err = sci.AwaitRequest(ctx, "sci", acc.RequestID, 150*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, client.StatePending, w.State)
	assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)

	// A tick that grants it ends the wait.
	ch := await(sci, "sci", acc.RequestID, 15*time.Second)
	time.Sleep(50 * time.Millisecond)
	ticked := time.Now()
	require.NoError(t, e.svc.Tick())
	var got awaited
	select {
	case got = <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll did not answer the grant")
	}
	require.NoError(t, got.err)
	t.Logf("tick → answer %v", got.at.Sub(ticked))
	assert.Equal(t, client.StateGranted, got.w.State)
	require.NotNil(t, got.w.Grant)
	assert.Equal(t, 48, got.w.Grant.GPUs)
	assert.Equal(t, &client.Lease{ID: acc.RequestID, GPUs: 48, Class: client.ClassAgentBurst, Submitted: 0, Granted: 1, Expires: 101}, got.w.Lease)
	assert.Equal(t, 0.0, got.w.Speed, "a hand-driven clock")

	// Granted and released: still granted, without a lease.
	_, err = sci.ReleaseLease(ctx, "sci", acc.RequestID)
	require.NoError(t, err)
	w, err = sci.AwaitRequest(ctx, "sci", acc.RequestID, time.Second)
	require.NoError(t, err)
	assert.Equal(t, client.StateGranted, w.State)
	assert.Nil(t, w.Lease)

	// A withdrawal ends the wait with 404.
	acc, err = sci.Request(ctx, "sci", client.LeaseRequest{GPUs: 8, Duration: 100})
	require.NoError(t, err)
	ch = await(sci, "sci", acc.RequestID, 15*time.Second)
	time.Sleep(50 * time.Millisecond)
	_, err = sci.WithdrawRequest(ctx, "sci", acc.RequestID)
	require.NoError(t, err)
	select {
	case got = <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll did not answer the withdrawal")
	}
	require.ErrorIs(t, got.err, client.ErrNotFound)

	// A tick that changes nothing for the request keeps it waiting.
	other := e.register(t, spec("other"))
	_, err = other.Request(ctx, "other", client.LeaseRequest{GPUs: 512, Duration: 100})
	require.NoError(t, err)
	require.NoError(t, e.svc.Tick())
	r2, err := other.Request(ctx, "other", client.LeaseRequest{GPUs: 64, Duration: 100})
	require.NoError(t, err)
	ch = await(other, "other", r2.RequestID, 300*time.Millisecond)
	require.NoError(t, e.svc.Tick())
	got = <-ch
	require.NoError(t, got.err)
	assert.Equal(t, client.StatePending, got.w.State, "the pool is taken")
}

// TestAwaitRequestBadWait: the wait is a duration between 0s and 20s.
func TestAwaitRequestBadWait(t *testing.T) {
	e := newEnv(t, service.Options{})
	reg, err := e.admin.Register(context.Background(), spec("sci"))
	require.NoError(t, err)
	for _, w := range []string{"abc", "21s", "-1s", "1h"} {
		code, body := raw(t, e.url, http.MethodGet, "/v1/campaigns/sci/requests/1/wait?wait="+w, reg.Token, "")
		require.Equal(t, http.StatusUnprocessableEntity, code, "wait=%s: %s", w, body)
		var p client.Problem
		require.NoError(t, json.Unmarshal(body, &p))
		require.Len(t, p.Errors, 1)
		assert.Equal(t, "query.wait", p.Errors[0].Location)
	}
	code, body := raw(t, e.url, http.MethodGet, "/v1/campaigns/sci/requests/1/wait?wait=1s", reg.Token, "")
	assert.Equal(t, http.StatusNotFound, code, "%s", body)
}

// TestAwaitRequestShutdown: a graceful shutdown answers every long poll at
// once instead of waiting for it to run out.
func TestAwaitRequestShutdown(t *testing.T) {
	ctx := context.Background()
	e, stop := serveEnv(t, service.Options{})
	sci := e.register(t, spec("sci"))
	// Nothing is granted: the clock is driven by hand and never ticks.
	acc, err := sci.Request(ctx, "sci", client.LeaseRequest{GPUs: 8, Duration: 100})
	require.NoError(t, err)
	ch := await(sci, "sci", acc.RequestID, 20*time.Second)
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	stop()
	assert.Less(t, time.Since(start), 5*time.Second, "the shutdown waited for the long poll")
	select {
	case got := <-ch:
		if got.err == nil {
			assert.Equal(t, client.StatePending, got.w.State)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the long poll was not answered at shutdown")
	}
}

// TestRevocationEndsLongPoll: a long poll holds its campaign's token only
// as long as the token is valid. Revoking it (and rotating it) answers
// the open wait with 401 at once, without waiting for a tick, and the
// request the poll was on is not granted to the revoked token (issue 34
// §5: a revoked token's poll delivered a grant 2.7 s later).
func TestRevocationEndsLongPoll(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, service.Options{})
	for _, end := range []string{"revoke", "rotate"} {
		t.Run(end, func(t *testing.T) {
			sci := e.register(t, spec("sci-"+end))
			acc, err := sci.Request(ctx, "sci-"+end, client.LeaseRequest{GPUs: 48, Duration: 100})
			require.NoError(t, err)
			ch := await(sci, "sci-"+end, acc.RequestID, 15*time.Second)
			time.Sleep(100 * time.Millisecond)
			if end == "revoke" {
				_, err = e.admin.RevokeToken(ctx, "sci-"+end)
			} else {
				_, err = e.admin.RotateToken(ctx, "sci-"+end)
			}
			require.NoError(t, err)
			ended := time.Now()
			var got awaited
			select {
			case got = <-ch:
			case <-time.After(5 * time.Second):
				t.Fatal("the long poll outlived its token")
			}
			assert.Equal(t, http.StatusUnauthorized, client.StatusCode(got.err), "%v %+v", got.err, got.w)
			assert.Less(t, got.at.Sub(ended), time.Second, "ended by the revocation, not by a tick or the timeout")
		})
	}
}
