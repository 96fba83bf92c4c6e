package budget

import (
	"fmt"
	"image/color"
	"strconv"
	"strings"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/registry"
)

// Slot is the policy's knobs in a registry.Knobs.
var Slot = registry.Slot[Knobs](Name)

// groupKeys are the keys of one item of the groups knob.
var groupKeys = []string{"name", "members"}

// TraceKnobs are the trace studies' knobs: DefaultKnobs recalculating
// every SlurmCalcPeriod.
func TraceKnobs() Knobs { k := DefaultKnobs(); k.CalcPeriod = SlurmCalcPeriod; return k }

// Policy describes budget to the program (registry.Descriptor).
var Policy = registry.Descriptor{
	Name: Name,
	Doc:  "GPU-time budgets: hierarchical fair share over a sliding window, with a minimum runtime",
	Knobs: registry.KnobSet{
		Default: Slot.Default(DefaultKnobs),
		Trace:   Slot.Default(TraceKnobs),
		Keys: []registry.Knob{
			Slot.IntKnob("window", 1, "window must be > 0 seconds, got %d", func(k *Knobs) *int { return &k.Window }),
			Slot.Knob("min_runtime", parseMinRuntime),
			Slot.Knob("groups", parseGroups),
			Slot.IntKnob("calc_period", 1, registry.CalcPeriodError, func(k *Knobs) *int { return &k.CalcPeriod }),
			Slot.Knob("restart", func(k *Knobs, v registry.Value) error {
				text, err := v.Text()
				if err != nil {
					return err
				}
				r, err := baseline.ParseRestart(text)
				if err != nil {
					return v.Errorf("%v", err)
				}
				k.Restart = r
				return nil
			}),
		},
		Mappings: []registry.Mapping{{Section: "A budget group", Keys: groupKeys}},
		Format:   Slot.Format(formatKnobs),
	},
	CheckCampaigns: func(k registry.Knobs, known func(string) bool) error {
		for _, g := range Slot.Get(k).Groups {
			for _, name := range g.Members {
				if !known(name) {
					return fmt.Errorf("group %q names %q, which is not a campaign of the scenario", g.Name, name)
				}
			}
		}
		return nil
	},
	New: func(cfg policy.Config, k registry.Knobs) (policy.Allocator, error) { return New(cfg, Slot.Get(k)) },
	// On a contended trace budget preempts and requeues, and its queue
	// grows: 6–41 times fifo's CPU time.
	Cost: 10,
	// The window W: usage older than that no longer counts.
	Lookback: func(k registry.Knobs) int64 { return int64(Slot.Get(k).Window) },
	Style:    registry.Style{Color: color.RGBA{R: 0x56, G: 0xB4, B: 0xE9, A: 0xff}, Dashes: []float64{8, 2, 1.5, 2, 1.5, 2}, Marker: registry.Triangle, Open: true},
}

// parseMinRuntime reads min_runtime: {class: seconds or never, …}.
func parseMinRuntime(k *Knobs, v registry.Value) error {
	return v.Map(nil, func(cls string, ck, cv registry.Value) error {
		c, err := policy.ParseClass(cls)
		if err != nil {
			return ck.Errorf("%v", err)
		}
		if s, ok := cv.Scalar(); ok && s == "never" {
			k.MinRuntime[c] = Never
			return nil
		}
		x, err := registry.IntAtLeast(cv, Never, "a minimum runtime must be ≥ 0 seconds, or never (-1), got %d")
		k.MinRuntime[c] = x
		return err
	})
}

// parseGroups reads groups: [{name: …, members: [...]}, …].
func parseGroups(k *Knobs, v registry.Value) error {
	items, ok := v.Items()
	if !ok {
		return v.Errorf("want a list of groups (- {name: …, members: [...]}), got %s", v.Describe())
	}
	k.Groups = nil
	for _, item := range items {
		var g Group
		err := item.Map(groupKeys, func(f string, _, fv registry.Value) error {
			var err error
			if f == "name" {
				g.Name, err = fv.Text()
			} else {
				g.Members, err = fv.Texts()
			}
			return err
		})
		if err != nil {
			return err
		}
		k.Groups = append(k.Groups, g)
	}
	return nil
}

// formatKnobs writes the knobs of k that differ from d.
func formatKnobs(b, db Knobs) (parts []string) {
	if b.Window != db.Window {
		parts = append(parts, "window: "+strconv.Itoa(b.Window))
	}
	if b.MinRuntime != db.MinRuntime {
		var m []string
		for c, x := range b.MinRuntime {
			v := strconv.Itoa(x)
			if x == Never {
				v = "never"
			}
			m = append(m, policy.Class(c).String()+": "+v)
		}
		parts = append(parts, "min_runtime: {"+strings.Join(m, ", ")+"}")
	}
	if len(b.Groups) > 0 {
		var g []string
		for _, gr := range b.Groups {
			g = append(g, "{name: "+strconv.Quote(gr.Name)+", members: "+registry.FormatList(gr.Members)+"}")
		}
		parts = append(parts, "groups: ["+strings.Join(g, ", ")+"]")
	}
	if b.CalcPeriod != db.CalcPeriod {
		parts = append(parts, "calc_period: "+strconv.Itoa(b.CalcPeriod))
	}
	if b.Restart != db.Restart {
		parts = append(parts, "restart: "+b.Restart.String())
	}
	return parts
}
