package service_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/service"
)

// TestTokenRotateRevokeAcrossRestart: a rotation makes the old token 401
// and the new one work; a revocation makes every token 401 while the
// campaign's leases stay; both survive a restart from the journal (and
// from a snapshot), and the administrator's rotation after a revocation
// issues a working token again.
func TestTokenRotateRevokeAcrossRestart(t *testing.T) {
	for _, snapEvery := range []int{-1, 3} {
		ctx := context.Background()
		opts := serviceOptionsWithDir(t)
		opts.SnapshotEvery = snapEvery
		e := newEnv(t, opts)
		reg, err := e.admin.Register(ctx, spec("a"))
		require.NoError(t, err)
		old := e.admin.WithToken(reg.Token)
		_, err = old.Request(ctx, "a", client.LeaseRequest{GPUs: 4, Duration: 1000})
		require.NoError(t, err)
		require.NoError(t, e.svc.Tick())

		// The campaign rotates its own token.
		rot, err := old.RotateToken(ctx, "a")
		require.NoError(t, err)
		assert.NotEqual(t, reg.Token, rot.Token)
		code, _ := raw(t, e.url, "GET", "/v1/campaigns/a/supply", reg.Token, "")
		assert.Equal(t, 401, code, "the old token is dead")
		code, _ = raw(t, e.url, "GET", "/v1/campaigns/a/supply", rot.Token, "")
		assert.Equal(t, 200, code)
		// A campaign cannot revoke; the administrator can.
		code, _ = raw(t, e.url, "DELETE", "/v1/campaigns/a/token", rot.Token, "")
		assert.Equal(t, 403, code)
		rev, err := e.admin.RevokeToken(ctx, "a")
		require.NoError(t, err)
		assert.True(t, rev.Revoked)
		assert.Empty(t, rev.Token)
		code, _ = raw(t, e.url, "GET", "/v1/campaigns/a/supply", rot.Token, "")
		assert.Equal(t, 401, code, "revoked")
		code, _ = raw(t, e.url, "POST", "/v1/campaigns/a/token", rot.Token, "")
		assert.Equal(t, 401, code, "a revoked campaign cannot rotate itself")
		for range 4 {
			require.NoError(t, e.svc.Tick())
		}
		leases, err := e.admin.Leases(ctx, "a")
		require.NoError(t, err)
		assert.Len(t, leases.Leases, 1, "the campaign's lease stays")

		// Restart: still revoked.
		require.NoError(t, e.svc.Close())
		e2 := newEnv(t, opts)
		code, _ = raw(t, e2.url, "GET", "/v1/campaigns/a/supply", rot.Token, "")
		assert.Equal(t, 401, code, "revoked across a restart (snapshot every %d)", snapEvery)
		code, _ = raw(t, e2.url, "GET", "/v1/campaigns/a/supply", reg.Token, "")
		assert.Equal(t, 401, code)
		again, err := e2.admin.RotateToken(ctx, "a")
		require.NoError(t, err)
		code, _ = raw(t, e2.url, "GET", "/v1/campaigns/a/supply", again.Token, "")
		assert.Equal(t, 200, code)
		require.NoError(t, e2.svc.Close())
		e3 := newEnv(t, opts)
		code, _ = raw(t, e3.url, "GET", "/v1/campaigns/a/supply", again.Token, "")
		assert.Equal(t, 200, code, "the rotated token survives a restart")
		code, _ = raw(t, e3.url, "GET", "/v1/campaigns/a/supply", rot.Token, "")
		assert.Equal(t, 401, code)
	}
	_ = service.Options{}
}
