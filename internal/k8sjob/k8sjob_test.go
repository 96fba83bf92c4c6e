package k8sjob

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// TestManifestShape checks the two documents without the upstream types
// (schema_test.go, tag k8sschema, checks them against batchv1.Job): an
// absolute --out stays, a relative one goes under the mount, and the
// shard index reaches the args through the downward API.
func TestManifestShape(t *testing.T) {
	for out, want := range map[string]string{"res/p": "/mnt/v/res/p", "/abs/p": "/abs/p"} {
		m, err := Manifest("# h\n", Sweep{Name: "bursar-trace", Command: "trace", Args: []string{"--policies", "fifo"},
			Shards: 3, Out: out, Image: "img", Binary: "/bin/bs", Claim: "c", Mount: "/mnt/v"})
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(m, "# h\n"))
		docs := strings.Split(m, "\n---\n")
		require.Len(t, docs, 2)
		var shards, merge Job
		require.NoError(t, yaml.Unmarshal([]byte(docs[0]), &shards))
		require.NoError(t, yaml.Unmarshal([]byte(docs[1]), &merge))
		assert.Equal(t, "Indexed", shards.Spec.CompletionMode)
		assert.Equal(t, int32(3), *shards.Spec.Parallelism)
		assert.Equal(t, []string{"trace", "--policies", "fifo", "--workers=1", "--shard=$(JOB_COMPLETION_INDEX)/3", "--out=" + want + "/shards"},
			shards.Spec.Template.Spec.Containers[0].Args)
		assert.Equal(t, []string{"merge", "--out", want, want + "/shards"}, merge.Spec.Template.Spec.Containers[0].Args)
		assert.Empty(t, merge.Spec.CompletionMode)
		assert.Equal(t, "bursar-trace-merge", merge.Metadata.Name)
	}
}
