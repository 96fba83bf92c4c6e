package slurm

import (
	"image/color"
	"strconv"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/registry"
)

// Slot is the policy's knobs in a registry.Knobs.
var Slot = registry.Slot[Knobs](Name)

// knobsOf is the policy's knobs in k: its defaults where k holds none (an
// optional policy's knobs are not in registry.DefaultKnobs, so that
// adding it moved no run's inputs).
func knobsOf(k registry.Knobs) Knobs {
	if kn := Slot.Get(k); kn != (Knobs{}) {
		return kn
	}
	return DefaultKnobs()
}

// knob makes config key key, whose setter starts from the defaults when
// the Knobs value held none of the policy's knobs.
func knob(key string, set func(k *Knobs, v registry.Value) error) registry.Knob {
	return Slot.Knob(key, func(k *Knobs, v registry.Value) error {
		if *k == (Knobs{}) {
			*k = DefaultKnobs()
		}
		return set(k, v)
	})
}

// intKnob is a knob of whole numbers ≥ 1.
func intKnob(key string, field func(*Knobs) *int) registry.Knob {
	return knob(key, func(k *Knobs, v registry.Value) error {
		x, err := registry.IntAtLeast(v, 1, key+" must be at least 1, got %d")
		*field(k) = x
		return err
	})
}

// numberKnob is a knob of numbers > 0 (positive) or ≥ 0.
func numberKnob(key string, positive bool, field func(*Knobs) *float64) registry.Knob {
	return knob(key, func(k *Knobs, v registry.Value) error {
		x, err := v.Number()
		if err != nil {
			return err
		}
		if x < 0 || (positive && x == 0) {
			return v.Errorf("%s must be %s, got %s", key, map[bool]string{true: "> 0", false: "≥ 0"}[positive], registry.FormatNumber(x))
		}
		*field(k) = x
		return nil
	})
}

// Policy describes slurm to the program (registry.Descriptor). It is
// optional: selectable by name (`--policies slurm`, `policy: slurm`), not
// in the default lists, whose committed outputs a later rerun will
// extend.
var Policy = registry.Descriptor{
	Name:     Name,
	Optional: true,
	Doc:      "Slurm 22.05's main scheduler and backfill (every tested job reserved) over multifactor priority with Fair Tree",
	Knobs: registry.KnobSet{
		Keys: []registry.Knob{
			intKnob("sched_interval", func(k *Knobs) *int { return &k.SchedInterval }),
			intKnob("default_queue_depth", func(k *Knobs) *int { return &k.DefaultQueueDepth }),
			intKnob("bf_interval", func(k *Knobs) *int { return &k.BfInterval }),
			intKnob("bf_resolution", func(k *Knobs) *int { return &k.BfResolution }),
			intKnob("bf_window", func(k *Knobs) *int { return &k.BfWindow }),
			intKnob("bf_max_job_test", func(k *Knobs) *int { return &k.BfMaxJobTest }),
			numberKnob("w_age", false, func(k *Knobs) *float64 { return &k.WAge }),
			numberKnob("w_fairshare", false, func(k *Knobs) *float64 { return &k.WFairshare }),
			numberKnob("w_job_size", false, func(k *Knobs) *float64 { return &k.WJobSize }),
			numberKnob("w_partition", false, func(k *Knobs) *float64 { return &k.WPartition }),
			numberKnob("w_qos", false, func(k *Knobs) *float64 { return &k.WQOS }),
			numberKnob("max_age", true, func(k *Knobs) *float64 { return &k.MaxAge }),
			numberKnob("half_life", true, func(k *Knobs) *float64 { return &k.HalfLife }),
			intKnob("calc_period", func(k *Knobs) *int { return &k.CalcPeriod }),
			knob("no_fair_tree", func(k *Knobs, v registry.Value) error {
				x, ok := v.Scalar()
				if !ok || x != "true" && x != "false" {
					return v.Errorf("no_fair_tree must be true or false, got %s", v.Describe())
				}
				k.NoFairTree = x == "true"
				return nil
			}),
		},
		Format: func(k, _ registry.Knobs) (parts []string) {
			f, d := knobsOf(k), DefaultKnobs()
			for _, x := range []struct {
				key  string
				v, d int
			}{{"sched_interval", f.SchedInterval, d.SchedInterval}, {"default_queue_depth", f.DefaultQueueDepth, d.DefaultQueueDepth},
				{"bf_interval", f.BfInterval, d.BfInterval}, {"bf_resolution", f.BfResolution, d.BfResolution},
				{"bf_window", f.BfWindow, d.BfWindow}, {"bf_max_job_test", f.BfMaxJobTest, d.BfMaxJobTest}} {
				if x.v != x.d {
					parts = append(parts, x.key+": "+strconv.Itoa(x.v))
				}
			}
			for _, x := range []struct {
				key  string
				v, d float64
			}{{"w_age", f.WAge, d.WAge}, {"w_fairshare", f.WFairshare, d.WFairshare}, {"w_job_size", f.WJobSize, d.WJobSize},
				{"w_partition", f.WPartition, d.WPartition}, {"w_qos", f.WQOS, d.WQOS},
				{"max_age", f.MaxAge, d.MaxAge}, {"half_life", f.HalfLife, d.HalfLife}} {
				if x.v != x.d {
					parts = append(parts, x.key+": "+registry.FormatNumber(x.v))
				}
			}
			if f.CalcPeriod != d.CalcPeriod {
				parts = append(parts, "calc_period: "+strconv.Itoa(f.CalcPeriod))
			}
			if f.NoFairTree {
				parts = append(parts, "no_fair_tree: true")
			}
			return parts
		},
	},
	New: func(cfg policy.Config, k registry.Knobs) (policy.Allocator, error) { return New(cfg, knobsOf(k)) },
	// BenchmarkReplaySlurm: 28 ms against fifo's 10 on the excerpt, 0.69 s
	// against 0.46 s on the full log, at the default weights.
	Cost: 2,
	// With a fair-share weight it keeps usage books as fairshare does.
	Lookback: func(k registry.Knobs) int64 {
		if kn := knobsOf(k); kn.WFairshare > 0 {
			return int64(5 * kn.HalfLife)
		}
		return 0
	},
	Style: registry.Style{Color: color.RGBA{R: 0x88, G: 0x22, B: 0x55, A: 0xff}, Dashes: []float64{10, 2, 2, 2}, Marker: registry.Diamond, Open: true},
}
