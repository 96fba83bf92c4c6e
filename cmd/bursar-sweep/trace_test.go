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
	for _, f := range []string{"summary.json", "runs.csv", "fig_trace.png", "manifest.json"} {
		_, err := os.Stat(filepath.Join(out, f))
		require.NoError(t, err, f)
	}
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
