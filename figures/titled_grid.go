package figures

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// WriteTitledGrid is WriteGrid under a figure title (wrapped to the
// figure's width), for a grid whose panels share one subject.
func WriteTitledGrid(path string, f Format, w, h vg.Length, title string, grid [][]*plot.Plot) error {
	return render("grid", path, f, w, h, func(c draw.Canvas, tr func(string) string) {
		c = draw.Crop(c, vg.Points(outerPad), -vg.Points(outerPad), vg.Points(outerPad), 0)
		c = drawTitle(c, tr(title), textStyle(titleSize))
		drawGrid(c, grid)
	})
}
