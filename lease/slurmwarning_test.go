package lease

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The warning Slurm sends by itself goes right after the token's comment,
// 30 s (Slurm's limit check) after the wrapper's own notice, so that it
// never comes first: to a batch job's shell (B:), to srun's and salloc's
// steps; none for a notice of 30 s or less.
func TestWithSlurmWarning(t *testing.T) {
	assert.Equal(t, []string{"sbatch", "--comment=T", "--signal=B:TERM@60", "-n", "1", "job.sh"},
		withSlurmWarning([]string{"sbatch", "--comment=T", "-n", "1", "job.sh"}, 90))
	assert.Equal(t, []string{"/usr/bin/srun", "--comment=T", "--signal=TERM@24", "true"},
		withSlurmWarning([]string{"/usr/bin/srun", "--comment=T", "true"}, 54))
	assert.Equal(t, []string{"salloc", "--comment=T", "--signal=TERM@65535"}, withSlurmWarning([]string{"salloc", "--comment=T"}, 1<<20))
	for _, n := range []int{0, 6, 30} {
		assert.Equal(t, []string{"srun", "--comment=T", "true"}, withSlurmWarning([]string{"srun", "--comment=T", "true"}, n))
	}
}
