package yamlnode

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

func TestDescribe(t *testing.T) {
	for src, want := range map[string]string{
		"{a: 1}": "a mapping", "[1]": "a list", "x": `"x"`, "~": "nothing (null)", "true": "the boolean true", "12": "12",
	} {
		var doc yaml.Node
		require.NoError(t, yaml.Unmarshal([]byte(src), &doc))
		assert.Equal(t, want, Describe(doc.Content[0]), src)
	}
}
