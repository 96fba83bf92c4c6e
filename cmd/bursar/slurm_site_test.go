//go:build unix

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/internal/testlong"
)

// siteUsers are the Unix users of the site test and their Slurm accounts
// (slurm-local.sh's BURSAR_SLURM_USERS): root and alice may charge "sci",
// the campaign's account; bob belongs to "bio" only.
var siteUsers = []string{"root:sci", "alice:sci", "bob:bio"}

// startSlurmSite starts the cluster as a site runs one
// (scripts/slurm-local.sh BURSAR_SLURM_SITE=1, docs/cluster.md "A site's
// setup"): MariaDB, slurmdbd and the associations of siteUsers, enforced;
// 16 GRES GPUs on the node, the gate counting GPUs (UNIT=gpu) and the
// service its pool from sinfo; proctrack/cgroup; the gated partition
// "local" beside the ungated "free".
func startSlurmSite(t *testing.T) *slurmGate {
	t.Helper()
	testlong.Skip(t, "a Slurm cluster with MariaDB and slurmdbd (about a minute to start)")
	if os.Getenv("BURSAR_SLURM") != "1" {
		t.Skip("set BURSAR_SLURM=1 (and apt-get install --no-install-recommends mariadb-server slurmdbd)")
	}
	for _, b := range []string{"mariadbd", "slurmdbd", "sacctmgr", "useradd"} {
		if _, err := exec.LookPath(b); err != nil {
			if _, err := os.Stat(filepath.Join("/usr/sbin", b)); err != nil {
				t.Fatalf("%s not found: apt-get install --no-install-recommends mariadb-server slurmdbd", b)
			}
		}
	}
	for _, u := range siteUsers {
		name := strings.Split(u, ":")[0]
		if exec.Command("id", name).Run() != nil {
			if out, err := exec.Command("useradd", "--no-create-home", name).CombinedOutput(); err != nil {
				t.Fatalf("useradd %s: %v\n%s", name, err, out)
			}
		}
	}
	return startSlurmCluster(t, []string{"BURSAR_SLURM_SITE=1", "BURSAR_SLURM_CPUS=16", "BURSAR_SLURM_GPUS=16",
		"BURSAR_SLURM_UNIT=gpu", "BURSAR_SLURM_USERS=" + strings.Join(siteUsers, " ")},
		[]string{"--pool-from-slurm", "local"})
}

// as runs a shell line as Unix user u with the cluster's configuration.
func (g *slurmGate) as(t *testing.T, u, line string) (string, int) {
	t.Helper()
	return g.sh(t, "su "+u+" -s /bin/bash -c "+strconv.Quote(line))
}

// grantToken takes a lease of gpus GPUs for sci from the API and returns
// its request id and a token for Unix user u.
func (g *slurmGate) grantToken(t *testing.T, u string, gpus, seconds int) (int, string) {
	t.Helper()
	ctx := context.Background()
	acc, err := g.admin.Request(ctx, "sci", client.LeaseRequest{GPUs: gpus, Duration: seconds})
	require.NoError(t, err)
	_, err = g.admin.AwaitGrant(ctx, "sci", acc.RequestID)
	require.NoError(t, err)
	st, err := g.admin.SlurmTokenFor(ctx, "sci", acc.RequestID, u)
	require.NoError(t, err)
	return acc.RequestID, st.Token
}

