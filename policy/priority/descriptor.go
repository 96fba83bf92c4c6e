package priority

import (
	"fmt"
	"image/color"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/registry"
)

// Slot is the policy's knobs in a registry.Knobs.
var Slot = registry.Slot[Knobs](Name)

// Policy describes priority to the program (registry.Descriptor).
var Policy = registry.Descriptor{
	Name: Name,
	Doc:  "priority tiers with EASY backfilling, a blocked request preempting lower tiers",
	Knobs: registry.KnobSet{
		Default: Slot.Default(func() Knobs { return Knobs{} }),
		Keys: []registry.Knob{
			Slot.Knob("inflate", func(k *Knobs, v registry.Value) error {
				names, err := v.Texts()
				k.Inflate = names
				return err
			}),
		},
		Format: Slot.Format(func(k, _ Knobs) []string {
			if len(k.Inflate) > 0 {
				return []string{"inflate: " + registry.FormatList(k.Inflate)}
			}
			return nil
		}),
	},
	CheckCampaigns: func(k registry.Knobs, known func(string) bool) error {
		for _, name := range Slot.Get(k).Inflate {
			if !known(name) {
				return fmt.Errorf("inflate names %q, which is not a campaign of the scenario", name)
			}
		}
		return nil
	},
	New:   func(cfg policy.Config, k registry.Knobs) (policy.Allocator, error) { return New(cfg, Slot.Get(k)) },
	Cost:  2,
	Style: registry.Style{Color: color.RGBA{R: 0xD5, G: 0x5E, B: 0x00, A: 0xff}, Dashes: []float64{6, 2, 1.5, 2}, Marker: registry.Triangle},
}
