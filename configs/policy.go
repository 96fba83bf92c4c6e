package configs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/budget"
	"github.com/bursar-hpc/bursar/policy/fairshare"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/priority"
	"github.com/bursar-hpc/bursar/policy/quota"
	"github.com/bursar-hpc/bursar/policy/static"
	"gopkg.in/yaml.v3"
)

// Policy is a `policy:` key of a scenario file, a config or a series: the
// admission policy's name (engine.Policies) and the knobs of its baseline,
// policies.DefaultKnobs() where the key does not set them
// (docs/policies.md lists each knob and its default).
type Policy struct {
	Name  string
	Knobs policies.Knobs
	Line  int
	Key   string
}

// Apply makes s run under the policy.
func (pc *Policy) Apply(s *engine.Scenario) {
	s.Policy = pc.Name
	k := pc.Knobs
	s.PolicyKnobs = &k
}

// policyKnobKeys are the knobs each policy takes in the mapping form
// (`policy: {name: quota, borrowing_limit: 64}`); Bursar and the three
// knob-less baselines take none.
var policyKnobKeys = map[string][]string{
	priority.Name:  {"inflate"},
	static.Name:    {"owners", "lend"},
	quota.Name:     {"borrowing_limit", "queueing_strategy", "preemption_strategies"},
	fairshare.Name: {"half_life", "w_fairshare", "w_age", "max_age", "calc_period"},
	budget.Name:    {"window", "min_runtime", "groups", "calc_period", "restart"},
}

// budgetGroupKeys are the keys of one item of budget's groups.
var budgetGroupKeys = []string{"name", "members"}

// allPolicyKnobKeys is every knob of every policy, for "did you mean".
func allPolicyKnobKeys() []string {
	var out []string
	for _, name := range engine.Policies {
		out = append(out, policyKnobKeys[name]...)
	}
	return out
}

// policy reads `policy: NAME` or `policy: {name: NAME, knob: value, …}`.
// A knob of another policy is refused with the policy it belongs to, an
// unknown one with the nearest knob's name.
func (p *parser) policy(n *yaml.Node, key string) (*Policy, error) {
	pc := &Policy{Knobs: policies.DefaultKnobs(), Line: n.Line, Key: key}
	checkName := func(v *yaml.Node, k string) error {
		name, err := p.str(v, k)
		if err != nil {
			return err
		}
		if !slices.Contains(engine.Policies, name) {
			return p.errAt(v, k, "unknown admission policy %q%s (policies: %s)", name, suggest(name, engine.Policies), strings.Join(engine.Policies, ", "))
		}
		pc.Name = name
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		return pc, checkName(n, key)
	}
	if n.Kind != yaml.MappingNode {
		return nil, p.errAt(n, key, "want a policy name or {name: NAME, knob: value, …}, got %s", describe(n))
	}
	// The name first, wherever it is written: it says which knobs apply.
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "name" {
			if err := checkName(n.Content[i+1], join(key, "name")); err != nil {
				return nil, err
			}
		}
	}
	if pc.Name == "" {
		return nil, p.errAt(n, join(key, "name"), "missing: the mapping form names its policy ({name: quota, borrowing_limit: 64})")
	}
	allowed := append([]string{"name"}, policyKnobKeys[pc.Name]...)
	err := p.mapping(n, key, nil, func(sub string, k, v *yaml.Node) error {
		kk := join(key, sub)
		if !slices.Contains(allowed, sub) {
			for _, owner := range engine.Policies { // in order: calc_period is two policies' knob
				if keys := policyKnobKeys[owner]; slices.Contains(keys, sub) {
					return p.errAt(k, kk, "%s is a knob of policy %s, not of %s (%s takes %s)", sub, owner, pc.Name, pc.Name, strings.Join(allowed, ", "))
				}
			}
			return p.errAt(k, kk, "unknown key%s (policy %s takes %s)", suggest(sub, allPolicyKnobKeys()), pc.Name, strings.Join(allowed, ", "))
		}
		return p.policyKnob(pc, sub, v, kk)
	})
	if err != nil {
		return nil, err
	}
	return pc, nil
}

