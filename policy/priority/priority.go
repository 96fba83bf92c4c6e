package priority

import (
	"cmp"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
)

// Name is the policy's name in configs and reports.
const Name = "priority"

// Knobs are the policy's settings.
type Knobs struct {
	// Inflate names the campaigns that label every request interactive.
	Inflate []string `json:"inflate" yaml:"inflate"`
}

// Rule is the strict-priority rule.
type Rule struct {
	baseline.Base
	knobs Knobs
	queue baseline.Queue
	ids   []int
}

// New returns a strict-priority allocator.
func New(cfg policy.Config, knobs Knobs) (*baseline.Core, error) {
	return baseline.New(cfg, &Rule{knobs: knobs})
}

// Name is the policy's name.
func (*Rule) Name() string { return Name }

// tier is the priority tier of a class: 0 for the top (deadline and
// interactive), 1 for agent-burst, 2 for opportunistic.
func tier(c policy.Class) int {
	if c == policy.Deadline {
		return 0
	}
	return int(c) - 1
}

// ClassFor files an inflating campaign's request as interactive.
func (r *Rule) ClassFor(k *baseline.Core, c policy.CampaignID, asked policy.Class) policy.Class {
	if slices.Contains(r.knobs.Inflate, k.Envelope(c).Name) {
		return policy.Interactive
	}
	return asked
}

// order lists the pending requests (not the filler's) in tier order,
// FCFS within a tier: a stable sort by tier, then submit time. The
// pending list is nearly always in submit order already (a trace's jobs
// are; an agent's request filed after a trace job of the next tick is
// not), and then that sort is a stable partition by tier, which takes
// three linear passes where the sort took most of a trace replay.
func (r *Rule) order(k *baseline.Core) []int {
	pend := k.Pending()
	for i := 1; i < len(pend); i++ {
		if pend[i].Submitted < pend[i-1].Submitted {
			return r.queue.Build(k, func(a, b *baseline.Request) int {
				if c := cmp.Compare(tier(a.Class), tier(b.Class)); c != 0 {
					return c
				}
				return cmp.Compare(a.Submitted, b.Submitted) // stable: submit order keeps id order
			})
		}
	}
	ids := r.ids[:0]
	for t := range 3 {
		for i := range pend {
			if q := &pend[i]; tier(q.Class) == t && !k.Campaign(q.Campaign).Filler {
				ids = append(ids, q.ID)
			}
		}
	}
	r.ids = ids
	return ids
}

// Admit serves the pending requests in tier order, FCFS within a tier.
func (r *Rule) Admit(k *baseline.Core) {
	ids := r.order(k)
	var blocked [3]bool
	for _, id := range ids {
		i := k.Index(id)
		t := tier(k.Pend(i).Class)
		if blocked[t] {
			continue
		}
		room := r.Room(k, k.Pend(i).Campaign)
		if k.TryStart(i, room) {
			continue
		}
		blocked[t] = true
		k.Preempt(i, k.Missing(i, room), nil, func(l *baseline.Lease) bool { return tier(l.Class) > t })
	}
}
