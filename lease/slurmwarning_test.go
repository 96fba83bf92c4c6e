package lease

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The warning Slurm sends by itself goes right after the token's comment:
// to a batch job's shell (B:), to srun's and salloc's steps; none without
// a notice.
func TestWithSlurmWarning(t *testing.T) {
	assert.Equal(t, []string{"sbatch", "--comment=T", "--signal=B:TERM@30", "-n", "1", "job.sh"},
		withSlurmWarning([]string{"sbatch", "--comment=T", "-n", "1", "job.sh"}, 30))
	assert.Equal(t, []string{"/usr/bin/srun", "--comment=T", "--signal=TERM@6", "true"},
		withSlurmWarning([]string{"/usr/bin/srun", "--comment=T", "true"}, 6))
	assert.Equal(t, []string{"salloc", "--comment=T", "--signal=TERM@65535"}, withSlurmWarning([]string{"salloc", "--comment=T"}, 1<<20))
	assert.Equal(t, []string{"srun", "--comment=T", "true"}, withSlurmWarning([]string{"srun", "--comment=T", "true"}, 0))
}
