//go:build unix

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeServiceExample is the shell block of the README's section "The
// broker as a live service", one command a line, comments cut.
func readmeServiceExample(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	_, sec, ok := strings.Cut(string(b), "## The broker as a live service")
	require.True(t, ok, "the README has the section")
	_, block, ok := strings.Cut(sec, "```sh\n")
	require.True(t, ok, "the section has a shell block")
	block, _, ok = strings.Cut(block, "```")
	require.True(t, ok)
	var lines []string
	for l := range strings.SplitSeq(block, "\n") {
		if i := strings.Index(l, "  #"); i >= 0 {
			l = l[:i]
		}
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestReadmeServiceExample runs the README's service example as written,
// line by line in a fresh directory with sh, and checks that the lease at
// its end ran the job on 4 GPUs. Two things differ from a reader's
// terminal, neither in the text: `go build` is the binary TestMain built,
// copied in; and the service listens on a free loopback port, given as
// $BURSAR_LISTEN to serve and $BURSAR_SERVER to the rest (the shared
// default port may be taken on a test machine). The README's job.sh is the
// reader's own script; the test writes one.
func TestReadmeServiceExample(t *testing.T) {
	lines := readmeServiceExample(t)
	dir := t.TempDir()
	job := "#!/bin/sh\necho \"job on $BURSAR_GPUS GPUs, lease $BURSAR_LEASE_ID\" > job.out\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "job.sh"), []byte(job), 0o755))
	var server string
	leased := false
	for _, line := range lines {
		switch {
		case strings.HasPrefix(line, "go build -o bursar ./cmd/bursar"):
			b, err := os.ReadFile(bin)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "bursar"), b, 0o755))
			continue
		case strings.HasPrefix(line, "./bursar serve"):
			cmd := exec.Command("sh", "-c", "exec "+line)
			cmd.Dir, cmd.Env = dir, cleanEnv("BURSAR_LISTEN=127.0.0.1:0")
			server = startCmd(t, cmd).url
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, "sh", "-c", line)
		cmd.Dir, cmd.Env = dir, cleanEnv()
		if server != "" {
			cmd.Env = append(cmd.Env, "BURSAR_SERVER="+server)
		}
		out, err := cmd.CombinedOutput()
		cancel()
		require.NoError(t, err, "README line %q:\n%s", line, out)
		t.Logf("$ %s\n%s", line, out)
		if strings.Contains(line, "./bursar lease") {
			leased = true
		}
	}
	require.True(t, leased, "the example ends with a lease")
	require.NotEmpty(t, server, "the example starts a server")
	got, err := os.ReadFile(filepath.Join(dir, "job.out"))
	require.NoError(t, err, "job.sh ran")
	assert.Regexp(t, `^job on 4 GPUs, lease \d+\n$`, string(got))
	st, err := os.Stat(filepath.Join(dir, "sci.token"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
}
