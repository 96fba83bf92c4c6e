package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// analysisBlocks are docs/analysis.md's fenced code blocks in language
// lang, less the ones marked no-test (they read folders that are not
// committed, or need a library the machine may lack).
func analysisBlocks(t *testing.T, lang string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "analysis.md"))
	require.NoError(t, err)
	re := regexp.MustCompile("(?ms)^```" + lang + "\n(.*?)^```$")
	var blocks []string
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		blocks = append(blocks, m[1])
	}
	require.NotEmpty(t, blocks, "docs/analysis.md has no tested %s example", lang)
	return blocks
}

// findTool is the first of candidates that runs check without error, or
// "" when none does.
func findTool(check []string, candidates ...string) string {
	for _, c := range candidates {
		if exec.Command(c, check...).Run() == nil {
			return c
		}
	}
	return ""
}

// TestAnalysisExamplesRun: every tested pandas and R example of
// docs/analysis.md runs on the committed outputs and prints something,
// where Python with pandas and R with jsonlite are on the machine
// (issue 34 §12). Skipped for a language whose tools are missing.
func TestAnalysisExamplesRun(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, c := range []struct {
		lang, why string
		tool      string
		args      func(code string) []string
	}{
		{"python", "Python 3 with pandas", findTool([]string{"-c", "import pandas"}, "python3", "/usr/bin/python3"),
			func(code string) []string { return []string{"-c", code} }},
		{"r", "R with jsonlite", findTool([]string{"-e", "library(jsonlite)"}, "Rscript"),
			func(code string) []string { return []string{"-e", code} }},
	} {
		t.Run(c.lang, func(t *testing.T) {
			blocks := analysisBlocks(t, c.lang)
			if c.tool == "" {
				t.Skipf("no %s here", c.why)
			}
			for i, code := range blocks {
				cmd := exec.Command(c.tool, c.args(code)...)
				cmd.Dir = root
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, "%s example %d:\n%s\n%s", c.lang, i+1, code, out)
				require.NotEmpty(t, strings.TrimSpace(string(out)), "%s example %d printed nothing", c.lang, i+1)
				t.Logf("%s example %d:\n%s", c.lang, i+1, out)
			}
		})
	}
}
