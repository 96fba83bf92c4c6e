package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/sweep"
)

// TestRunWarnsOfADegenerateScenario: a 64-GPU scenario with the storm's
// default campaign runs, says on the console which campaign's requests
// cannot fit the pool, and records it in metrics.json and manifest.json;
// the default run records none (issue 34 §7).
func TestRunWarnsOfADegenerateScenario(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "small.yaml")
	require.NoError(t, os.WriteFile(file, []byte("pool: 64\nticks: 600\ncampaigns:\n  - name: victim\n    agent: victim\n  - name: storm\n    agent: storm\n"), 0o644))
	out := filepath.Join(dir, "out")
	console, err := runSweepApp(t, "run", "--scenario", file, "--out", out)
	require.NoError(t, err, console)
	const want = "campaign storm: its target of 384 outstanding GPUs is above the pool of 64 GPUs"
	assert.Contains(t, console, "bursar-sweep run: warning: "+want)
	var metrics, man struct {
		Warnings []string `json:"warnings"`
	}
	readJSONFile(t, filepath.Join(out, "metrics.json"), &metrics)
	readJSONFile(t, filepath.Join(out, "manifest.json"), &man)
	require.Len(t, metrics.Warnings, 1)
	assert.Contains(t, metrics.Warnings[0], want)
	assert.Equal(t, metrics.Warnings, man.Warnings)

	def := filepath.Join(dir, "def")
	console, err = runSweepApp(t, "run", "--ticks", "600", "--out", def)
	require.NoError(t, err, console)
	assert.NotContains(t, console, "warning")
	for _, f := range []string{"metrics.json", "manifest.json"} {
		b, err := os.ReadFile(filepath.Join(def, f))
		require.NoError(t, err)
		assert.False(t, strings.Contains(string(b), "warnings"), "%s of a sound run has no warnings", f)
	}
}

// TestRunHeadroomAbovePool: the prototype's knob range is accepted:
// --headroom 299 on --pool 285 runs, with a warning (issue 34 §8).
func TestRunHeadroomAbovePool(t *testing.T) {
	console, err := runSweepApp(t, "run", "--pool", "285", "--headroom", "299", "--ticks", "600", "--out", t.TempDir())
	require.NoError(t, err, console)
	assert.Contains(t, console, "warning: campaign backfill: headroom 299 GPUs is above the pool of 285: the backfill never fills")
}

// TestSweepWarnsOfDegeneratePoints: a grid whose points run degenerate
// scenarios says which, on the console and in the manifest; the embedded
// experiments have none, so their outputs are untouched (issue 34 §7).
func TestSweepWarnsOfDegeneratePoints(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "small.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("experiment: small-pool\nseeds: {full: [1], quick: [1]}\n"+
		"fixed: {pool: 300, ticks: 600}\ngrid:\n  headroom: [100, 320]\n"), 0o644))
	out := filepath.Join(dir, "out")
	console, err := runSweepApp(t, "sweep", "--config", cfg, "--quiet", "--out", out)
	require.NoError(t, err, console)
	assert.Contains(t, console, "bursar-sweep: warning: small-pool, series \"default\", headroom=100: campaign storm: its target of 384 outstanding GPUs is above the pool of 300 GPUs")
	assert.Contains(t, console, "headroom=320: campaign backfill: headroom 320 GPUs is above the pool of 300")
	var man struct {
		Warnings []string `json:"warnings"`
	}
	readJSONFile(t, filepath.Join(out, "manifest.json"), &man)
	assert.Len(t, man.Warnings, 2)

	for _, e := range []string{"latency-price", "overbooking", "bucket", "compare"} {
		c, err := configs.Reader{}.Default(e)
		require.NoError(t, err)
		for _, quick := range []bool{false, true} {
			p, err := c.Plan(quick, nil)
			require.NoError(t, err)
			assert.Empty(t, sweep.PlanWarnings([]*configs.Plan{p}), "%s (quick %v)", e, quick)
		}
	}
}
