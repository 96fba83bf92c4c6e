package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/service"
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

// TestReleaseWhileSlurmRuns: the release of a lease whose Slurm job the
// enforcer saw running does not free its GPUs: the lease stays listed
// (and counted) with its GPUs named held, the enforcer is told it is no
// longer held, no token is issued for it, a second release changes
// nothing, and all of it survives a restart (journaled); with no hold it
// ends a few seconds on. A lease whose job is not running is released at
// once, as before.
func TestReleaseWhileSlurmRuns(t *testing.T) {
	ctx := context.Background()
	r := newSlurmRunEnv(t)
	e, sci, free := r.env, r.sci, r.free
	idle, busy := r.grant(t, 2), r.grant(t, 2)
	r.running[busy] = true
	before := free(t)

	res, err := sci.ReleaseLease(ctx, "sci", idle)
	require.NoError(t, err)
	assert.Equal(t, 1, res.ReleasedLeases)
	assert.Equal(t, 0, res.HeldGPUs, "no job of it runs: released at once")
	assert.Equal(t, before+2, free(t))

	res, err = sci.ReleaseLease(ctx, "sci", busy)
	require.NoError(t, err)
	assert.Equal(t, 1, res.ReleasedLeases)
	assert.Equal(t, 2, res.ReleasedGPUs)
	assert.Equal(t, 2, res.HeldGPUs, "its job runs: the broker still counts its GPUs")
	assert.Equal(t, before+2, free(t), "nothing more is free")
	held, _, err := e.svc.SlurmLeaseHeld(ctx, "sci", busy)
	require.NoError(t, err)
	assert.False(t, held, "the enforcer ends its job")
	_, err = sci.SlurmToken(ctx, "sci", busy)
	assert.Error(t, err, "no token for a released lease")
	res, err = sci.ReleaseLease(ctx, "sci", busy)
	require.NoError(t, err)
	assert.Equal(t, 0, res.ReleasedLeases, "released once")
	assert.Equal(t, 2, res.HeldGPUs)

	require.NoError(t, e.svc.Close())
	heldAcrossRestart(t, r.opts, busy, before+2, before+4)
}

// TestReleaseAllWhileSlurmRuns: releasing all of a campaign's leases at
// once (DELETE /v1/campaigns/C/leases) holds each lease whose Slurm job
// the enforcer saw running, as the release of one does
// (TestReleaseWhileSlurmRuns), and frees the others at once: the answer
// counts every lease released and names the held GPUs, the pending
// requests are dropped, the held lease stays listed and counted, the
// enforcer is told it is no longer held, no token is issued for it, a
// second release-all changes nothing, and all of it survives a restart.
func TestReleaseAllWhileSlurmRuns(t *testing.T) {
	ctx := context.Background()
	r := newSlurmRunEnv(t)
	e, sci, free := r.env, r.sci, r.free
	r.grant(t, 2)
	busy := r.grant(t, 3)
	r.grant(t, 59) // 64 in all: the campaign's burst ceiling
	r.running[busy] = true
	before := free(t)
	acc, err := sci.Request(ctx, "sci", client.LeaseRequest{GPUs: 8, Duration: 100})
	require.NoError(t, err)
	require.Equal(t, client.StatePending, acc.State, "a request beyond the burst ceiling")

	res, err := sci.ReleaseAll(ctx, "sci", "")
	require.NoError(t, err)
	assert.Equal(t, client.ReleaseResult{T: res.T, ReleasedLeases: 3, ReleasedGPUs: 64, HeldGPUs: 3, DroppedRequests: 1, DroppedGPUs: 8}, *res)
	assert.Equal(t, before+61, free(t), "the leases of no running job are free at once, the running one's are not")
	ls, err := sci.Leases(ctx, "sci")
	require.NoError(t, err)
	require.Len(t, ls.Leases, 1)
	assert.Equal(t, busy, ls.Leases[0].ID, "held while its job runs")
	assert.Empty(t, ls.Pending)
	held, _, err := e.svc.SlurmLeaseHeld(ctx, "sci", busy)
	require.NoError(t, err)
	assert.False(t, held, "the enforcer ends its job")
	_, err = sci.SlurmToken(ctx, "sci", busy)
	assert.Error(t, err, "no token for a released lease")
	res, err = sci.ReleaseAll(ctx, "sci", "")
	require.NoError(t, err)
	assert.Equal(t, client.ReleaseResult{T: res.T, HeldGPUs: 3}, *res, "released once")

	require.NoError(t, e.svc.Close())
	heldAcrossRestart(t, r.opts, busy, before+61, before+64)
}

