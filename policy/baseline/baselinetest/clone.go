package baselinetest

import (
	"fmt"
	"reflect"

	"github.com/bursar-hpc/bursar/internal/deepcopy"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
)

// CloneRuleMatches checks a rule that copies itself (baseline.RuleCloner)
// against internal/deepcopy, which copies every field there is: k's
// Clone must give its rule what the reflective copy gives, field for
// field. A table added to the rule and forgotten in its CloneRule fails
// here, in the rule's own tests.
func CloneRuleMatches(k *baseline.Core) error {
	if _, ok := k.Rule().(baseline.RuleCloner); !ok {
		return fmt.Errorf("rule %s does not copy itself", k.Rule().Name())
	}
	c, err := k.Clone()
	if err != nil {
		return err
	}
	want, err := deepcopy.Copy(&struct{ r baseline.Rule }{k.Rule()}, deepcopy.Options{DropFuncs: true, Replace: map[any]any{k: c}})
	if err != nil {
		return err
	}
	got := c.(*baseline.Core).Rule()
	if !reflect.DeepEqual(got, want.r) {
		return fmt.Errorf("CloneRule made\n%+v\ninternal/deepcopy makes\n%+v", got, want.r)
	}
	orig, cp := memory(k.Rule()), memory(got)
	for _, r := range cp {
		for _, o := range orig {
			if r.lo < o.hi && o.lo < r.hi {
				return fmt.Errorf("CloneRule's copy shares %s with the original's %s", r.what, o.what)
			}
		}
	}
	return nil
}

type span struct {
	lo, hi uintptr
	what   string
}

// memory lists the slice arrays and pointer targets reachable from rule,
// but the Core and the knobs (set once, never changed).
func memory(rule baseline.Rule) []span {
	var out []span
	core := reflect.TypeFor[*baseline.Core]()
	var walk func(v reflect.Value, what string)
	walk = func(v reflect.Value, what string) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() || v.Type() == core || v.Type().Elem().Size() == 0 {
				return
			}
			out = append(out, span{v.Pointer(), v.Pointer() + v.Type().Elem().Size(), what})
			if v.Type().Elem().Kind() != reflect.Struct || what == "rule" {
				walk(v.Elem(), what)
			}
		case reflect.Slice:
			if v.IsNil() || v.Cap() == 0 || v.Type().Elem().Size() == 0 {
				return
			}
			out = append(out, span{v.Pointer(), v.Pointer() + uintptr(v.Cap())*v.Type().Elem().Size(), what})
			full := v.Slice3(0, v.Cap(), v.Cap())
			for i := range full.Len() {
				walk(full.Index(i), what)
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if f := v.Type().Field(i); f.Name != "knobs" {
					walk(v.Field(i), v.Type().String()+"."+f.Name)
				}
			}
		case reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem(), what)
			}
		}
	}
	walk(reflect.ValueOf(rule), "rule")
	return out
}

// CloneRuleMatchesAlong drives a, a fresh baseline whose rule copies
// itself, through a small rigid workload (three campaigns, jobs wider and
// narrower than their shares, filed over the first minutes) and checks
// CloneRuleMatches every 50 ticks.
func CloneRuleMatchesAlong(a *baseline.Core) error {
	var ids []policy.CampaignID
	for i, name := range []string{"a", "b", "c"} {
		id, err := a.Register(Env(name, float64(1+i), policy.AgentBurst))
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	for t := range 600 {
		if t%7 == 0 && t < 400 {
			c := ids[t%len(ids)]
			run := 60 + t%80
			if _, err := a.RequestRigid(c, 1+t%5, run+t%90, run, policy.AgentBurst, t); err != nil {
				return err
			}
		}
		a.Tick()
		if t%50 == 0 {
			if err := CloneRuleMatches(a); err != nil {
				return fmt.Errorf("tick %d: %w", a.Now(), err)
			}
		}
	}
	return nil
}
