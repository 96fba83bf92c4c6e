package figures

import (
	"bytes"
	"image/color"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	vgdraw "gonum.org/v1/plot/vg/draw"
	"pgregory.net/rapid"
)

// drawPlot leaves the same pixels as p.Draw on a PNG canvas, whether the
// canvas under the panel is white (the fill skipped) or not (a mark drawn
// under it first, anywhere within a few pixels of the panel's edge, and
// the fill kept), for panels at any fractional position.
func TestDrawPlotSamePixelsAsDraw(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w, h := 3*vg.Inch, 2*vg.Inch
		x0 := vg.Length(rapid.Float64Range(0, 60).Draw(t, "x0"))
		y0 := vg.Length(rapid.Float64Range(0, 40).Draw(t, "y0"))
		x1 := x0 + vg.Length(rapid.Float64Range(20, 140).Draw(t, "dx"))
		y1 := y0 + vg.Length(rapid.Float64Range(20, 90).Draw(t, "dy"))
		mark := rapid.Bool().Draw(t, "mark")
		mx := vg.Length(rapid.Float64Range(-3, 3).Draw(t, "mx"))
		my := vg.Length(rapid.Float64Range(-3, 3).Draw(t, "my"))
		var pix [2][]byte
		for k := range pix {
			cv := newPNGCanvas(w, h)
			c := vgdraw.New(cv)
			if mark {
				// A small grey square around a corner of the panel,
				// half inside or just outside it.
				c.SetColor(color.Gray{Y: 90})
				var sq vg.Path
				sq.Move(vg.Point{X: x0 + mx - 1, Y: y0 + my - 1})
				sq.Line(vg.Point{X: x0 + mx + 1, Y: y0 + my - 1})
				sq.Line(vg.Point{X: x0 + mx + 1, Y: y0 + my + 1})
				sq.Line(vg.Point{X: x0 + mx - 1, Y: y0 + my + 1})
				sq.Close()
				c.Fill(sq)
			}
			p := plot.New()
			l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 2}, {X: 2, Y: 1}})
			require.NoError(t, err)
			p.Add(l)
			tile := vgdraw.Canvas{Canvas: c, Rectangle: vg.Rectangle{Min: vg.Point{X: x0, Y: y0}, Max: vg.Point{X: x1, Y: y1}}}
			if k == 0 {
				p.Draw(tile)
			} else {
				drawPlot(p, tile)
				require.NotNil(t, p.BackgroundColor, "drawPlot gives the plot its background back")
			}
			pix[k] = cv.img.Pix
		}
		require.True(t, bytes.Equal(pix[0], pix[1]), "drawPlot's pixels differ from Draw's")
	})
}

// whiteUnder sees a single non-white pixel just outside a rectangle's
// edge, and is true on a blank canvas.
func TestWhiteUnder(t *testing.T) {
	cv := newPNGCanvas(2*vg.Inch, 2*vg.Inch)
	r := vg.Rectangle{Min: vg.Point{X: 20, Y: 20}, Max: vg.Point{X: 100, Y: 100}}
	require.True(t, cv.whiteUnder(r))
	// (20 pt, 20 pt) is pixel (41.7, 300 − 41.7): one pixel left of the
	// corner's column, on its row.
	cv.img.Pix[cv.img.PixOffset(40, 300-42)] = 0xfe
	require.False(t, cv.whiteUnder(r))
	require.True(t, cv.whiteUnder(vg.Rectangle{Min: vg.Point{X: 50, Y: 50}, Max: vg.Point{X: 100, Y: 100}}))
}