// heldAcrossRestart restarts the service of opts (closed) and checks that
// campaign sci's lease, released while its Slurm job ran, is still listed
// and counted (freeHeld GPUs free), still released for the enforcer and
// held by it while the job runs, and freed (freeAfter GPUs free) within
// 10 s once it holds it no more.
func heldAcrossRestart(t *testing.T, opts service.Options, lease, freeHeld, freeAfter int) {
	t.Helper()
	ctx := context.Background()
	opts.Logger = nil
	e := newEnv(t, opts)
	e.svc.SetSlurmRunning(func(string, int) bool { return true })
	free := func() int {
		s, err := e.admin.Supply(ctx, "sci")
		require.NoError(t, err)
		return s.Free
	}
	ls, err := e.admin.Leases(ctx, "sci")
	require.NoError(t, err)
	require.Len(t, ls.Leases, 1, "held across the restart")
	assert.Equal(t, lease, ls.Leases[0].ID)
	assert.Equal(t, freeHeld, free())
	held, _, err := e.svc.SlurmLeaseHeld(ctx, "sci", lease)
	require.NoError(t, err)
	assert.False(t, held, "still released after the restart")
	held, err = e.svc.HoldSlurmLease(ctx, "sci", lease, time.Now().Add(time.Second))
	require.NoError(t, err)
	assert.True(t, held, "the broker holds it while its job runs")
	for end := time.Now().Add(10 * time.Second); free() != freeAfter; time.Sleep(100 * time.Millisecond) {
		require.False(t, time.Now().After(end), "no hold, yet the lease is still held 10 s after its release")
	}
}

// slurmRunEnv is a service with a Slurm key, a clock at speed 1 and
// campaign sci, whose enforcer sees a job of sci's lease L running while
// running[L].
type slurmRunEnv struct {
	*env
	opts    service.Options
	sci     *client.Client
	running map[int]bool
}

func newSlurmRunEnv(t *testing.T) *slurmRunEnv {
	opts := serviceOptionsWithDir(t)
	opts.AdmitOnRequest, opts.Speed, opts.SlurmKey = true, 1, []byte("0123456789abcdef0123456789abcdef")
	r := &slurmRunEnv{env: newEnv(t, opts), opts: opts, running: map[int]bool{}}
	r.svc.SetSlurmRunning(func(campaign string, lease int) bool { return campaign == "sci" && r.running[lease] })
	r.sci = r.register(t, spec("sci"))
	return r
}

// grant grants sci a lease of gpus GPUs with a Slurm token, and returns
// its id.
func (r *slurmRunEnv) grant(t *testing.T, gpus int) int {
	ctx := context.Background()
	acc, err := r.sci.Request(ctx, "sci", client.LeaseRequest{GPUs: gpus, Duration: 100})
	require.NoError(t, err)
	w, err := r.sci.AwaitGrant(ctx, "sci", acc.RequestID)
	require.NoError(t, err)
	_, err = r.sci.SlurmToken(ctx, "sci", w.Lease.ID)
	require.NoError(t, err)
	return w.Lease.ID
}

// free is the broker's free GPUs, as sci sees them.
func (r *slurmRunEnv) free(t *testing.T) int {
	s, err := r.sci.Supply(context.Background(), "sci")
	require.NoError(t, err)
	return s.Free
}
