package main

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A --slurm lease lasts whole minutes: rounded up, under a minute refused
// (issue 35 item 1, "No Bursar left").
func TestSlurmDuration(t *testing.T) {
	for _, c := range []struct{ in, want int }{{60, 60}, {61, 120}, {90, 120}, {120, 120}, {3599, 3600}, {3600, 3600}} {
		got, err := slurmDuration(c.in)
		require.NoError(t, err)
		assert.Equal(t, c.want, got, "--duration %d", c.in)
	}
	for _, d := range []int{1, 20, 59} {
		_, err := slurmDuration(d)
		assert.ErrorContains(t, err, "is under a minute: a --slurm lease lasts whole minutes", "--duration %d", d)
	}
}

// The command refuses a --slurm lease under a minute before it asks for
// anything, and says why.
func TestLeaseSlurmUnderAMinute(t *testing.T) {
	cmd := exec.Command(bin, "lease", "--server", "http://127.0.0.1:1", "--campaign", "sci", "--slurm", "--gpus", "1", "--duration", "20", "--", "srun", "true")
	cmd.Env = cleanEnv("BURSAR_TOKEN=" + testToken)
	out, _ := cmd.CombinedOutput()
	assert.NotEqual(t, 0, cmd.ProcessState.ExitCode())
	assert.Contains(t, string(out), "--duration 20 is under a minute: a --slurm lease lasts whole minutes")
}
