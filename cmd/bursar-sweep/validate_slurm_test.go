package main

import (
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
// outputs are written, and the simulated Slurm starts the jobs about when
// Slurm did, within twice Slurm's own run-to-run spread, and orders the
// ones that waited together mostly as Slurm did (docs/validate-slurm.md
// has the full run's figures).
// It needs root and Debian's Slurm packages, so it runs only with
// BURSAR_SLURM=1 (.ci/run).
func TestSlurmValidateShort(t *testing.T) {
	dir := slurmTestDir(t, "replay a log through a real slurmctld")
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
	sim, spread := sum.Agreement[0].Agreement, sum.Agreement[2].Agreement
	require.Equal(t, "slurm", sum.Agreement[0].Predictor)
	require.Equal(t, "slurm-vs-slurm", sum.Agreement[2].Predictor)
	// Measured on this machine kind (docs/validate-slurm.md): MAE 0.39
	// cycles against Slurm's own 0.40, τ-b 0.80 against Slurm's 0.77.
	// Laid on Slurm's whole seconds instead of its cycles the error was
	// 2.8 s: these bounds catch a replay read in the wrong frame.
	require.LessOrEqual(t, sim.MAE, max(1, 2*spread.MAE), "simulated Slurm's mean start-time error within twice Slurm's own spread (cycles)")
	if sim.TauB != nil {
		require.GreaterOrEqual(t, *sim.TauB, 0.6, "simulated Slurm orders the jobs that waited together as Slurm did")
	}
}
