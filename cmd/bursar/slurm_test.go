//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/service"
)

// TestSlurmCheck: `bursar slurm check` prints what the plugin parses, and
// refuses (exit 1, one line) a forged, expired or malformed token or a
// short key.
func TestSlurmCheck(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	require.NoError(t, os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef\n"), 0o600))
	k := []byte("0123456789abcdef0123456789abcdef")
	expires := time.Now().Unix() + 100
	tok := service.SignSlurmToken(k, service.SlurmLease{Lease: 7, Campaign: "Sci", GPUs: 4, Expires: expires})
	out, _, code := run(t, cleanEnv(), "slurm", "check", "--key-file", key, tok)
	require.Equal(t, 0, code)
	f := strings.Fields(out)
	require.Len(t, f, 8, out)
	assert.Equal(t, []string{"ok", "7", "Sci", "4"}, f[:4])
	assert.Equal(t, "sci", f[5])
	assert.Equal(t, strconv.FormatInt(expires, 10), f[6], "the token's own expiry, from which the gate writes the WcKey")
	// The WcKey the wrapper signals the lease's jobs by is the one the
	// gate writes from those fields, as Slurm keeps it (lower case).
	l, err := service.ParseSlurmToken(tok)
	require.NoError(t, err)
	assert.Equal(t, "bursar:7:sci:4:"+f[6], service.SlurmWCKey(l))

	old := service.SignSlurmToken(k, service.SlurmLease{Lease: 7, Campaign: "Sci", GPUs: 4, Expires: time.Now().Unix() - 1})
	short := filepath.Join(dir, "short")
	require.NoError(t, os.WriteFile(short, []byte("short"), 0o600))
	for _, c := range []struct{ key, tok, want string }{
		{key, old, "refuse: lease 7 of campaign Sci: the lease token has expired"},
		{key, strings.Replace(tok, ":4:", ":8:", 1), "refuse: the lease token's signature does not match"},
		{key, "x; rm -rf /", "refuse: not a Bursar lease token"},
		{short, tok, "the key must be at least 32 bytes long"},
	} {
		out, _, code := run(t, cleanEnv(), "slurm", "check", "--key-file", c.key, c.tok)
		assert.Equal(t, 1, code, c.tok)
		assert.Contains(t, out, c.want)
	}
}
