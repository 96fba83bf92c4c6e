//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
)

// token takes a lease of gpus for duration seconds in campaign sci and
// returns its id and Slurm token (no wrapper: the token is given to
// srun or sbatch by hand, as a user could), for this process's user.
func (g *slurmGate) token(t *testing.T, gpus, duration int) (int, string) {
	t.Helper()
	return g.tokenFor(t, gpus, duration, "")
}

// tokenFor is token for the jobs of Unix user u ("": this process's).
func (g *slurmGate) tokenFor(t *testing.T, gpus, duration int, u string) (int, string) {
	t.Helper()
	ctx := context.Background()
	acc, err := g.admin.Request(ctx, "sci", client.LeaseRequest{GPUs: gpus, Duration: duration})
	require.NoError(t, err)
	w, err := g.admin.AwaitGrant(ctx, "sci", acc.RequestID)
	require.NoError(t, err)
	var st *client.SlurmToken
	if u == "" {
		st, err = g.admin.SlurmToken(ctx, "sci", w.Lease.ID)
	} else {
		st, err = g.admin.SlurmTokenFor(ctx, "sci", w.Lease.ID, u)
	}
	require.NoError(t, err)
	return w.Lease.ID, st.Token
}

// refused runs a submission that the gate must refuse with want in its
// answer, and checks that it queued nothing: no job that was not listed
// before it (a job of an earlier step may still be COMPLETING on a
// loaded machine).
func (g *slurmGate) refused(t *testing.T, line, want string) {
	t.Helper()
	before := map[string]bool{}
	for _, l := range strings.Split(g.jobs(t), "\n") {
		id, _, _ := strings.Cut(l, "|")
		before[id] = true
	}
	out, code := g.sh(t, line)
	assert.NotEqual(t, 0, code, "%s\n%s", line, out)
	assert.Contains(t, out, want, line)
	var queued []string
	for _, l := range strings.Split(g.jobs(t), "\n") {
		if id, _, _ := strings.Cut(l, "|"); id != "" && !before[id] {
			queued = append(queued, l)
		}
	}
	assert.Empty(t, queued, "nothing queued by %s", line)
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

	t.Run("a user may not change a gated job's limits, size, account or partition", func(t *testing.T) {
		// As an unprivileged user (nobody), on its own held job: Slurm
		// 22.05 lets a user raise a pending job's time limit and change
		// its WcKey, GRES and partition, none of which reach the gate.
		id, tok := g.tokenFor(t, 2, 60, "nobody")
		as := "runuser -u nobody -- "
		out, code := g.sh(t, as+"sbatch --parsable --hold -n 1 -o /dev/null --comment="+tok+" --wrap 'sleep 1'")
		require.Equal(t, 0, code, out)
		job := strings.TrimSpace(out)
		for _, change := range []string{"TimeLimit=60", "TimeLimit=UNLIMITED", "WCKey=bursar:1:sci:16:9999999999", "Gres=gpu:2",
			"NumCPUs=8", "MinCPUsNode=8", "NumTasks=4", "Account=other", "Partition=local", "Comment=x", "Requeue=1"} {
			out, code := g.sh(t, as+"scontrol update JobId="+job+" "+change)
			assert.NotEqual(t, 0, code, "%s: %s", change, out)
		}
		// scontrol shows no plugin message ("Unspecified error"): the
		// reason is in slurmctld's log.
		b, err := os.ReadFile(filepath.Join(g.dir, "slurm", "slurmctld.log"))
		require.NoError(t, err)
		for _, field := range []string{"TimeLimit", "WCKey", "Gres", "NumCPUs", "MinCPUsNode", "NumTasks", "Account", "Partition", "Comment", "Requeue"} {
			assert.Contains(t, string(b), "keeps its limits, size, account and partition: "+field+" cannot be changed")
		}
		out, code = g.sh(t, as+"scontrol update JobId="+job+" Name=renamed")
		assert.Equal(t, 0, code, "a harmless change is allowed: %s", out)
		out, _ = g.sh(t, "scontrol show job "+job)
		assert.Contains(t, out, "JobName=renamed")
		assert.Contains(t, out, "TimeLimit=00:01:00", "the time limit stays the lease's")
		assert.Contains(t, out, "Requeue=0", "the gate sets requeue=0: a requeued job would start with a fresh time limit")
		assert.Contains(t, out, "NumCPUs=1-2 ")
		assert.Contains(t, out, "Partition=local ")
		out, _ = g.sh(t, "squeue -h -j "+job+" -O WCKey")
		assert.Contains(t, out, "bursar:"+strconv.Itoa(id)+":sci:2:")
		out, code = g.sh(t, as+"scontrol requeue "+job)
		assert.NotEqual(t, 0, code, "requeue refused: %s", out)
		// Root (SlurmUser here) may still change it.
		out, code = g.sh(t, "scontrol update JobId="+job+" TimeLimit=1")
		assert.Equal(t, 0, code, out)
		out, code = g.sh(t, "scancel "+job)
		assert.Equal(t, 0, code, out)
		_, err = g.admin.ReleaseLease(ctx, "sci", id)
		require.NoError(t, err)
		g.waitQueueEmpty(t, 30*time.Second)
	})

	t.Run("arrays only when the lease covers every task at once; hetjobs refused before the token is spent", func(t *testing.T) {
		id, tok := g.token(t, 2, 60)
		c := "--comment=" + tok + " "
		// At the parent --array=0-7 of 1-CPU tasks passed a per-job
		// check and ran 8 CPUs on a 2-GPU lease.
		g.refused(t, "sbatch "+c+"-n 1 -o /dev/null --array=0-7 --wrap true", "the array's 8 tasks at once")
		g.refused(t, "sbatch "+c+"-n 2 -o /dev/null --array=0-1 --wrap true", "ask for 4 CPUs but lease")
		// A heterogeneous job reaches the plugin once per component; at
		// the parent its first component spent the token.
		het := filepath.Join(g.dir, "het.sh")
		require.NoError(t, os.WriteFile(het, []byte("#!/bin/bash\n#SBATCH -n 1\n#SBATCH hetjob\n#SBATCH -n 1\ntrue\n"), 0o755))
		g.refused(t, "sbatch "+c+"-o /dev/null "+het, "a heterogeneous job")
		// Two at a time fit: admitted, the token spent on it.
		out, code := g.sh(t, "sbatch --parsable "+c+"-n 1 -o /dev/null --array=0-7%2 --wrap true")
		require.Equal(t, 0, code, out)
		out, code = g.sh(t, "sbatch "+c+"-n 1 -o /dev/null --wrap true")
		assert.NotEqual(t, 0, code)
		assert.Contains(t, out, "admitted a job already")
		g.waitQueueEmpty(t, time.Minute)
		_, err := g.admin.ReleaseLease(ctx, "sci", id)
		require.NoError(t, err)
	})

	t.Run("a released lease's token admits no job", func(t *testing.T) {
		// At the parent the token of a released lease was admitted and
		// its job ran on CPUs the broker had freed.
		id, tok := g.token(t, 1, 60)
		_, err := g.admin.ReleaseLease(ctx, "sci", id)
		require.NoError(t, err)
		g.refused(t, "srun --comment="+tok+" -n 1 true", "lease "+strconv.Itoa(id)+" of campaign sci was released")
	})

	t.Run("a job may not be moved from an ungated partition into a gated one", func(t *testing.T) {
		// Partition "free" is ungated (scripts/slurm-local.sh): a job
		// without a token is admitted there. At the parent, its user
		// could then move it, pending, into the gated partition.
		as := "runuser -u nobody -- "
		out, code := g.sh(t, as+"sbatch --parsable --hold -p free -n 1 -o /dev/null --wrap 'sleep 1'")
		require.Equal(t, 0, code, out)
		job := strings.TrimSpace(out)
		out, code = g.sh(t, as+"scontrol update JobId="+job+" Partition=local")
		assert.NotEqual(t, 0, code, out)
		out, _ = g.sh(t, "squeue -h -j "+job+" -o %P")
		assert.Equal(t, "free", strings.TrimSpace(out), "the job stays in the ungated partition")
		out, code = g.sh(t, as+"scontrol update JobId="+job+" TimeLimit=5")
		assert.Equal(t, 0, code, "an ungated job is not the gate's: %s", out)
		out, code = g.sh(t, "scancel "+job)
		assert.Equal(t, 0, code, out)
		g.waitQueueEmpty(t, 30*time.Second)
	})
}
