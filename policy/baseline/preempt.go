package baseline

import (
	"cmp"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
)

// Protector is an optional Rule hook: a lease it protects is never a
// victim, the filler's included (budget's minimum runtime).
type Protector interface {
	Protected(k *Core, l *Lease) bool
}

// VictimOrder is the default order in which preemption takes victims
// (docs/studies.md §6.6): lowest class first (highest rank), then newest lease
// first, then the larger lease id (the later grant of the same tick).
func VictimOrder(a, b *Lease) int {
	if c := cmp.Compare(b.Class, a.Class); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Granted, a.Granted); c != 0 {
		return c
	}
	return cmp.Compare(b.ID, a.ID)
}

// Preempt puts leases under notice so that pending request i can start
// once they end (docs/studies.md §6.6). need is the GPUs it still lacks after
// what it may take now, its reservation and the GPUs already under notice
// for it (InFlight). Candidates are the leases not under notice of other
// campaigns that eligible accepts, plus every lease of the filler (§6.2),
// in order (nil: VictimOrder). eligible is called once per candidate in
// that order while the set grows, so a rule may keep running state in it.
//
// The set is minimal: taken greedily in order until it covers need, then
// every victim but the last is dropped again, from the back, when the rest
// still covers need — Kueue's minimal-preemption search
// (pkg/scheduler/preemption). If all candidates together fall short,
// nothing is noticed: a preemption happens only if the request then fits.
// The victims' GPUs are reserved for the request. It reports whether need
// is covered.
func (k *Core) Preempt(i, need int, order func(a, b *Lease) int, eligible func(l *Lease) bool) bool {
	return k.preempt(i, need, order, nil, eligible, true)
}

// VictimKey is a rule's rank of a lease among the victims of its class,
// lower first, worked out once per candidate and per search (budget's
// GPU-seconds lost if noticed now). A search by key takes victims in
// KeyedVictimOrder.
type VictimKey func(l *Lease) int

// KeyedVictimOrder is the victim order of a rule with a VictimKey:
// lowest class first, then the lower key, then as VictimOrder (newest
// first, then the larger lease id). keyA and keyB are a's and b's keys.
func KeyedVictimOrder(a, b *Lease, keyA, keyB int) int {
	if c := cmp.Compare(b.Class, a.Class); c != 0 {
		return c
	}
	if c := cmp.Compare(keyA, keyB); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Granted, a.Granted); c != 0 {
		return c
	}
	return cmp.Compare(b.ID, a.ID)
}

// PreemptKeyed is Preempt in KeyedVictimOrder by key: each candidate's
// key is worked out once, not at every comparison of the sort (a key that
// costs a restart rule's checkpoint arithmetic, compared n·log n times
// over thousands of leases, was most of a long log's replay).
func (k *Core) PreemptKeyed(i, need int, key VictimKey, eligible func(l *Lease) bool) bool {
	return k.preempt(i, need, nil, key, eligible, true)
}

// PreemptCohort is Preempt without the filler's leases: for a rule whose
// binding limit the filler's GPUs do not count against (quota's cohort).
func (k *Core) PreemptCohort(i, need int, order func(a, b *Lease) int, eligible func(l *Lease) bool) bool {
	return k.preempt(i, need, order, nil, eligible, false)
}

// keyedLease is a candidate of a sort by key: its lease index, with what
// KeyedVictimOrder compares copied beside it.
type keyedLease struct {
	class            policy.Class
	key, granted, id int
	j                int
}

// VictimSorter sorts lease indices into KeyedVictimOrder, calling the
// key once per candidate; its records are kept for the next sort, so
// that a pass allocates nothing. The zero value is ready.
type VictimSorter struct{ recs []keyedLease }

// Clone is a copy of s that shares nothing with it (a rule's
// CloneRule copies its scratch as internal/deepcopy would).
func (s *VictimSorter) Clone() VictimSorter { return VictimSorter{recs: slices.Clone(s.recs)} }

// Sort sorts cands, indices into leases, into KeyedVictimOrder by key.
func (s *VictimSorter) Sort(leases []Lease, cands []int, key VictimKey) {
	recs := s.recs[:0]
	for _, j := range cands {
		l := &leases[j]
		recs = append(recs, keyedLease{class: l.Class, key: key(l), granted: l.Granted, id: l.ID, j: j})
	}
	slices.SortFunc(recs, func(a, b keyedLease) int {
		if c := cmp.Compare(b.class, a.class); c != 0 {
			return c
		}
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		if c := cmp.Compare(b.granted, a.granted); c != 0 {
			return c
		}
		return cmp.Compare(b.id, a.id)
	})
	for x := range recs {
		cands[x] = recs[x].j
	}
	s.recs = recs
}

