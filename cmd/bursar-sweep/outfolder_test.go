package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCustomOutNamesTheInputs: a custom trace-study run's folder is named
// by a digest of its inputs, so that two runs with other inputs get two
// folders, however the flags are written, and slurm-script's OUT is the
// folder the run itself writes into.
func TestCustomOutNamesTheInputs(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	folder := regexp.MustCompile(`^results/trace-custom-[0-9a-f]{8}$`)

	day1 := commandOut("trace", []string{"--window", "21772800:21859200", "--policies", "fifo"})
	require.Regexp(t, folder, filepath.ToSlash(day1))
	require.Equal(t, day1, commandOut("trace", []string{"--policies=fifo", "--window=21772800:21859200"}))
	day2 := commandOut("trace", []string{"--window", "21859200:21945600"})
	require.NotEqual(t, day1, day2, "two windows, one folder")
	require.NotEqual(t, day1, commandOut("trace", []string{"--window", "21772800:21859200", "--pool", "64"}))
	require.Equal(t, commandOut("trace", []string{"--pool", "064"}), commandOut("trace", []string{"--pool=64"}))
	require.NotEqual(t, commandOut("trace", []string{"--pool", "64"}), commandOut("budget-knobs", []string{"--pool", "64"}))

	// The config's bytes count, not only its name.
	cfg := filepath.Join(dir, "my.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("experiment: trace\npolicies: [fifo]\n"), 0o644))
	fifo := commandOut("trace", []string{"--config", cfg})
	require.NoError(t, os.WriteFile(cfg, []byte("experiment: trace\npolicies: [quota]\n"), 0o644))
	require.NotEqual(t, fifo, commandOut("trace", []string{"--config", cfg}), "an edited config, one folder")

	// The run writes where slurm-script says it does.
	_, err := runSweepApp(t, "trace", "--window", "21772800:21859200", "--policies", "fifo", "--warmup", "0", "--cooldown", "0", "--quiet", "--workers", "1")
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(day1, "summary.json"))
	_, err = os.Stat(day2)
	require.True(t, os.IsNotExist(err), "another window's folder was written")
}
