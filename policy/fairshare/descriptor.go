package fairshare

import (
	"image/color"
	"strconv"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/registry"
)

// Slot is the policy's knobs in a registry.Knobs.
var Slot = registry.Slot[Knobs](Name)

// number is a knob of positive (> 0) or non-negative (≥ 0) numbers.
func number(key string, positive bool, field func(*Knobs) *float64) registry.Knob {
	return Slot.Knob(key, func(k *Knobs, v registry.Value) error {
		x, err := v.Number()
		if err != nil {
			return err
		}
		if x < 0 || (positive && x == 0) {
			return v.Errorf("%s must be %s, got %s", key, map[bool]string{true: "> 0", false: "≥ 0"}[positive], scalar(v))
		}
		*field(k) = x
		return nil
	})
}

func scalar(v registry.Value) string { s, _ := v.Scalar(); return s }

// TraceKnobs are the trace studies' knobs: DefaultKnobs recalculating
// every SlurmCalcPeriod.
func TraceKnobs() Knobs { k := DefaultKnobs(); k.CalcPeriod = SlurmCalcPeriod; return k }

// Policy describes fairshare to the program (registry.Descriptor).
var Policy = registry.Descriptor{
	Name: Name,
	Doc:  "classic Slurm fair share (PriorityFlags=NO_FAIR_TREE) + EASY: multifactor priority with EASY backfilling",
	Knobs: registry.KnobSet{
		Default: Slot.Default(DefaultKnobs),
		Trace:   Slot.Default(TraceKnobs),
		Keys: []registry.Knob{
			number("half_life", true, func(k *Knobs) *float64 { return &k.HalfLife }),
			number("w_fairshare", false, func(k *Knobs) *float64 { return &k.WFairshare }),
			number("w_age", false, func(k *Knobs) *float64 { return &k.WAge }),
			number("max_age", true, func(k *Knobs) *float64 { return &k.MaxAge }),
			Slot.IntKnob("calc_period", 1, registry.CalcPeriodError, func(k *Knobs) *int { return &k.CalcPeriod }),
		},
		Format: Slot.Format(func(f, df Knobs) (parts []string) {
			for _, x := range []struct {
				key  string
				v, d float64
			}{{"half_life", f.HalfLife, df.HalfLife}, {"w_fairshare", f.WFairshare, df.WFairshare}, {"w_age", f.WAge, df.WAge}, {"max_age", f.MaxAge, df.MaxAge}} {
				if x.v != x.d {
					parts = append(parts, x.key+": "+registry.FormatNumber(x.v))
				}
			}
			if f.CalcPeriod != df.CalcPeriod {
				parts = append(parts, "calc_period: "+strconv.Itoa(f.CalcPeriod))
			}
			return parts
		}),
	},
	New:  func(cfg policy.Config, k registry.Knobs) (policy.Allocator, error) { return New(cfg, Slot.Get(k)) },
	Cost: 2,
	// Five half-lives: the decayed usage older than that weighs under 3 %.
	Lookback: func(k registry.Knobs) int64 { return int64(5 * Slot.Get(k).HalfLife) },
	Style:    registry.Style{Color: color.RGBA{R: 0x00, G: 0x9E, B: 0x73, A: 0xff}, Dashes: []float64{9, 3}, Marker: registry.Circle, Open: true},
}
