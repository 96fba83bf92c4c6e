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

// LegendEntry is one entry of a legend drawn under a grid panel: its
// label and the thumbnails drawn one over another before it (a line and
// its marker, say).
type LegendEntry struct {
	Label string
	Icons []plot.Thumbnailer
}

// Thumbnail draws every icon of the entry.
func (e LegendEntry) Thumbnail(c *draw.Canvas) {
	for _, ic := range e.Icons {
		ic.Thumbnail(c)
	}
}

// WriteTitledGridLegends is WriteTitledGrid with a legend under each
// panel that has one (legends[r][k]; nil or missing for none), in
// columns below the x axis, outside the axes, where it can hide no
// data. Every panel of a row gives up the height of the row's tallest
// legend, so that the row's axes stay aligned.
func WriteTitledGridLegends(path string, f Format, w, h vg.Length, title string, grid [][]*plot.Plot, legends [][][]LegendEntry) error {
	return render("grid", path, f, w, h, func(c draw.Canvas, tr func(string) string) {
		c = draw.Crop(c, vg.Points(outerPad), -vg.Points(outerPad), vg.Points(outerPad), 0)
		c = drawTitle(c, tr(title), textStyle(titleSize))
		cols := 0
		for _, row := range grid {
			cols = max(cols, len(row))
		}
		tileW := (c.Max.X - c.Min.X) / vg.Length(max(cols, 1))
		lays := make([][]legendLayout, len(grid))
		strip := make([]vg.Length, len(grid))
		for r, row := range grid {
			lays[r] = make([]legendLayout, len(row))
			for k := range row {
				if r >= len(legends) || k >= len(legends[r]) || len(legends[r][k]) == 0 {
					continue
				}
				items := make([]legendItem, len(legends[r][k]))
				for i, e := range legends[r][k] {
					items[i] = legendItem{label: tr(e.Label), icon: e}
				}
				lays[r][k] = newLegend(items, tileW-vg.Points(2*colGap))
				strip[r] = max(strip[r], lays[r][k].height()+vg.Points(legendGap))
			}
		}
		drawGridWith(c, grid, func(r, k int, tile draw.Canvas) draw.Canvas {
			if strip[r] == 0 {
				return tile
			}
			if l := lays[r][k]; l.rows > 0 {
				l.draw(tile, (tile.Min.X+tile.Max.X)/2, tile.Min.Y+strip[r]-vg.Points(legendGap)/2, tile.Min.X, tile.Max.X)
			}
			return draw.Crop(tile, 0, 0, strip[r], 0)
		})
	})
}
