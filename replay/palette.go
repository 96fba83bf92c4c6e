package replay

import (
	"fmt"
	"image/color"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/policy"
)

// The palette is Okabe–Ito (Okabe and Ito, "Color Universal Design", 2008),
// in the nine-colour form that includes grey: it stays distinguishable under
// the common colour-vision deficiencies and in greyscale print, which is why
// the figures use it too. Each campaign and each grant path gets a fixed
// colour here, once, so the report and the figures cannot drift apart.
var (
	okabeBlack         = color.RGBA{0x00, 0x00, 0x00, 0xff}
	okabeOrange        = color.RGBA{0xE6, 0x9F, 0x00, 0xff}
	okabeSkyBlue       = color.RGBA{0x56, 0xB4, 0xE9, 0xff}
	okabeBluishGreen   = color.RGBA{0x00, 0x9E, 0x73, 0xff}
	okabeBlue          = color.RGBA{0x00, 0x72, 0xB2, 0xff}
	okabeVermillion    = color.RGBA{0xD5, 0x5E, 0x00, 0xff}
	okabeReddishPurple = color.RGBA{0xCC, 0x79, 0xA7, 0xff}
	okabeGrey          = color.RGBA{0x99, 0x99, 0x99, 0xff}
)

// CampaignColors are the display campaigns' colours, indexed like
// engine.DisplayNames: victim blue, adaptive-sci bluish green, naive-sci
// orange, storm vermillion (the aggressor gets the alarm colour) and backfill
// grey (it only soaks up what nobody else wants).
var CampaignColors = [engine.NumDisplay]color.RGBA{
	engine.DisplayVictim:   okabeBlue,
	engine.DisplayAdaptive: okabeBluishGreen,
	engine.DisplayNaive:    okabeOrange,
	engine.DisplayStorm:    okabeVermillion,
	engine.DisplayBackfill: okabeGrey,
}

// PathColors are the grant paths' colours, indexed by policy.Path: warm sky
// blue, reclaim reddish purple, cold black, from light to dark as the wait
// grows. None of them is a campaign colour, so a grant dot never reads as a
// campaign.
var PathColors = [policy.NumPaths]color.RGBA{
	policy.Warm:    okabeSkyBlue,
	policy.Reclaim: okabeReddishPurple,
	policy.Cold:    okabeBlack,
}

// StormWindowShade is the tint of the storm window: the storm's vermillion,
// faint enough that the data drawn over it keeps its colour. It is
// non-premultiplied, so the same value means the same tint to gonum/plot and
// to the page.
var StormWindowShade = color.NRGBA{0xD5, 0x5E, 0x00, 0x1f}

// Hex writes c as #rrggbb, or #rrggbbaa when it is not opaque.
func Hex(c color.Color) string {
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	if n.A == 0xff {
		return fmt.Sprintf("#%02x%02x%02x", n.R, n.G, n.B)
	}
	return fmt.Sprintf("#%02x%02x%02x%02x", n.R, n.G, n.B, n.A)
}
