package service_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/service"
)

// Admission on request (admit.go), with the clock driven by hand so that
// no tick can be what grants: on a pool of 48 a request for 40 is granted
// in its own answer at t=0; one for 10 then waits (8 free, and 10 is below
// the smallest partial grant; the burst ceiling, 64, does not bind); releasing the 40 grants it at once, still at
// t=0, and wakes its long poll. Each pass is an "admit" record in the
// journal, and a restart (with and without snapshots) rebuilds the same
// leases. Without the option the same request waits for a tick.
func TestAdmitOnRequest(t *testing.T) {
	ctx := context.Background()
	for _, every := range []int{-1, 2} {
		opts := serviceOptionsWithDir(t)
		opts.Broker = policy.Config{Pool: 48, Grace: policy.DefaultGrace, IOCapacity: 28, InferenceCapacity: 5000}
		opts.AdmitOnRequest, opts.SnapshotEvery = true, every
		e := newEnv(t, opts)
		sci := e.register(t, spec("sci"))
		big, err := sci.Request(ctx, "sci", client.LeaseRequest{GPUs: 40, Duration: 100})
		require.NoError(t, err)
		assert.Equal(t, client.StateGranted, big.State, "granted before the answer")
		assert.Equal(t, 0, big.T)
		w, err := sci.AwaitRequest(ctx, "sci", big.RequestID, 0)
		require.NoError(t, err)
		require.NotNil(t, w.Lease)
		assert.Equal(t, 0, w.Lease.Granted)
		assert.Equal(t, 100, w.Lease.Expires)
		assert.Equal(t, 0, w.Grant.Latency)

		small, err := sci.Request(ctx, "sci", client.LeaseRequest{GPUs: 10, Duration: 50})
		require.NoError(t, err)
		assert.Equal(t, client.StatePending, small.State)
		polled := make(chan *client.RequestWait, 1)
		go func() {
			w, err := sci.AwaitRequest(ctx, "sci", small.RequestID, service.MaxRequestWait)
			assert.NoError(t, err)
			polled <- w
		}()
		_, err = sci.ReleaseLease(ctx, "sci", big.RequestID)
		require.NoError(t, err)
		w = <-polled
		require.Equal(t, client.StateGranted, w.State, "the release's pass granted it and woke the poll")
		assert.Equal(t, 0, w.Lease.Granted)
		assert.Equal(t, 10, w.Lease.GPUs)
		assert.Equal(t, 0, e.svc.Now(), "no tick ran")
		require.NoError(t, e.svc.Close())

		if every < 0 {
			admits := 0
			for l := range strings.SplitSeq(readWAL(t, opts.DataDir), "\n") {
				_, payload, _ := strings.Cut(l, " ")
				var rec map[string]any
				if json.Unmarshal([]byte(payload), &rec) == nil && rec["op"] == "admit" {
					admits++
				}
			}
			assert.Equal(t, 3, admits, "one pass after each request and after the release")
		}
		opts.Logger = nil
		e2 := newEnv(t, opts)
		ls, err := e2.admin.Leases(ctx, "sci")
		require.NoError(t, err)
		require.Len(t, ls.Leases, 1, "snapshot every %d", every)
		assert.Equal(t, client.Lease{ID: small.RequestID, GPUs: 10, Class: "agent-burst", Submitted: 0, Granted: 0, Expires: 50}, ls.Leases[0])
		assert.Empty(t, ls.Pending)
	}

	plain := newEnv(t, service.Options{})
	sci := plain.register(t, spec("sci"))
	acc, err := sci.Request(ctx, "sci", client.LeaseRequest{GPUs: 8, Duration: 100})
	require.NoError(t, err)
	assert.Equal(t, client.StatePending, acc.State, "without the option a request waits for the tick")
	require.NoError(t, plain.svc.Tick())
	w, err := sci.AwaitRequest(ctx, "sci", acc.RequestID, 0)
	require.NoError(t, err)
	assert.Equal(t, 1, w.Lease.Granted)
}
