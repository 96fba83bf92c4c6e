package figures

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/png"
	"io"
	"math"
	"sync"

	"git.sr.ht/~sbinet/gg"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgimg"
)

// pngCanvas is a vgimg canvas on an RGBA image that it writes as a PNG
// with encodePNG. It starts white (vgimg paints its background), so the
// figure needs no background fill of its own.
type pngCanvas struct {
	*vgimg.Canvas
	img *image.RGBA
	ctx *gg.Context // the canvas's context where newPNGCanvas made it, nil where vgimg did
}

// newPNGCanvas is vgimg.NewWith(UseWH(w, h), UseDPI(dpi)) without its
// copy of the image: vgimg hands a fresh image to gg.NewContextForImage,
// which copies it (12 MB for the trace studies' 11 × 12 in figure, a
// third of the figure's time), while gg.NewContextForRGBA draws on the
// image it is given. The context is set up as vgimg sets up its own
// (butt line caps, y upwards). A size that is not a whole number of
// pixels takes vgimg's own path, which keeps the exact size in points.
func newPNGCanvas(w, h vg.Length) pngCanvas {
	pw, ph := pixelSize(w, h)
	if vg.Length(pw)/dpi*vg.Inch != w || vg.Length(ph)/dpi*vg.Inch != h {
		c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi))
		img, _ := c.Image().(*image.RGBA)
		return pngCanvas{Canvas: c, img: img}
	}
	img := image.NewRGBA(image.Rect(0, 0, pw, ph))
	ctx := gg.NewContextForRGBA(img)
	ctx.SetLineCapButt()
	ctx.InvertY()
	ctx.SetInterpolator(glyphInterp{})
	c := vgimg.NewWith(vgimg.UseImageWithContext(img, ctx), vgimg.UseDPI(dpi))
	return pngCanvas{Canvas: c, img: img, ctx: ctx}
}

// WriteTo writes the canvas as a PNG file.
func (c pngCanvas) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	b := bufio.NewWriter(cw)
	var err error
	if c.img != nil && opaque(c.img) {
		err = encodePNG(b, c.img)
	} else {
		err = png.Encode(b, c.Canvas.Image())
	}
	if err == nil {
		err = b.Flush()
	}
	return cw.n, err
}

// whiteUnder reports whether every pixel a fill of r could touch is
// opaque white already, so that filling r with opaque white would change
// no byte of the image: the source-over blend of white on white is white
// exactly, at any coverage (freetype's RGBAPainter: (255·(m−a)·257 +
// 65535·a) ÷ m ≫ 8 = 255). It is false where the canvas is not one of
// newPNGCanvas's own (its transform unknown). The pixels are those of r's
// corners through the context's transform, widened by two pixels on
// every side for the rasterizer's coverage at the edges.
func (c pngCanvas) whiteUnder(r vg.Rectangle) bool {
	if c.ctx == nil || c.img == nil {
		return false
	}
	d := float64(dpi)
	x0, y0 := c.ctx.TransformPoint(r.Min.X.Dots(d), r.Min.Y.Dots(d))
	x1, y1 := c.ctx.TransformPoint(r.Max.X.Dots(d), r.Max.Y.Dots(d))
	if math.IsNaN(x0+y0+x1+y1) || math.IsInf(x0+y0+x1+y1, 0) {
		return false
	}
	b := c.img.Bounds()
	px := image.Rect(int(math.Floor(min(x0, x1)))-2, int(math.Floor(min(y0, y1)))-2,
		int(math.Ceil(max(x0, x1)))+2, int(math.Ceil(max(y0, y1)))+2).Intersect(b)
	if px.Empty() {
		return true
	}
	for y := px.Min.Y; y < px.Max.Y; y++ {
		row := c.img.Pix[c.img.PixOffset(px.Min.X, y):c.img.PixOffset(px.Max.X, y)]
		for len(row) > 0 {
			n := min(len(row), len(whiteRow))
			if !bytes.Equal(row[:n], whiteRow[:n]) {
				return false
			}
			row = row[n:]
		}
	}
	return true
}

// whiteRow is 1,024 opaque white RGBA pixels, what whiteUnder compares
// the image's rows with.
var whiteRow = bytes.Repeat([]byte{0xff}, 4*1024)

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// pngStrips is how many horizontal strips encodePNG compresses at once.
// It is fixed, not the number of CPUs, so that a figure's bytes do not
// depend on the machine.
const pngStrips = 4

