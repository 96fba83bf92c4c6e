package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCampaignCommandsCheckTheServer: when another program holds the
// address (a `bursar serve` found its port busy and exited), `campaign
// create` fails, saying so, and the other program never sees the
// administrator's token (issue 34 §11).
func TestCampaignCommandsCheckTheServer(t *testing.T) {
	var sawToken, sawRegister atomic.Bool
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			sawToken.Store(true)
		}
		if r.Method == http.MethodPost {
			sawRegister.Store(true)
		}
		http.NotFound(w, r)
	}))
	defer other.Close()
	_, stderr, code := run(t, cleanEnv("BURSAR_ADMIN_TOKEN="+testToken), "campaign", "create", "alpha", "--gpus", "2",
		"--server", other.URL, "--token-file", t.TempDir()+"/alpha.token")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, stderr, "no Bursar service answers at "+other.URL)
	assert.Contains(t, stderr, "nothing was sent to it")
	assert.False(t, sawToken.Load(), "the administrator's token went to another program")
	assert.False(t, sawRegister.Load())
}

// TestServeBusyPort: serve on an address another program holds fails at
// once, naming the flag and what to do.
func TestServeBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	_, stderr, code := run(t, cleanEnv(), "serve", "--insecure-dev", "--listen", ln.Addr().String())
	assert.NotEqual(t, 0, code)
	assert.Contains(t, stderr, "--listen "+ln.Addr().String()+": the address is in use")
	assert.Contains(t, stderr, "--server or $BURSAR_SERVER")
}
