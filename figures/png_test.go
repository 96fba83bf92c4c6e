package figures

import (
	"bytes"
	"hash/adler32"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	vgdraw "gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"pgregory.net/rapid"
)

// decodeRGBA decodes a PNG into RGBA pixels.
func decodeRGBA(t require.TestingT, b []byte) *image.RGBA {
	m, err := png.Decode(bytes.NewReader(b))
	require.NoError(t, err)
	out := image.NewRGBA(m.Bounds())
	draw.Draw(out, out.Bounds(), m, m.Bounds().Min, draw.Src)
	return out
}

// encodePNG's file decodes, with image/png, to the pixels it was given,
// for any opaque image: widths and heights of one pixel, heights below
// the strip count (empty strips), any colours; and the same image gives
// the same bytes.
func TestEncodePNGRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := rapid.IntRange(1, 80).Draw(t, "width")
		h := rapid.IntRange(1, 40).Draw(t, "height")
		flat := rapid.Bool().Draw(t, "flat") // long runs, as in a figure
		m := image.NewRGBA(image.Rect(0, 0, w, h))
		seed := rapid.Uint32().Draw(t, "seed")
		for i := range m.Pix {
			if i%4 == 3 {
				m.Pix[i] = 0xff
				continue
			}
			seed = seed*1664525 + 1013904223
			if flat && seed>>28 != 0 {
				m.Pix[i] = 0xff
			} else {
				m.Pix[i] = byte(seed >> 24)
			}
		}
		var a, b bytes.Buffer
		require.NoError(t, encodePNG(&a, m))
		require.NoError(t, encodePNG(&b, m))
		require.True(t, bytes.Equal(a.Bytes(), b.Bytes()), "same image, different bytes")
		got := decodeRGBA(t, a.Bytes())
		require.Equal(t, m.Bounds(), got.Bounds())
		require.True(t, bytes.Equal(m.Pix, got.Pix), "decoded pixels differ")
	})
}

// A canvas with a transparent pixel is written by image/png (as RGBA,
// not RGB), which keeps its alpha.
func TestPNGCanvasKeepsAlpha(t *testing.T) {
	c := newPNGCanvas(vg.Inch, vg.Inch)
	c.img.Set(3, 4, color.RGBA{R: 10, G: 20, B: 30, A: 40})
	var b bytes.Buffer
	_, err := c.WriteTo(&b)
	require.NoError(t, err)
	got := decodeRGBA(t, b.Bytes())
	require.Equal(t, uint8(40), got.RGBAAt(3, 4).A)
	require.Equal(t, uint8(0xff), got.RGBAAt(0, 0).A)
}

// The figures' PNG canvas draws exactly the pixels of vgimg's own
// (vgimg.NewWith with the figure's size and dpi, then the white fill
// render once did): lines, dashes, glyphs, bars, text at an angle.
func TestPNGCanvasDrawsAsVgimg(t *testing.T) {
	paint := func(c vgdraw.Canvas) {
		p := plot.New()
		p.Title.Text = "Bounded slowdown CDF"
		p.X.Label.Text = "x (log scale)"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Add(plotter.NewGrid())
		pts := make(plotter.XYs, 200)
		for i := range pts {
			pts[i] = plotter.XY{X: 1 + float64(i)*float64(i), Y: math.Sqrt(float64(i) / 200)}
		}
		l, err := plotter.NewLine(pts)
		require.NoError(t, err)
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(2.5)}
		sc, err := plotter.NewScatter(pts[:20])
		require.NoError(t, err)
		p.Add(l, sc)
		p.Legend.Add("fifo", l)
		q := plot.New()
		bars, err := plotter.NewBarChart(plotter.Values{3, 1, 4}, vg.Points(14))
		require.NoError(t, err)
		bars.Color = color.RGBA{R: 0xD5, G: 0x5E, A: 0xff}
		q.Add(bars)
		q.NominalX("fifo", "priority", "budget")
		q.X.Tick.Label.Rotation = math.Pi / 6
		drawGrid(c, [][]*plot.Plot{{p, q}})
	}
	for _, size := range [][2]vg.Length{{11 * vg.Inch, 12 * vg.Inch}, {narrowWidth, figHeight}, {3.01 * vg.Inch, 2 * vg.Inch}} {
		fast := newPNGCanvas(size[0], size[1])
		paint(vgdraw.New(fast))
		ref := vgimg.NewWith(vgimg.UseWH(size[0], size[1]), vgimg.UseDPI(dpi))
		rc := vgdraw.New(ref)
		rc.SetColor(color.White)
		rc.Fill(rc.Rectangle.Path())
		paint(rc)
		want := ref.Image().(*image.RGBA)
		require.Equal(t, want.Bounds(), fast.img.Bounds(), "size %v", size)
		require.True(t, bytes.Equal(want.Pix, fast.img.Pix), "size %v: pixels differ", size)
	}
}

// adler32Combine gives the Adler-32 of a concatenation, for any split,
// lengths across the modulus included.
func TestAdler32Combine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, "a")
		b := rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, "b")
		if rapid.Bool().Draw(t, "long") {
			b = append(b, bytes.Repeat([]byte{0xff}, 70000)...) // past 65521
		}
		got := adler32Combine(adler32.Checksum(a), adler32.Checksum(b), int64(len(b)))
		require.Equal(t, adler32.Checksum(append(append([]byte{}, a...), b...)), got)
	})
}
