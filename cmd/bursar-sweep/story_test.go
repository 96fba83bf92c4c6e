package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStoryQuick runs `story --quick`: every output is written, the
// summary has a point per policy and population with intervals over the
// two seeds, honest users never park, and the run is the same at one
// worker as at two.
func TestStoryQuick(t *testing.T) {
	dir := t.TempDir()
	console, err := runSweepApp(t, "story", "--quick", "--quiet", "--workers", "2", "--jobs", "--out", dir)
	require.NoError(t, err, console)
	for _, f := range []string{"summary.json", "runs.csv", "fig_story.png", "table.txt", "manifest.json", "jobs/budget-strategic-s2/jobs.csv", "jobs/budget-contractoff-strategic-s2/jobs.csv"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}
	var sum struct {
		Points []struct {
			Line, Policy, Users string
			Seeds               int
			Metrics             map[string]struct {
				Mean *float64
				N    int
			}
		}
	}
	readJSONFile(t, filepath.Join(dir, "summary.json"), &sum)
	require.Len(t, sum.Points, 14)
	for _, p := range sum.Points {
		assert.Equal(t, 2, p.Seeds, p.Policy)
		m := p.Metrics["squatted_gpu_h"]
		require.NotNil(t, m.Mean)
		if p.Users == "honest" {
			assert.Zero(t, *m.Mean, "honest users parked under %s", p.Line)
		}
		d := p.Metrics["degradations"]
		require.NotNil(t, d.Mean, p.Line)
		assert.Positive(t, *d.Mean, "no node degraded on line %s", p.Line)
	}
	one := t.TempDir()
	console, err = runSweepApp(t, "story", "--quick", "--quiet", "--workers", "1", "--out", one)
	require.NoError(t, err, console)
	for _, f := range []string{"summary.json", "runs.csv", "table.txt"} {
		a, _ := os.ReadFile(filepath.Join(dir, f))
		b, _ := os.ReadFile(filepath.Join(one, f))
		assert.Equal(t, string(a), string(b), "%s differs between 2 workers and 1", f)
	}
}

func TestStoryBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--days", "3"}, "--days must be between 7 and 730"},
		{[]string{"--policies", "nosuch"}, `unknown policy "nosuch"`},
		{[]string{"--seeds", "1", "--nseeds", "2"}, "not both"},
	} {
		console, err := runSweepApp(t, append([]string{"story", "--quiet", "--out", t.TempDir()}, tc.args...)...)
		require.Error(t, err, console)
		assert.Contains(t, err.Error(), tc.want)
	}
}
