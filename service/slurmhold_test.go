package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
)

// TestHoldSlurmLease: a lease held past its own end (its Slurm job still
// ends) keeps its GPUs counted until the hold's end, journaled, so a
// restart replays it; a hold within the lease moves nothing; no new
// token is issued for a held-over lease; a lease not held answers false.
func TestHoldSlurmLease(t *testing.T) {
	ctx := context.Background()
	opts := serviceOptionsWithDir(t)
	opts.AdmitOnRequest, opts.Speed, opts.SlurmKey = true, 1, []byte("0123456789abcdef0123456789abcdef")
	e := newEnv(t, opts)
	sci := e.register(t, spec("sci"))
	acc, err := sci.Request(ctx, "sci", client.LeaseRequest{GPUs: 2, Duration: 100})
	require.NoError(t, err)
	w, err := sci.AwaitGrant(ctx, "sci", acc.RequestID)
	require.NoError(t, err)
	expires := w.Lease.Expires
	_, err = sci.SlurmToken(ctx, "sci", w.Lease.ID)
	require.NoError(t, err, "a token before the hold")

	held, err := e.svc.HoldSlurmLease(ctx, "sci", w.Lease.ID, time.Now().Add(50*time.Second))
	require.NoError(t, err)
	assert.True(t, held)
	ls, err := sci.Leases(ctx, "sci")
	require.NoError(t, err)
	require.Len(t, ls.Leases, 1)
	assert.Equal(t, expires, ls.Leases[0].Expires, "within the lease: nothing moves")

	held, err = e.svc.HoldSlurmLease(ctx, "sci", w.Lease.ID, time.Now().Add(200*time.Second))
	require.NoError(t, err)
	assert.True(t, held)
	ls, err = sci.Leases(ctx, "sci")
	require.NoError(t, err)
	require.Len(t, ls.Leases, 1)
	moved := ls.Leases[0].Expires
	assert.GreaterOrEqual(t, moved, ls.T+200)
	assert.LessOrEqual(t, moved, ls.T+202)
	_, err = sci.SlurmToken(ctx, "sci", w.Lease.ID)
	assert.Error(t, err, "no new token for a lease held past its end")

	require.NoError(t, e.svc.Close())
	opts.Logger = nil
	e2 := newEnv(t, opts)
	ls, err = e2.admin.Leases(ctx, "sci")
	require.NoError(t, err)
	require.Len(t, ls.Leases, 1)
	assert.Equal(t, moved, ls.Leases[0].Expires, "replayed from the journal")

	held, err = e2.svc.HoldSlurmLease(ctx, "sci", 99, time.Now().Add(time.Hour))
	require.NoError(t, err)
	assert.False(t, held)
}
