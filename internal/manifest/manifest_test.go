package manifest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDigestIsSHA256(t *testing.T) {
	// sha256sum of the empty input and of "abc" (FIPS 180-2 example).
	require.Equal(t, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Digest(nil))
	require.Equal(t, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", Digest([]byte("abc")))
}

func TestWriteRecordsEverything(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.csv"), []byte("abc"), 0o644))
	start := time.Date(2026, 12, 1, 6, 0, 0, 5, time.FixedZone("x", 3600))
	m := New("bursar-sweep", []string{"bursar-sweep", "paper", "--quick"}, "paper", start)
	m.Inputs = append(m.Inputs, NewInput("config", "configs/bucket.yaml", true, []byte("abc")))
	m.Seeds = []int64{7}
	m.Workers = 2
	m.Quick = true
	require.NoError(t, m.Write(dir, start, []string{"a.csv"}))

	var got map[string]any
	b, err := os.ReadFile(filepath.Join(dir, File))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &got))
	require.Equal(t, "2026-12-01T05:00:00.000000005Z", got["start"], "UTC, nanoseconds")
	require.Greater(t, got["wall_seconds"].(float64), 0.0)
	require.Equal(t, []any{"bursar-sweep", "paper", "--quick"}, got["command_line"])
	in := got["inputs"].([]any)[0].(map[string]any)
	require.Equal(t, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", in["sha256"])
	require.Equal(t, 3.0, in["bytes"])
	require.NotContains(t, in, "content", "a file is named by size and digest, never copied in")
	out := got["outputs"].([]any)[0].(map[string]any)
	require.Equal(t, map[string]any{"name": "a.csv", "bytes": 3.0, "sha256": in["sha256"]}, out)
	prog := got["program"].(map[string]any)
	require.Equal(t, "bursar-sweep", prog["name"])
	require.NotEmpty(t, prog["go_version"])
	for _, key := range []string{"module", "version", "vcs_revision", "vcs_time", "vcs_modified"} {
		require.Contains(t, prog, key)
	}
	require.Equal(t, []any{7.0}, got["seeds"])
	require.Equal(t, 2.0, got["workers"])
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2, "no temporary file left behind")
}

func TestWriteRefusesAMissingOutput(t *testing.T) {
	dir := t.TempDir()
	m := New("bursar-sweep", nil, "run", time.Now())
	err := m.Write(dir, time.Now(), []string{"metrics.json"})
	require.ErrorContains(t, err, "metrics.json")
	_, statErr := os.Stat(filepath.Join(dir, File))
	require.True(t, os.IsNotExist(statErr), "no manifest for a folder it cannot vouch for")
}

func TestInlineInputKeepsItsText(t *testing.T) {
	in := NewInlineInput("scenario", "flags", true, []byte(`{"seed":7}`))
	require.Equal(t, `{"seed":7}`, in.Content)
	require.Equal(t, int64(10), in.Bytes)
	require.Equal(t, Digest([]byte(`{"seed":7}`)), in.SHA256)
}

// TestRevisionFallback: a build without VCS information (a test binary
// has none) takes the revision make build passes with -ldflags -X.
func TestRevisionFallback(t *testing.T) {
	if ReadProgram("x").VCSRevision != "" {
		t.Skip("this binary has VCS information of its own")
	}
	require.Contains(t, VersionLine("x"), "no VCS revision (build with `make build`")
	Revision, RevisionTime, RevisionModified = "0123abcd", "2026-12-01T00:00:00Z", "true"
	defer func() { Revision, RevisionTime, RevisionModified = "", "", "" }()
	p := ReadProgram("x")
	require.Equal(t, "0123abcd", p.VCSRevision)
	require.True(t, p.VCSModified)
	require.Contains(t, VersionLine("x"), "revision 0123abcd+modified of 2026-12-01T00:00:00Z")
}

// LeaveOut drops a flag in each of its spellings with its value, keeps
// every other argument in order, and keeps what follows a "--".
func TestLeaveOutDropsAFlagAndItsValue(t *testing.T) {
	for _, c := range []struct{ args, want []string }{
		{[]string{"bin/bursar-sweep", "agents-arrive", "--workers", "2", "--cache", "/tmp/aa-cache", "--out", "/tmp/aa", "--quiet"},
			[]string{"bin/bursar-sweep", "agents-arrive", "--workers", "2", "--out", "/tmp/aa", "--quiet"}},
		{[]string{"b", "trace", "--cache=/tmp/c", "-cache", "/tmp/d", "-cache=/tmp/e", "--quiet"}, []string{"b", "trace", "--quiet"}},
		{[]string{"b", "trace", "--cached-runs", "x", "--cache"}, []string{"b", "trace", "--cached-runs", "x"}},
		{[]string{"b", "run", "--", "--cache", "x"}, []string{"b", "run", "--", "--cache", "x"}},
		{[]string{"b", "paper", "cache", "x"}, []string{"b", "paper", "cache", "x"}},
	} {
		m := New("bursar-sweep", c.args, "x", time.Now())
		m.LeaveOut("cache")
		require.Equal(t, c.want, m.CommandLine, "%q", c.args)
	}
	// The caller's slice is not touched.
	args := []string{"b", "--cache", "x", "--quiet"}
	m := New("bursar-sweep", args, "x", time.Now())
	m.LeaveOut("cache")
	require.Equal(t, []string{"b", "--cache", "x", "--quiet"}, args)
}
