package tracestudy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/internal/manifest"
	"github.com/bursar-hpc/bursar/trace"
)

// The embedded full log is the archive's file byte for byte: its SHA-256
// is that of SDSC-SP2-1998-4.2-cln.swf.gz as the Parallel Workloads
// Archive serves it, so its header (and the terms in it) is intact.
func TestBuiltinFullLogIsTheArchiveFile(t *testing.T) {
	gz, name, ok := Builtin(BuiltinFull)
	require.True(t, ok)
	assert.Equal(t, FullSDSCName, name)
	sum := sha256.Sum256(gz)
	assert.Equal(t, "e03fe48be50c4ab04d6bb2285296d9c3399e9c1f27ee79b754ad32a14abd9bac", hex.EncodeToString(sum[:]))
	w, err := Load(BuiltinFull, trace.Options{})
	require.NoError(t, err)
	assert.Equal(t, 128, w.Pool)
	assert.Equal(t, FullSDSCName+" (embedded)", w.Name)
	assert.Greater(t, len(w.Jobs), 50_000, "the full log replays tens of thousands of jobs")
}

// Every name a config may give for a built-in log is one Builtin knows,
// and a file path is not a built-in name.
func TestBuiltinNamesAgreeWithConfigs(t *testing.T) {
	for _, n := range configs.BuiltinTraces {
		_, _, ok := Builtin(n)
		assert.True(t, ok, n)
	}
	for _, n := range []string{"x.swf", "sdsc-sp2.swf.gz", "./sdsc-sp2"} {
		_, _, ok := Builtin(n)
		assert.False(t, ok, n)
	}
	gz, name, ok := Builtin(BuiltinExcerpt)
	require.True(t, ok)
	assert.Equal(t, ExcerptName, name)
	assert.Equal(t, ExcerptGz(), gz)
	c, err := Fingerprint("")
	require.NoError(t, err)
	assert.Equal(t, Stored{Bytes: int64(len(gz)), SHA256: sha256.Sum256(gz)}, c)
	assert.Equal(t, Digest(gz), c.Digest())
}

// A file's fingerprint is its bytes' size and digest, streamed: the same
// as hashing the whole content, on a file larger than one read.
func TestFingerprintIsTheContentsDigest(t *testing.T) {
	b := bytes.Repeat([]byte("1 0 -1 60 8 -1 -1 8 120 -1 1 3 4 -1 0 -1 -1 -1\n"), 10000)
	path := filepath.Join(t.TempDir(), "log.swf")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	s, err := Fingerprint(path)
	require.NoError(t, err)
	assert.Equal(t, int64(len(b)), s.Bytes)
	assert.Equal(t, Digest(b), s.Digest())
	assert.Equal(t, manifest.NewInput("trace", "log", false, b), manifest.NewStoredInput("trace", "log", false, s.Bytes, s.SHA256))
}

// A mistyped built-in name is answered with the name meant, whichever
// reader meets it first; a path that is no built-in's typo keeps the
// plain file error.
func TestMistypedBuiltinSuggestsTheBuiltin(t *testing.T) {
	_, err := Fingerprint("sdsc-sp3")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `did you mean "sdsc-sp2"?`)
	_, err = Header("sdsc-sp2-exerpt")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `did you mean "sdsc-sp2-excerpt"?`)
	_, err = Load(filepath.Join(t.TempDir(), "missing.swf"), trace.Options{})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "did you mean")
}

// A mistyped --policies name gets the nearest policy, as --policy does.
func TestPolicyListSuggestsTheNearestPolicy(t *testing.T) {
	_, err := PolicyList(orDefault(nil), "bursar,fairshar")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown policy "fairshar"; did you mean "fairshare"?`)
}
