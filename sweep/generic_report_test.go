package sweep

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/figures"
)

func genericResults(t *testing.T, src string) *Results {
	t.Helper()
	c, err := configs.Parse("g.yaml", []byte(src))
	require.NoError(t, err)
	p, err := c.Plan(false, nil)
	require.NoError(t, err)
	results, err := Execute(context.Background(), []*configs.Plan{p}, Options{Workers: 2})
	require.NoError(t, err)
	return results[0]
}

const twoKnobGrid = `
experiment: tiny
seeds: [7, 11]
fixed: {probe: true, ticks: 1200}
grid: {grace: [60, 30], headroom: [64, 256]}
series:
  - name: prepaid
  - name: leaky
    fixed: {leaky: true}
`

// The figure: a panel per observed quantity, x the first swept knob, a
// line per series and value of the other swept knob.
func TestSweepFigureShape(t *testing.T) {
	r := genericResults(t, twoKnobGrid)
	d := SweepFigure(r)
	assert.Equal(t, "grace", d.XLabel)
	assert.Equal(t, []string{"prepaid, headroom=64", "prepaid, headroom=256", "leaky, headroom=64", "leaky, headroom=256"}, d.Series)
	require.NotEmpty(t, d.Panels)
	assert.Equal(t, "probe_p50", d.Panels[0].Metric)
	assert.Equal(t, float64(ProbeCensor), d.Panels[0].Censor)
	for _, pn := range d.Panels {
		require.Len(t, pn.Lines, 4, pn.Metric)
		for _, l := range pn.Lines {
			assert.Equal(t, []float64{60, 30}, l.Xs, "plan order; the figure sorts")
		}
		if pn.Metric == "utilization" {
			assert.Zero(t, pn.Censor, "a mean is not censored")
		}
	}
	// In 1200 ticks there is no storm window: the in-window victim
	// percentiles are NaN everywhere and get no panel.
	for _, pn := range d.Panels {
		assert.NotEqual(t, "victim_p95_in", pn.Metric)
	}
	dir := t.TempDir()
	require.NoError(t, WriteSweepFigure(dir, figures.PNG, r))
	assert.FileExists(t, filepath.Join(dir, "fig_sweep.png"))
}

// A plan sweeping nothing is drawn against the point index.
func TestSweepFigureWithoutAxis(t *testing.T) {
	r := genericResults(t, "experiment: one\nseeds: [7]\nfixed: {ticks: 600}\n")
	d := SweepFigure(r)
	assert.Equal(t, "grid point", d.XLabel)
	assert.Equal(t, []string{"default"}, d.Series)
	assert.Contains(t, d.Title, "one seed: no intervals")
	for _, pn := range d.Panels {
		assert.True(t, math.IsNaN(pn.Lines[0].CI[0].Lo), "one seed, no interval (%s)", pn.Metric)
	}
	require.NoError(t, WriteSweepFigure(t.TempDir(), figures.SVG, r))
}

func TestGenericTable(t *testing.T) {
	r := genericResults(t, twoKnobGrid)
	var buf bytes.Buffer
	require.NoError(t, WriteGenericTable(&buf, r))
	out := buf.String()
	assert.Contains(t, out, "utilization (mean over seeds, 95 % t interval)")
	assert.Contains(t, out, "probe_p50 (pooled over seeds, 95 % bootstrap interval)")
	assert.NotContains(t, out, "victim_p95_in (", "never observed, left out")
	// A block per quantity, a row per point: header lines, 8 rows.
	block := out[strings.Index(out, "utilization ("):]
	block = block[:strings.Index(block, "\n\n")]
	lines := strings.Split(block, "\n")
	require.Len(t, lines, 2+8)
	assert.Equal(t, []string{"series", "grace", "headroom", "utilization", "95", "%", "CI", "n"}, strings.Fields(lines[1]))
	row := strings.Fields(lines[2])
	assert.Equal(t, []string{"prepaid", "60", "64"}, row[:3])
	assert.Equal(t, "2", row[len(row)-1])
	// The same numbers as summary.json.
	gp := ReduceGeneric(r)[0]
	u := gp.Metrics[slices.Index(engine.ScalarKeys, "utilization")]
	assert.Contains(t, lines[2], "["+fmtG(u.CI.Lo)+", "+fmtG(u.CI.Hi)+"]")
}

func fmtG(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
