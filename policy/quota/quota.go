package quota

import (
	"cmp"
	"fmt"
	"math/bits"

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
	heads   []head
	granted []int // the positions of the heads granted in a round
	// sortHeads' scratch: the last round's order of campaigns, each
	// campaign's head, the heads in that order.
	prev []policy.CampaignID
	slot []int
	seq  []head
	// The queues (heads.go).
	queues  []queue
	live    []bool   // by request id: pending, and not the filler's
	active  []uint64 // bit c: campaign c's queue is not empty
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
		// Each queue's head (heads.go), in campaign order.
		heads := r.heads[:0]
		for w, word := range r.active {
			for ; word != 0; word &= word - 1 {
				c := w*64 + bits.TrailingZeros64(word)
				if r.blocked[c] {
					continue
				}
				id, submitted := r.head(c)
				if id < 0 {
					continue
				}
				i := k.IndexSubmitted(id, submitted)
				req := k.Pend(i)
				// The key: borrowed GPUs after admission, which also
				// says whether the head borrows.
				want := max(k.Want(i), 0)
				req.Key = float64(max(0, k.Held(req.Campaign, policy.AnyClass)+want-k.Floored(req.Campaign))) / float64(max(total, 1))
				heads = append(heads, head{pos: i, id: req.ID, key: req.Key, class: req.Class, submitted: req.Submitted, camp: req.Campaign})
			}
		}
		r.heads = heads
		if len(heads) == 0 {
			return
		}
		heads = r.sortHeads(heads, n)
		// Only a grant moves the pending list, by removing its request:
		// a head's position is its position at the start of the round less
		// the heads before it granted since.
		granted := r.granted[:0]
		for _, h := range heads {
			i := h.pos
			for _, g := range granted {
				if g < h.pos {
					i--
				}
			}
			c := k.Pend(i).Campaign
			if k.TryStart(i, r.roomBeyondReservation(k, i)) {
				granted = append(granted, h.pos)
				continue
			}
			r.blocked[c] = true
			r.reclaim(k, i)
		}
		r.granted = granted
		if len(granted) == 0 {
			return
		}
	}
}

// head is a queue's head in a round: its position in the pending list at
// the start of the round, and what the order of heads reads.
type head struct {
	pos, id   int
	key       float64
	class     policy.Class
	submitted int
	camp      policy.CampaignID
}

// sortHeads sorts the round's heads (in campaign order) by headCmp. The
// order changes little from one round to the next (a few heads change
// with each grant), so it starts from the last round's order of
// campaigns and sorts by insertion, nearly linear; sorting a hundred
// heads from scratch every round was a fifth of a full-log replay.
// headCmp is a total order (ids are unique), so the result is the same
// whatever the start.
func (r *Rule) sortHeads(heads []head, n int) []head {
	r.slot = baseline.Ints(r.slot, n)
	for j := range heads {
		r.slot[heads[j].camp] = j + 1 // 0: no head, or placed
	}
	seq := r.seq[:0]
	for _, c := range r.prev {
		if j := r.slot[c]; j > 0 {
			seq = append(seq, heads[j-1])
			r.slot[c] = 0
		}
	}
	for j := range heads {
		if r.slot[heads[j].camp] > 0 {
			seq = append(seq, heads[j])
		}
	}
	for a := 1; a < len(seq); a++ {
		for b := a; b > 0 && headCmp(seq[b], seq[b-1]) < 0; b-- {
			seq[b], seq[b-1] = seq[b-1], seq[b]
		}
	}
	r.prev = r.prev[:0]
	for j := range seq {
		r.prev = append(r.prev, seq[j].camp)
	}
	// heads becomes the next round's seq: the two swap storage.
	r.seq, r.heads = heads, seq
	return seq
}

// headCmp orders the heads: non-borrowers first, then the lowest
// dominant-resource share, then class, then submit time, then id.
func headCmp(x, y head) int {
	if bx, by := x.key > 0, y.key > 0; bx != by {
		if by {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(x.key, y.key); c != 0 {
		return c
	}
	if c := cmp.Compare(x.class, y.class); c != 0 {
		return c
	}
	if c := cmp.Compare(x.submitted, y.submitted); c != 0 {
		return c
	}
	return cmp.Compare(x.id, y.id)
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
