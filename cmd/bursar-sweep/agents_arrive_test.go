package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/arrive"
)

// A small end-to-end run on the embedded excerpt: two policies, k ≤ 2,
// two seeds, two windows of three days with half a day of warm-up and
// cool-down, the agents staying an hour.
func TestAgentsArriveEndToEnd(t *testing.T) {
	dir := t.TempDir()
	args := []string{"agents-arrive", "--quiet", "--workers", "2", "--out", dir, "--trace", "sdsc-sp2-excerpt",
		"--policies", "fifo,bursar", "--max-k", "2", "--nseeds", "2", "--stay", "1h", "--windows", "2x3d",
		"--warmup", "12h", "--cooldown", "12h", "--jobs"}
	console, err := runSweepApp(t, args...)
	require.NoError(t, err, console)
	require.Contains(t, console, "mean bsld unmetered")
	// The manifest records the agents' seeds (--nseeds 2: 1 and 2), not [].
	require.Equal(t, []int64{1, 2}, readManifest(t, dir).Seeds)
	for _, f := range []string{"summary.json", "runs.csv", "agents.csv", "fig_agents_arrive.png", "manifest.json", "table.txt",
		"jobs/fifo-k0-w0/jobs.csv", "jobs/fifo-metered-k2-s2-w1/jobs.parquet", "jobs/bursar-metered-k1-s1-w0/jobs.csv"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
	}
	var sum struct {
		Experiment string           `json:"experiment"`
		Points     []map[string]any `json:"points"`
		Contrasts  []map[string]any `json:"contrasts"`
		Runs       []map[string]any `json:"runs"`
	}
	readJSONFile(t, filepath.Join(dir, "summary.json"), &sum)
	require.Equal(t, "agents-arrive", sum.Experiment)
	// fifo: k 0 once per window, then 2 modes × k 1, 2 × 2 windows × 2
	// seeds; bursar: k 0 per window, then metered only.
	require.Len(t, sum.Runs, (2+2*2*2*2)+(2+2*2*2))
	// Points: fifo 2 modes × 3 k, bursar 1 × 3.
	require.Len(t, sum.Points, 2*3+3)
	require.NotEmpty(t, sum.Contrasts)
	rows := readCSVRows(t, filepath.Join(dir, "runs.csv"))
	// One row per run and stay: the k = 0 runs once per seed.
	require.Len(t, rows, 1+len(sum.Runs)+2*2)

	// The same study again from the cache (no replay) writes the same
	// summary.
	cache := t.TempDir()
	a, b := t.TempDir(), t.TempDir()
	_, err = runSweepApp(t, append(args[:len(args)-1], "--cache", cache, "--out", a)...)
	require.NoError(t, err)
	_, err = runSweepApp(t, append(args[:len(args)-1], "--cache", cache, "--out", b)...)
	require.NoError(t, err)
	x, _ := os.ReadFile(filepath.Join(a, "summary.json"))
	y, _ := os.ReadFile(filepath.Join(b, "summary.json"))
	require.Equal(t, string(x), string(y))
}

func readCSVRows(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	return rows
}

func TestAgentsArriveBadFlags(t *testing.T) {
	ex := []string{"--trace", "sdsc-sp2-excerpt", "--windows", "2x7d"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-k", "-1"}, "--max-k"},
		{[]string{"--stay", "1"}, "--stay must be at least 2 seconds"},
		{[]string{"--stay", "x"}, "--stay"},
		{[]string{"--stay", "6d"}, "does not fit in its measured submits"},
		{[]string{"--agent-share", "1"}, "--agent-share must be above 0 and below 1"},
		{[]string{"--agent-scale", "0"}, "--agent-scale must be above 0"},
		{[]string{"--agent-phi", "0"}, "--agent-phi must be above 0 and at most 64"},
		{[]string{"--agent-phi", "65"}, "--agent-phi must be above 0 and at most 64"},
		{[]string{"--agent-scale", "3"}, "more than the pool of 128"},
		{[]string{"--seeds", "1,1"}, "--seeds: seed 1 is listed twice"},
		{[]string{"--seeds", "x"}, `--seeds: "x" is not a seed`},
		{[]string{"--nseeds", "0"}, "--nseeds must be between 1 and 1000"},
		{[]string{"--seeds", "1,2", "--nseeds", "2"}, "give --seeds (a list) or --nseeds (a count), not both"},
		{[]string{"--policy", "lottery"}, `unknown policy "lottery"`},
		{[]string{"--window", "5"}, "--window"},
		{[]string{"--windows", "9x7d"}, "--windows"},
	} {
		_, err := runSweepApp(t, append(append([]string{"agents-arrive", "--quiet", "--out", t.TempDir()}, ex...), c.args...)...)
		require.ErrorContains(t, err, c.want, c.args)
	}
}

