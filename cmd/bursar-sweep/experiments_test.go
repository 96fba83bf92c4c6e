package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runApp runs bursar-sweep in process and returns its console output.
func runSweepApp(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	app := newApp(policies.Default)
	app.Writer = &out
	app.ErrWriter = &out
	err := app.Run(append([]string{"bursar-sweep"}, args...))
	return out.String(), err
}

func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v))
}

func TestPaperQuickWritesDataTablesAndFigures(t *testing.T) {
	dir := t.TempDir()
	console, err := runSweepApp(t, "paper", "--quick", "--quiet", "--workers", "2", "--out", dir)
	require.NoError(t, err, console)

	var summary map[string][]map[string]any
	readJSONFile(t, filepath.Join(dir, "summary.json"), &summary)
	assert.Len(t, summary, 5)
	for key, n := range map[string]int{"headroom": 3, "grace": 3, "overbooking": 3, "bucket": 3, "bootstrap": 3} {
		assert.Len(t, summary[key], n, key)
	}

	f, err := os.Open(filepath.Join(dir, "runs.csv"))
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	assert.Len(t, rows, 1+18)

	var lats []map[string]any
	readJSONFile(t, filepath.Join(dir, "latencies.json"), &lats)
	assert.Len(t, lats, 18)

	for _, title := range []string{"backfill headroom", "preemption grace", "overbooking:", "bucket:"} {
		assert.Contains(t, console, title, "the four summary tables are printed")
	}

	// The figures, at the pixel sizes figures/doc.go documents (10×4.5
	// in and 6.5×4.5 in at 150 dpi).
	for name, px := range map[string][2]int{
		"fig_latency_price.png": {1500, 675}, "fig_overbooking.png": {975, 675}, "fig_bucket.png": {975, 675},
	} {
		f, err := os.Open(filepath.Join(dir, name))
		require.NoError(t, err, name)
		img, err := png.Decode(f)
		f.Close()
		require.NoError(t, err, name)
		assert.Equal(t, px[0], img.Bounds().Dx(), name)
		assert.Equal(t, px[1], img.Bounds().Dy(), name)
	}
}

func TestSingleExperimentWritesOnlyItsKeysAndFigure(t *testing.T) {
	dir := t.TempDir()
	console, err := runSweepApp(t, "bucket", "--quick", "--quiet", "--format", "svg", "--out", dir)
	require.NoError(t, err, console)
	var summary map[string]any
	readJSONFile(t, filepath.Join(dir, "summary.json"), &summary)
	assert.ElementsMatch(t, []string{"bucket", "bootstrap"}, mapKeys(summary))
	assert.Equal(t, []any{map[string]any{"experiment": "bucket", "seed": 1.0, "resamples": 2000.0}}, summary["bootstrap"])
	svg, err := os.ReadFile(filepath.Join(dir, "fig_bucket.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg[:min(len(svg), 200)]), "<svg")
	assert.NoFileExists(t, filepath.Join(dir, "fig_latency_price.svg"))
}

func mapKeys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestFigureFailureComesAfterTheData(t *testing.T) {
	dir := t.TempDir()
	// A folder where the figure should go makes drawing fail.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "fig_overbooking.png", "x"), 0o755))
	_, err := runSweepApp(t, "overbooking", "--quick", "--quiet", "--out", dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fig_overbooking.png")
	assert.Contains(t, err.Error(), "data files are in")
	for _, name := range []string{"summary.json", "runs.csv", "latencies.json"} {
		assert.FileExists(t, filepath.Join(dir, name))
	}
}

func TestSweepRunsAnyGrid(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tiny.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`
experiment: tiny
seeds: {full: [7, 11], quick: [7]}
fixed: {probe: true, ticks: 1200}
grid:
  headroom: [64, 256]
series:
  - name: prepaid
  - name: leaky
    fixed: {leaky: true}
`), 0o644))
	out := filepath.Join(dir, "out")
	console, err := runSweepApp(t, "sweep", "--config", cfg, "--quiet", "--nseeds", "2", "--out", out)
	require.NoError(t, err, console)
	assert.Contains(t, console, "4 grid points × 2 seeds = 8 runs")
	var summary struct {
		Experiment string           `json:"experiment"`
		Seeds      []int64          `json:"seeds"`
		Points     []map[string]any `json:"points"`
	}
	readJSONFile(t, filepath.Join(out, "summary.json"), &summary)
	assert.Equal(t, "tiny", summary.Experiment)
	assert.Equal(t, []int64{7, 11}, summary.Seeds)
	assert.Len(t, summary.Points, 4)
	assert.FileExists(t, filepath.Join(out, "runs.csv"))
	assert.FileExists(t, filepath.Join(out, "latencies.json"))
	// The small multiples and the table (issue 12: sweep gets what the
	// paper commands have).
	matches, _ := filepath.Glob(filepath.Join(out, "fig_*"))
	assert.Equal(t, []string{filepath.Join(out, "fig_sweep.png")}, matches)
	assert.Contains(t, console, "utilization (mean over seeds, 95 % t interval)")
	assert.Contains(t, console, "probe_p50 (pooled over seeds, 95 % bootstrap interval)")
	assert.Contains(t, console, "drew fig_sweep.png")

	svgOut := filepath.Join(dir, "svg")
	console, err = runSweepApp(t, "sweep", "--config", cfg, "--quiet", "--quick", "--format", "svg", "--out", svgOut)
	require.NoError(t, err, console)
	assert.FileExists(t, filepath.Join(svgOut, "fig_sweep.svg"))
}

