package static

import (
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
)

// Name is the policy's name in configs and reports.
const Name = "static"

// Rule is the ownership rule.
type Rule struct {
	baseline.Base
	queue   baseline.Queue
	blocked []bool
}

// New returns a static-partition allocator.
func New(cfg policy.Config) (*baseline.Core, error) { return baseline.New(cfg, &Rule{}) }

// Name is the policy's name.
func (*Rule) Name() string { return Name }

// Limit is the campaign's partition (the remainder for the filler).
func (*Rule) Limit(k *baseline.Core, c policy.CampaignID) int { return k.Floored(c) }

// Room is what is left of the campaign's partition, within the free GPUs.
func (*Rule) Room(k *baseline.Core, c policy.CampaignID) int {
	return max(0, min(k.FreeGeneral(), k.Floored(c)-k.Held(c, policy.AnyClass)))
}

// Admit serves each campaign's queue in submit order inside its partition.
func (r *Rule) Admit(k *baseline.Core) {
	ids := r.queue.Build(k, nil)
	r.blocked = baseline.Flags(r.blocked, k.NumCampaigns())
	for _, id := range ids {
		i := k.Index(id)
		c := k.Pend(i).Campaign
		if r.blocked[c] {
			continue
		}
		if !k.TryStart(i, r.Room(k, c)) {
			r.blocked[c] = true
		}
	}
}
