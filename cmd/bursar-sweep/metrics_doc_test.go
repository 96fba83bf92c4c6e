package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/sweep"
	"github.com/stretchr/testify/require"
)

// metricsDoc is docs/metrics.md by section: for each "## " heading, the
// names documented in its tables (a cell holding one `name` and nothing
// else).
func metricsDoc(t *testing.T) map[string]map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	require.NoError(t, err)
	cellRE := regexp.MustCompile("^`([^`]+)`$")
	doc := map[string]map[string]bool{}
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = h
			doc[section] = map[string]bool{}
			continue
		}
		if !strings.HasPrefix(line, "|") || section == "" {
			continue
		}
		for _, cell := range strings.Split(line, "|") {
			if m := cellRE.FindStringSubmatch(strings.TrimSpace(cell)); m != nil {
				doc[section][m[1]] = true
			}
		}
	}
	return doc
}

// sectionOf finds the one section whose heading starts with title.
func sectionOf(t *testing.T, doc map[string]map[string]bool, title string) map[string]bool {
	t.Helper()
	var found map[string]bool
	for h, names := range doc {
		if strings.HasPrefix(h, title) {
			require.Nil(t, found, "two sections of docs/metrics.md match %q", title)
			found = names
		}
	}
	require.NotNil(t, found, "docs/metrics.md has no section %q", title)
	return found
}

// jsonKeys collects every object key under v, except the children of the
// keys in skip (whose children are checked against another section).
func jsonKeys(v any, skip map[string]bool, out map[string]bool, children map[string][]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			out[k] = true
			if skip[k] {
				if m, ok := c.(map[string]any); ok {
					for ck := range m {
						children[k] = append(children[k], ck)
					}
				}
				continue
			}
			jsonKeys(c, skip, out, children)
		}
	case []any:
		for _, c := range v {
			jsonKeys(c, skip, out, children)
		}
	}
}

func readJSONAny(t *testing.T, path string) any {
	t.Helper()
	var v any
	readJSONFile(t, path, &v)
	return v
}