// TestAgentsArriveMetricsDictionaryIsComplete: every key of agents-arrive's
// summary.json (at every depth), every column of its runs.csv and
// agents.csv, and every per-run metric is in docs/metrics.md's
// agents-arrive sections.
func TestAgentsArriveMetricsDictionaryIsComplete(t *testing.T) {
	doc := metricsDoc(t)
	perRun := sectionOf(t, doc, "agents-arrive: per-run metrics")
	files := sectionOf(t, doc, "agents-arrive: summary.json")
	for _, m := range arrive.Metrics {
		require.True(t, perRun[m.Key], "per-run metric %s is not in docs/metrics.md", m.Key)
	}
	dir := t.TempDir()
	out, err := runSweepApp(t, "agents-arrive", "--quiet", "--trace", "sdsc-sp2-excerpt", "--policies", "static,bursar", "--max-k", "3",
		"--nseeds", "1", "--stay", "1h", "--window", "21772800:21945600", "--warmup", "6h", "--cooldown", "6h",
		"--classes", "standby=opportunistic", "--out", dir)
	require.NoError(t, err, out)
	keys, children := map[string]bool{}, map[string][]string{}
	jsonKeys(readJSONAny(t, filepath.Join(dir, "summary.json")), nil, keys, children)
	require.NotEmpty(t, keys)
	for k := range keys {
		require.True(t, files[k] || perRun[k], "summary.json key %s is not in docs/metrics.md", k)
	}
	for _, c := range readCSVHeader(t, filepath.Join(dir, "runs.csv")) {
		require.True(t, files[c] || perRun[c], "runs.csv column %s is not in docs/metrics.md", c)
	}
	for _, c := range readCSVHeader(t, filepath.Join(dir, "agents.csv")) {
		require.True(t, files[c] || perRun[c], "agents.csv column %s is not in docs/metrics.md", c)
	}
}

// agents-arrive's summary.json names the trace mapping it replayed with,
// as trace's does and with the same code: the same mapping flags give
// the same mapping block, the knobs at their values, the defaults
// written out.
func TestAgentsArriveSummaryNamesItsMapping(t *testing.T) {
	mapping := []string{"--trace", "sdsc-sp2-excerpt", "--window", "21772800:21945600", "--warmup", "6h", "--cooldown", "6h",
		"--by", "group", "--shares", "window", "--bucket", "hours:24", "--classes", "standby=opportunistic"}
	aa, tr := t.TempDir(), t.TempDir()
	out, err := runSweepApp(t, append([]string{"agents-arrive", "--quiet", "--policies", "fifo", "--max-k", "1", "--nseeds", "1",
		"--stay", "1h", "--out", aa}, mapping...)...)
	require.NoError(t, err, out)
	out, err = runSweepApp(t, append([]string{"trace", "--quiet", "--policies", "fifo", "--fair-sample", "0", "--out", tr}, mapping...)...)
	require.NoError(t, err, out)
	var a, b struct {
		Mapping map[string]any `json:"mapping"`
	}
	readJSONFile(t, filepath.Join(aa, "summary.json"), &a)
	readJSONFile(t, filepath.Join(tr, "summary.json"), &b)
	require.Equal(t, map[string]any{"by": "group", "shares": "window", "bucket": "hours:24", "oracle": true,
		"classes": []any{"standby=opportunistic"}}, a.Mapping)
	require.Equal(t, b.Mapping, a.Mapping)
}