// TestSlurmSite runs the gate on a site's setup (issue 35 item 4): the
// pool is the partition's GRES GPUs, the lease's GPUs reach accounting,
// an account the user has no association with is refused by slurmctld,
// the ungated partition runs without a lease, and a task that double-forks
// out of its job's process tree ends with the job (proctrack/cgroup).
func TestSlurmSite(t *testing.T) {
	g := startSlurmSite(t)
	ctx := context.Background()

	t.Run("the pool is the partition's GPUs", func(t *testing.T) {
		l, err := g.admin.Campaigns(ctx)
		require.NoError(t, err)
		assert.Equal(t, 16, l.Pool, "16 GRES GPUs on the node")
	})

	t.Run("a lease's GPUs reach accounting under its account", func(t *testing.T) {
		id, token := g.grantToken(t, "root", 2, 120)
		out, code := g.sh(t, "srun --comment="+token+" --gpus=3 -n 1 true")
		assert.NotEqual(t, 0, code)
		assert.Contains(t, out, "the job asks for 3 GPUs but lease")
		out, code = g.sh(t, "srun --comment="+token+" --gpus=2 -n 1 bash -c 'echo gpus=$CUDA_VISIBLE_DEVICES'")
		require.Equal(t, 0, code, out)
		assert.Contains(t, out, "gpus=0,1")
		_, err := g.admin.ReleaseLease(ctx, "sci", id)
		require.NoError(t, err)
		// slurmdbd records the job a moment after it ends.
		var rec string
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
			rec, _ = g.sh(t, "sacct -X -n -P -o account,alloctres,state")
			if strings.Contains(rec, "COMPLETED") {
				break
			}
		}
		assert.Contains(t, rec, "sci|")
		assert.Contains(t, rec, "gres/gpu=2", "accounting counts the lease's GPUs")
	})

	t.Run("an account without an association is refused; the token is not lost", func(t *testing.T) {
		// A token for bob, who has no association with sci (the
		// campaign's account): the gate passes the job (its user and
		// account are the token's), slurmctld refuses it. Once the site
		// adds the association, bob's job runs on the same lease: the
		// refused submission did not spend its token.
		acc, err := g.admin.Request(ctx, "sci", client.LeaseRequest{GPUs: 1, Duration: 180})
		require.NoError(t, err)
		_, err = g.admin.AwaitGrant(ctx, "sci", acc.RequestID)
		require.NoError(t, err)
		st, err := g.admin.SlurmTokenFor(ctx, "sci", acc.RequestID, "bob")
		require.NoError(t, err)
		line := "srun --comment=" + st.Token + " --gpus=1 -n 1 true"
		out, code := g.as(t, "bob", line)
		require.NotEqual(t, 0, code, out)
		assert.Contains(t, out, "Invalid account", "slurmctld, not the gate, refused it")
		out, code = g.sh(t, "sacctmgr -i add user bob Account=sci Cluster=bursar")
		require.Equal(t, 0, code, out)
		ran := false
		for end := time.Now().Add(20 * time.Second); !ran && time.Now().Before(end); time.Sleep(time.Second) {
			out, code = g.as(t, "bob", line)
			ran = code == 0
		}
		assert.True(t, ran, "the lease's token admitted no job after its refused submission:\n%s", out)
		_, err = g.admin.ReleaseLease(ctx, "sci", acc.RequestID)
		require.NoError(t, err)
	})

	t.Run("the ungated partition runs without a lease", func(t *testing.T) {
		out, code := g.as(t, "alice", "srun -p local -n 1 true")
		assert.NotEqual(t, 0, code)
		assert.Contains(t, out, "runs only jobs on a Bursar lease")
		out, code = g.as(t, "alice", "srun -p free -A sci -n 1 true")
		assert.Equal(t, 0, code, out)
	})

	t.Run("a double-forked task ends with its job", func(t *testing.T) {
		// The job's script starts a heartbeat in a new session (setsid,
		// then its parent exits: the task is init's child, outside the
		// job's process tree) and ends at once. Under proctrack/cgroup
		// Slurm still ends it with the job; under proctrack/linuxproc it
		// would beat on, holding the GPUs the broker then counts as free.
		hb := filepath.Join(g.dir, "heartbeat")
		script := filepath.Join(g.dir, "escape.sh")
		require.NoError(t, os.WriteFile(script, []byte("#!/bin/bash\n"+
			"( setsid bash -c 'while :; do date +%s%N > "+hb+"; sleep 0.2; done' & ) \n"+
			"sleep 2\n"), 0o755))
		lp := g.lease(t, g.srv, "--gpus", "1", "--duration", "120", "--", "sbatch", "-n", "1", "--gpus=1", "-o", "/dev/null", script)
		require.Equal(t, 0, lp.wait(t, 2*time.Minute), lp.stderr.String())
		g.waitQueueEmpty(t, 30*time.Second)
		first, err := os.ReadFile(hb)
		require.NoError(t, err, "the heartbeat ran while the job did")
		time.Sleep(2 * time.Second)
		last, err := os.ReadFile(hb)
		require.NoError(t, err)
		assert.Equal(t, string(first), string(last), "the escaped task outlived its job")
	})
}
