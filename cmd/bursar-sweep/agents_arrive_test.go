package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A small end-to-end run on the embedded excerpt: two policies, k ≤ 2,
// two seeds, both modes, a one-day window.
func TestAgentsArriveEndToEnd(t *testing.T) {
	dir := t.TempDir()
	console, err := runSweepApp(t, "agents-arrive", "--quiet", "--workers", "2", "--out", dir,
		"--policies", "fifo,bursar", "--max-k", "2", "--nseeds", "2", "--stay", "1200", "--window", "21772800:21859200")
	require.NoError(t, err, console)
	require.Contains(t, console, "mean bsld")
	for _, f := range []string{"summary.json", "runs.csv", "fig_agents_arrive.png", "manifest.json"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
	}
	var sum struct {
		Experiment string           `json:"experiment"`
		Mix        []string         `json:"mix"`
		Points     []map[string]any `json:"points"`
		Runs       []map[string]any `json:"runs"`
	}
	readJSONFile(t, filepath.Join(dir, "summary.json"), &sum)
	require.Equal(t, "agents-arrive", sum.Experiment)
	// 2 policies × 2 modes × (k 0, 1 with one seed; k 2 with two).
	require.Len(t, sum.Points, 2*2*3)
	require.Len(t, sum.Runs, 2*2*4)
	f, err := os.Open(filepath.Join(dir, "runs.csv"))
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 1+2*2*4)
	require.Equal(t, "policy", rows[0][0])
	require.Equal(t, []float64{1, 1, 1, 2}, runSeeds(sum.Runs[:4]), "--nseeds 2: seeds 1 and 2 at k = 2")

	// --seeds is a list, as on paper and compare.
	dir = t.TempDir()
	console, err = runSweepApp(t, "agents-arrive", "--quiet", "--workers", "2", "--out", dir,
		"--policies", "fifo", "--modes", "site", "--max-k", "2", "--seeds", "9,5", "--stay", "1200", "--window", "21772800:21859200")
	require.NoError(t, err, console)
	readJSONFile(t, filepath.Join(dir, "summary.json"), &sum)
	require.Equal(t, []float64{9, 9, 9, 5}, runSeeds(sum.Runs))
}

// runSeeds lists the runs' seeds in order.
func runSeeds(runs []map[string]any) []float64 {
	var out []float64
	for _, r := range runs {
		out = append(out, r["seed"].(float64))
	}
	return out
}

func TestAgentsArriveBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--modes", "both"}, `unknown mode "both"`},
		{[]string{"--max-k", "-1"}, "--max-k"},
		{[]string{"--stay", "1"}, "--stay"},
		{[]string{"--seeds", "1,1"}, "--seeds: seed 1 is listed twice"},
		{[]string{"--seeds", "x"}, `--seeds: "x" is not a seed`},
		{[]string{"--nseeds", "0"}, "--nseeds must be between 1 and 1000"},
		{[]string{"--seeds", "1,2", "--nseeds", "2"}, "give --seeds (a list) or --nseeds (a count), not both"},
		{[]string{"--policy", "lottery"}, `unknown policy "lottery"`},
		{[]string{"--window", "5"}, "--window"},
	} {
		_, err := runSweepApp(t, append([]string{"agents-arrive", "--quiet", "--out", t.TempDir()}, c.args...)...)
		require.ErrorContains(t, err, c.want, c.args)
	}
}
