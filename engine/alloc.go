package engine

import (
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/registry"
)

// alloc is the allocation policy a run drives: any policy.Allocator, with
// a concrete fast path for the Bursar broker. An interface call cannot be
// inlined, and the agents call Held, Outstanding and friends a few times
// per campaign per tick; through the interface alone the seed-7 scenario
// ran ~9 % slower (BenchmarkScenario), against the 3 % the issue allows.
// The methods below serve the cold paths; they are too big to inline
// themselves (a branch plus an interface call), and a call frame per read
// still cost ~10 %, so the hot call sites (the agents' steps, the sample,
// the tick) branch on bk themselves: under Bursar the broker's getters
// inline there as before and the run costs what it did (within 1 %).
type alloc struct {
	bk *policy.Broker   // non-nil under Bursar
	a  policy.Allocator // always set (bk itself under Bursar)
}

func newAlloc(a policy.Allocator) alloc {
	bk, _ := a.(*policy.Broker)
	return alloc{bk: bk, a: a}
}

func (x alloc) Request(c policy.CampaignID, gpus, duration int, cls policy.Class) (int, error) {
	if x.bk != nil {
		return x.bk.Request(c, gpus, duration, cls)
	}
	return x.a.Request(c, gpus, duration, cls)
}

func (x alloc) Held(c policy.CampaignID, cls policy.Class) int {
	if x.bk != nil {
		return x.bk.Held(c, cls)
	}
	return x.a.Held(c, cls)
}

func (x alloc) Outstanding(c policy.CampaignID, cls policy.Class) int {
	if x.bk != nil {
		return x.bk.Outstanding(c, cls)
	}
	return x.a.Outstanding(c, cls)
}

func (x alloc) Consume(c policy.CampaignID, io, inference float64) (float64, float64, error) {
	if x.bk != nil {
		return x.bk.Consume(c, io, inference)
	}
	return x.a.Consume(c, io, inference)
}

func (x alloc) ReleaseAll(c policy.CampaignID, cls policy.Class) error {
	if x.bk != nil {
		return x.bk.ReleaseAll(c, cls)
	}
	return x.a.ReleaseAll(c, cls)
}

// Free is what campaign c reads as the free GPUs before it asks: the
// pool's free GPUs under Bursar (model.md), and under a baseline what c
// could be granted now without preempting anyone (docs/studies.md §6.5), which
// a partition or a quota may make smaller than the pool's free GPUs.
func (x alloc) Free(c policy.CampaignID) int {
	if x.bk != nil {
		return x.bk.Free()
	}
	return x.a.Supply(c).Free
}

func (x alloc) Multiplier() float64 {
	if x.bk != nil {
		return x.bk.Multiplier()
	}
	return x.a.Multiplier()
}

func (x alloc) Tokens(c policy.CampaignID) float64 {
	if x.bk != nil {
		return x.bk.Tokens(c)
	}
	return x.a.Tokens(c)
}

func (x alloc) FlowTokens(c policy.CampaignID, d policy.Dimension) float64 {
	if x.bk != nil {
		return x.bk.FlowTokens(c, d)
	}
	return x.a.FlowTokens(c, d)
}

func (x alloc) FlowUsedLastTick(c policy.CampaignID, d policy.Dimension) float64 {
	if x.bk != nil {
		return x.bk.FlowUsedLastTick(c, d)
	}
	return x.a.FlowUsedLastTick(c, d)
}

func (x alloc) Spent(c policy.CampaignID) float64 {
	if x.bk != nil {
		return x.bk.Spent(c)
	}
	return x.a.Spent(c)
}

func (x alloc) Tick() {
	if x.bk != nil {
		x.bk.Tick()
		return
	}
	x.a.Tick()
}

// newAllocator builds the scenario's policy: the Bursar broker for "" and
// "bursar", else the baseline of that name with the scenario's knobs
// (policy/policies; the baselines read the pool, grace and flow
// capacities of the config, Bursar all of it).
func newAllocator(s *Scenario) (policy.Allocator, error) {
	a, err := newPolicy(s)
	if err != nil || s.Platform == nil {
		return a, err
	}
	return a, policy.PlaceOn(a, *s.Platform)
}

// newPolicy is newAllocator's policy before it is put on nodes.
func newPolicy(s *Scenario) (policy.Allocator, error) {
	cfg := policy.Config{
		Pool: s.Pool, Grace: s.Grace, GrantTimeOnly: s.Leaky,
		IOCapacity: s.IOCapacity, InferenceCapacity: s.InferenceCapacity,
	}
	if s.Policy == "" || s.Policy == policies.Bursar {
		return policy.New(cfg)
	}
	knobs := s.policies().DefaultKnobs()
	if s.PolicyKnobs != nil {
		knobs = *s.PolicyKnobs
	}
	return s.policies().New(s.Policy, cfg, knobs)
}

// policies is the registry the scenario's policy is found in:
// s.Policies, else policies.Default.
// Registry is the registry the scenario's policy is found in (Policies,
// else policies.Default).
func (s *Scenario) Registry() *registry.Registry { return s.policies() }

func (s *Scenario) policies() *registry.Registry {
	if s.Policies != nil {
		return s.Policies
	}
	return policies.Default
}

// validatePolicyKnobs checks the baseline's knobs as its constructor does
// (ranges), and that the campaigns they name (priority's inflate, budget's
// group members) are in the cast.
func (s *Scenario) validatePolicyKnobs() error {
	if s.Policy == "" || s.Policy == policies.Bursar || s.PolicyKnobs == nil {
		return nil
	}
	if _, err := s.policies().New(s.Policy, policy.Config{Pool: max(s.Pool, 1), Grace: max(s.Grace, 0)}, *s.PolicyKnobs); err != nil {
		return err
	}
	cast := s.cast()
	known := func(name string) bool {
		for i := range cast {
			if cast[i].Name == name {
				return true
			}
		}
		return false
	}
	if d, ok := s.policies().Lookup(s.Policy); ok && d.CheckCampaigns != nil {
		return d.CheckCampaigns(*s.PolicyKnobs, known)
	}
	return nil
}
