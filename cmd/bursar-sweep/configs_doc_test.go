package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/stretchr/testify/require"
)

// configsDoc is docs/configs.md by "## " section: the keys its tables
// document (the first cell of a row, when it holds one `key` and nothing
// else).
func configsDoc(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "configs.md"))
	require.NoError(t, err)
	cellRE := regexp.MustCompile("^`([^`]+)`$")
	doc := map[string][]string{}
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = h
			require.NotContains(t, doc, section, "docs/configs.md has two sections %q", section)
			doc[section] = []string{}
			continue
		}
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "|") || section == "" || len(cells) < 3 {
			continue
		}
		if m := cellRE.FindStringSubmatch(strings.TrimSpace(cells[1])); m != nil {
			doc[section] = append(doc[section], m[1])
		}
	}
	return doc
}

// TestConfigKeysAreDocumented: every key an experiment config, a study
// config or a scenario file may have is in its section of docs/configs.md,
// and every key the page documents is one the parsers accept, so the page
// stays true as the parsers change.
func TestConfigKeysAreDocumented(t *testing.T) {
	doc := configsDoc(t)
	sets := configs.KeySets()
	require.NotEmpty(t, sets)
	for _, set := range sets {
		documented, ok := doc[set.Section]
		require.True(t, ok, "docs/configs.md has no section %q", set.Section)
		require.NotEmpty(t, set.Keys, set.Section)
		for _, k := range set.Keys {
			require.Contains(t, documented, k, "key %s (%s) is not in docs/configs.md", k, set.Section)
		}
		for _, k := range documented {
			require.True(t, slices.Contains(set.Keys, k), "docs/configs.md documents %s under %q, which the parser does not accept there", k, set.Section)
		}
	}
}
