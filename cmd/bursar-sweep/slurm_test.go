package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
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

// TestK8sManifestDecodesBack decodes the --k8s output into the upstream
// API types, strictly (an unknown field is an error), and checks the
// Indexed Job and the merge Job.
func TestK8sManifestDecodesBack(t *testing.T) {
	out, err := runSweepApp(t, "slurm-script", "--k8s", "--image", "registry.example/bursar:1", "--shards", "4",
		"paper", "--quick", "--out", "results/paper")
	require.NoError(t, err, out)
	assert.Contains(t, out, "Not run on a live cluster")
	docs := strings.Split(out, "\n---\n")
	require.Len(t, docs, 2)

	var shards, merge batchv1.Job
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[0]), &shards))
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), &merge))

	assert.Equal(t, "batch/v1", shards.APIVersion)
	assert.Equal(t, "Job", shards.Kind)
	assert.Equal(t, "bursar-paper", shards.Name)
	require.NotNil(t, shards.Spec.CompletionMode)
	assert.Equal(t, batchv1.IndexedCompletion, *shards.Spec.CompletionMode)
	assert.Equal(t, int32(4), *shards.Spec.Completions)
	assert.Equal(t, int32(4), *shards.Spec.Parallelism)
	pod := shards.Spec.Template.Spec
	assert.Equal(t, corev1.RestartPolicyNever, pod.RestartPolicy)
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	assert.Equal(t, "registry.example/bursar:1", c.Image)
	assert.Equal(t, []string{"bursar-sweep"}, c.Command)
	assert.Equal(t, []string{"paper", "--quick", "--workers=1", "--shard=$(JOB_COMPLETION_INDEX)/4", "--out=/data/results/paper/shards"}, c.Args)
	require.Len(t, c.Env, 1)
	assert.Equal(t, "metadata.annotations['batch.kubernetes.io/job-completion-index']", c.Env[0].ValueFrom.FieldRef.FieldPath)
	assert.Equal(t, "/data", c.VolumeMounts[0].MountPath)
	assert.Equal(t, "bursar-data", pod.Volumes[0].PersistentVolumeClaim.ClaimName)

	assert.Equal(t, "bursar-paper-merge", merge.Name)
	assert.Nil(t, merge.Spec.CompletionMode)
	assert.Equal(t, []string{"merge", "--out", "/data/results/paper", "/data/results/paper/shards"}, merge.Spec.Template.Spec.Containers[0].Args)
}
