package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSlurmValidateShort runs `validate-slurm` for real: 30 jobs on 8
// one-CPU nodes at offered load 0.9, replayed three times at once through
// slurmctld (scripts/slurm-local.sh, each replay on its own ports, away
// from the other Slurm tests' 6817) and simulated under policy slurm and
// fifo. What a user relies on: every job ran and was recorded, the
// outputs are written, and the simulated Slurm orders the jobs that
// waited together as Slurm did and starts them about when Slurm did
// (the bounds below; docs/validate-slurm.md has the full run's figures).
// It needs root and Debian's Slurm packages, so it runs only with
// BURSAR_SLURM=1 (.ci/run).
func TestSlurmValidateShort(t *testing.T) {
	if os.Getenv("BURSAR_SLURM") != "1" {
		t.Skip("set BURSAR_SLURM=1 to replay a log through a real slurmctld (root; apt-get install --no-install-recommends slurmctld slurmd slurm-client munge)")
	}
	// Not t.TempDir: munged wants every folder above its socket open to
	// all (mode 755), and t.TempDir's parent is 700.
	dir, err := os.MkdirTemp("", "bursar-validate-slurm-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	out := filepath.Join(dir, "out")
	start := time.Now()
	console, err := runSweepApp(t, "validate-slurm", "--jobs", "30", "--nodes", "8", "--load", "0.9",
		"--runs", "3", "--parallel", "3", "--script", filepath.Join("..", "..", "scripts", "slurm-local.sh"),
		"--state-dir", filepath.Join(dir, "state"), "--out", out)
	require.NoError(t, err, console)
	t.Logf("%s\nwall %.0f s", console, time.Since(start).Seconds())
	for _, f := range []string{"summary.json", "jobs.csv", "slurm-scheduler.conf", "manifest.json"} {
		require.FileExists(t, filepath.Join(out, f))
	}
	var sum struct {
		Agreement []struct {
			Predictor string `json:"predictor"`
			Agreement struct {
				Jobs int      `json:"jobs"`
				MAE  float64  `json:"mean_abs_error_s"`
				TauB *float64 `json:"tau_b"`
			} `json:"agreement"`
		} `json:"agreement"`
	}
	readJSONFile(t, filepath.Join(out, "summary.json"), &sum)
	require.Len(t, sum.Agreement, 3)
	got := map[string]int{}
	for _, a := range sum.Agreement {
		got[a.Predictor] = a.Agreement.Jobs
	}
	require.Equal(t, map[string]int{"slurm": 90, "fifo": 90, "slurm-vs-slurm": 90}, got, "every job of every replay measured")
	sim := sum.Agreement[0].Agreement
	require.Equal(t, "slurm", sum.Agreement[0].Predictor)
	require.NotNil(t, sim.TauB, "some jobs waited together")
	require.GreaterOrEqual(t, *sim.TauB, 0.9, "simulated Slurm orders the jobs that waited together as Slurm did")
	require.LessOrEqual(t, sim.MAE, 1.5, "simulated Slurm's mean start-time error, seconds")
}