// TestMetricsDictionaryIsComplete: every column and key the program writes
// is in docs/metrics.md, so the dictionary stays true as outputs change.
func TestMetricsDictionaryIsComplete(t *testing.T) {
	doc := metricsDoc(t)
	knobs := sectionOf(t, doc, "The scenario knobs")
	metrics := sectionOf(t, doc, "Run metrics")
	for i := range engine.Knobs {
		require.True(t, knobs[engine.Knobs[i].Name], "knob %s is not in docs/metrics.md", engine.Knobs[i].Name)
	}
	for _, key := range append(append([]string{"probe_lats", "probe_lats_in"}, engine.ScalarKeys...), engine.StudyKeys...) {
		require.True(t, metrics[key], "run metric %s is not in docs/metrics.md", key)
	}
	knobOrMetric := func(name string) bool { return knobs[name] || metrics[name] }

	// runs.csv: its own columns, then knobs and metrics.
	runs := sectionOf(t, doc, "runs.csv")
	header, err := csv.NewReader(strings.NewReader(string(sweep.RunsCSV(nil)))).Read()
	require.NoError(t, err)
	for _, col := range header {
		require.True(t, runs[col] || knobOrMetric(col), "runs.csv column %s is not in docs/metrics.md", col)
	}

	// One run and one tiny sweep give every other file.
	dir := t.TempDir()
	_, err = runSweepApp(t, "run", "--probe", "--ticks", "300", "--out", filepath.Join(dir, "run"))
	require.NoError(t, err)
	cfgPath := filepath.Join(dir, "grid.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte("experiment: tiny\nseeds: {full: [7], quick: [7]}\nfixed: {ticks: 300, probe: true}\ngrid:\n  grace: [30, 60]\n"), 0o644))
	_, err = runSweepApp(t, "sweep", "--config", cfgPath, "--quiet", "--workers", "1", "--out", filepath.Join(dir, "sweep"))
	require.NoError(t, err)

	check := func(what, section string, v any, skip map[string]bool, childOK func(string) bool) {
		t.Helper()
		names := sectionOf(t, doc, section)
		keys, children := map[string]bool{}, map[string][]string{}
		jsonKeys(v, skip, keys, children)
		require.NotEmpty(t, keys, what)
		for k := range keys {
			require.True(t, names[k], "%s key %s is not in docs/metrics.md (section %s)", what, k, section)
		}
		for parent, cs := range children {
			for _, c := range cs {
				require.True(t, childOK(c), "%s key %s.%s is not in docs/metrics.md", what, parent, c)
			}
		}
	}
	check("metrics.json", "metrics.json", readJSONAny(t, filepath.Join(dir, "run", "metrics.json")),
		map[string]bool{"scenario": true, "metrics": true}, knobOrMetric)
	// A run under a named policy writes the policy-study metrics too.
	_, err = runSweepApp(t, "run", "--policy", "quota", "--ticks", "300", "--out", filepath.Join(dir, "quota"))
	require.NoError(t, err)
	runJSON := sectionOf(t, doc, "metrics.json")
	check("metrics.json of a policy run", "metrics.json", readJSONAny(t, filepath.Join(dir, "quota", "metrics.json")),
		map[string]bool{"scenario": true, "metrics": true}, func(name string) bool { return knobOrMetric(name) || runJSON[name] })
	check("summary.json of sweep", "summary.json of `bursar-sweep sweep`", readJSONAny(t, filepath.Join(dir, "sweep", "summary.json")),
		map[string]bool{"knobs": true, "metrics": true}, knobOrMetric)
	_, err = runSweepApp(t, "compare", "--seeds", "7", "--quiet", "--workers", "1", "--out", filepath.Join(dir, "compare"))
	require.NoError(t, err)
	check("summary.json of compare", "summary.json of `bursar-sweep sweep`", readJSONAny(t, filepath.Join(dir, "compare", "summary.json")),
		map[string]bool{"knobs": true, "metrics": true}, knobOrMetric)
	compareRuns, err := os.ReadFile(filepath.Join(dir, "compare", "runs.csv"))
	require.NoError(t, err)
	header, err = csv.NewReader(strings.NewReader(string(compareRuns))).Read()
	require.NoError(t, err)
	for _, col := range header {
		require.True(t, runs[col] || knobOrMetric(col), "runs.csv column %s is not in docs/metrics.md", col)
	}
	check("latencies.json", "latencies.json", readJSONAny(t, filepath.Join(dir, "sweep", "latencies.json")),
		map[string]bool{"knobs": true}, knobOrMetric)
	for _, sub := range []string{"run", "sweep"} {
		check("manifest.json", "manifest.json", readJSONAny(t, filepath.Join(dir, sub, "manifest.json")), nil, nil)
	}

	// The paper's summary, every row kind filled.
	var paper any
	require.NoError(t, json.Unmarshal((&sweep.Summary{
		Headroom: []sweep.HeadroomRow{{}}, Grace: []sweep.GraceRow{{}},
		Overbooking: []sweep.OverbookingRow{{}}, Bucket: []sweep.BucketRow{{}},
		Bootstrap: []sweep.BootstrapRow{{}},
	}).JSON(), &paper))
	check("summary.json of paper", "summary.json of `paper`", paper, nil, nil)

	// series.csv: t, multiplier, then <campaign>_<quantity>.
	series := sectionOf(t, doc, "series.csv")
	f, err := os.Open(filepath.Join(dir, "run", "series.csv"))
	require.NoError(t, err)
	defer f.Close()
	cols, err := csv.NewReader(f).Read()
	require.NoError(t, err)
	for _, col := range cols {
		if series[col] {
			continue
		}
		i := strings.LastIndex(col, "_")
		require.Positive(t, i, "series.csv column %s", col)
		require.True(t, series["<campaign>"+col[i:]], "series.csv column %s is not in docs/metrics.md", col)
	}
}
