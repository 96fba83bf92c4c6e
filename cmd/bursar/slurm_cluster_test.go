//go:build unix

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/service"
)

// slurmGate is a one-node Slurm cluster (scripts/slurm-local.sh, 16 CPUs
// standing in for GPUs) whose slurmctld loads Bursar's job_submit gate,
// and a Bursar service signing lease tokens with the gate's key.
type slurmGate struct {
	dir, conf, key string
	srv            *proc
	admin          *client.Client
}

// startSlurmGate starts the cluster with the gate and a service at speed 1
// (a broker second is a wall-clock second) with campaign "sci".
func startSlurmGate(t *testing.T) *slurmGate {
	t.Helper()
	if os.Getenv("BURSAR_SLURM") != "1" {
		t.Skip("set BURSAR_SLURM=1 to gate a one-node Slurm cluster (root; apt-get install --no-install-recommends slurmctld slurmd slurm-client munge slurm-wlm-basic-plugins)")
	}
	// Not t.TempDir: munged wants every folder above its socket mode 755.
	dir, err := os.MkdirTemp("", "bursar-slurm-gate-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	g := &slurmGate{dir: dir, conf: filepath.Join(dir, "slurm", "slurm.conf"), key: filepath.Join(dir, "slurm.key")}
	raw := make([]byte, 32)
	_, err = rand.Read(raw)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(g.key, []byte(hex.EncodeToString(raw)+"\n"), 0o600))
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "slurm-local.sh"))
	require.NoError(t, err)
	state := filepath.Join(dir, "slurm")
	start := exec.Command(script, "start", state)
	start.Env = append(os.Environ(), "BURSAR_SLURM_CPUS=16", "BURSAR_SLURM_GATE_BIN="+bin, "BURSAR_SLURM_GATE_KEY="+g.key)
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("starting the cluster: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command(script, "stop", state).CombinedOutput(); err != nil {
			t.Errorf("stopping the cluster: %v\n%s", err, out)
		}
	})
	g.srv, g.admin = g.serve(t)
	return g
}

// serve starts a service with the gate's key and registers "sci".
func (g *slurmGate) serve(t *testing.T) (*proc, *client.Client) {
	t.Helper()
	p := startServe(t, cleanEnv(), "--admin-token-file", tokenFile(t), "--speed", "1", "--pool", "16", "--slurm-key-file", g.key)
	admin, err := client.New(p.url, testToken)
	require.NoError(t, err)
	_, err = admin.Register(context.Background(), client.CampaignSpec{Name: "sci", Budget: 1e9, Guaranteed: 8, Sustained: 16,
		BurstCeiling: 16, Bucket: 1e7, Class: client.ClassDeadline})
	require.NoError(t, err)
	return p, admin
}

func (g *slurmGate) env(extra ...string) []string {
	return cleanEnv(append([]string{"SLURM_CONF=" + g.conf}, extra...)...)
}

// sh runs a shell line with the cluster's configuration (bounded) and
// returns its combined output and exit status.
func (g *slurmGate) sh(t *testing.T, line string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Env, cmd.Dir = g.env(), g.dir
	out, _ := cmd.CombinedOutput()
	return string(out), cmd.ProcessState.ExitCode()
}

// lease starts `bursar lease --campaign sci --slurm args...` with the
// admin token as the campaign's (the administrator may act for any).
func (g *slurmGate) lease(t *testing.T, srv *proc, args ...string) *leaseProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"lease", "--server", srv.url, "--campaign", "sci", "--slurm"}, args...)...)
	cmd.Env, cmd.Dir = g.env("BURSAR_TOKEN="+testToken), g.dir
	return startLeaseCmd(t, cmd)
}

// jobs lists the queue (pending, running, completing): id|comment lines.
func (g *slurmGate) jobs(t *testing.T) string {
	out, code := g.sh(t, "squeue -h -o '%i|%k|%T'")
	require.Equal(t, 0, code, out)
	return strings.TrimSpace(out)
}

