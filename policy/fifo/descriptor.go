package fifo

import (
	"image/color"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/registry"
)

// Policy describes fifo to the program (registry.Descriptor): no knobs.
var Policy = registry.Descriptor{
	Name: Name,
	Doc:  "first come, first served with EASY backfilling",
	New:  func(cfg policy.Config, _ registry.Knobs) (policy.Allocator, error) { return New(cfg) },
	// The unit of every other policy's cost.
	Cost:  1,
	Style: registry.Style{Color: color.RGBA{R: 0x00, G: 0x72, B: 0xB2, A: 0xff}, Dashes: []float64{5, 2.5}, Marker: registry.Square},
}
