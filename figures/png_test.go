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

// adler32Update is hash/adler32's checksum: any bytes (runs of 0xff, as
// a figure's rows, or anything), any length across its reductions, from
// any checksum so far, in pieces or whole.
func TestAdler32UpdateIsHashAdler32(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 20000).Draw(t, "n")
		p := make([]byte, n)
		fill := rapid.IntRange(0, 2).Draw(t, "fill")
		seed := rapid.Uint32().Draw(t, "seed")
		for i := range p {
			seed = seed*1664525 + 1013904223
			switch fill {
			case 0:
				p[i] = 0xff
			case 1:
				p[i] = byte(seed >> 24)
			default:
				if seed>>30 == 0 {
					p[i] = byte(seed >> 16)
				} else {
					p[i] = 0xff
				}
			}
		}
		cut := rapid.IntRange(0, n).Draw(t, "cut")
		got := adler32Update(adler32Update(1, p[:cut]), p[cut:])
		if want := adler32.Checksum(p); got != want {
			t.Fatalf("%#x, want %#x", got, want)
		}
	})
}

// opaque is image.RGBA.Opaque, on whole images and on sub-images (rows
// longer than the rectangle), of odd and even widths.
func TestOpaqueIsRGBAOpaque(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w, h := rapid.IntRange(1, 9).Draw(t, "w"), rapid.IntRange(1, 5).Draw(t, "h")
		m := image.NewRGBA(image.Rect(0, 0, w, h))
		for i := range m.Pix {
			m.Pix[i] = 0xff
		}
		if rapid.Bool().Draw(t, "hole") {
			m.Pix[rapid.IntRange(0, len(m.Pix)-1).Draw(t, "at")] = 0x7f
		}
		x0, y0 := rapid.IntRange(0, w-1).Draw(t, "x0"), rapid.IntRange(0, h-1).Draw(t, "y0")
		x1, y1 := rapid.IntRange(x0, w).Draw(t, "x1"), rapid.IntRange(y0, h).Draw(t, "y1")
		for _, img := range []*image.RGBA{m, m.SubImage(image.Rect(x0, y0, x1, y1)).(*image.RGBA)} {
			if got, want := opaque(img), img.Opaque(); got != want {
				t.Fatalf("%v of %dx%d: %v, want %v", img.Rect, w, h, got, want)
			}
		}
	})
}

// rgb drops each pixel's alpha, in order.
func TestRGB(t *testing.T) {
	px := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	dst := make([]byte, 9)
	rgb(dst, px)
	require.Equal(t, []byte{1, 2, 3, 5, 6, 7, 9, 10, 11}, dst)
	// Five pixels: four by the words, the fifth alone; every byte
	// distinct, so that a byte shifted to the wrong place shows.
	px = []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	dst = make([]byte, 15)
	rgb(dst, px)
	require.Equal(t, []byte{1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15, 17, 18, 19}, dst)
}

// rgb is the plain copy of every pixel's three colour bytes, on rows of
// any length (a whole number of pixels), any bytes, and a dst that holds
// them all.
func TestRGBIsThePlainCopy(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 40).Draw(t, "pixels")
		px := rapid.SliceOfN(rapid.Byte(), 4*n, 4*n).Draw(t, "px")
		want := make([]byte, 0, 3*n)
		for k := 0; k < n; k++ {
			want = append(want, px[4*k], px[4*k+1], px[4*k+2])
		}
		dst := make([]byte, 3*n)
		rgb(dst, px)
		if !bytes.Equal(dst, want) {
			t.Fatalf("rgb %v, want %v", dst, want)
		}
	})
}
