//go:build unix

package service_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/service"
)

// TestUnixSocketListener: `--listen unix:PATH` makes a socket of the asked
// mode that clients reach with a unix: address; a live socket is not taken
// over, a stale one is replaced, and anything else at the path is refused.
func TestUnixSocketListener(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "bursar.sock")
	ln, err := service.Listen(client.UnixPrefix+sock, 0o600)
	require.NoError(t, err)
	st, err := os.Stat(sock)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	assert.True(t, service.IsUnixSocket(ln.Addr()))

	svc, err := service.New(service.Options{Broker: policy.Config{Pool: 64, Grace: policy.DefaultGrace, IOCapacity: 28, InferenceCapacity: 5000},
		AdminToken: adminToken})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Serve(ctx, ln) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
		assert.NoFileExists(t, sock, "the socket goes with the service")
	}()
	admin, err := client.New(client.UnixPrefix+sock, adminToken)
	require.NoError(t, err)
	assert.Equal(t, client.UnixPrefix+sock, admin.BaseURL())
	reg, err := admin.Register(ctx, client.CampaignSpec{Name: "sci", Budget: 10, Guaranteed: 1, Sustained: 1, BurstCeiling: 2, Bucket: 10, Class: client.ClassAgentBurst})
	require.NoError(t, err)
	_, err = admin.WithToken(reg.Token).Supply(ctx, "sci")
	require.NoError(t, err)

	_, err = service.Listen(client.UnixPrefix+sock, 0o600)
	assert.ErrorContains(t, err, "listening on it already")

	// A stale socket (its service died without removing it) is replaced.
	stale := filepath.Join(dir, "stale.sock")
	sl, err := net.Listen("unix", stale)
	require.NoError(t, err)
	sl.(*net.UnixListener).SetUnlinkOnClose(false)
	sl.Close()
	ln2, err := service.Listen(client.UnixPrefix+stale, 0o660)
	require.NoError(t, err)
	st, err = os.Stat(stale)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o660), st.Mode().Perm())
	ln2.Close()

	plain := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(plain, nil, 0o600))
	_, err = service.Listen(client.UnixPrefix+plain, 0o600)
	assert.ErrorContains(t, err, "not a socket")
	_, err = service.Listen(client.UnixPrefix+filepath.Join(dir, "x.sock"), 0o066)
	assert.Error(t, err, "the owner must be able to connect")
}
