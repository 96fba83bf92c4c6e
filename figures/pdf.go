package figures

import (
	"strings"

	"golang.org/x/text/encoding/charmap"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgpdf"
)

// gonum/plot v0.17.0's PDF canvas embeds each font with the Windows-1252
// code page but hands the UTF-8 bytes of a string to the PDF unchanged, so
// any non-ASCII character comes out as mojibake ("min–max" prints as
// "minâ€“max"). Two fixes together make PDF text right:
//
//   - pdfCanvas converts every string to Windows-1252 on its way into the
//     PDF, so characters of that code page (–, ·, ×, µ) print as such;
//   - pdfText spells out, before layout, the few characters the code page
//     lacks (φ, Σ), so the widths the layout measured are the widths drawn.
//
// PNG and SVG keep the original text.

// pdfCanvas is a vgpdf canvas that writes strings in Windows-1252.
type pdfCanvas struct{ *vgpdf.Canvas }

func (c pdfCanvas) FillString(f font.Face, pt vg.Point, s string) {
	c.Canvas.FillString(f, pt, toCP1252(s))
}

// toCP1252 encodes s in Windows-1252; a rune outside it (which pdfText
// has already replaced) becomes '?'.
func toCP1252(s string) string {
	var b strings.Builder
	for _, r := range s {
		if c, ok := charmap.Windows1252.EncodeRune(r); ok {
			b.WriteByte(c)
		} else {
			b.WriteByte('?')
		}
	}
	return b.String()
}

// pdfSpelling replaces the characters of the figures' text that
// Windows-1252 lacks.
var pdfSpelling = strings.NewReplacer(
	"φ", "phi",
	"Σ ", "sum of ",
	"Σ", "sum",
	"≤", "<=",
	"≥", ">=",
	"−", "-",
)

// pdfText is the text transform for PDF figures (see pdfCanvas).
func pdfText(s string) string { return pdfSpelling.Replace(s) }

// plainText is the text transform for PNG and SVG figures.
func plainText(s string) string { return s }
