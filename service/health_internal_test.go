package service

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHealthHidesUndurableTick: a tick applied but not yet fsynced is not
// what /healthz reports (a crash could take it back); once Tick has made
// it durable it is.
func TestHealthHidesUndurableTick(t *testing.T) {
	s, err := New(Options{Broker: testCfg(), DataDir: t.TempDir(), AdminToken: "0123456789abcdef0123"})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Tick())
	// Apply a tick under the lock without waiting for its fsync, as a
	// handler does before it waits.
	s.mu.Lock()
	tx := txn{s: s, c: s.core}
	_, err = tx.apply(&op{Op: opTick})
	s.mu.Unlock()
	require.NoError(t, err)
	assert.Equal(t, 2, s.Now())
	h, err := s.health(context.Background(), &emptyInput{})
	require.NoError(t, err)
	assert.Equal(t, 1, h.Body.T, "the undurable tick is not shown")
	require.NoError(t, s.Tick())
	h, err = s.health(context.Background(), &emptyInput{})
	require.NoError(t, err)
	assert.Equal(t, 3, h.Body.T)
}