// encodePNG writes an opaque RGBA image as an 8-bit RGB PNG (the colour
// type image/png chooses for it, so a decoder returns the same pixels).
// It trades image/png's per-row filter search, which tries all five PNG
// filters on every row, for no filter (filter type 0): the figures are
// flat colours on white, where the search gains about 4 % in size for
// twice the time. The rows are cut into pngStrips strips deflated
// concurrently at BestSpeed, each ended by a sync flush (byte-aligned,
// the last one closed), so that their concatenation is one zlib stream
// (RFC 1950, 1951) — the way parallel gzip tools split their input —
// whose Adler-32 is combined from the strips' own. Each strip converts
// one row at a time into a small buffer, so the encoder holds no second
// copy of the image. The PNG layout (signature, IHDR, IDAT, IEND, CRC-32 per chunk) follows the
// PNG specification (W3C, 2nd ed., §5, §11.2).
func encodePNG(w io.Writer, m *image.RGBA) error {
	b := m.Bounds()
	width, height := b.Dx(), b.Dy()
	strips := make([]bytes.Buffer, pngStrips)
	sums := make([]uint32, pngStrips) // each strip's Adler-32
	errs := make([]error, pngStrips)
	var wg sync.WaitGroup
	for s := range pngStrips {
		y0, y1 := height*s/pngStrips, height*(s+1)/pngStrips
		wg.Go(func() {
			// One row at a time: the filter byte, then RGB.
			row := make([]byte, 1+3*width)
			sum := uint32(1)
			fw, err := flate.NewWriter(&strips[s], flate.BestSpeed)
			for y := y0; y < y1 && err == nil; y++ {
				off := m.PixOffset(b.Min.X, b.Min.Y+y)
				rgb(row[1:], m.Pix[off:off+4*width])
				sum = adler32Update(sum, row)
				_, err = fw.Write(row)
			}
			if err == nil {
				if s == pngStrips-1 {
					err = fw.Close()
				} else {
					err = fw.Flush()
				}
			}
			sums[s], errs[s] = sum, err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(width))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(height))
	ihdr[8], ihdr[9] = 8, 2 // 8 bits per sample, truecolour
	// Compression, filter method and interlace: 0 (deflate, adaptive, none).
	var z bytes.Buffer
	// CMF 0x78: deflate with a 32 KiB window; FLG 0x01: the fastest
	// level, and CMF·256 + FLG a multiple of 31 (RFC 1950 §2.2).
	z.Write([]byte{0x78, 0x01})
	sum := uint32(1) // the Adler-32 of nothing
	for s := range strips {
		z.Write(strips[s].Bytes())
		rows := int64(height*(s+1)/pngStrips - height*s/pngStrips)
		sum = adler32Combine(sum, sums[s], rows*int64(1+3*width))
	}
	z.Write(binary.BigEndian.AppendUint32(nil, sum))
	if _, err := w.Write([]byte("\x89PNG\r\n\x1a\n")); err != nil {
		return err
	}
	if err := writeChunk(w, "IHDR", ihdr[:]); err != nil {
		return err
	}
	if err := writeChunk(w, "IDAT", z.Bytes()); err != nil {
		return err
	}
	return writeChunk(w, "IEND", nil)
}

// adler32Combine is the Adler-32 of a‖b from those of a and b and b's
// length n. Adler-32 is two sums modulo 65521 (RFC 1950 §8): s1 = 1 + Σ
// bytes, s2 = Σ of the successive s1; appending b adds b's byte sum to s1
// and, to s2, b's own s2 plus n times (a's s1 − 1), the part of every
// one of b's prefix sums that comes from a.
func adler32Combine(a, b uint32, n int64) uint32 {
	const mod = 65521
	a1, a2 := int64(a&0xffff), int64(a>>16)
	b1, b2 := int64(b&0xffff), int64(b>>16)
	s1 := (a1 + b1 - 1 + mod) % mod
	s2 := (a2 + b2 + (n%mod)*((a1-1+mod)%mod)) % mod
	return uint32(s2<<16 | s1)
}

// rgb copies the RGBA pixels px into dst as RGB, dropping alpha. Four
// pixels at a time: two 8-byte loads, their twelve colour bytes shifted
// together into one 8-byte and one 4-byte store (a pixel's three byte
// loads and stores, with the slices' advances and bounds checks, were
// 23 instructions a pixel, 5 % of trace --policy fifo's process on
// SDSC-SP2); the last pixels one at a time.
func rgb(dst, px []byte) {
	for len(px) >= 16 && len(dst) >= 12 {
		a, b := binary.LittleEndian.Uint64(px), binary.LittleEndian.Uint64(px[8:])
		// a holds r0 g0 b0 a0 r1 g1 b1 a1 from its low byte up, b the
		// same of pixels 2 and 3.
		binary.LittleEndian.PutUint64(dst, a&0xffffff|a>>32&0xffffff<<24|b&0xffff<<48)
		binary.LittleEndian.PutUint32(dst[8:], uint32(b>>16&0xff|b>>32&0xffffff<<8))
		dst, px = dst[12:], px[16:]
	}
	for len(px) >= 4 && len(dst) >= 3 {
		d, s := dst[:3:3], px[:3:3]
		d[0], d[1], d[2] = s[0], s[1], s[2]
		dst, px = dst[3:], px[4:]
	}
}

// adler32Update is hash/adler32's update of the checksum a (RFC 1950 §8.2)
// by p, eight bytes a word, two words at a time: of eight bytes b0…b7,
// s1 gains their sum and s2 eight times s1 before them plus 8·b0 + 7·b1
// + … + 1·b7. The sums are found with the bytes in 16-bit lanes of a word
// (even bytes in one, odd in another), multiplied by a word of lane
// weights whose top lane is then the weighted sum, exactly: no lane's
// partial sum, even and odd added, exceeds 16 bits, so none carries into
// the next. hash/adler32's byte
// at a time was 3.5 % of trace's process on SDSC-SP2 (instructions).
func adler32Update(a uint32, p []byte) uint32 {
	const (
		mod  = 65521
		nmax = 5552 // hash/adler32's: s2 stays below 2³² between reductions
		lo   = 0x00ff00ff00ff00ff
		ones = 0x0001000100010001
		even = 2 | 4<<16 | 6<<32 | 8<<48 // b0, b2, b4, b6 weighted 8, 6, 4, 2
		odd  = 1 | 3<<16 | 5<<32 | 7<<48 // b1, b3, b5, b7 weighted 7, 5, 3, 1
	)
	s1, s2 := uint64(a&0xffff), uint64(a>>16)
	for len(p) > 0 {
		q := p[:min(len(p), nmax&^15)]
		p = p[len(q):]
		for len(q) >= 16 {
			// Two words: the first's bytes weigh 8 more in s2 than
			// they would alone, the second's sums come after them.
			w1, w2 := binary.LittleEndian.Uint64(q), binary.LittleEndian.Uint64(q[8:])
			e1, o1, e2, o2 := w1&lo, w1>>8&lo, w2&lo, w2>>8&lo
			sum1 := ((e1 + o1) * ones) >> 48
			s2 += 16*s1 + 8*sum1 + (e1*even+o1*odd)>>48 + (e2*even+o2*odd)>>48
			s1 += sum1 + ((e2+o2)*ones)>>48
			q = q[16:]
		}
		for _, c := range q {
			s1 += uint64(c)
			s2 += s1
		}
		s1 %= mod
		s2 %= mod
	}
	return uint32(s2<<16 | s1)
}

// opaque is m.Opaque(): every pixel's alpha 0xff. It reads two pixels a
// word, a row's words and-ed, rather than one alpha byte at a time (image.RGBA.Opaque over a
// trace study's 12 MB canvas was 2 % of its process on SDSC-SP2).
func opaque(m *image.RGBA) bool {
	if m.Rect.Empty() {
		return true
	}
	const alphas = 0xff000000ff000000
	w := 4 * m.Rect.Dx()
	for y := m.Rect.Min.Y; y < m.Rect.Max.Y; y++ {
		off := m.PixOffset(m.Rect.Min.X, y)
		row := m.Pix[off : off+w]
		// The row's words and-ed together: an alpha below 0xff
		// anywhere clears a bit of the alphas.
		all := uint64(alphas)
		for len(row) >= 16 {
			all &= binary.LittleEndian.Uint64(row) & binary.LittleEndian.Uint64(row[8:])
			row = row[16:]
		}
		for len(row) >= 8 {
			all &= binary.LittleEndian.Uint64(row)
			row = row[8:]
		}
		if all&alphas != alphas || len(row) == 4 && row[3] != 0xff {
			return false
		}
	}
	return true
}

// writeChunk writes one PNG chunk: length, type, data, CRC-32 of type and
// data.
func writeChunk(w io.Writer, typ string, data []byte) error {
	head := binary.BigEndian.AppendUint32(make([]byte, 0, 8), uint32(len(data)))
	head = append(head, typ...)
	crc := crc32.Update(crc32.ChecksumIEEE(head[4:]), crc32.IEEETable, data)
	if _, err := w.Write(head); err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	_, err := w.Write(binary.BigEndian.AppendUint32(nil, crc))
	return err
}
