package figures

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"
)

// logPanel is one of agents-arrive's slowdown panels: a title, a log y
// axis over 0.67 … 1500 with a long label, k on x.
func logPanel(yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = "fifo: users' slowdown"
	p.Add(plotter.NewGrid())
	p.X.Label.Text = "agent campaigns k"
	p.X.Min, p.X.Max = -0.3, 8.3
	p.Y.Label.Text = yLabel
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = LogTicks{}
	p.Y.Min, p.Y.Max = 0.67, 1500
	return p
}

// gonum reserves room for a log axis' centred label about 0.91 of the
// way up (at Norm(½(min + max))), so the label's box stuck out over the
// top and the data area began 65 pt lower (in this 4 × 3 in panel) than
// in the same panel without a label. Laid out by the grid, the label
// takes its room beside the axis only: the data area's top is that of
// the unlabelled panel, its left edge that of the labelled one.
func TestLogAxisLabelLeavesNoGapUnderTheTitle(t *testing.T) {
	c := draw.NewCanvas(&recorder.Canvas{}, 4*vg.Inch, 3*vg.Inch)
	labelled := logPanel("mean bounded slowdown (log)")
	bare := logPanel("")
	q, ls := detachLabels(labelled)
	require.Equal(t, "mean bounded slowdown (log)", ls.y.text)
	require.Empty(t, ls.x.text, "a linear axis keeps its label")
	require.Equal(t, "mean bounded slowdown (log)", labelled.Y.Label.Text, "the caller's plot is not changed")

	got := q.DataCanvas(c)
	require.InDelta(t, float64(bare.DataCanvas(c).Max.Y), float64(got.Max.Y), 1e-9)
	require.InDelta(t, float64(labelled.DataCanvas(c).Min.X), float64(got.Min.X), 1e-9)
	require.Greater(t, float64(got.Max.Y-labelled.DataCanvas(c).Max.Y), 60.0, "gonum's own layout leaves the gap")

	// Drawn by the grid: the top tick label "1000" sits where it sits in
	// the unlabelled panel, and the label is drawn once.
	tickY := func(p *plot.Plot) (y vg.Length, labels int) {
		rec := &recorder.Canvas{}
		drawGrid(draw.NewCanvas(rec, 4*vg.Inch, 3*vg.Inch), [][]*plot.Plot{{p}})
		for _, a := range rec.Actions {
			if s, ok := a.(*recorder.FillString); ok {
				switch s.String {
				case "1000":
					y = s.Point.Y
				case "mean bounded slowdown (log)":
					labels++
				}
			}
		}
		return y, labels
	}
	yl, n := tickY(labelled)
	yb, _ := tickY(bare)
	require.InDelta(t, float64(yb), float64(yl), 1e-9)
	require.Equal(t, 1, n)
}
