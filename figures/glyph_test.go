package figures

import (
	"bytes"
	"image"
	"image/color"
	"testing"

	"golang.org/x/image/draw"
	"golang.org/x/image/math/f64"
	"pgregory.net/rapid"
)

// TestOverGlyphHalfMask is one pixel worked by hand: (16, 32, 48) at
// mask alpha 0x80 over (100, 50, 200, 255). In 16 bits the colour is
// 0x1010, 0x2020, 0x3030, 0xffff; alpha 0x8080 makes it 2064, 4128,
// 6192, 32896; 0xffff − 32896 = 32639; red (100 × 0x101 × 32639 ÷
// 0xffff + 2064) >> 8 = (12885 + 2064) >> 8 = 58; green (6457 + 4128)
// >> 8 = 41, blue (25771 + 6192) >> 8 = 124, alpha (32639 + 32896) >> 8
// = 255. The pixel the mask leaves at 0 stays as it was.
func TestOverGlyphHalfMask(t *testing.T) {
	dst := image.NewRGBA(image.Rect(0, 0, 4, 3))
	for i := 0; i < len(dst.Pix); i += 4 {
		copy(dst.Pix[i:], []uint8{100, 50, 200, 255})
	}
	mask := image.NewAlpha(image.Rect(0, 0, 2, 1))
	mask.Pix[0] = 0x80 // the second mask pixel is 0
	src := image.NewUniform(color.RGBA{16, 32, 48, 255})
	// The glyph's (0, 0) goes to the canvas's (2, 1).
	s2d := f64.Aff3{1, 0, 2, 0, 1, 1}
	if !overGlyph(dst, s2d, src, mask.Rect, draw.Over, &draw.Options{SrcMask: mask}) {
		t.Fatal("a whole-pixel translation of a uniform colour through a mask: overGlyph declined it")
	}
	if got, want := dst.RGBAAt(2, 1), (color.RGBA{58, 41, 124, 255}); got != want {
		t.Errorf("(2, 1) = %v, want %v", got, want)
	}
	for _, p := range []image.Point{{3, 1}, {1, 1}, {2, 0}, {2, 2}} {
		if got, want := dst.RGBAAt(p.X, p.Y), (color.RGBA{100, 50, 200, 255}); got != want {
			t.Errorf("%v = %v, want it untouched %v", p, got, want)
		}
	}
	// Not a translation by whole pixels: left to the kernel.
	for _, m := range []f64.Aff3{{1, 0, 2.5, 0, 1, 1}, {0, -1, 2, 1, 0, 1}, {2, 0, 0, 0, 2, 0}} {
		if overGlyph(dst, m, src, mask.Rect, draw.Over, &draw.Options{SrcMask: mask}) {
			t.Errorf("%v: overGlyph took a matrix that is no whole-pixel translation", m)
		}
	}
}

// TestGlyphInterpIsBiLinear: glyphInterp's Transform leaves every byte of
// the canvas as draw.BiLinear's does, for any canvas, colour (premultiplied
// or not), mask (an *image.Alpha or another image, its bounds anywhere,
// offset by any SrcMaskP), source rectangle (partly off the mask and the
// canvas) and matrix (whole-pixel translations, which overGlyph draws,
// and others, which go to the kernel).
func TestGlyphInterpIsBiLinear(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w, h := rapid.IntRange(1, 12).Draw(t, "w"), rapid.IntRange(1, 12).Draw(t, "h")
		pix := rapid.SliceOfN(rapid.Byte(), 4*w*h, 4*w*h).Draw(t, "canvas")
		ox, oy := rapid.IntRange(-3, 3).Draw(t, "ox"), rapid.IntRange(-3, 3).Draw(t, "oy")
		canvas := func() *image.RGBA {
			return &image.RGBA{Pix: bytes.Clone(pix), Stride: 4 * w, Rect: image.Rect(ox, oy, ox+w, oy+h)}
		}
		var c color.Color
		rgba := [4]uint8{rapid.Byte().Draw(t, "r"), rapid.Byte().Draw(t, "g"), rapid.Byte().Draw(t, "b"), rapid.Byte().Draw(t, "a")}
		if rapid.Bool().Draw(t, "premultiplied") {
			a := rgba[3]
			c = color.RGBA{min(rgba[0], a), min(rgba[1], a), min(rgba[2], a), a}
		} else {
			c = color.RGBA{rgba[0], rgba[1], rgba[2], rgba[3]} // a component above alpha: the kernel caps it
		}
		mw, mh := rapid.IntRange(1, 6).Draw(t, "mw"), rapid.IntRange(1, 6).Draw(t, "mh")
		mx, my := rapid.IntRange(-2, 2).Draw(t, "mx"), rapid.IntRange(-2, 2).Draw(t, "my")
		mr := image.Rect(mx, my, mx+mw, my+mh)
		mpix := rapid.SliceOfN(rapid.SampledFrom([]uint8{0, 0, 1, 0x7f, 0x80, 0xfe, 0xff, 37}), mw*mh, mw*mh).Draw(t, "mask")
		var mask image.Image = &image.Alpha{Pix: mpix, Stride: mw, Rect: mr}
		if rapid.Bool().Draw(t, "16-bit mask") {
			g := image.NewAlpha16(mr)
			for i, a := range mpix {
				g.Pix[2*i], g.Pix[2*i+1] = a, rapid.Byte().Draw(t, "low byte")
			}
			mask = g
		}
		mp := image.Pt(rapid.IntRange(-2, 2).Draw(t, "mpx"), rapid.IntRange(-2, 2).Draw(t, "mpy"))
		sx, sy := rapid.IntRange(-3, 3).Draw(t, "sx"), rapid.IntRange(-3, 3).Draw(t, "sy")
		sr := image.Rect(sx, sy, sx+rapid.IntRange(0, 7).Draw(t, "sw"), sy+rapid.IntRange(0, 7).Draw(t, "sh"))
		tx, ty := float64(rapid.IntRange(-8, 14).Draw(t, "tx")), float64(rapid.IntRange(-8, 14).Draw(t, "ty"))
		s2d := f64.Aff3{1, 0, tx, 0, 1, ty}
		switch rapid.IntRange(0, 5).Draw(t, "matrix") {
		case 1:
			s2d[2] += 0.25 // between pixels
		case 2:
			s2d[4] = -1 // flipped
		}
		opts := &draw.Options{SrcMask: mask, SrcMaskP: mp}
		want, got := canvas(), canvas()
		draw.BiLinear.Transform(want, s2d, image.NewUniform(c), sr, draw.Over, opts)
		glyphInterp{}.Transform(got, s2d, image.NewUniform(c), sr, draw.Over, opts)
		if !bytes.Equal(got.Pix, want.Pix) {
			t.Fatalf("canvas after glyphInterp\n%v\nafter draw.BiLinear\n%v", got.Pix, want.Pix)
		}
	})
}
