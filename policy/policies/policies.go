package policies

import (
	"fmt"
	"strings"

	"github.com/bursar-hpc/bursar/internal/cliusage"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/budget"
	"github.com/bursar-hpc/bursar/policy/fairshare"
	"github.com/bursar-hpc/bursar/policy/fifo"
	"github.com/bursar-hpc/bursar/policy/priority"
	"github.com/bursar-hpc/bursar/policy/quota"
	"github.com/bursar-hpc/bursar/policy/static"
)

// Bursar is the broker's name among the policies.
const Bursar = "bursar"

// Names lists the policies in the order reports use.
var Names = []string{Bursar, fifo.Name, priority.Name, static.Name, fairshare.Name, quota.Name, budget.Name}

// Knobs holds every baseline's settings; each policy reads its own.
type Knobs struct {
	Priority  priority.Knobs  `json:"priority" yaml:"priority"`
	Static    static.Knobs    `json:"static" yaml:"static"`
	Quota     quota.Knobs     `json:"quota" yaml:"quota"`
	Fairshare fairshare.Knobs `json:"fairshare" yaml:"fairshare"`
	Budget    budget.Knobs    `json:"budget" yaml:"budget"`

	// Entitlements are the groups and their members' shares that every
	// share-based baseline reads (docs/studies.md §1; baseline.Entitlements):
	// on a trace, trace.Workload.Entitlements. nil: R normalised, each
	// campaign a group of its own (the agent scenario). Derived from the
	// workload and its mapping options, so not a knob a config sets.
	Entitlements *baseline.Entitlements `json:"-" yaml:"-"`
	// History is the usage before the replay that fairshare and budget
	// start from (docs/studies.md §6.16; baseline.Usage). Derived too.
	History []baseline.Usage `json:"-" yaml:"-"`
}

// DefaultKnobs are each policy's documented defaults.
func DefaultKnobs() Knobs {
	return Knobs{Static: static.DefaultKnobs(), Quota: quota.DefaultKnobs(), Fairshare: fairshare.DefaultKnobs(), Budget: budget.DefaultKnobs()}
}

// TraceKnobs are DefaultKnobs with fairshare and budget recalculating
// every 5 minutes (Slurm's PriorityCalcPeriod default) instead of every
// tick: the knobs of the trace studies (trace, budget-knobs,
// agents-arrive). Over a two-year log the per-tick rule of docs/studies.md
// §6.9 keeps both policies from skipping quiet ticks and costs minutes per
// replay; Slurm itself recalculates per period (docs/model-choices.md).
func TraceKnobs() Knobs {
	k := DefaultKnobs()
	k.Fairshare.CalcPeriod = fairshare.SlurmCalcPeriod
	k.Budget.CalcPeriod = budget.SlurmCalcPeriod
	return k
}

// New builds the policy called name on cfg. Bursar reads cfg whole
// (GrantTimeOnly included) and its campaigns' envelopes (R is the
// entitlement × pool on a trace); the baselines read its pool, grace and
// flow capacities, and the knobs' Entitlements and History.
func New(name string, cfg policy.Config, knobs Knobs) (policy.Allocator, error) {
	a, err := build(name, cfg, knobs)
	if err != nil {
		return nil, err
	}
	if k, ok := a.(*baseline.Core); ok {
		if err := k.SetEntitlements(knobs.Entitlements); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if err := k.SetHistory(knobs.History); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return a, nil
}

func build(name string, cfg policy.Config, knobs Knobs) (policy.Allocator, error) {
	switch name {
	case Bursar:
		return policy.New(cfg)
	case fifo.Name:
		return fifo.New(cfg)
	case priority.Name:
		return priority.New(cfg, knobs.Priority)
	case static.Name:
		return static.New(cfg, knobs.Static)
	case fairshare.Name:
		return fairshare.New(cfg, knobs.Fairshare)
	case quota.Name:
		return quota.New(cfg, knobs.Quota)
	case budget.Name:
		return budget.New(cfg, knobs.Budget)
	}
	return nil, fmt.Errorf("unknown policy %q%s (want one of %s)", name, cliusage.DidYouMean(name, Names), strings.Join(Names, ", "))
}