// waitQueueEmpty waits (bounded) until no job is queued.
func (g *slurmGate) waitQueueEmpty(t *testing.T, within time.Duration) {
	t.Helper()
	end := time.Now().Add(within)
	for g.jobs(t) != "" {
		if time.Now().After(end) {
			t.Fatalf("jobs still queued after %v:\n%s", within, g.jobs(t))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitJobRunning waits (bounded) for one running job and returns its id.
func (g *slurmGate) waitJobRunning(t *testing.T, within time.Duration) string {
	t.Helper()
	end := time.Now().Add(within)
	for {
		for _, l := range strings.Split(g.jobs(t), "\n") {
			if f := strings.Split(l, "|"); len(f) == 3 && f[2] == "RUNNING" {
				return f[0]
			}
		}
		if time.Now().After(end) {
			t.Fatalf("no job running after %v:\n%s", within, g.jobs(t))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSlurmGate runs each leak of issue 23 against the real cluster with
// the gate loaded: a job without a lease (srun, sbatch) or with a forged
// one is refused; a job larger than its lease is refused; a batch job holds
// its lease for its whole life and gets the notice's SIGTERM in its own
// trap; kill -9 of the wrapper and an outage of the service do not extend
// a job past its lease.
func TestSlurmGate(t *testing.T) {
	g := startSlurmGate(t)
	jobScript := filepath.Join(g.dir, "job.sh")
	require.NoError(t, os.WriteFile(jobScript, []byte("#!/bin/bash\n"+
		"trap 'echo TERM > "+g.dir+"/trap.$SLURM_JOB_ID; exit 3' TERM\n"+
		"echo started > "+g.dir+"/started.$SLURM_JOB_ID\n"+
		"for i in $(seq ${1:-600}); do sleep 0.1; done\n"), 0o755))

	t.Run("bypass refused", func(t *testing.T) {
		out, code := g.sh(t, "srun -n 1 true")
		assert.NotEqual(t, 0, code)
		assert.Contains(t, out, "runs only jobs on a Bursar lease")
		out, code = g.sh(t, "sbatch --wrap true")
		assert.NotEqual(t, 0, code)
		assert.Contains(t, out, "runs only jobs on a Bursar lease")
		forged := service.SignSlurmToken([]byte("another key, 32 bytes or longer....."),
			service.SlurmLease{Lease: 1, Campaign: "sci", GPUs: 16, Expires: time.Now().Add(time.Hour).Unix()})
		out, code = g.sh(t, "srun --comment="+forged+" -n 1 true")
		assert.NotEqual(t, 0, code)
		assert.Contains(t, out, "signature does not match")
		assert.Empty(t, g.jobs(t))
	})

	t.Run("size enforced", func(t *testing.T) {
		lp := g.lease(t, g.srv, "--gpus", "2", "--duration", "60", "--", "srun", "-n", "4", "true")
		assert.NotEqual(t, 0, lp.wait(t, time.Minute))
		assert.Contains(t, lp.stderr.String(), "asks for 4 CPUs but lease")
		lp = g.lease(t, g.srv, "--gpus", "2", "--duration", "60", "--", "srun", "-n", "2", "--account", "other", "true")
		assert.NotEqual(t, 0, lp.wait(t, time.Minute))
		assert.Contains(t, lp.stderr.String(), "must run under account sci")
		lp = g.lease(t, g.srv, "--gpus", "2", "--duration", "60", "--", "srun", "-n", "2", "true")
		assert.Equal(t, 0, lp.wait(t, time.Minute), lp.stderr.String())
	})

	t.Run("sbatch held for the job's life, TERM at the notice reaches its trap", func(t *testing.T) {
		// A 12 s lease with a 6 s notice: the job (60 s of sleep) gets
		// SIGTERM through Slurm at 6 s and its trap exits 3.
		start := time.Now()
		lp := g.lease(t, g.srv, "--gpus", "2", "--duration", "12", "--expiry-notice", "6", "--", "sbatch", "-n", "1", "-o", "/dev/null", jobScript)
		assert.Equal(t, 0, lp.wait(t, time.Minute), lp.stderr.String())
		took := time.Since(start)
		assert.Greater(t, took, 5*time.Second, "the wrapper held the lease until the job ended, not until sbatch returned")
		traps, _ := filepath.Glob(filepath.Join(g.dir, "trap.*"))
		assert.Len(t, traps, 1, "the job's own TERM trap ran\n%s", lp.stderr)
		assert.Empty(t, g.jobs(t), "no job outlives the wrapper")
		ls, err := g.admin.Leases(context.Background(), "sci")
		require.NoError(t, err)
		assert.Empty(t, ls.Leases, "the lease was released when the job ended")
	})

	t.Run("kill -9 of the wrapper does not extend the job", func(t *testing.T) {
		lp := g.lease(t, g.srv, "--gpus", "2", "--duration", "300", "--kill-after", "2s", "--", "sbatch", "-n", "1", "-o", "/dev/null", jobScript)
		g.waitJobRunning(t, time.Minute)
		time.Sleep(time.Second) // the wrapper is tracking the job
		require.NoError(t, lp.cmd.Process.Signal(syscall.SIGKILL))
		lp.wait(t, 10*time.Second)
		// The watchdog signals through Slurm, waits --kill-after, cancels.
		g.waitQueueEmpty(t, 30*time.Second)
	})

	t.Run("a service outage does not extend the lease", func(t *testing.T) {
		srv, _ := g.serve(t)
		start := time.Now()
		lp := g.lease(t, srv, "--gpus", "2", "--duration", "8", "--expiry-notice", "0", "--", "sbatch", "-n", "1", "-o", "/dev/null", jobScript)
		g.waitJobRunning(t, time.Minute)
		srv.signal(t, syscall.SIGKILL) // the service is gone for the rest of the lease
		lp.wait(t, time.Minute)
		g.waitQueueEmpty(t, 10*time.Second)
		assert.Less(t, time.Since(start), 14*time.Second, "the job ended at the lease's local deadline\n%s", lp.stderr)
	})

	var b bytes.Buffer
	if data, err := os.ReadFile(filepath.Join(g.dir, "slurm", "jobcomp.txt")); err == nil {
		b.Write(data)
	}
	t.Logf("jobcomp:\n%s", b.String())
}
