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
	Doc:  "Kueue defaults: a ClusterQueue per group in one cohort, borrowing, no preemption, fair sharing off",
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
			policyKnob("reclaim_within_cohort", CheckReclaimWithinCohort, func(k *Knobs) *string { return &k.ReclaimWithinCohort }),
			policyKnob("within_cluster_queue", CheckWithinClusterQueue, func(k *Knobs) *string { return &k.WithinClusterQueue }),
			policyKnob("borrow_within_cohort", CheckBorrowWithinCohort, func(k *Knobs) *string { return &k.BorrowWithinCohort }),
			Slot.Knob("fair_sharing", func(k *Knobs, v registry.Value) error {
				x, err := registry.Bool(v, "fair_sharing")
				k.FairSharing = x
				return err
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
			for _, p := range []struct{ key, v, d string }{
				{"reclaim_within_cohort", k.ReclaimWithinCohort, d.ReclaimWithinCohort},
				{"within_cluster_queue", k.WithinClusterQueue, d.WithinClusterQueue},
				{"borrow_within_cohort", k.BorrowWithinCohort, d.BorrowWithinCohort},
			} {
				if p.v != "" && p.v != p.d {
					parts = append(parts, p.key+": "+p.v)
				}
			}
			if k.FairSharing != d.FairSharing {
				parts = append(parts, "fair_sharing: "+strconv.FormatBool(k.FairSharing))
			}
			return parts
		}),
	},
	New: func(cfg policy.Config, k registry.Knobs) (policy.Allocator, error) { return New(cfg, Slot.Get(k)) },
	// At Kueue's defaults nothing is preempted: as costly as fifo (9.7 ms
	// against fifo's 12.4 on the excerpt, 0.19 s against 0.20 s on the
	// full SDSC-SP2 log, December 2026).
	Cost:  1,
	Style: registry.Style{Color: color.RGBA{R: 0xCC, G: 0x79, B: 0xA7, A: 0xff}, Dashes: []float64{3, 3}, Marker: registry.Square, Open: true},
}

// policyKnob is a knob of one of the ClusterQueue's preemption policies,
// checked by check (its error without the "quota: " prefix, at the key).
func policyKnob(key string, check func(string) error, field func(*Knobs) *string) registry.Knob {
	return Slot.Knob(key, func(k *Knobs, v registry.Value) error {
		x, err := v.Text()
		if err != nil {
			return err
		}
		if err := check(x); err != nil {
			return v.Errorf("%s", strings.TrimPrefix(err.Error(), "quota: "))
		}
		*field(k) = x
		return nil
	})
}

// FairName is the variant quota-fair's name.
const FairName = "quota-fair"

// FairPolicy is the variant quota-fair: quota as it ran before Kueue's
// defaults, with reclaimWithinCohort Any and fair-sharing preemption.
var FairPolicy = registry.Variant{
	Name:       FairName,
	Label:      "Kueue with fair-sharing preemption: quota with reclaim_within_cohort Any and fair_sharing on",
	Base:       Policy,
	Preset:     registry.Preset(Slot, DefaultKnobs, FairPreset),
	PresetKeys: []string{"reclaim_within_cohort", "fair_sharing"},
	Presets:    "reclaim_within_cohort: Any, fair_sharing: true",
	// A contended log's fair-sharing preemptions requeue and retry: 21 ms
	// against fifo's 12 on the excerpt, 1.17 s against 0.20 s on the full
	// log (44k preemptions).
	Cost:  3,
	Style: registry.Style{Color: color.RGBA{R: 0xAA, G: 0x44, B: 0x99, A: 0xff}, Dashes: []float64{3, 1.5}, Marker: registry.TriangleDown},
}.Descriptor()
