package static

import (
	"image/color"
	"strconv"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/registry"
)

// Slot is the policy's knobs in a registry.Knobs.
var Slot = registry.Slot[Knobs](Name)

// Policy describes static to the program (registry.Descriptor).
var Policy = registry.Descriptor{
	Name: Name,
	Doc:  "condo ownership: the largest groups each own a partition of at least their widest job, the rest share one",
	Knobs: registry.KnobSet{
		Default: Slot.Default(DefaultKnobs),
		Keys: []registry.Knob{
			Slot.IntKnob("owners", 0, "owners must be ≥ 0 groups, got %d", func(k *Knobs) *int { return &k.Owners }),
			Slot.ChoiceKnob("lend", LendNone, LendScavenger, func(k *Knobs) *string { return &k.Lend }),
			Slot.ChoiceKnob("partitions", PartitionsShare, PartitionsCondo, func(k *Knobs) *string { return &k.Partitions }),
		},
		Format: Slot.Format(func(k, d Knobs) (parts []string) {
			if k.Owners != d.Owners {
				parts = append(parts, "owners: "+strconv.Itoa(k.Owners))
			}
			if k.Lend != "" && k.Lend != d.Lend {
				parts = append(parts, "lend: "+k.Lend)
			}
			if partitions(k) != partitions(d) {
				parts = append(parts, "partitions: "+partitions(k))
			}
			return parts
		}),
	},
	New:   func(cfg policy.Config, k registry.Knobs) (policy.Allocator, error) { return New(cfg, Slot.Get(k)) },
	Cost:  0.5,
	Style: registry.Style{Color: color.RGBA{R: 0xE6, G: 0x9F, B: 0x00, A: 0xff}, Dashes: []float64{1.2, 2}, Marker: registry.Diamond},
}

// partitions is k's partitions knob, "" read as PartitionsShare.
func partitions(k Knobs) string {
	if k.Partitions == "" {
		return PartitionsShare
	}
	return k.Partitions
}

// ShareName is the variant static-share's name.
const ShareName = "static-share"

// SharePolicy is the variant static-share: static with revision 2's
// partitions, sized by share alone.
var SharePolicy = registry.Variant{
	Name:       ShareName,
	Label:      "ownership with partitions sized by share alone: static with partitions share",
	Base:       Policy,
	Preset:     registry.Preset(Slot, DefaultKnobs, func(k *Knobs) { k.Partitions = PartitionsShare }),
	PresetKeys: []string{"partitions"},
	Presets:    "partitions: share",
	Style:      registry.Style{Color: color.RGBA{R: 0x99, G: 0x99, B: 0x33, A: 0xff}, Dashes: []float64{1.2, 4}, Marker: registry.TriangleDown, Open: true},
}.Descriptor()