func (p *parser) policyKnob(pc *Policy, sub string, v *yaml.Node, key string) error {
	k := &pc.Knobs
	number := func(dst *float64, positive bool) error {
		x, err := p.value(engine.KnobOfKind(sub, "float"), v, key)
		if err != nil {
			return err
		}
		if x < 0 || (positive && x == 0) {
			return p.errAt(v, key, "%s must be %s, got %s", sub, map[bool]string{true: "> 0", false: "≥ 0"}[positive], v.Value)
		}
		*dst = x
		return nil
	}
	switch sub {
	case "name":
		return nil // read first
	case "inflate":
		names, err := p.strings(v, key)
		k.Priority.Inflate = names
		return err
	case "borrowing_limit":
		x, err := p.integer(v, key)
		if err == nil && x < quota.Unlimited {
			return p.errAt(v, key, "borrowing_limit must be ≥ 0 GPUs, or -1 for unlimited, got %d", x)
		}
		k.Quota.BorrowingLimit = x
		return err
	case "queueing_strategy":
		x, err := p.str(v, key)
		if err == nil && x != quota.BestEffortFIFO && x != quota.StrictFIFO {
			return p.errAt(v, key, "queueing_strategy must be %s or %s, got %q", quota.BestEffortFIFO, quota.StrictFIFO, x)
		}
		k.Quota.QueueingStrategy = x
		return err
	case "preemption_strategies":
		x, err := p.strings(v, key)
		if err != nil {
			return err
		}
		if err := quota.CheckPreemptionStrategies(x); err != nil {
			return p.errAt(v, key, "%s", strings.TrimPrefix(err.Error(), "quota: "))
		}
		if slices.Equal(x, quota.ValidPreemptionStrategies[0]) {
			x = nil // the default, as it reads when left out
		}
		k.Quota.PreemptionStrategies = x
		return nil
	case "owners":
		x, err := p.integer(v, key)
		if err == nil && x < 0 {
			return p.errAt(v, key, "owners must be ≥ 0 groups, got %d", x)
		}
		k.Static.Owners = x
		return err
	case "lend":
		x, err := p.str(v, key)
		if err == nil && x != static.LendNone && x != static.LendScavenger {
			return p.errAt(v, key, "lend must be %s or %s, got %q", static.LendNone, static.LendScavenger, x)
		}
		k.Static.Lend = x
		return err
	case "half_life":
		return number(&k.Fairshare.HalfLife, true)
	case "w_fairshare":
		return number(&k.Fairshare.WFairshare, false)
	case "w_age":
		return number(&k.Fairshare.WAge, false)
	case "max_age":
		return number(&k.Fairshare.MaxAge, true)
	case "calc_period":
		x, err := p.integer(v, key)
		if err == nil && x < 1 {
			return p.errAt(v, key, "calc_period must be at least 1 second, got %d", x)
		}
		if pc.Name == fairshare.Name {
			k.Fairshare.CalcPeriod = x
		} else {
			k.Budget.CalcPeriod = x
		}
		return err
	case "window":
		x, err := p.integer(v, key)
		if err == nil && x <= 0 {
			return p.errAt(v, key, "window must be > 0 seconds, got %d", x)
		}
		k.Budget.Window = x
		return err
	case "min_runtime":
		return p.mapping(v, key, nil, func(cls string, ck, cv *yaml.Node) error {
			c, err := policy.ParseClass(cls)
			if err != nil {
				return p.errAt(ck, join(key, cls), "%v", err)
			}
			if cv.Kind == yaml.ScalarNode && cv.Value == "never" {
				k.Budget.MinRuntime[c] = budget.Never
				return nil
			}
			x, err := p.integer(cv, join(key, cls))
			if err == nil && x < budget.Never {
				return p.errAt(cv, join(key, cls), "a minimum runtime must be ≥ 0 seconds, or never (-1), got %d", x)
			}
			k.Budget.MinRuntime[c] = x
			return err
		})
	case "restart":
		text, err := p.str(v, key)
		if err != nil {
			return err
		}
		r, err := baseline.ParseRestart(text)
		if err != nil {
			return p.errAt(v, key, "%v", err)
		}
		k.Budget.Restart = r
		return nil
	case "groups":
		if v.Kind != yaml.SequenceNode {
			return p.errAt(v, key, "want a list of groups (- {name: …, members: [...]}), got %s", describe(v))
		}
		k.Budget.Groups = nil
		for i, gn := range v.Content {
			gk := fmt.Sprintf("%s[%d]", key, i)
			var g budget.Group
			err := p.mapping(gn, gk, budgetGroupKeys, func(f string, _, fv *yaml.Node) error {
				var err error
				if f == "name" {
					g.Name, err = p.str(fv, join(gk, f))
				} else {
					g.Members, err = p.strings(fv, join(gk, f))
				}
				return err
			})
			if err != nil {
				return err
			}
			k.Budget.Groups = append(k.Budget.Groups, g)
		}
		return nil
	}
	return p.errAt(v, key, "unknown policy knob")
}

