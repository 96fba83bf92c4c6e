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
	okabeYellow        = color.RGBA{0xF0, 0xE4, 0x42, 0xff}
	okabeGrey          = color.RGBA{0x99, 0x99, 0x99, 0xff}
)

// AgentColors are the campaigns' colours by agent kind: victim blue,
// adaptive bluish green, naive orange, storm vermillion (the aggressor gets
// the alarm colour), probe yellow and backfill grey (it only soaks up what
// nobody else wants).
var AgentColors = map[string]color.RGBA{
	engine.AgentVictim:   okabeBlue,
	engine.AgentAdaptive: okabeBluishGreen,
	engine.AgentNaive:    okabeOrange,
	engine.AgentStorm:    okabeVermillion,
	engine.AgentProbe:    okabeYellow,
	engine.AgentBackfill: okabeGrey,
}

// GroupColors are the display groups' colours: the agent kind's colour,
// and for the second, third, … group of one kind the same hue darker and
// lighter in turn, so that a larger cast stays readable without
// inventing hues outside the palette.
func GroupColors(groups []engine.DisplayGroup) []color.RGBA {
	out := make([]color.RGBA, len(groups))
	seen := map[string]int{}
	for i, g := range groups {
		c, ok := AgentColors[g.Agent]
		if !ok {
			c = okabeGrey
		}
		k := seen[g.Agent]
		seen[g.Agent]++
		if k > 0 {
			// 1 → 35 % darker, 2 → 35 % lighter, 3 → 60 % darker, …
			f := 0.35 + 0.25*float64((k-1)/2)
			f = min(f, 0.8)
			towards := uint8(0)
			if k%2 == 0 {
				towards = 0xff
			}
			mix := func(x uint8) uint8 { return uint8(float64(x) + (float64(towards)-float64(x))*f + 0.5) }
			c = color.RGBA{mix(c.R), mix(c.G), mix(c.B), 0xff}
		}
		out[i] = c
	}
	return out
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
