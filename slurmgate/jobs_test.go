package slurmgate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWithSlurmToken(t *testing.T) {
	got, err := WithToken([]string{"/usr/bin/sbatch", "-n", "2", "job.sh", "--comment=x"}, "TOK")
	require.NoError(t, err)
	assert.Equal(t, []string{"/usr/bin/sbatch", "--comment=TOK", "-n", "2", "job.sh", "--comment=x"}, got,
		"the token goes first: the script's own arguments are not sbatch's")
	_, err = WithToken([]string{"python", "train.py"}, "TOK")
	assert.ErrorContains(t, err, "--slurm wraps srun, sbatch or salloc")
}

// TestParseSlurmSteps: the kill addresses each numbered step of the jobs
// it ends (JOB.STEP) and the batch shell of those that have one; the
// extern step runs no job process, and other jobs' steps are not touched.
// The lines are what `squeue -h -s -o %i` prints on Slurm 22.05.
func TestParseSlurmSteps(t *testing.T) {
	out := "5.0\n5.batch\n5.extern\n6.0\n6.1\n7.batch\n12_3.0\n12_3.batch\n\n  9.0  \n5\n"
	steps, batch := ParseSteps(strings.Split(out, "\n"), map[string]bool{"5": true, "6": true, "12_3": true, "9": true})
	assert.Equal(t, []string{"5.0", "6.0", "6.1", "12_3.0", "9.0"}, steps)
	assert.Equal(t, []string{"5", "12_3"}, batch)
	steps, batch = ParseSteps(strings.Split(out, "\n"), map[string]bool{"8": true})
	assert.Empty(t, steps)
	assert.Empty(t, batch)
}
