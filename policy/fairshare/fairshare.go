package fairshare

import (
	"cmp"
	"fmt"
	"math"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
)

// Name is the policy's name in configs and reports.
const Name = "fairshare"

const week = 7 * 24 * 3600

// Knobs are the policy's settings (Slurm's names in the comments).
type Knobs struct {
	// HalfLife is PriorityDecayHalfLife, in seconds.
	HalfLife float64 `json:"half_life" yaml:"half_life"`
	// WFairshare is PriorityWeightFairshare.
	WFairshare float64 `json:"w_fairshare" yaml:"w_fairshare"`
	// WAge is PriorityWeightAge.
	WAge float64 `json:"w_age" yaml:"w_age"`
	// MaxAge is PriorityMaxAge, in seconds.
	MaxAge float64 `json:"max_age" yaml:"max_age"`
}

// DefaultKnobs are Slurm's defaults and studies.md's: 7 days, 10000, 1000,
// 7 days.
func DefaultKnobs() Knobs {
	return Knobs{HalfLife: week, WFairshare: 10000, WAge: 1000, MaxAge: week}
}

// Rule is the multifactor fair-share rule.
type Rule struct {
	baseline.Base
	knobs Knobs
	decay float64
	usage []float64
	queue baseline.Queue
	easy  baseline.EASY
}

// New returns a fair-share allocator.
func New(cfg policy.Config, knobs Knobs) (*baseline.Core, error) {
	if err := knobs.Validate(); err != nil {
		return nil, err
	}
	return baseline.New(cfg, NewRule(knobs))
}

// Validate checks the knobs; the error names the knob.
func (k Knobs) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
		pos  bool
	}{{"half_life", k.HalfLife, true}, {"w_fairshare", k.WFairshare, false}, {"w_age", k.WAge, false}, {"max_age", k.MaxAge, true}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 || (f.pos && f.v == 0) {
			return fmt.Errorf("fairshare: %s must be a finite number > 0 (≥ 0 for weights), got %v", f.name, f.v)
		}
	}
	return nil
}

// NewRule returns the rule on its own, so that a test can read its
// factors.
func NewRule(knobs Knobs) *Rule {
	return &Rule{knobs: knobs, decay: math.Exp2(-1 / knobs.HalfLife)}
}

// Name is the policy's name.
func (*Rule) Name() string { return Name }

// Registered gives a new campaign no usage.
func (r *Rule) Registered(_ *baseline.Core, _ policy.CampaignID) { r.usage = append(r.usage, 0) }

// Usage is campaign c's decayed usage, in GPU-seconds.
func (r *Rule) Usage(c policy.CampaignID) float64 { return r.usage[c] }

// Factor is campaign c's fair-share factor F = 2^(−U/S).
func (r *Rule) Factor(k *baseline.Core, c policy.CampaignID) float64 {
	cp := k.Campaign(c)
	if cp.Filler || cp.Share <= 0 {
		return 0
	}
	total := 0.0
	for _, u := range r.usage {
		total += u
	}
	u := 0.0
	if total > 0 {
		u = r.usage[c] / total
	}
	return math.Exp2(-u / cp.Share)
}

// Priority is the multifactor priority of a request of campaign c
// submitted at submitted.
func (r *Rule) Priority(k *baseline.Core, c policy.CampaignID, submitted int) float64 {
	age := min(float64(k.Now()-submitted)/r.knobs.MaxAge, 1)
	return r.knobs.WFairshare*r.Factor(k, c) + r.knobs.WAge*age
}

// Admit orders the queue by priority and runs one EASY pass.
func (r *Rule) Admit(k *baseline.Core) {
	for _, id := range r.queue.Build(k, nil) {
		req := k.Pend(k.Index(id))
		req.Key = r.Priority(k, req.Campaign, req.Submitted)
	}
	ids := r.queue.Build(k, func(a, b *baseline.Request) int {
		if c := cmp.Compare(b.Key, a.Key); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Submitted, b.Submitted); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	k.AdmitEASY(&r.easy, ids, eligible)
}

// eligible: only opportunistic leases are preemptible, and only for a head
// that is not opportunistic itself.
func eligible(head *baseline.Request, l *baseline.Lease) bool {
	return head.Class != policy.Opportunistic && l.Class == policy.Opportunistic
}

// EndTick charges every held GPU and decays the usage.
func (r *Rule) EndTick(k *baseline.Core) {
	for c := range r.usage {
		r.usage[c] = r.usage[c]*r.decay + float64(k.Held(policy.CampaignID(c), policy.AnyClass))
	}
}
