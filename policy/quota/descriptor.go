package quota

import (
	"image/color"
	"slices"
	"strconv"
	"strings"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/registry"
)

// Slot is the policy's knobs in a registry.Knobs.
var Slot = registry.Slot[Knobs](Name)

// Policy describes quota to the program (registry.Descriptor).
var Policy = registry.Descriptor{
	Name: Name,
	Doc:  "Kueue: a ClusterQueue per group in one cohort, borrowing and fair-sharing preemption",
	Knobs: registry.KnobSet{
		Default: Slot.Default(DefaultKnobs),
		Keys: []registry.Knob{
			Slot.IntKnob("borrowing_limit", Unlimited, "borrowing_limit must be ≥ 0 GPUs, or -1 for unlimited, got %d",
				func(k *Knobs) *int { return &k.BorrowingLimit }),
			Slot.ChoiceKnob("queueing_strategy", BestEffortFIFO, StrictFIFO, func(k *Knobs) *string { return &k.QueueingStrategy }),
			Slot.Knob("preemption_strategies", func(k *Knobs, v registry.Value) error {
				x, err := v.Texts()
				if err != nil {
					return err
				}
				if err := CheckPreemptionStrategies(x); err != nil {
					return v.Errorf("%s", strings.TrimPrefix(err.Error(), "quota: "))
				}
				if slices.Equal(x, ValidPreemptionStrategies[0]) {
					x = nil // the default, as it reads when left out
				}
				k.PreemptionStrategies = x
				return nil
			}),
		},
		Format: Slot.Format(func(k, d Knobs) (parts []string) {
			if k.BorrowingLimit != d.BorrowingLimit {
				parts = append(parts, "borrowing_limit: "+strconv.Itoa(k.BorrowingLimit))
			}
			if k.QueueingStrategy != "" && k.QueueingStrategy != d.QueueingStrategy {
				parts = append(parts, "queueing_strategy: "+k.QueueingStrategy)
			}
			if k.PreemptionStrategies != nil && !slices.Equal(k.PreemptionStrategies, ValidPreemptionStrategies[0]) {
				parts = append(parts, "preemption_strategies: "+registry.FormatList(k.PreemptionStrategies))
			}
			return parts
		}),
	},
	New: func(cfg policy.Config, k registry.Knobs) (policy.Allocator, error) { return New(cfg, Slot.Get(k)) },
	// A contended log's fair-sharing preemptions requeue and retry.
	Cost:  3,
	Style: registry.Style{Color: color.RGBA{R: 0xCC, G: 0x79, B: 0xA7, A: 0xff}, Dashes: []float64{3, 3}, Marker: registry.Square, Open: true},
}
