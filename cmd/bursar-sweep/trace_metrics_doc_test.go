package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"testing"

	"github.com/bursar-hpc/bursar/tracestudy"
	"github.com/stretchr/testify/require"
)

// TestTraceMetricsDictionaryIsComplete: every key of the trace studies'
// summary.json (at every depth), every column of their runs.csv and of
// jobs.csv, and every per-replay metric is in docs/metrics.md's trace
// sections.
func TestTraceMetricsDictionaryIsComplete(t *testing.T) {
	doc := metricsDoc(t)
	perReplay := sectionOf(t, doc, "Trace studies: per-replay metrics")
	summary := sectionOf(t, doc, "Trace studies: summary.json")
	runs := sectionOf(t, doc, "Trace studies: runs.csv")
	jobs := sectionOf(t, doc, "Trace studies: jobs.csv")
	for _, m := range tracestudy.Metrics {
		require.True(t, perReplay[m.Key], "per-replay metric %s is not in docs/metrics.md", m.Key)
	}
	dir := t.TempDir()
	bk := filepath.Join(dir, "bk.yaml")
	require.NoError(t, os.WriteFile(bk, []byte("experiment: budget-knobs\nwindow: {from: 21772800, until: 22032000}\n"+
		"warmup: 12h\ncooldown: 12h\nwindows_days: [1]\nmin_runtimes_s: [0]\n"), 0o644))
	for _, args := range [][]string{
		{"trace", "--policies", "fifo,static", "--windows", "2x6d", "--jobs", "--fair-sample", "20", "--out", filepath.Join(dir, "trace")},
		{"budget-knobs", "--config", bk, "--out", filepath.Join(dir, "budget-knobs")},
	} {
		out, err := runSweepApp(t, append(args, "--quiet")...)
		require.NoError(t, err, out)
	}
	for _, sub := range []string{"trace", "budget-knobs"} {
		keys, children := map[string]bool{}, map[string][]string{}
		jsonKeys(readJSONAny(t, filepath.Join(dir, sub, "summary.json")), nil, keys, children)
		require.NotEmpty(t, keys)
		for k := range keys {
			require.True(t, summary[k] || perReplay[k], "%s summary.json key %s is not in docs/metrics.md", sub, k)
		}
		for _, c := range readCSVHeader(t, filepath.Join(dir, sub, "runs.csv")) {
			require.True(t, runs[c] || perReplay[c], "%s runs.csv column %s is not in docs/metrics.md", sub, c)
		}
	}
	for _, c := range readCSVHeader(t, filepath.Join(dir, "trace", "jobs", "static-w1", "jobs.csv")) {
		require.True(t, jobs[c], "jobs.csv column %s is not in docs/metrics.md", c)
	}
}

func readCSVHeader(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h, err := csv.NewReader(f).Read()
	require.NoError(t, err)
	return h
}
