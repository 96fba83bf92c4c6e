package figures

import (
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// gonum reserves room for a centred axis label at the axis' position of
// the arithmetic midpoint of its range, Norm(½(min + max)), but draws the
// label at the middle of the axis. On a linear axis the two agree. On a
// log axis the midpoint sits near the top (or right) end: 0.91 of the way
// up agents-arrive's slowdown axes, 0.67 … 1500. Half of the long rotated
// label's box then sticks out over the top, padY moves the data area down
// until it fits, and plot.Align moves every panel of the row with it: a
// large empty gap under each title of the figure's top two rows, where
// nothing was drawn.
//
// centredLabels works around it for the grid's panels: each axis with a
// centred label on a scale other than gonum's linear one is laid out with
// a one-space stand-in of the same height (the same room beside the
// axis, a box too short to stick out), and the label is then drawn where
// gonum draws it, at the middle of the axis.
type centredLabel struct {
	text  string
	style draw.TextStyle
}

type centredLabels struct {
	x, y centredLabel
}

// detachLabels returns a shallow copy of p whose non-linear axes' centred
// labels are one-space stand-ins, and the labels it took off; p itself is
// not changed.
func detachLabels(p *plot.Plot) (*plot.Plot, centredLabels) {
	var ls centredLabels
	if p == nil {
		return nil, ls
	}
	q := *p
	take := func(a *plot.Axis) centredLabel {
		if a.Label.Text == "" || a.Label.Position != draw.PosCenter {
			return centredLabel{}
		}
		if _, linear := a.Scale.(plot.LinearScale); linear {
			return centredLabel{}
		}
		// One line, so that the stand-in is exactly as high.
		if len(a.Label.TextStyle.Handler.Lines(a.Label.Text)) != 1 {
			return centredLabel{}
		}
		l := centredLabel{text: a.Label.Text, style: a.Label.TextStyle}
		a.Label.Text = " "
		return l
	}
	ls.x, ls.y = take(&q.X), take(&q.Y)
	return &q, ls
}

// draw draws the detached labels of q, drawn on c, where gonum draws a
// centred label: the y label rotated at the left edge of c and the
// middle of the data area's height, the x label at the bottom edge of c
// and the middle of the data area's width.
func (ls centredLabels) draw(c draw.Canvas, q *plot.Plot) {
	if ls.x.text == "" && ls.y.text == "" {
		return
	}
	data := q.DataCanvas(c)
	if ls.y.text != "" {
		sty := ls.y.style
		sty.Rotation += math.Pi / 2
		x := c.Min.X + ls.y.style.Height(ls.y.text) - ls.y.style.FontExtents().Descent
		c.FillText(sty, vg.Point{X: x, Y: data.Center().Y}, ls.y.text)
	}
	if ls.x.text != "" {
		y := c.Min.Y + ls.x.style.FontExtents().Descent
		c.FillText(ls.x.style, vg.Point{X: data.Center().X, Y: y}, ls.x.text)
	}
}
