package tracestudy

import (
	"testing"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/budget"
	"github.com/bursar-hpc/bursar/trace"
)

// One restart rule per study (docs/studies.md §6.7): every policy of a
// trace study restarts its preempted jobs by the mapping's `restart`,
// `zero` when it names none (an SWF log's jobs did not checkpoint), the
// budget policy's own default (an hourly checkpoint) included; and a
// budget-knobs spec keeps the restart it sweeps unless the mapping names
// one.
func TestOneRestartRulePerStudy(t *testing.T) {
	w, err := Load(BuiltinExcerpt, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		restart string
		want    baseline.Restart
	}{{"", baseline.Restart{}}, {"checkpoint:600", baseline.Restart{Checkpoint: 600}}} {
		specs := TraceSpecs(orDefault(nil).Names())
		opt := trace.Options{}
		if err := ApplyMapping(configs.TraceMapping{Restart: tc.restart}, &opt, specs); err != nil {
			t.Fatal(err)
		}
		for _, s := range specs {
			if s.Knobs.Restart == nil || *s.Knobs.Restart != tc.want || budget.Slot.Get(s.Knobs).Restart != tc.want {
				t.Errorf("restart %q: %s's restart %v, budget's knob %v: want %v", tc.restart, s.Policy, s.Knobs.Restart, budget.Slot.Get(s.Knobs).Restart, tc.want)
				continue
			}
			a, err := Allocator(nil, w, s, nil)
			if err != nil {
				t.Fatal(err)
			}
			if k, ok := a.(*baseline.Core); ok && k.Restart() != tc.want {
				t.Errorf("restart %q: %s restarts by %v, want %v", tc.restart, s.Policy, k.Restart(), tc.want)
			}
		}
	}
	specs, err := BudgetKnobSpecs([]int{7}, []int{3600}, BudgetRestarts)
	if err != nil {
		t.Fatal(err)
	}
	if err := ApplyMapping(configs.TraceMapping{}, &trace.Options{}, specs); err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if r := s.Knobs.Restart; r == nil || r.String() != s.Restart {
			t.Errorf("budget-knobs spec %s: restart %v", s.Restart, r)
		}
	}
}
