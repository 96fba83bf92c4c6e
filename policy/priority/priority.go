package priority

import (
	"cmp"
	"slices"
	"strings"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
)

// Name is the policy's name in configs and reports.
const Name = "priority"

// Knobs are the policy's settings.
type Knobs struct {
	// Inflate names the campaigns that label every request with the top
	// tier (interactive).
	Inflate []string `json:"inflate" yaml:"inflate"`
	// Preempt lets a request that does not fit preempt leases of strictly
	// lower tiers (docs/studies.md §6.6). nil is the default: on. The
	// trace studies set it off on a log whose header says `Preemption: No`
	// (the machine never preempted).
	Preempt *bool `json:"preempt,omitempty" yaml:"preempt,omitempty"`
}

// Preempts reports whether the knobs let a blocked request preempt.
func (k Knobs) Preempts() bool { return k.Preempt == nil || *k.Preempt }

// Tier is a priority tier, 0 the highest (docs/studies.md §2).
type Tier int

// The tiers, highest first: a trace's queues by name.
const (
	TierInteractive Tier = iota
	TierExpress
	TierHigh
	TierNormal
	TierLow
	TierStandby
	// Tiers is how many there are.
	Tiers
)

var tierNames = [Tiers]string{"interactive", "express", "high", "normal", "low", "standby"}

// String is the tier's queue name.
func (t Tier) String() string {
	if t < 0 || t >= Tiers {
		return "tier?"
	}
	return tierNames[t]
}

// TierOfQueue is the tier of a site queue by its name (case and
// surrounding space ignored); a name that is not a tier's is normal.
func TierOfQueue(name string) Tier {
	name = strings.TrimSpace(name)
	for t, n := range tierNames {
		if strings.EqualFold(name, n) {
			return Tier(t)
		}
	}
	return TierNormal
}

// TierOfClass is the tier of a request filed in no site queue (the agent
// scenario's): interactive (and deadline, which ranks with it) on top,
// agent-burst as normal, opportunistic as standby, so that interactive >
// burst > opportunistic, and agents beside a trace's jobs rank with their
// queues.
func TierOfClass(c policy.Class) Tier {
	switch c {
	case policy.Interactive, policy.Deadline:
		return TierInteractive
	case policy.Opportunistic:
		return TierStandby
	}
	return TierNormal
}

// Rule is the strict-priority rule.
type Rule struct {
	baseline.Base
	knobs Knobs
	// inflated marks, per campaign, an inflating one.
	inflated []bool
	// core is the Core the rule decides for (Registered), whose site
	// queues' names queueTiers caches the tiers of, by SiteQueue (a log
	// names a few; 0 none, unknownTier not yet seen).
	core       *baseline.Core
	queueTiers []Tier
	queue      baseline.Queue
	easy       baseline.EASY
	// waiting is the queue kept between passes (baseline.Waiting), in
	// a band per tier.
	waiting baseline.Waiting
	// scratch for order.
	ids   []int
	tiers []Tier
	// lowerFn and orderFn are r.lower and r.victimOrder, bound once.
	lowerFn func(head *baseline.Request, l *baseline.Lease) bool
	orderFn func(a, b *baseline.Lease) int
}

// unknownTier marks a site queue whose tier is not cached yet.
const unknownTier Tier = -1

// New returns a strict-priority allocator.
func New(cfg policy.Config, knobs Knobs) (*baseline.Core, error) {
	return baseline.New(cfg, NewRule(knobs))
}

// NewRule returns the rule on its own, so that a test can read its
// tiers.
func NewRule(knobs Knobs) *Rule { return &Rule{knobs: knobs} }

// Name is the policy's name.
func (*Rule) Name() string { return Name }

// Registered notes whether the new campaign inflates.
func (r *Rule) Registered(k *baseline.Core, c policy.CampaignID) {
	r.core = k
	r.inflated = append(r.inflated, slices.Contains(r.knobs.Inflate, k.Envelope(c).Name))
}

// ClassFor files an inflating campaign's request as interactive, the
// class of the top tier, which it is priced at (§6.12).
func (r *Rule) ClassFor(_ *baseline.Core, c policy.CampaignID, asked policy.Class) policy.Class {
	if r.inflated[c] {
		return policy.Interactive
	}
	return asked
}

// tierOf is the tier of a request or lease of campaign c filed in site
// queue q (0 none) and class cls: the top one for an inflating campaign,
// else its queue's (by its name), else its class's.
func (r *Rule) tierOf(c policy.CampaignID, q baseline.SiteQueue, cls policy.Class) Tier {
	if r.inflated[c] {
		return TierInteractive
	}
	if q <= 0 {
		return TierOfClass(cls)
	}
	for int(q) >= len(r.queueTiers) {
		r.queueTiers = append(r.queueTiers, unknownTier)
	}
	if r.queueTiers[q] == unknownTier {
		r.queueTiers[q] = TierOfQueue(r.core.QueueName(q))
	}
	return r.queueTiers[q]
}

// RequestTier is pending request q's tier.
func (r *Rule) RequestTier(q *baseline.Request) Tier { return r.tierOf(q.Campaign, q.Queue, q.Class) }

// LeaseTier is lease l's tier.
func (r *Rule) LeaseTier(l *baseline.Lease) Tier { return r.tierOf(l.Campaign, l.Queue, l.Class) }

