package quota

import (
	"cmp"
	"fmt"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
)

// Name is the policy's name in configs and reports.
const Name = "quota"

// Unlimited is the default borrowing limit.
const Unlimited = -1

// Knobs are the policy's settings.
type Knobs struct {
	// BorrowingLimit is the most GPUs a campaign may hold above its
	// nominal quota; Unlimited (-1, the default) means the cohort's
	// capacity.
	BorrowingLimit int `json:"borrowing_limit" yaml:"borrowing_limit"`
}

// DefaultKnobs is Kueue's default: no borrowing limit.
func DefaultKnobs() Knobs { return Knobs{BorrowingLimit: Unlimited} }

// Rule is the cohort-quota rule.
type Rule struct {
	baseline.Base
	knobs   Knobs
	queue   baseline.Queue
	heads   []int
	blocked []bool
	over    []int // GPUs above nominal at the start of a preemption
	proj    []int // projected holdings while victims are chosen
}

// New returns a cohort-quota allocator.
func New(cfg policy.Config, knobs Knobs) (*baseline.Core, error) {
	if knobs.BorrowingLimit < Unlimited {
		return nil, fmt.Errorf("quota: borrowing_limit must be ≥ 0 GPUs, or -1 for unlimited, got %d", knobs.BorrowingLimit)
	}
	return baseline.New(cfg, &Rule{knobs: knobs})
}

// Name is the policy's name.
func (*Rule) Name() string { return Name }

// cohort is the sum of the nominal quotas and of the cohort's holdings.
func cohort(k *baseline.Core) (nominal, used int) {
	for c := range k.NumCampaigns() {
		id := policy.CampaignID(c)
		if !k.Campaign(id).Filler {
			nominal += k.Floored(id)
			used += k.Held(id, policy.AnyClass)
		}
	}
	return nominal, used
}

// Limit is the nominal quota plus the borrowing limit, within the cohort.
func (r *Rule) Limit(k *baseline.Core, c policy.CampaignID) int {
	if k.Campaign(c).Filler {
		return k.Config().Pool
	}
	total, _ := cohort(k)
	if r.knobs.BorrowingLimit < 0 {
		return total
	}
	return min(total, k.Floored(c)+r.knobs.BorrowingLimit)
}

// Room is the free GPUs within the cohort's unused quota and the
// campaign's own limit.
func (r *Rule) Room(k *baseline.Core, c policy.CampaignID) int {
	free := max(0, k.FreeGeneral())
	if k.Campaign(c).Filler {
		return free
	}
	total, used := cohort(k)
	return max(0, min(free, total-used, r.Limit(k, c)-k.Held(c, policy.AnyClass)))
}

// Admit runs admission rounds until one admits nothing.
func (r *Rule) Admit(k *baseline.Core) {
	n := k.NumCampaigns()
	r.blocked = baseline.Flags(r.blocked, n)
	total, _ := cohort(k)
	for {
		// Each queue's head: its best request by (class, submit time).
		ids := r.queue.Build(k, func(a, b *baseline.Request) int {
			if c := cmp.Compare(a.Campaign, b.Campaign); c != 0 {
				return c
			}
			if c := cmp.Compare(a.Class, b.Class); c != 0 {
				return c
			}
			return cmp.Compare(a.Submitted, b.Submitted)
		})
		heads := r.heads[:0]
		last := policy.CampaignID(-1)
		for _, id := range ids {
			i := k.Index(id)
			req := k.Pend(i)
			if req.Campaign == last || r.blocked[req.Campaign] {
				continue
			}
			last = req.Campaign
			// The key: borrowed GPUs after admission, which also says
			// whether the head borrows.
			want := max(k.Want(i), 0)
			req.Key = float64(max(0, k.Held(req.Campaign, policy.AnyClass)+want-k.Floored(req.Campaign))) / float64(max(total, 1))
			heads = append(heads, id)
		}
		r.heads = heads
		if len(heads) == 0 {
			return
		}
		sortHeads(k, heads)
		admitted := false
		for _, id := range heads {
			i := k.Index(id)
			c := k.Pend(i).Campaign
			room := r.Room(k, c)
			if k.TryStart(i, room) {
				admitted = true
				continue
			}
			r.blocked[c] = true
			r.reclaim(k, i, room)
		}
		if !admitted {
			return
		}
	}
}

// sortHeads orders the heads: non-borrowers first, then the lowest
// dominant-resource share, then class, then submit time, then id.
func sortHeads(k *baseline.Core, heads []int) {
	// Insertion sort: a handful of heads, and no closure allocation.
	for a := 1; a < len(heads); a++ {
		for b := a; b > 0 && headLess(k.Pend(k.Index(heads[b])), k.Pend(k.Index(heads[b-1]))); b-- {
			heads[b], heads[b-1] = heads[b-1], heads[b]
		}
	}
}

func headLess(x, y *baseline.Request) bool {
	if bx, by := x.Key > 0, y.Key > 0; bx != by {
		return by
	}
	if x.Key != y.Key {
		return x.Key < y.Key
	}
	if x.Class != y.Class {
		return x.Class < y.Class
	}
	if x.Submitted != y.Submitted {
		return x.Submitted < y.Submitted
	}
	return x.ID < y.ID
}

// reclaim preempts borrowers for head i when it would then fit within its
// own nominal quota; otherwise only the filler may be preempted for it.
func (r *Rule) reclaim(k *baseline.Core, i, room int) {
	req := k.Pend(i)
	c := req.Campaign
	need := k.Missing(i, room)
	if need <= 0 {
		return
	}
	if k.Held(c, policy.AnyClass)+k.Want(i) > k.Floored(c) {
		k.Preempt(i, need, nil, func(*baseline.Lease) bool { return false })
		return
	}
	n := k.NumCampaigns()
	r.over = baseline.Ints(r.over, n)
	r.proj = baseline.Ints(r.proj, n)
	for j := range n {
		id := policy.CampaignID(j)
		r.proj[j] = k.Held(id, policy.AnyClass)
		r.over[j] = r.proj[j] - k.Floored(id)
		if k.Campaign(id).Filler {
			r.over[j] = k.Config().Pool + 1 // the filler goes first
		}
	}
	k.Preempt(i, need, r.victimOrder, func(l *baseline.Lease) bool {
		if r.proj[l.Campaign] <= k.Floored(l.Campaign) {
			return false // no longer borrowing
		}
		r.proj[l.Campaign] -= l.GPUs
		return true
	})
}

// victimOrder: most over-quota campaign first, then lowest class, then
// newest.
func (r *Rule) victimOrder(a, b *baseline.Lease) int {
	if c := cmp.Compare(r.over[b.Campaign], r.over[a.Campaign]); c != 0 {
		return c
	}
	return baseline.VictimOrder(a, b)
}
