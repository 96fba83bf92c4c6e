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
	heads   []int
	best    []int // each campaign's head, by pending index, in a round
	blocked []bool
	over    []int // GPUs above nominal at the start of a preemption
	proj    []int // projected holdings while victims are chosen
	// The cohort's nominal sum and fillers, for cohortOf campaigns.
	cohortOf int
	nominal  int
	fillers  []policy.CampaignID
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
// The nominal sum changes only when a campaign registers, and the
// holdings are every lease's GPUs less the filler's: summing both over
// every campaign at every call (once per head, and per Want) made a
// replay of the full SDSC-SP2 log take minutes.
func (r *Rule) cohort(k *baseline.Core) (nominal, used int) {
	if n := k.NumCampaigns(); n != r.cohortOf {
		r.cohortOf, r.nominal, r.fillers = n, 0, r.fillers[:0]
		for c := range n {
			id := policy.CampaignID(c)
			if k.Campaign(id).Filler {
				r.fillers = append(r.fillers, id)
			} else {
				r.nominal += k.Floored(id)
			}
		}
	}
	used = k.Leased()
	for _, f := range r.fillers {
		used -= k.Held(f, policy.AnyClass)
	}
	return r.nominal, used
}

// Limit is the nominal quota plus the borrowing limit, within the cohort.
func (r *Rule) Limit(k *baseline.Core, c policy.CampaignID) int {
	if k.Campaign(c).Filler {
		return k.Config().Pool
	}
	total, _ := r.cohort(k)
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
	total, used := r.cohort(k)
	return max(0, min(free, total-used, r.Limit(k, c)-k.Held(c, policy.AnyClass)))
}

// Admit runs admission rounds until one admits nothing.
func (r *Rule) Admit(k *baseline.Core) {
	n := k.NumCampaigns()
	r.blocked = baseline.Flags(r.blocked, n)
	total, _ := r.cohort(k)
	for {
		// Each queue's head: its best request by (class, submit time),
		// the first in the pending list among equals — the first of a
		// stable sort by (campaign, class, submit time), found in one pass
		// where sorting the whole queue every round took minutes on a
		// trace's long queues.
		pend := k.Pending()
		r.best = r.best[:0]
		for range n {
			r.best = append(r.best, -1)
		}
		for i := range pend {
			q := &pend[i]
			c := q.Campaign
			if k.Campaign(c).Filler || r.blocked[c] {
				continue
			}
			if b := r.best[c]; b < 0 || q.Class < pend[b].Class || q.Class == pend[b].Class && q.Submitted < pend[b].Submitted {
				r.best[c] = i
			}
		}
		heads := r.heads[:0]
		for c := range n {
			i := r.best[c]
			if i < 0 {
				continue
			}
			req := k.Pend(i)
			// The key: borrowed GPUs after admission, which also says
			// whether the head borrows.
			want := max(k.Want(i), 0)
			req.Key = float64(max(0, k.Held(req.Campaign, policy.AnyClass)+want-k.Floored(req.Campaign))) / float64(max(total, 1))
			heads = append(heads, req.ID)
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
			if k.TryStart(i, r.roomBeyondReservation(k, i)) {
				admitted = true
				continue
			}
			r.blocked[c] = true
			r.reclaim(k, i)
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

// roomBeyondReservation is what TryStart may add to head i's reservation:
// the GPUs its reservation and the free ones give it, within the cohort's
// unused quota and its own limit. A reservation made of the filler's
// GPUs is free pool, not cohort quota, so it must not carry a campaign
// past the cohort.
func (r *Rule) roomBeyondReservation(k *baseline.Core, i int) int {
	req := k.Pend(i)
	c := req.Campaign
	total, used := r.cohort(k)
	limit := min(max(0, k.FreeGeneral())+req.Reserved, total-used, r.Limit(k, c)-k.Held(c, policy.AnyClass))
	return limit - req.Reserved
}

// reclaim preempts for head i. The free pool and the cohort's quota both
// bind: the filler's GPUs relieve only the first, a cohort member's both.
// While the pool alone binds, the filler (and, for a head within its
// nominal quota, the borrowers) may go; once the cohort binds, only
// borrowers, and only for a head within its nominal quota.
func (r *Rule) reclaim(k *baseline.Core, i int) {
	req := k.Pend(i)
	c := req.Campaign
	want := k.Want(i)
	if want == 0 {
		return
	}
	inFlight := k.InFlight(req.ID)
	total, used := r.cohort(k)
	needPool := want - max(0, k.FreeGeneral()) - req.Reserved - inFlight
	needCohort := want - (total - used) - r.cohortInFlight(k, req.ID)
	withinNominal := k.Held(c, policy.AnyClass)+want <= k.Floored(c)
	if needPool <= 0 && needCohort <= 0 {
		return // what is under notice for it will do
	}
	if needCohort > 0 && !withinNominal {
		return // a borrower waits: nothing it may take would make room
	}
	if !withinNominal {
		k.Preempt(i, needPool, nil, func(*baseline.Lease) bool { return false })
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
	borrower := func(l *baseline.Lease) bool {
		if r.proj[l.Campaign] <= k.Floored(l.Campaign) {
			return false // no longer borrowing
		}
		r.proj[l.Campaign] -= l.GPUs
		return true
	}
	if needCohort > 0 {
		k.PreemptCohort(i, max(needPool, needCohort), r.victimOrder, borrower)
		return
	}
	k.Preempt(i, needPool, r.victimOrder, borrower)
}

// cohortInFlight is the GPUs of cohort members under notice for request
// id: they will return to the cohort's quota.
func (r *Rule) cohortInFlight(k *baseline.Core, id int) int {
	n := 0
	for _, l := range k.Leases() {
		if l.UnderNotice && l.ReservedFor == id && !k.Campaign(l.Campaign).Filler {
			n += l.GPUs
		}
	}
	return n
}

// victimOrder: most over-quota campaign first, then lowest class, then
// newest.
func (r *Rule) victimOrder(a, b *baseline.Lease) int {
	if c := cmp.Compare(r.over[b.Campaign], r.over[a.Campaign]); c != 0 {
		return c
	}
	return baseline.VictimOrder(a, b)
}
