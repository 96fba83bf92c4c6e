//go:build unix

package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
)

// token takes a lease of gpus for duration seconds in campaign sci and
// returns its id and Slurm token (no wrapper: the token is given to
// srun or sbatch by hand, as a user could).
func (g *slurmGate) token(t *testing.T, gpus, duration int) (int, string) {
	t.Helper()
	ctx := context.Background()
	acc, err := g.admin.Request(ctx, "sci", client.LeaseRequest{GPUs: gpus, Duration: duration})
	require.NoError(t, err)
	w, err := g.admin.AwaitGrant(ctx, "sci", acc.RequestID)
	require.NoError(t, err)
	st, err := g.admin.SlurmToken(ctx, "sci", w.Lease.ID)
	require.NoError(t, err)
	return w.Lease.ID, st.Token
}

// refused runs a submission that the gate must refuse with want in its
// answer, and checks that nothing was queued.
func (g *slurmGate) refused(t *testing.T, line, want string) {
	t.Helper()
	out, code := g.sh(t, line)
	assert.NotEqual(t, 0, code, "%s\n%s", line, out)
	assert.Contains(t, out, want, line)
	assert.Empty(t, g.jobs(t), "nothing queued by %s", line)
}

// TestSlurmGateLeaks closes the ways past a lease of issue 35, each
// against the real cluster with the gate loaded.
func TestSlurmGateLeaks(t *testing.T) {
	g := startSlurmGate(t)
	ctx := context.Background()

	t.Run("sizes the lease does not count are refused", func(t *testing.T) {
		// A 1-GPU lease (one CPU on this cluster): --mincpus=16 reaches
		// the plugin as pn_min_cpus only, and Slurm gave the job 16 CPUs.
		id, tok := g.token(t, 1, 60)
		c := "--comment=" + tok + " "
		g.refused(t, "srun "+c+"--mincpus=16 -n 1 true", "the job asks for 16 CPUs but lease")
		g.refused(t, "srun "+c+"-N 1 --ntasks-per-node=2 true", "the job asks for 2 CPUs but lease")
		g.refused(t, "srun "+c+"--cpus-per-gpu=2 --gpus=1 true", "the job asks for 2 CPUs but lease")
		g.refused(t, "sbatch "+c+"--exclusive --wrap true", "--exclusive shapes a job's size")
		g.refused(t, "srun "+c+"--exclusive=user true", "--exclusive shapes a job's size")
		g.refused(t, "srun "+c+"--hint=nomultithread true", "--threads-per-core or --hint")
		g.refused(t, "srun "+c+"--ntasks-per-core=1 true", "--ntasks-per-core")
		g.refused(t, "srun "+c+"--sockets-per-node=1 true", "--sockets-per-node")
		g.refused(t, "srun "+c+"--mem=0 true", "--mem=0")
		// Refused before the check, each left the token for the job that
		// fits: memory is not what a lease counts.
		out, code := g.sh(t, "srun "+c+"--mem=10 -n 1 true")
		assert.Equal(t, 0, code, out)
		_, err := g.admin.ReleaseLease(ctx, "sci", id)
		require.NoError(t, err)
		g.waitQueueEmpty(t, 30*time.Second)
	})

}
