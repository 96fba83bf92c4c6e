package engine

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// referenceDir holds the published prototype's outputs for seed 7, copied
// into the repository so that a clone alone passes its tests.
var referenceDir = filepath.Join("..", "testdata", "reference")

func readReference(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(referenceDir, name))
	require.NoError(t, err, "the golden files live in testdata/reference/ at the repository root")
	return b
}

// TestGoldenReport: the single-run report on the defaults (probe off) is the
// prototype's, line for line, up to its closing "wrote …" line, which names
// files this port writes differently.
func TestGoldenReport(t *testing.T) {
	want := string(readReference(t, "scenario-seed7.txt"))
	want = want[:strings.LastIndex(want, "\nwrote ")]
	want = strings.TrimRight(want, "\n") + "\n"

	res, err := Run(DefaultScenario(), Options{Journal: true})
	require.NoError(t, err)
	var got bytes.Buffer
	require.NoError(t, WriteReport(&got, res))
	require.Equal(t, want, got.String())
	require.Equal(t, 1267, res.JournalRecords, "the prototype wrote 1267 journal records")
	require.Equal(t, 1267, bytes.Count(res.Journal, []byte("\n")))
}

// TestGoldenProbeMetrics: with the probe on, every metric equals the
// prototype's (integers exactly, floats to a relative 1e-9).
func TestGoldenProbeMetrics(t *testing.T) {
	var ref struct {
		Metrics map[string]any `json:"metrics"`
	}
	require.NoError(t, json.Unmarshal(readReference(t, "scenario-seed7-probe.json"), &ref))

	s := DefaultScenario()
	s.Probe = true
	res, err := Run(s, Options{})
	require.NoError(t, err)

	var got struct {
		Metrics map[string]any `json:"metrics"`
	}
	require.NoError(t, json.Unmarshal(MetricsFile(res), &got))
	require.Len(t, got.Metrics, len(ref.Metrics), "same metric keys")
	for key, want := range ref.Metrics {
		g, ok := got.Metrics[key]
		require.True(t, ok, "metric %s missing", key)
		switch w := want.(type) {
		case float64:
			gv := g.(float64)
			if w == math.Trunc(w) {
				require.Equal(t, w, gv, "metric %s", key)
			} else {
				require.InEpsilon(t, w, gv, 1e-9, "metric %s", key)
			}
		default:
			require.Equal(t, want, g, "metric %s", key)
		}
	}
}
