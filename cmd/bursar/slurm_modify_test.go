//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSlurmGateChanges (issue 35 item 1, "Modification"): for a user who
// is not root, SlurmUser or an operator, slurm_job_modify allows only the
// listed harmless changes to a gated job (name, nice, mail, dependency,
// hold and release) and refuses a change to any other field of the job,
// not only to those a list of refusals named: at the parent
// MinTmpDiskNode and Switches were accepted on a pending gated job. The
// allowed changes still pass. And a job on several nodes (-N 2, or -w
// with two nodes) is judged by the gate before the token is spent (as
// at the parent, where -N 2 was counted through min_cpus).
func TestSlurmGateChanges(t *testing.T) {
	g := startSlurmGate(t)
	ctx := context.Background()
	as := "runuser -u nobody -- "

	id, tok := g.tokenFor(t, 2, 120, "nobody")
	out, code := g.sh(t, as+"sbatch --parsable --hold -n 1 -o /dev/null --comment="+tok+" --wrap 'sleep 1'")
	require.Equal(t, 0, code, out)
	job := strings.TrimSpace(out)
	for _, change := range []string{"MinTmpDiskNode=1", "Switches=1", "TimeLimit=60", "Partition=free"} {
		out, code := g.sh(t, as+"scontrol update JobId="+job+" "+change)
		assert.NotEqual(t, 0, code, "%s: %s", change, out)
	}
	b, err := os.ReadFile(filepath.Join(g.dir, "slurm", "slurmctld.log"))
	require.NoError(t, err)
	for _, field := range []string{"MinTmpDiskNode", "Switches"} {
		assert.Contains(t, string(b), "keeps its limits, size, account and partition: "+field+" cannot be changed")
	}
	for _, change := range []string{"Name=renamed", "Nice=10", "MailType=END", "MailUser=nobody", "Dependency="} {
		out, code := g.sh(t, as+"scontrol update JobId="+job+" "+change)
		assert.Equal(t, 0, code, "%s is allowed: %s", change, out)
	}
	out, code = g.sh(t, as+"scontrol release "+job)
	assert.Equal(t, 0, code, "release is allowed: %s", out)
	out, code = g.sh(t, as+"scontrol hold "+job)
	assert.Equal(t, 0, code, "hold is allowed: %s", out)
	out, _ = g.sh(t, "scontrol show job "+job)
	assert.Contains(t, out, "JobName=renamed")
	assert.Contains(t, out, "Nice=10")
	assert.Contains(t, out, "TimeLimit=00:02:00", "the time limit stays the lease's (120 s: 2 minutes)")
	out, code = g.sh(t, "scancel "+job)
	require.Equal(t, 0, code, out)
	_, err = g.admin.ReleaseLease(ctx, "sci", id)
	require.NoError(t, err)
	g.waitQueueEmpty(t, 30*time.Second)

	// Nodes: -N 2 is at least 2 CPUs (the client also sets min_cpus to
	// the nodes, which the parent counted already), and -w with two nodes
	// is refused by name, each before the token is spent.
	_, tok = g.token(t, 1, 120)
	g.refused(t, "sbatch -N 2 -o /dev/null --comment="+tok+" --wrap true", "the job asks for 2 CPUs but lease")
	g.refused(t, "sbatch -w vm,nosuchnode -o /dev/null --comment="+tok+" --wrap true", "-w/--nodelist with several nodes (give -N)")
	out, code = g.sh(t, "srun -n 1 --comment="+tok+" true")
	assert.Equal(t, 0, code, "the token was not spent: %s", out)
}
