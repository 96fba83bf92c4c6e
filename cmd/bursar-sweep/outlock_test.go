//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/internal/outlock"
	"github.com/bursar-hpc/bursar/internal/testlong"
)

// TestSecondCommandIntoABusyFolderFails: while another command holds an
// output folder, run and the experiment commands fail at once with a
// message naming it, and write nothing there (issue 34 §10).
func TestSecondCommandIntoABusyFolderFails(t *testing.T) {
	dir := t.TempDir()
	held, err := outlock.Take(dir, "bursar-sweep paper")
	require.NoError(t, err)
	for _, args := range [][]string{{"run", "--ticks", "600"}, {"compare", "--quick", "--nseeds", "1"}} {
		start := time.Now()
		console, err := runSweepApp(t, append(args, "--out", dir)...)
		require.Error(t, err, console)
		assert.Contains(t, err.Error(), "bursar-sweep paper (pid ")
		assert.Contains(t, err.Error(), "is writing into "+dir)
		assert.Less(t, time.Since(start), 5*time.Second, "at once, not after the runs")
	}
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, ents, 1, "nothing but the lock: %v", ents)
	held.Release()
	console, err := runSweepApp(t, "run", "--ticks", "600", "--out", dir)
	require.NoError(t, err, console)
	_, err = os.Stat(filepath.Join(dir, outlock.File))
	assert.True(t, os.IsNotExist(err), "the run leaves no lock behind")
}

// TestStaleOutputsAreFlagged: a file an earlier command left in the
// folder (a figure in another format) is listed as stale in the new
// manifest, not as an output (issue 34 §10).
func TestStaleOutputsAreFlagged(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fig_policies.svg"), []byte("<svg/>"), 0o644))
	console, err := runSweepApp(t, "run", "--ticks", "600", "--out", dir)
	require.NoError(t, err, console)
	var man struct {
		Stale   []string `json:"stale"`
		Outputs []struct {
			Name string `json:"name"`
		} `json:"outputs"`
	}
	readJSONFile(t, filepath.Join(dir, "manifest.json"), &man)
	assert.Equal(t, []string{"fig_policies.svg"}, man.Stale)
	for _, o := range man.Outputs {
		assert.NotEqual(t, "fig_policies.svg", o.Name)
	}
	// A folder the command wrote alone has none.
	fresh := t.TempDir()
	_, err = runSweepApp(t, "run", "--ticks", "600", "--out", fresh)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(fresh, "manifest.json"))
	require.NoError(t, err)
	assert.NotContains(t, string(b), "stale")
}

// TestTwoBinariesIntoOneFolder: the real binary, twice at once into one
// --out: the second exits non-zero at once while the first runs on and
// completes (long: it builds the binary).
func TestTwoBinariesIntoOneFolder(t *testing.T) {
	testlong.Skip(t, "builds bursar-sweep and runs paper --quick")
	bin := filepath.Join(t.TempDir(), "bursar-sweep")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out := filepath.Join(t.TempDir(), "out")
	first := exec.Command(bin, "paper", "--quick", "--quiet", "--workers", "1", "--out", out)
	var firstOut strings.Builder
	first.Stdout, first.Stderr = &firstOut, &firstOut
	require.NoError(t, first.Start())
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(out, outlock.File))
		return err == nil
	}, 20*time.Second, 10*time.Millisecond)
	start := time.Now()
	second, err := exec.Command(bin, "run", "--out", out).CombinedOutput()
	require.Error(t, err, "%s", second)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Contains(t, string(second), "bursar-sweep paper (pid ")
	require.NoError(t, first.Wait(), firstOut.String())
	_, err = os.Stat(filepath.Join(out, "metrics.json"))
	assert.True(t, os.IsNotExist(err), "the second run wrote nothing")
}