func TestBadInputIsOneClearError(t *testing.T) {
	dir := t.TempDir()
	wrongExp := filepath.Join(dir, "other.yaml")
	require.NoError(t, os.WriteFile(wrongExp, []byte("experiment: other\nseeds: [7]\n"), 0o644))
	typo := filepath.Join(dir, "typo.yaml")
	require.NoError(t, os.WriteFile(typo, []byte("experiment: bucket\nseeds: [7]\ngrid:\n  storm_bucket: [25000, lots]\n"), 0o644))
	wrongShape := filepath.Join(dir, "shape.yaml")
	require.NoError(t, os.WriteFile(wrongShape, []byte("experiment: bucket\nseeds: [7]\ngrid: {storm_bucket: [1000]}\n"), 0o644))
	out := filepath.Join(dir, "out")

	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"paper", "extra"}, "takes no arguments"},
		{[]string{"paper", "--seeds", "7,x"}, `--seeds: "x" is not a seed`},
		{[]string{"paper", "--seeds", "7,-1"}, `--seeds: "-1" is not a seed`},
		{[]string{"paper", "--seeds", "7,7"}, "seed 7 is listed twice"},
		{[]string{"paper", "--seeds", "7", "--nseeds", "2"}, "not both"},
		{[]string{"latency-price", "--nseeds", "0"}, "--nseeds must be between 1"},
		{[]string{"overbooking", "--workers", "0"}, "--workers must be at least 1"},
		{[]string{"bucket", "--format", "gif"}, `unknown figure format "gif"`},
		{[]string{"bucket", "--config", filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
		{[]string{"bucket", "--config", wrongExp}, `experiment "other", not "bucket"`},
		{[]string{"bucket", "--config", typo}, typo + `:4: grid.storm_bucket[1]: storm_bucket takes a number, got "lots"`},
		{[]string{"bucket", "--config", wrongShape}, `needs a series "contended"`},
		{[]string{"paper", "--config", wrongExp}, `experiment "other"; paper runs`},
		{[]string{"sweep"}, "sweep needs --config FILE"},
		{[]string{"paper", "--out", ""}, "--out must name a folder"},
		{[]string{"paper", "--no-such-flag"}, "no-such-flag"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append(slices.Clone(tc.args), "--quiet")
			if !slices.Contains(tc.args, "--out") {
				args = append(args, "--out", out)
			}
			_, err := runSweepApp(t, args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.msg)
			assert.NoDirExists(t, out, "nothing is written on bad input")
		})
	}
}

func TestHelpTeaches(t *testing.T) {
	for _, cmd := range []string{"latency-price", "overbooking", "bucket", "paper", "sweep"} {
		out, err := runSweepApp(t, cmd, "--help")
		require.NoError(t, err)
		assert.Contains(t, out, "USAGE:", cmd)
		assert.Contains(t, out, "DESCRIPTION:", cmd)
		assert.Contains(t, out, "Examples:", cmd)
		assert.Contains(t, out, "--nseeds", cmd)
		assert.Contains(t, out, "bursar-sweep "+cmd, cmd)
	}
	out, err := runSweepApp(t, "--help")
	require.NoError(t, err)
	for _, cmd := range []string{"latency-price", "overbooking", "bucket", "paper", "sweep"} {
		assert.Contains(t, out, cmd)
	}
}

func TestHelpExampleConfigParses(t *testing.T) {
	c, err := configs.Parse("example.yaml", []byte(sweepExample))
	require.NoError(t, err)
	p, err := c.Plan(false, nil)
	require.NoError(t, err)
	assert.Equal(t, 2*3*3*3, p.NumRuns())
}

func TestPDFFormat(t *testing.T) {
	dir := t.TempDir()
	_, err := runSweepApp(t, "overbooking", "--quick", "--quiet", "--format", "pdf", "--out", dir)
	require.NoError(t, err)
	pdf, err := os.ReadFile(filepath.Join(dir, "fig_overbooking.pdf"))
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(pdf, []byte("%PDF")))
}
