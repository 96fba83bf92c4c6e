package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/stretchr/testify/require"
)

// `run --policy` takes every name, the variants too, and refuses others, naming them.
func TestRunPolicyFlag(t *testing.T) {
	out, err := runSweepApp(t, "run", "--policy", "fairshare", "--print-scenario")
	require.NoError(t, err)
	require.Contains(t, out, "\npolicy: fairshare\n")
	out, err = runSweepApp(t, "run", "--policy", "quota-fair", "--print-scenario")
	require.NoError(t, err)
	require.Contains(t, out, "\npolicy: quota-fair\n")
	_, err = runSweepApp(t, "run", "--policy", "fifoo", "--ticks", "10")
	require.ErrorContains(t, err, `unknown admission policy "fifoo"`)
	require.ErrorContains(t, err, "bursar, fifo, priority, static, static-share, fairshare, quota, quota-fair, budget")
	// A file's knobs stay with its own policy; --policy of another one
	// runs that one at its defaults.
	file := filepath.Join(t.TempDir(), "q.yaml")
	printed, err := runSweepApp(t, "run", "--print-scenario", "--ticks", "100")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, []byte(strings.Replace(printed, "campaigns:", "policy: {name: quota, borrowing_limit: 8}\ncampaigns:", 1)), 0o644))
	out, err = runSweepApp(t, "run", "--scenario", file, "--print-scenario")
	require.NoError(t, err)
	require.Contains(t, out, "policy: {name: quota, borrowing_limit: 8}\n")
	out, err = runSweepApp(t, "run", "--scenario", file, "--policy", "fifo", "--print-scenario")
	require.NoError(t, err)
	require.Contains(t, out, "policy: fifo\n")
}

// `compare --quick` writes the table, summary (n and intervals per
// policy), runs.csv with the policy and study columns, the figure and a
// manifest, through the same flags as the paper's commands.
func TestCompareQuick(t *testing.T) {
	dir := t.TempDir()
	out, err := runSweepApp(t, "compare", "--quick", "--quiet", "--workers", "2", "--out", dir)
	require.NoError(t, err)
	for _, p := range engine.Policies {
		require.Contains(t, out, " "+p+"  3  ")
	}
	require.Contains(t, out, "9 policies × 3 seeds = 27 runs")
	for _, f := range []string{"summary.json", "runs.csv", "latencies.json", "manifest.json", "fig_policies.png"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
	}
	var sum struct {
		Points []struct {
			Series  string
			Policy  string
			N       int
			Metrics map[string]struct{ Mean, Lo, Hi *float64 }
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &sum))
	require.Len(t, sum.Points, len(engine.Policies))
	for i, pt := range sum.Points {
		require.Equal(t, engine.Policies[i], pt.Policy)
		require.Equal(t, 3, pt.N)
		j := pt.Metrics["jain_storm"]
		require.NotNil(t, j.Mean, pt.Policy)
		require.NotNil(t, j.Lo, pt.Policy)
	}
	f, err := os.Open(filepath.Join(dir, "runs.csv"))
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 1+3*len(engine.Policies))
	col := -1
	for i, h := range rows[0] {
		if h == "policy" {
			col = i
		}
	}
	require.Positive(t, col)
	require.Equal(t, "budget", rows[len(rows)-1][col])

	// A shard of it and the cache work as on the paper's commands.
	cache := filepath.Join(t.TempDir(), "cache")
	_, err = runSweepApp(t, "compare", "--seeds", "7", "--quiet", "--cache", cache, "--out", filepath.Join(dir, "c1"))
	require.NoError(t, err)
	again, err := runSweepApp(t, "compare", "--seeds", "7", "--quiet", "--cache", cache, "--out", filepath.Join(dir, "c2"))
	require.NoError(t, err)
	a, _ := os.ReadFile(filepath.Join(dir, "c1", "summary.json"))
	b, _ := os.ReadFile(filepath.Join(dir, "c2", "summary.json"))
	require.Equal(t, string(a), string(b))
	_ = again
}

// `run --quiet` (and -q), a shared flag in the README, is accepted and
// prints the same report as without it.
func TestRunAcceptsQuiet(t *testing.T) {
	dir := t.TempDir()
	plain, err := runSweepApp(t, "run", "--ticks", "200", "--out", dir)
	require.NoError(t, err, plain)
	for _, q := range []string{"--quiet", "-q"} {
		quiet, err := runSweepApp(t, "run", q, "--ticks", "200", "--out", dir)
		require.NoError(t, err, quiet)
		require.Equal(t, plain, quiet, q)
	}
}

// `paper --nseeds 10000` (or as many --seeds) names the flag the user
// gave, not the embedded config file they never wrote, and says how many
// seeds fit.
func TestTooManySeedsNamesTheFlag(t *testing.T) {
	_, err := runSweepApp(t, "paper", "--nseeds", "10000", "--out", t.TempDir())
	require.Error(t, err)
	require.Regexp(t, `^--nseeds 10000: 10000 seeds × the \d+ grid points of \S+ = \d+ runs, more than the 100000 one command may run; give at most \d+ seeds$`, err.Error())
	seeds := make([]string, 10000)
	for i := range seeds {
		seeds[i] = strconv.Itoa(i + 1)
	}
	_, err = runSweepApp(t, "paper", "--seeds", strings.Join(seeds, ","), "--out", t.TempDir())
	require.Error(t, err)
	require.Regexp(t, `^--seeds: 10000 seeds × `, err.Error())
}
