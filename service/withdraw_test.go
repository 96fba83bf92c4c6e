package service_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/service"
)

// TestWithdrawRequest: a withdrawn request is never granted and its GPUs
// stop counting as demand at once; a granted one answers 409 naming its
// lease; a gone one 404; another campaign's is out of reach.
func TestWithdrawRequest(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, service.Options{})
	sci := e.register(t, spec("sci"))
	other := e.register(t, spec("other"))

	acc, err := sci.Request(ctx, "sci", client.LeaseRequest{GPUs: 48, Duration: 100})
	require.NoError(t, err)
	keep, err := sci.Request(ctx, "sci", client.LeaseRequest{GPUs: 8, Duration: 100})
	require.NoError(t, err)
	sup, err := sci.Supply(ctx, "sci")
	require.NoError(t, err)
	require.Equal(t, 56, sup.Outstanding)

	_, err = other.WithdrawRequest(ctx, "sci", acc.RequestID)
	require.ErrorIs(t, err, client.ErrForbidden, "another campaign's token")
	_, err = other.WithdrawRequest(ctx, "other", acc.RequestID)
	require.ErrorIs(t, err, client.ErrNotFound, "sci's request through other's URL")

	w, err := sci.WithdrawRequest(ctx, "sci", acc.RequestID)
	require.NoError(t, err)
	assert.Equal(t, client.WithdrawResult{T: 0, RequestID: acc.RequestID, GPUs: 48, Class: client.ClassAgentBurst}, *w)
	sup, err = sci.Supply(ctx, "sci")
	require.NoError(t, err)
	assert.Equal(t, 8, sup.Outstanding, "the withdrawn GPUs are no longer demand")
	_, err = sci.RequestStatus(ctx, "sci", acc.RequestID)
	require.ErrorIs(t, err, client.ErrNotFound)
	_, err = sci.WithdrawRequest(ctx, "sci", acc.RequestID)
	require.ErrorIs(t, err, client.ErrNotFound, "withdrawn twice")

	require.NoError(t, e.svc.Tick())
	ls, err := sci.Leases(ctx, "sci")
	require.NoError(t, err)
	require.Len(t, ls.Leases, 1, "only the other request was granted")
	assert.Equal(t, keep.RequestID, ls.Leases[0].ID)
	assert.Empty(t, ls.Pending)

	_, err = sci.WithdrawRequest(ctx, "sci", keep.RequestID)
	require.ErrorIs(t, err, client.ErrConflict)
	assert.Contains(t, err.Error(), "release the lease")
	ls, err = sci.Leases(ctx, "sci")
	require.NoError(t, err)
	assert.Len(t, ls.Leases, 1, "a 409 releases nothing")

	// The administrator may withdraw any campaign's request.
	acc, err = sci.Request(ctx, "sci", client.LeaseRequest{GPUs: 4, Duration: 100})
	require.NoError(t, err)
	_, err = e.admin.WithdrawRequest(ctx, "sci", acc.RequestID)
	require.NoError(t, err)

	code, body := raw(t, e.url, http.MethodDelete, "/v1/campaigns/sci/requests/0", adminToken, "")
	assert.Equal(t, http.StatusUnprocessableEntity, code, "%s", body)
}

// TestWithdrawJournaled: a withdrawal is journaled, so a restarted service
// (from the journal, and from a snapshot) does not grant it either.
func TestWithdrawJournaled(t *testing.T) {
	for _, every := range []int{-1, 3} {
		ctx := context.Background()
		opts := serviceOptionsWithDir(t)
		opts.SnapshotEvery = every
		e := newEnv(t, opts)
		sci := e.register(t, spec("sci"))
		acc, err := sci.Request(ctx, "sci", client.LeaseRequest{GPUs: 48, Duration: 100})
		require.NoError(t, err)
		_, err = sci.Request(ctx, "sci", client.LeaseRequest{GPUs: 8, Duration: 100})
		require.NoError(t, err)
		_, err = sci.WithdrawRequest(ctx, "sci", acc.RequestID)
		require.NoError(t, err)
		require.NoError(t, e.svc.Close())
		if every < 0 {
			var found bool
			for l := range strings.SplitSeq(readWAL(t, opts.DataDir), "\n") {
				// Each line is "<crc32c> <operation as JSON>".
				_, payload, _ := strings.Cut(l, " ")
				var rec map[string]any
				if json.Unmarshal([]byte(payload), &rec) == nil && rec["op"] == "withdraw" {
					found = true
					assert.EqualValues(t, acc.RequestID, rec["lease"])
				}
			}
			assert.True(t, found, "a withdraw record in the journal")
		}

		opts.Logger = nil
		e2 := newEnv(t, opts)
		require.NoError(t, e2.svc.Tick())
		ls, err := e2.admin.Leases(ctx, "sci")
		require.NoError(t, err)
		require.Len(t, ls.Leases, 1, "snapshot every %d", every)
		assert.Equal(t, 8, ls.Leases[0].GPUs)
		assert.Empty(t, ls.Pending)
	}
}
