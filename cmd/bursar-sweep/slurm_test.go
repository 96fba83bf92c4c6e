package main

import (
	"github.com/bursar-hpc/bursar/internal/slurmjob"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSlurmScript(t *testing.T) {
	out, err := runSweepApp(t, "slurm-script", "--shards", "3", "--binary", "/opt/bursar sweep", "--workdir", "/scratch/me",
		"--time", "30:00", "--cpus-per-task", "2", "paper", "--nseeds", "5", "--workers", "8", "--out", "res/paper")
	require.NoError(t, err, out)
	for _, want := range []string{
		"#!/bin/bash\n",
		"#SBATCH --array=0-2\n",
		"#SBATCH --cpus-per-task=2\n",
		"#SBATCH --chdir=/scratch/me\n",
		"#SBATCH --time=30:00\n",
		"BURSAR='/opt/bursar sweep'\n",
		"OUT=res/paper\n",
		`--dependency=afterok:"${SLURM_ARRAY_JOB_ID}" --kill-on-invalid-dep=yes`,
		`--wrap='exec '\''/opt/bursar sweep'\'' merge --out res/paper res/paper/shards'`,
		`exec "$BURSAR" paper --nseeds 5 --workers="${SLURM_CPUS_PER_TASK:-1}" --shard="${SLURM_ARRAY_TASK_ID}/3" --out="$OUT/shards"` + "\n",
	} {
		assert.Contains(t, out, want)
	}
	// The user's --workers and --out are replaced, not repeated.
	assert.NotContains(t, out, "--workers 8")
	assert.Equal(t, 1, strings.Count(out, "--out=\"$OUT/shards\""))

	for args, want := range map[string]string{
		"":                                  "needs the sweep command",
		"run":                               `"run" is not a sweep command`,
		"paper --shard 0/2":                 "the job sets --shard itself",
		"sweep --config x.yaml":             "give the sweep an --out folder",
		"--shards 0 paper":                  "--shards must be at least 1",
		"--k8s paper":                       "--k8s needs --image",
		"--k8s --image i --mount rel paper": "--mount must be an absolute path",
	} {
		_, err := runSweepApp(t, append([]string{"slurm-script"}, strings.Fields(args)...)...)
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), want, args)
	}
}

// TestSlurmScriptSiteOptions: a site that bills by account, admits by
// QoS and caps memory gets them in the script: account and QoS on the
// array and the merge job, memory and any further option on the array
// (issue 34 §11).
func TestSlurmScriptSiteOptions(t *testing.T) {
	out, err := runSweepApp(t, "slurm-script", "--shards", "2", "--binary", "/opt/bursar-sweep", "--workdir", "/scratch/me",
		"--account", "proj42", "--qos", "high", "--mem", "4G", "--sbatch=--constraint=a100", "--sbatch=--mail-type=END",
		"paper", "--out", "res/paper")
	require.NoError(t, err, out)
	for _, want := range []string{
		"#SBATCH --account=proj42\n", "#SBATCH --qos=high\n", "#SBATCH --mem=4G\n",
		"#SBATCH --constraint=a100\n", "#SBATCH --mail-type=END\n",
		"--account=proj42 --qos=high --wrap=",
	} {
		assert.Contains(t, out, want)
	}
	_, merge, _ := strings.Cut(out, "sbatch --parsable")
	merge, _, _ = strings.Cut(merge, "\nfi\n")
	assert.NotContains(t, merge, "--mem", "the merge job takes the default memory")
	assert.NotContains(t, merge, "constraint")

	_, err = runSweepApp(t, "slurm-script", "--binary", "/b", "--sbatch", "constraint=a100", "paper", "--out", "x")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "give one long sbatch option")
}

// TestK8sManifest: --k8s prints the two Jobs (internal/k8sjob, whose
// k8sschema-tagged test decodes them into the upstream types) after a
// header saying how to apply them.
func TestK8sManifest(t *testing.T) {
	out, err := runSweepApp(t, "slurm-script", "--k8s", "--image", "registry.example/bursar:1", "--shards", "4",
		"paper", "--quick", "--out", "results/paper")
	require.NoError(t, err, out)
	assert.Contains(t, out, "Not run on a live cluster")
	assert.Contains(t, out, "kubectl wait --for=condition=complete --timeout=24h job/bursar-paper\n")
	assert.Contains(t, out, "job/bursar-paper-merge\n")
	require.Len(t, strings.Split(out, "\n---\n"), 2)
	assert.Contains(t, out, "completionMode: Indexed\n")
	assert.Contains(t, out, "- --out=/data/results/paper/shards\n")
	assert.Contains(t, out, "image: registry.example/bursar:1\n")
}

// TestSlurmScriptRefusesATemporaryBinary: under go run (or go test) the
// binary lives in a go-build folder that is deleted on exit; the script
// would name a path that no longer exists, so it is refused unless --binary
// is given.
func TestSlurmScriptRefusesATemporaryBinary(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	if !slurmjob.UnderGoBuildDir(exe) {
		t.Skipf("this test binary (%s) is not in a go-build folder", exe)
	}
	_, err = runSweepApp(t, "slurm-script", "--shards", "2", "paper")
	require.ErrorContains(t, err, "a temporary build of go run")
	require.ErrorContains(t, err, "make build")
	assert.True(t, slurmjob.UnderGoBuildDir("/tmp/go-build123/b001/exe/bursar-sweep"))
	assert.False(t, slurmjob.UnderGoBuildDir("/opt/bursar/bin/bursar-sweep"))
}