// order lists the pending requests (not the filler's) in tier order,
// FCFS within a tier (submit time; the pending list keeps ids in submit
// order). The pending list is nearly always in submit order already (a
// trace's jobs are; an agent's request filed after a trace job of the
// next tick is not), and then the order is a stable counting sort by
// tier, two linear passes where a comparison sort took most of a replay.
func (r *Rule) order(k *baseline.Core) []int {
	pend := k.Pending()
	for i := 1; i < len(pend); i++ {
		if pend[i].Submitted < pend[i-1].Submitted {
			return r.queue.Build(k, func(a, b *baseline.Request) int {
				if c := cmp.Compare(r.RequestTier(a), r.RequestTier(b)); c != 0 {
					return c
				}
				return cmp.Compare(a.Submitted, b.Submitted) // stable: submit order keeps id order
			})
		}
	}
	var count [Tiers]int
	r.tiers = r.tiers[:0]
	for i := range pend {
		t := Tier(-1)
		if q := &pend[i]; !k.Campaign(q.Campaign).Filler {
			t = r.RequestTier(q)
			count[t]++
		}
		r.tiers = append(r.tiers, t)
	}
	n := 0
	for t := range count {
		count[t], n = n, n+count[t]
	}
	r.ids = slices.Grow(r.ids[:0], n)[:n]
	for i, t := range r.tiers {
		if t >= 0 {
			r.ids[count[t]] = pend[i].ID
			count[t]++
		}
	}
	return r.ids
}

// Admit is EASY backfilling in tier order (docs/studies.md §6.12): the
// highest waiting request holds the reservation; any later request, of
// any tier, starts now only if it fits and does not delay it (§2.1's
// rule). With Preempt, a head that does not fit may preempt leases of
// strictly lower tiers first (the filler's always).
//
// On a trace's queue (baseline.Core.Indexable) the pass reads the queue
// kept between passes, not the whole pending list.
func (r *Rule) Admit(k *baseline.Core) {
	if r.lowerFn == nil {
		// Made once (a copy of the rule drops them: trace.CloneAllocator),
		// so that a pass allocates nothing.
		r.lowerFn, r.orderFn = r.lower, r.victimOrder
	}
	var eligible func(head *baseline.Request, l *baseline.Lease) bool
	if r.knobs.Preempts() {
		eligible = r.lowerFn
	}
	r.easy.Order = r.orderFn
	if k.Indexable() {
		k.AdmitEASYWaiting(&r.easy, &r.waiting, eligible)
		return
	}
	k.KeepOrder()
	r.waiting.Forget()
	k.AdmitEASY(&r.easy, r.order(k), eligible)
}

// UnorderedPending lets the Core keep a trace's pending list in no order
// (baseline.UnorderedPending): the kept queue orders it, and a grant in
// the middle of a long queue moves one request, not the queue behind it.
// A pass that reads the list's order puts it back in order first
// (KeepOrder).
func (*Rule) UnorderedPending() {}

// Filed keeps the queue, in the request's tier (baseline.Watcher).
func (r *Rule) Filed(k *baseline.Core, q *baseline.Request) {
	if !k.Campaign(q.Campaign).Filler {
		r.waiting.File(k, q, int(r.RequestTier(q)))
	}
}

// Left keeps the queue (baseline.Watcher).
func (r *Rule) Left(k *baseline.Core, q baseline.Request) {
	if !k.Campaign(q.Campaign).Filler {
		r.waiting.Leave(k, &q, int(r.RequestTier(&q)))
	}
}

// WaitingQueue is the queue kept between passes (baseline.WaitingRule).
func (r *Rule) WaitingQueue() *baseline.Waiting { return &r.waiting }

// victimOrder takes the lowest tier first, then the newest lease, then
// the larger id (docs/studies.md §6.6, with tiers for classes).
func (r *Rule) victimOrder(a, b *baseline.Lease) int {
	if c := cmp.Compare(r.LeaseTier(b), r.LeaseTier(a)); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Granted, a.Granted); c != 0 {
		return c
	}
	return cmp.Compare(b.ID, a.ID)
}

// lower: a lease of a strictly lower tier than the head's.
func (r *Rule) lower(head *baseline.Request, l *baseline.Lease) bool {
	return r.LeaseTier(l) > r.RequestTier(head)
}

// CloneRule is a copy of the rule for a copy of its Core
// (baseline.RuleCloner): every table copied, bound to the copy, the
// bound closures dropped (Admit makes them again). The knobs are shared:
// nothing changes them after New. A field added to Rule must be copied
// here: TestCloneRuleCopiesEveryField and trace's
// TestCloneSharesNothingMutable fail until it is.
func (r *Rule) CloneRule(from, to *baseline.Core) baseline.Rule {
	c := *r
	c.inflated, c.queueTiers = slices.Clone(r.inflated), slices.Clone(r.queueTiers)
	c.queue, c.easy, c.waiting = r.queue.Clone(), r.easy.Clone(), r.waiting.Clone()
	c.ids, c.tiers = slices.Clone(r.ids), slices.Clone(r.tiers)
	c.lowerFn, c.orderFn = nil, nil
	if r.core == from {
		c.core = to
	}
	return &c
}
