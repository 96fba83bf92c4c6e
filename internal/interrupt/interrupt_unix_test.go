//go:build unix

package interrupt

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Ctrl-C cancels the command's context, and the command's failure then
// exits 130 as a shell expects of an interrupted program, not 1; a
// command that stops cleanly still exits 0.
func TestCtrlCExits130(t *testing.T) {
	t.Cleanup(func() { received.Store(0) })
	received.Store(0)
	ctx, stop := Context(context.Background())
	defer stop()
	assert.Equal(t, 1, Status(1), "no signal yet: a failure is 1")
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("SIGINT did not cancel the context")
	}
	assert.ErrorIs(t, ctx.Err(), context.Canceled)
	assert.EqualError(t, context.Cause(ctx), "interrupt signal received")
	assert.Equal(t, 130, Status(1))
	assert.Equal(t, 0, Status(0), "a clean stop on the signal stays 0")
}

// SIGTERM (scancel, a service manager) is 143.
func TestSIGTERMExits143(t *testing.T) {
	t.Cleanup(func() { received.Store(0) })
	received.Store(0)
	ctx, stop := Context(context.Background())
	defer stop()
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("SIGTERM did not cancel the context")
	}
	assert.Equal(t, 143, Status(1))
}

// stop cancels the context without a signal, and the status stays as
// the command's.
func TestStopIsNoSignal(t *testing.T) {
	received.Store(0)
	ctx, stop := Context(context.Background())
	stop()
	<-ctx.Done()
	assert.Equal(t, 1, Status(1))
	stop() // twice is harmless
}
