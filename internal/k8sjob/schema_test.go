//go:build k8sschema

package k8sjob

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestManifestDecodesIntoUpstreamTypes decodes the manifest strictly (an
// unknown or misplaced field is an error) into the upstream batchv1.Job and
// checks the Indexed Job and the merge Job field by field. Run with
// `go test -tags k8sschema ./internal/k8sjob/` (.ci/run does).
func TestManifestDecodesIntoUpstreamTypes(t *testing.T) {
	out, err := Manifest("# header\n", Sweep{
		Name: "bursar-paper", Command: "paper", Args: []string{"--quick"}, Shards: 4, Out: "results/paper",
		Image: "registry.example/bursar:1", Binary: "bursar-sweep", Claim: "bursar-data", Mount: "/data",
	})
	require.NoError(t, err)
	docs := strings.Split(out, "\n---\n")
	require.Len(t, docs, 2)

	var shards, merge batchv1.Job
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[0]), &shards))
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), &merge))

	assert.Equal(t, "batch/v1", shards.APIVersion)
	assert.Equal(t, "Job", shards.Kind)
	assert.Equal(t, "bursar-paper", shards.Name)
	assert.Equal(t, "bursar-paper", shards.Labels["app.kubernetes.io/instance"])
	require.NotNil(t, shards.Spec.CompletionMode)
	assert.Equal(t, batchv1.IndexedCompletion, *shards.Spec.CompletionMode)
	assert.Equal(t, int32(4), *shards.Spec.Completions)
	assert.Equal(t, int32(4), *shards.Spec.Parallelism)
	assert.Equal(t, int32(1), *shards.Spec.BackoffLimit)
	pod := shards.Spec.Template.Spec
	assert.Equal(t, corev1.RestartPolicyNever, pod.RestartPolicy)
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	assert.Equal(t, "registry.example/bursar:1", c.Image)
	assert.Equal(t, []string{"bursar-sweep"}, c.Command)
	assert.Equal(t, []string{"paper", "--quick", "--workers=1", "--shard=$(JOB_COMPLETION_INDEX)/4", "--out=/data/results/paper/shards"}, c.Args)
	require.Len(t, c.Env, 1)
	assert.Equal(t, "JOB_COMPLETION_INDEX", c.Env[0].Name)
	assert.Equal(t, "metadata.annotations['batch.kubernetes.io/job-completion-index']", c.Env[0].ValueFrom.FieldRef.FieldPath)
	assert.Equal(t, "/data", c.VolumeMounts[0].MountPath)
	assert.Equal(t, "data", c.VolumeMounts[0].Name)
	require.Len(t, pod.Volumes, 1)
	assert.Equal(t, "bursar-data", pod.Volumes[0].PersistentVolumeClaim.ClaimName)

	assert.Equal(t, "bursar-paper-merge", merge.Name)
	assert.Nil(t, merge.Spec.CompletionMode)
	assert.Equal(t, int32(1), *merge.Spec.Completions)
	assert.Equal(t, []string{"merge", "--out", "/data/results/paper", "/data/results/paper/shards"}, merge.Spec.Template.Spec.Containers[0].Args)
}
