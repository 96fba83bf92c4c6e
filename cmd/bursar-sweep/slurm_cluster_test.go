package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSlurmClusterShardsMatchOneProcess runs `paper` and then a small
// `trace` for real through a one-node Slurm cluster on localhost
// (scripts/slurm-local.sh): the script from slurm-script is submitted with
// sbatch, its array tasks (3 for paper, 4 for trace) each run a shard,
// the dependent merge job writes the outputs, and these must equal those
// of one process byte for byte. It logs the wall times.
// It needs root and Debian's slurmctld, slurmd, slurm-client and munge,
// so it runs only with BURSAR_SLURM=1 (.ci/run sets it and installs them).
func TestSlurmClusterShardsMatchOneProcess(t *testing.T) {
	dir := slurmTestDir(t, "run paper on a one-node Slurm cluster")
	bin := filepath.Join(dir, "bursar-sweep")
	// One binary for the array tasks, the merge and the reference run, so
	// that the shards' program version is the reference's.
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "slurm-local.sh"))
	require.NoError(t, err)
	state := filepath.Join(dir, "slurm")
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "SLURM_CONF="+filepath.Join(state, "slurm.conf"))
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	start := time.Now()
	run(script, "start", state)
	t.Logf("cluster up in %.1f s", time.Since(start).Seconds())
	t.Cleanup(func() {
		out, err := exec.Command(script, "stop", state).CombinedOutput()
		if err != nil {
			t.Errorf("stopping the cluster: %v\n%s", err, out)
		}
	})

	// viaSlurm runs command with flags in one process and as a job array
	// of shards tasks with its merge job, compares files byte for byte,
	// and returns both wall times.
	viaSlurm := func(command string, flags []string, shards int, files ...string) (oneProcess, viaSlurm time.Duration) {
		t.Helper()
		flags = append([]string{command, "--quiet"}, flags...)
		whole := filepath.Join(dir, command+"-whole")
		start := time.Now()
		run(bin, append(flags, "--out", whole)...)
		oneProcess = time.Since(start)

		sharded := filepath.Join(dir, command+"-sharded")
		jobScript := run(bin, append([]string{"slurm-script", "--shards", strconv.Itoa(shards), "--workdir", dir}, append(flags, "--out", sharded)...)...)
		jobFile := filepath.Join(dir, command+".sbatch")
		require.NoError(t, os.WriteFile(jobFile, []byte(jobScript), 0o644))
		start = time.Now()
		// Poll squeue rather than sbatch --wait, whose own polling backs
		// off to several seconds and would be most of what is measured.
		// The merge job is submitted by array task 0, so it is in the
		// queue before the array has left it.
		run("sbatch", "--parsable", jobFile)
		deadline := time.Now().Add(3 * time.Minute)
		job := "bursar-" + command
		for strings.TrimSpace(run("squeue", "-h", "-n", job+","+job+"-merge", "-o", "%i")) != "" {
			if time.Now().After(deadline) {
				t.Fatalf("jobs are still queued after 3 minutes:\n%s", run("squeue"))
			}
			time.Sleep(50 * time.Millisecond)
		}
		viaSlurm = time.Since(start)
		if _, err := os.Stat(filepath.Join(sharded, "summary.json")); err != nil {
			logs, _ := filepath.Glob(filepath.Join(dir, job+"-*.out"))
			var b bytes.Buffer
			for _, l := range logs {
				data, _ := os.ReadFile(l)
				fmt.Fprintf(&b, "== %s\n%s\n", l, data)
			}
			t.Fatalf("the merge wrote no summary.json: %v\n%s", err, b.String())
		}
		assertSameFiles(t, whole, sharded, files...)
		return oneProcess, viaSlurm
	}

	one, slurm := viaSlurm("paper", nil, 3, mergedFiles...)
	t.Logf("paper (105 runs): one process (2 workers) %.2f s; 3 Slurm array tasks (1 CPU each) and the merge job %.2f s from submit to outputs",
		one.Seconds(), slurm.Seconds())
	// A trace study's shard set: four policies on three days of the
	// embedded excerpt, 4 array tasks.
	one, slurm = viaSlurm("trace", []string{"--window", "21772800:22000000", "--policies", "fifo,static,quota,bursar"}, 4,
		"summary.json", "runs.csv", "fig_trace.png")
	t.Logf("trace (4 policies, 3 days): one process (2 workers) %.2f s; 4 Slurm array tasks and the merge job %.2f s from submit to outputs",
		one.Seconds(), slurm.Seconds())
}

// slurmTestDir skips the test unless BURSAR_SLURM=1 (it needs root and
// Debian's Slurm packages; what says why) and returns a folder for the
// cluster's state, removed at the end. Not t.TempDir: munged wants every
// folder above its socket open to all (mode 755), and t.TempDir's parent
// is 700.
func slurmTestDir(t *testing.T, what string) string {
	t.Helper()
	if os.Getenv("BURSAR_SLURM") != "1" {
		t.Skip("set BURSAR_SLURM=1 to " + what + " (root; apt-get install --no-install-recommends slurmctld slurmd slurm-client munge)")
	}
	dir, err := os.MkdirTemp("", "bursar-slurm-test-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
