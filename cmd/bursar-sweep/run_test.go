package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// `run --print-scenario [knobs]` fed back with `run --scenario` is the same
// run, byte for byte, for the defaults and for knobs off their defaults
// (including --storms 0, which registers no storm).
func TestPrintedScenarioReproducesTheFlagRun(t *testing.T) {
	for name, knobs := range map[string][]string{
		"default":     nil,
		"off-default": {"--pool", "800", "--storms", "3", "--probe", "--leaky", "--storm-rate", "33.3", "--grace", "45", "--headroom", "100", "--seed", "11", "--ticks", "3000", "--sample-every", "7", "--storm-start", "600", "--storm-end", "2400", "--sci-bucket", "123456.7"},
		"no storms":   {"--storms", "0", "--storm-bucket", "25000", "--probe"},
		"small pool":  {"--pool", "256", "--storms", "2", "--storm-burst", "500"},
		"quota":       {"--policy", "quota", "--ticks", "2000"},
		"budget":      {"--policy", "budget", "--storms", "2", "--ticks", "2000"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			printed, err := runSweepApp(t, append([]string{"run", "--print-scenario"}, knobs...)...)
			require.NoError(t, err)
			file := filepath.Join(dir, "scenario.yaml")
			require.NoError(t, os.WriteFile(file, []byte(printed), 0o644))

			flagOut, fileOut := filepath.Join(dir, "flags"), filepath.Join(dir, "file")
			_, err = runSweepApp(t, append([]string{"run", "--out", flagOut}, knobs...)...)
			require.NoError(t, err)
			_, err = runSweepApp(t, "run", "--scenario", file, "--out", fileOut)
			require.NoError(t, err)
			for _, f := range []string{"metrics.json", "journal.jsonl", "series.csv"} {
				a, err := os.ReadFile(filepath.Join(flagOut, f))
				require.NoError(t, err)
				b, err := os.ReadFile(filepath.Join(fileOut, f))
				require.NoError(t, err)
				require.Equal(t, string(a), string(b), f)
			}
			// Printing the file again gives the file.
			again, err := runSweepApp(t, "run", "--scenario", file, "--print-scenario")
			require.NoError(t, err)
			require.Equal(t, printed, again)
		})
	}
}

// Knob flags given with --scenario edit the file; the others leave it be.
func TestKnobFlagsEditTheScenarioFile(t *testing.T) {
	out, err := runSweepApp(t, "run", "--scenario", filepath.Join("..", "..", "configs", "scenarios", "three-science-two-storms.yaml"),
		"--print-scenario", "--headroom", "64", "--storm-bucket", "9999")
	require.NoError(t, err)
	require.Contains(t, out, "pool: 768")
	require.Contains(t, out, "headroom: 64")
	require.Equal(t, 2, strings.Count(out, "bucket: 9999\n"), "both storms")
	require.Contains(t, out, "name: genomics")
}

func TestRunRefusesABadScenarioFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(file, []byte("pool: 512\ncampaigns:\n  - name: v\n    agent: victim\n    gpuz: 3\n"), 0o644))
	_, err := runSweepApp(t, "run", "--scenario", file)
	require.ErrorContains(t, err, "bad.yaml:5: campaigns[0].gpuz: unknown key; did you mean \"gpus\"?")
}

// `sweep` runs a config that names a scenario file and sweeps a second
// storm's window by path; runs.csv has a column for the path.
func TestSweepAScenarioFileByPath(t *testing.T) {
	dir := t.TempDir()
	example, err := filepath.Abs(filepath.Join("..", "..", "configs", "scenarios", "three-science-two-storms.yaml"))
	require.NoError(t, err)
	cfg := filepath.Join(dir, "facility.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("experiment: facility\nscenario: "+example+
		"\nseeds: [7]\nfixed: {ticks: 1800, window.start: 0, window.end: 1800}\ngrid:\n  campaigns.storm-pm.window.start: [600, 900]\n"), 0o644))
	out := filepath.Join(dir, "out")
	console, err := runSweepApp(t, "sweep", "--config", cfg, "--quiet", "--out", out)
	require.NoError(t, err, console)
	runs, err := os.ReadFile(filepath.Join(out, "runs.csv"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(runs)), "\n")
	require.Len(t, lines, 3)
	require.Contains(t, lines[0], ",campaigns.storm-pm.window.start,seed,")
	require.Contains(t, lines[1], ",600,7,")
	require.Contains(t, lines[2], ",900,7,")
	require.NotEqual(t, lines[1][strings.Index(lines[1], ",600,7,")+7:], lines[2][strings.Index(lines[2], ",900,7,")+7:], "moving the storm changes the run")
}

// --scenario - reads the scenario from standard input.
func TestScenarioFromStdin(t *testing.T) {
	dir := t.TempDir()
	printed, err := runSweepApp(t, "run", "--print-scenario", "--storms", "2", "--ticks", "900")
	require.NoError(t, err)
	in := filepath.Join(dir, "in.yaml")
	require.NoError(t, os.WriteFile(in, []byte(printed), 0o644))
	f, err := os.Open(in)
	require.NoError(t, err)
	defer f.Close()
	old := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = old }()
	again, err := runSweepApp(t, "run", "--scenario", "-", "--print-scenario")
	require.NoError(t, err)
	require.Equal(t, printed, again)
}

// TestPolicyTypoGetsASuggestion: a mistyped policy name is answered with
// the nearest one.
func TestPolicyTypoGetsASuggestion(t *testing.T) {
	_, err := runSweepApp(t, "run", "--policy", "quoat")
	require.ErrorContains(t, err, `--policy: unknown admission policy "quoat"; did you mean "quota"?`)
}

// TestBaselineRunIsLabelledAsSuch: under --policy quota the report, the
// replay page and metrics.json name quota, and say nothing of Bursar's
// bucket; the paper's run keeps its Bursar header.
func TestBaselineRunIsLabelledAsSuch(t *testing.T) {
	dir := t.TempDir()
	out, err := runSweepApp(t, "run", "--policy", "quota", "--ticks", "600", "--out", dir)
	require.NoError(t, err, out)
	require.Contains(t, out, "=== quota (a baseline admission policy, docs/policies.md) —")
	require.NotContains(t, out, "=== Bursar")
	require.NotContains(t, out, "bucket forces reversion")
	require.NotContains(t, out, "warm headroom")
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	require.NoError(t, err)
	require.Contains(t, string(page), "<title>quota replay (a baseline admission policy)")
	require.Contains(t, string(page), "Admission is by quota, a baseline policy")
	var m struct {
		Scenario struct {
			Policy string `json:"policy"`
		} `json:"scenario"`
	}
	readJSONFile(t, filepath.Join(dir, "metrics.json"), &m)
	require.Equal(t, "quota", m.Scenario.Policy)

	out, err = runSweepApp(t, "run", "--ticks", "600", "--out", t.TempDir())
	require.NoError(t, err, out)
	require.Contains(t, out, "=== Bursar — 512-GPU pool")
}
