package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// trace runs from the embedded excerpt (no file needed), on a window, and
// writes its outputs and a manifest naming the embedded trace.
func TestTraceCommandWritesItsOutputs(t *testing.T) {
	out := t.TempDir()
	console, err := runSweepApp(t, "trace", "--policies", "fifo,static", "--window", "21772800:22000000", "--workers", "2", "--out", out, "--quiet")
	require.NoError(t, err)
	assert.Contains(t, console, "fifo")
	assert.Contains(t, console, "static")
	for _, f := range []string{"summary.json", "runs.csv", "fig_trace.png", "manifest.json", "table.txt"} {
		_, err := os.Stat(filepath.Join(out, f))
		require.NoError(t, err, f)
	}
	// table.txt is the table the console shows, byte for byte.
	table, err := os.ReadFile(filepath.Join(out, "table.txt"))
	require.NoError(t, err)
	assert.Contains(t, console, string(table))
	var m struct {
		Inputs []struct {
			Kind     string `json:"kind"`
			Embedded bool   `json:"embedded"`
		} `json:"inputs"`
	}
	readJSONFile(t, filepath.Join(out, "manifest.json"), &m)
	require.Len(t, m.Inputs, 1)
	assert.True(t, m.Inputs[0].Embedded)
	var s struct {
		Trace struct {
			Jobs int `json:"jobs"`
			Pool int `json:"pool"`
		} `json:"trace"`
		Runs []struct {
			Policy string `json:"policy"`
		} `json:"runs"`
	}
	readJSONFile(t, filepath.Join(out, "summary.json"), &s)
	assert.Equal(t, 128, s.Trace.Pool)
	require.Len(t, s.Runs, 2)
	assert.Equal(t, "static", s.Runs[1].Policy)
}

func TestTraceCommandBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"trace", "--window", "5"}, `--window "5": want START:END`},
		{[]string{"trace", "--window", "10:5"}, `END must be a whole number of seconds (or days, or a date) after START`},
		{[]string{"trace", "--policies", "fifo,fcfs"}, `unknown policy "fcfs"`},
		{[]string{"trace", "--policies", "fifo", "--policy", "fifo"}, `not both`},
		{[]string{"trace", "--pool", "0"}, `--pool must be at least 1`},
		{[]string{"trace", "--trace", "/nonexistent.swf"}, `--trace`},
		{[]string{"budget-knobs", "--workers", "0"}, `--workers must be at least 1`},
	} {
		_, err := runSweepApp(t, tc.args...)
		require.Error(t, err, tc.args)
		assert.Contains(t, err.Error(), tc.want, tc.args)
	}
}

// --windows on the excerpt: every policy on each window, estimates with
// intervals over them and paired differences from fifo in the table and
// summary.json; --window in days and dates reads the same jobs as in
// seconds; the jobs dropped for the pool are printed.
func TestTraceWindowsAndWindowUnits(t *testing.T) {
	out := t.TempDir()
	console, err := runSweepApp(t, "trace", "--policies", "fifo,quota", "--windows", "3x5d", "--workers", "2", "--out", out, "--quiet",
		"--fair-sample", "50", "--jobs")
	require.NoError(t, err, console)
	assert.Contains(t, console, "Δ mean wait vs fifo (h)")
	assert.Contains(t, console, "Means over 3 windows")
	assert.Contains(t, console, "wrote summary.json, runs.csv, fig_trace.png, fig_primary.png, table.txt, manifest.json, jobs/ (6 replays' per-job records) into "+out)
	var s struct {
		Windows []struct {
			From, Until int64
		} `json:"windows"`
		Runs      []map[string]any `json:"runs"`
		Estimates []struct {
			Policy  string                    `json:"policy"`
			Metrics map[string]map[string]any `json:"metrics"`
			Paired  map[string]map[string]any `json:"paired_difference"`
		} `json:"estimates"`
	}
	readJSONFile(t, filepath.Join(out, "summary.json"), &s)
	require.Len(t, s.Windows, 3)
	require.Len(t, s.Runs, 6)
	require.Len(t, s.Estimates, 2)
	assert.EqualValues(t, 3, s.Estimates[1].Metrics["mean_wait"]["n"])
	assert.NotNil(t, s.Estimates[1].Metrics["mean_wait"]["lo"])
	assert.Nil(t, s.Estimates[0].Paired, "fifo is the reference")
	assert.NotNil(t, s.Estimates[1].Paired["mean_wait"])
	_, err = os.Stat(filepath.Join(out, "jobs", "quota-w2", "jobs.parquet"))
	require.NoError(t, err)

	// 252d:255d is 21772800:22032000; 1998-12-31 is a date inside the
	// excerpt (the log starts 1998-04-24 in US/Pacific).
	sums := map[string]string{}
	for _, w := range []string{"21772800:22032000", "252d:255d"} {
		dir := t.TempDir()
		console, err := runSweepApp(t, "trace", "--policy", "fifo", "--window", w, "--out", dir, "--fair-sample", "0")
		require.NoError(t, err, console)
		b, err := os.ReadFile(filepath.Join(dir, "runs.csv"))
		require.NoError(t, err)
		sums[w] = string(b)
	}
	assert.Equal(t, sums["21772800:22032000"], sums["252d:255d"])
	dir := t.TempDir()
	console, err = runSweepApp(t, "trace", "--policy", "fifo", "--window", "1999-01-03:1999-01-06", "--out", dir, "--fair-sample", "0", "--pool", "64", "--quiet")
	require.NoError(t, err, console)
	assert.Regexp(t, `\d+ of \d+ jobs dropped: wider than the pool of 64 GPUs`, console)
}

func TestTraceStudyFlagsBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"trace", "--window", "0:864000"}, "--window (or the config's window) on SDSC-SP2-1998-4.2-cln.days252-280.swf: window [0, 864000) s: SDSC-SP2-1998-4.2-cln.days252-280.swf (embedded): no replayable job in the window; the log's replayable submits run from 21773058 s (day 252.00) to 24188268 s (day 279.96)"},
		{[]string{"trace", "--window", "1998-13-01:"}, `not a date YYYY-MM-DD`},
		{[]string{"trace", "--windows", "4x"}, `--windows "4x": D must be a whole number of days`},
		{[]string{"trace", "--windows", "9x5d"}, `do not fit disjoint`},
		{[]string{"trace", "--warmup", "-1d"}, `--warmup "-1d": want a duration`},
		{[]string{"trace", "--warmup", "20d", "--cooldown", "20d"}, `leave nothing to measure`},
		{[]string{"budget-knobs", "--shares", "group"}, `did you mean "groups"`},
		{[]string{"trace", "--by", "users"}, `--by "users": want user or group`},
		{[]string{"trace", "--classes", "standby=burst"}, `class "burst"`},
		{[]string{"trace", "--bucket", "hours:0"}, `--bucket "hours:0"`},
		{[]string{"trace", "--restart", "checkpoint:x"}, `--restart "checkpoint:x"`},
		{[]string{"trace", "--fair-sample", "-1"}, `--fair-sample must not be negative`},
		{[]string{"trace", "--jobs", "--cache", "x"}, `--jobs with --cache`},
	} {
		_, err := runSweepApp(t, tc.args...)
		require.Error(t, err, tc.args)
		assert.Contains(t, err.Error(), tc.want, tc.args)
	}
}

// trace's windows start on a machine already running by default
// (docs/studies.md §4.5): without --lead-in, summary.json says which
// lead-in the rule chose; --lead-in none (or 0) starts each window
// empty and writes no lead_in, and so does budget-knobs without it.
func TestTraceLeadInByDefault(t *testing.T) {
	leadIn := func(args ...string) map[string]any {
		out := t.TempDir()
		console, err := runSweepApp(t, append(args, "--out", out, "--quiet", "--fair-sample", "0")...)
		require.NoError(t, err, console)
		var s struct {
			LeadIn map[string]any `json:"lead_in"`
		}
		readJSONFile(t, filepath.Join(out, "summary.json"), &s)
		return s.LeadIn
	}
	windows := []string{"trace", "--policies", "fifo", "--windows", "2x6d"}
	li := leadIn(windows...)
	require.NotNil(t, li, "trace --windows without --lead-in: no lead_in in summary.json")
	assert.Equal(t, "shortest passing", li["rule"])
	assert.Equal(t, true, li["pass"])
	assert.Nil(t, leadIn(append(windows, "--lead-in", "none")...))
	assert.Nil(t, leadIn(append(windows, "--lead-in", "0")...))
	bk := filepath.Join(t.TempDir(), "bk.yaml")
	require.NoError(t, os.WriteFile(bk, []byte("experiment: budget-knobs\nwindow: {from: 21772800, until: 22032000}\n"+
		"warmup: 12h\ncooldown: 12h\nwindows_days: [1]\nmin_runtimes_s: [0]\n"), 0o644))
	assert.Nil(t, leadIn("budget-knobs", "--config", bk))
}
