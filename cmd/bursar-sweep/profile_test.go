package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// --memprofile writes a heap profile when the command ends (pprof's
// gzipped protobuf, gzip magic first), and a path it cannot create is an
// error naming the flag.
func TestMemProfileIsWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem.prof")
	console, err := runSweepApp(t, "--memprofile", path, "trace", "--policy", "fifo", "--fair-sample", "0", "--quiet", "--out", t.TempDir())
	require.NoError(t, err, console)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Greater(t, len(b), 2)
	require.Equal(t, []byte{0x1f, 0x8b}, b[:2], "not a gzipped pprof profile")

	_, err = runSweepApp(t, "--memprofile", filepath.Join(t.TempDir(), "no", "such", "dir", "mem.prof"), "trace", "--policy", "fifo", "--fair-sample", "0", "--quiet", "--out", t.TempDir())
	require.ErrorContains(t, err, "--memprofile")
}