func (k *Core) preempt(i, need int, order func(a, b *Lease) int, key VictimKey, eligible func(l *Lease) bool, filler bool) bool {
	if need <= 0 {
		return true
	}
	r := &k.pending[i]
	if order == nil {
		order = VictimOrder
	}
	// A protected lease is never a victim, wherever the order puts it:
	// left out before the sort rather than passed over after it (a
	// quarter of budget's candidates over SDSC-SP2's first 64 weeks).
	protect, _ := k.rule.(Protector)
	cands := k.cands[:0]
	for j := range k.leases {
		l := &k.leases[j]
		if !l.UnderNotice && l.Campaign != r.Campaign && (protect == nil || !protect.Protected(k, l)) {
			cands = append(cands, j)
		}
	}
	if key != nil {
		k.keyed.Sort(k.leases, cands, key)
	} else {
		slices.SortFunc(cands, func(a, b int) int { return order(&k.leases[a], &k.leases[b]) })
	}
	k.cands = cands
	victims, got := k.victim[:0], 0
	for _, j := range cands {
		l := &k.leases[j]
		if k.camps[l.Campaign].Filler {
			if !filler {
				continue
			}
		} else if eligible == nil || !eligible(l) {
			continue
		}
		victims = append(victims, j)
		got += l.GPUs
		if got >= need && k.seatsAfter(r, victims, -1) {
			break
		}
	}
	k.victim = victims
	if got < need || !k.seatsAfter(r, victims, -1) {
		return false
	}
	for v := len(victims) - 2; v >= 0; v-- {
		if g := k.leases[victims[v]].GPUs; got-g >= need && k.seatsAfter(r, victims, v) {
			got -= g
			victims = append(victims[:v], victims[v+1:]...)
		}
	}
	if len(victims) > 0 {
		k.changed()
	}
	for _, j := range victims {
		l := &k.leases[j]
		l.UnderNotice = true
		l.NoticedAt = k.now
		l.PreemptAt = k.now + k.cfg.Grace
		l.ReservedFor, l.reservedSubmitted = r.ID, r.Submitted
		if k.rec != nil {
			k.record(policy.Event{Kind: policy.EventPreemptNotice, Lease: l.ID, Campaign: k.camps[l.Campaign].Env.Name,
				CampaignID: l.Campaign, GPUs: l.GPUs, Class: l.Class, Grace: k.cfg.Grace})
		}
	}
	return true
}

// Missing is what pending request i lacks to start whole given room: its
// want less room, its reservation and the GPUs under notice for it.
func (k *Core) Missing(i, room int) int {
	r := &k.pending[i]
	want := k.Want(i)
	if want == 0 {
		return 0
	}
	return want - room - r.Reserved - k.InFlight(r.ID)
}

// Notice puts lease j (its index in Leases) under notice, as Preempt does
// for each victim: it ends Grace seconds from now. forRequest is the
// request whose admission chose it, whose GPUs are reserved for that
// request once the lease ends (InFlight counts them for it); -1 reserves
// nothing, for a rule that keeps its own books of whom the GPUs return to
// (static's partitions). It is for rules that choose their victims
// themselves (quota's fair sharing, static's reclaim); notices are issued
// only during admission (docs/studies.md §6.6).
func (k *Core) Notice(j, forRequest int) {
	l := &k.leases[j]
	if l.UnderNotice {
		return
	}
	k.changed()
	l.UnderNotice = true
	l.PreemptAt = k.now + k.cfg.Grace
	l.ReservedFor = forRequest
	if i := k.pendingIndex(forRequest); i >= 0 {
		l.reservedSubmitted = k.pending[i].Submitted
	}
	if k.rec != nil {
		k.record(policy.Event{Kind: policy.EventPreemptNotice, Lease: l.ID, Campaign: k.camps[l.Campaign].Env.Name,
			CampaignID: l.Campaign, GPUs: l.GPUs, Class: l.Class, Grace: k.cfg.Grace})
	}
}

// NoticeFor is Notice for pending request i (its index in the pending
// list), which a rule choosing victims for the request it admits has at
// hand: Notice would look the request up by id, and its positions are
// stale after any grant.
func (k *Core) NoticeFor(j, i int) {
	if k.leases[j].UnderNotice {
		return
	}
	k.Notice(j, -1)
	l := &k.leases[j]
	l.ReservedFor, l.reservedSubmitted = k.pending[i].ID, k.pending[i].Submitted
}
