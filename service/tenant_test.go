package service_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/service"
)

// TestWriteRateLimit: a campaign token's writes beyond its bucket are 429
// with Retry-After, before the body is read; reads, other campaigns and
// the administrator are not affected.
func TestWriteRateLimit(t *testing.T) {
	e := newEnv(t, service.Options{WriteRate: 0.001, WriteBurst: 5})
	ctx := context.Background()
	a, err := e.admin.Register(ctx, spec("a"))
	require.NoError(t, err)
	b, err := e.admin.Register(ctx, spec("b"))
	require.NoError(t, err)
	for i := range 5 {
		code, body := raw(t, e.url, "POST", "/v1/campaigns/a/requests", a.Token, `{"gpus":1,"duration":10}`)
		require.Equal(t, 202, code, "write %d: %s", i, body)
	}
	req, err := newRawRequest(e.url, "DELETE", "/v1/campaigns/a/leases", a.Token)
	require.NoError(t, err)
	resp, body := do(t, req)
	assert.Equal(t, 429, resp.StatusCode, "%s", body)
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	problemOf(t, 429, body)
	// A malformed body is not even read.
	code, _ := raw(t, e.url, "POST", "/v1/campaigns/a/consume", a.Token, `{"io":`+strings.Repeat("[", 100))
	assert.Equal(t, 429, code)
	code, _ = raw(t, e.url, "GET", "/v1/campaigns/a/supply", a.Token, "")
	assert.Equal(t, 200, code, "reads are not limited")
	code, _ = raw(t, e.url, "POST", "/v1/campaigns/b/requests", b.Token, `{"gpus":1,"duration":10}`)
	assert.Equal(t, 202, code, "another campaign has its own bucket")
	code, _ = raw(t, e.url, "POST", "/v1/campaigns/a/requests", adminToken, `{"gpus":1,"duration":10}`)
	assert.Equal(t, 202, code, "the administrator is not limited")
}

// TestConsumeSpamBounded: an agent spamming consume {"io":1e-300} adds at
// most MaxConsumePerTick records per broker second to the journal; the
// rest is 429 and changes nothing.
func TestConsumeSpamBounded(t *testing.T) {
	opts := serviceOptionsWithDir(t)
	opts.MaxConsumePerTick = 3
	// The wall-clock write limit (100 a second, 200 at once) is not the
	// rule under test: 250 calls in under half a second exhaust it, and
	// the first call of the fifth broker second was then refused by it
	// (14 accepted, seen once). Unlimited here, so that only the
	// per-second cap refuses.
	opts.WriteRate = -1
	e := newEnv(t, opts)
	ctx := context.Background()
	c := e.register(t, spec("a"))
	ok, refused := 0, 0
	for tick := range 5 {
		for range 50 {
			_, err := c.Consume(ctx, "a", 1e-300, 0)
			var ce *client.Error
			switch {
			case err == nil:
				ok++
			case errors.As(err, &ce) && ce.StatusCode == 429:
				refused++
			default:
				t.Fatalf("tick %d: %v", tick, err)
			}
		}
		require.NoError(t, e.svc.Tick())
	}
	assert.Equal(t, 15, ok)
	assert.Equal(t, 235, refused)
	assert.Equal(t, 15, strings.Count(readWAL(t, opts.DataDir), `"op":"consume"`))
}
