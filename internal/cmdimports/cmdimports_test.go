package cmdimports

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRepoEveryBuild: the imports of files for every system count, test
// files' do not, and packages outside the module are not listed.
func TestRepoEveryBuild(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.go":       "package main\n\nimport (\n\t\"fmt\"\n\n\t\"" + Module + "/service\"\n)\n\nvar _ = fmt.Sprint\nvar _ service.Options\n",
		"b_unix.go":  "//go:build unix\n\npackage main\n\nimport _ \"" + Module + "/lease\"\n",
		"c_other.go": "//go:build !unix\n\npackage main\n\nimport _ \"" + Module + "/policy\"\n",
		"a_test.go":  "package main\n\nimport _ \"" + Module + "/engine\"\n",
	}
	for name, text := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600))
	}
	got, err := Repo(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"lease", "policy", "service"}, got)
}