// strings reads a list of text values.
func (p *parser) strings(n *yaml.Node, key string) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errAt(n, key, "want a list of names [a, b, …], got %s", describe(n))
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		s, err := p.str(item, fmt.Sprintf("%s[%d]", key, i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// FormatPolicy writes the scenario's policy as the `policy:` value a file
// reads back to the same policy: the bare name when its knobs are the
// defaults, else the mapping with the knobs that differ.
func FormatPolicy(s *engine.Scenario) string {
	if s.Policy == "" {
		return ""
	}
	if s.PolicyKnobs == nil {
		return s.Policy
	}
	k, d := s.PolicyKnobs, policies.DefaultKnobs()
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	list := func(xs []string) string {
		q := make([]string, len(xs))
		for i, x := range xs {
			q[i] = strconv.Quote(x)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	var parts []string
	switch s.Policy {
	case priority.Name:
		if len(k.Priority.Inflate) > 0 {
			parts = append(parts, "inflate: "+list(k.Priority.Inflate))
		}
	case quota.Name:
		if k.Quota.BorrowingLimit != d.Quota.BorrowingLimit {
			parts = append(parts, "borrowing_limit: "+strconv.Itoa(k.Quota.BorrowingLimit))
		}
		if k.Quota.QueueingStrategy != "" && k.Quota.QueueingStrategy != d.Quota.QueueingStrategy {
			parts = append(parts, "queueing_strategy: "+k.Quota.QueueingStrategy)
		}
		if k.Quota.PreemptionStrategies != nil && !slices.Equal(k.Quota.PreemptionStrategies, quota.ValidPreemptionStrategies[0]) {
			parts = append(parts, "preemption_strategies: "+list(k.Quota.PreemptionStrategies))
		}
	case static.Name:
		if k.Static.Owners != d.Static.Owners {
			parts = append(parts, "owners: "+strconv.Itoa(k.Static.Owners))
		}
		if k.Static.Lend != "" && k.Static.Lend != d.Static.Lend {
			parts = append(parts, "lend: "+k.Static.Lend)
		}
	case fairshare.Name:
		f, df := k.Fairshare, d.Fairshare
		for _, x := range []struct {
			key  string
			v, d float64
		}{{"half_life", f.HalfLife, df.HalfLife}, {"w_fairshare", f.WFairshare, df.WFairshare}, {"w_age", f.WAge, df.WAge}, {"max_age", f.MaxAge, df.MaxAge}} {
			if x.v != x.d {
				parts = append(parts, x.key+": "+num(x.v))
			}
		}
		if f.CalcPeriod != df.CalcPeriod {
			parts = append(parts, "calc_period: "+strconv.Itoa(f.CalcPeriod))
		}
	case budget.Name:
		b, db := k.Budget, d.Budget
		if b.Window != db.Window {
			parts = append(parts, "window: "+strconv.Itoa(b.Window))
		}
		if b.MinRuntime != db.MinRuntime {
			var m []string
			for c, x := range b.MinRuntime {
				v := strconv.Itoa(x)
				if x == budget.Never {
					v = "never"
				}
				m = append(m, policy.Class(c).String()+": "+v)
			}
			parts = append(parts, "min_runtime: {"+strings.Join(m, ", ")+"}")
		}
		if len(b.Groups) > 0 {
			var g []string
			for _, gr := range b.Groups {
				g = append(g, "{name: "+strconv.Quote(gr.Name)+", members: "+list(gr.Members)+"}")
			}
			parts = append(parts, "groups: ["+strings.Join(g, ", ")+"]")
		}
		if b.CalcPeriod != db.CalcPeriod {
			parts = append(parts, "calc_period: "+strconv.Itoa(b.CalcPeriod))
		}
		if b.Restart != db.Restart {
			parts = append(parts, "restart: "+b.Restart.String())
		}
	}
	if len(parts) == 0 {
		return s.Policy
	}
	return "{name: " + s.Policy + ", " + strings.Join(parts, ", ") + "}"
}
