package figures

import (
	"image"
	"math"

	"golang.org/x/image/draw"
	"golang.org/x/image/math/f64"
)

// glyphInterp is the interpolator of the contexts newPNGCanvas makes:
// draw.BiLinear, with the one call text makes of it done directly. gg
// draws each glyph of a string by draw.BiLinear.Transform of a uniform
// colour through the glyph's alpha mask, Over the canvas, even where its
// matrix moves the glyph by whole pixels and scales nothing, as it does
// for every label of an unrotated figure. There the kernel's generic
// path reads and writes every pixel through color interfaces (about a
// sixth of a `trace` process on a small log, a seventh of the figure on
// SDSC-SP2) to end with the same integer arithmetic overGlyph does:
// each destination pixel's source pixel is the one a whole-pixel
// translation puts there, its weight exactly 1 (BiLinear is 1 − |t|, 0
// at |t| = 1), so the result is the masked colour over the canvas in
// 16-bit steps, bit for bit.
type glyphInterp struct{}

// Scale is draw.BiLinear's.
func (glyphInterp) Scale(dst draw.Image, dr image.Rectangle, src image.Image, sr image.Rectangle, op draw.Op, opts *draw.Options) {
	draw.BiLinear.Scale(dst, dr, src, sr, op, opts)
}

// Transform is draw.BiLinear's: overGlyph's where it applies.
func (glyphInterp) Transform(dst draw.Image, s2d f64.Aff3, src image.Image, sr image.Rectangle, op draw.Op, opts *draw.Options) {
	if !overGlyph(dst, s2d, src, sr, op, opts) {
		draw.BiLinear.Transform(dst, s2d, src, sr, op, opts)
	}
}

// maxShift bounds the translations overGlyph takes, far past any canvas,
// so that a pixel's source coordinates cannot overflow.
const maxShift = 1 << 30

// overGlyph does draw.BiLinear.Transform(dst, s2d, src, sr, Over, opts)
// and reports true where s2d is a translation by whole pixels, src a
// uniform colour, opts a source mask and no destination mask, and dst an
// *image.RGBA; otherwise it does nothing and reports false.
//
// The kernel's arithmetic at such a pixel (x/image/draw's
// transform_Image_Image_Over): the colour's 16-bit premultiplied
// components each times the mask's 16-bit alpha ÷ 0xffff (integer
// division), capped at the alpha's product (the kernel's pr > pa test,
// which only a colour not premultiplied meets); the canvas's 8-bit
// components widened to 16 bits (b × 0x101) times (0xffff − alpha) ÷
// 0xffff plus the colour's, kept in 16 bits, and stored as their high
// byte. A pixel the mask leaves at 0 stays as it is (b × 0x101 >> 8 = b),
// so it is skipped. The pixels drawn are those whose source pixel is in
// sr, within the canvas.
func overGlyph(dst draw.Image, s2d f64.Aff3, src image.Image, sr image.Rectangle, op draw.Op, opts *draw.Options) bool {
	if op != draw.Over || opts == nil || opts.SrcMask == nil || opts.DstMask != nil || sr.Empty() {
		return false
	}
	d, ok := dst.(*image.RGBA)
	if !ok {
		return false
	}
	u, ok := src.(*image.Uniform)
	if !ok {
		return false
	}
	if s2d[0] != 1 || s2d[1] != 0 || s2d[3] != 0 || s2d[4] != 1 {
		return false
	}
	tx, ty := s2d[2], s2d[5]
	if tx != math.Trunc(tx) || ty != math.Trunc(ty) || math.Abs(tx) > maxShift || math.Abs(ty) > maxShift {
		return false
	}
	shift := image.Pt(int(tx), int(ty))
	cr, cg, cb, ca := u.C.RGBA()
	mask, mp := opts.SrcMask, opts.SrcMaskP
	alpha, _ := mask.(*image.Alpha)
	r := sr.Add(shift).Intersect(d.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		sy := y - shift.Y + mp.Y
		for x := r.Min.X; x < r.Max.X; x++ {
			sx := x - shift.X + mp.X
			var ma uint32
			if alpha != nil {
				// image.Alpha's At and RGBA, inlined: 0 outside its bounds.
				if (image.Point{sx, sy}).In(alpha.Rect) {
					a := uint32(alpha.Pix[alpha.PixOffset(sx, sy)])
					ma = a | a<<8
				}
			} else {
				_, _, _, ma = mask.At(sx, sy).RGBA()
			}
			if ma == 0 {
				continue
			}
			pa := ca * ma / 0xffff
			pr, pg, pb := min(cr*ma/0xffff, pa), min(cg*ma/0xffff, pa), min(cb*ma/0xffff, pa)
			pa1 := 0xffff - pa
			q := d.Pix[d.PixOffset(x, y):]
			q[0] = uint8(uint16(uint32(q[0])*0x101*pa1/0xffff+pr) >> 8)
			q[1] = uint8(uint16(uint32(q[1])*0x101*pa1/0xffff+pg) >> 8)
			q[2] = uint8(uint16(uint32(q[2])*0x101*pa1/0xffff+pb) >> 8)
			q[3] = uint8(uint16(uint32(q[3])*0x101*pa1/0xffff+pa) >> 8)
		}
	}
	return true
}
