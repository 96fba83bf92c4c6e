package baseline

import (
	"fmt"
	"math"

	"github.com/bursar-hpc/bursar/policy"
)

// The trace extension of the Core (studies.md §3, §6.1, §6.3, §6.7): rigid
// requests, and skipping the ticks between events.

var (
	_ policy.RigidRequester = (*Core)(nil)
	_ policy.EventSkipper   = (*Core)(nil)
)

// Steady is an optional Rule marker: given the same Core state, the rule's
// Admit and EndTick do the same at any time (no priority that ages or
// decays, no per-tick usage), so that the Core may skip the ticks between
// its events. fifo, priority, static and quota are steady; fairshare and
// budget are Paced.
type Steady interface {
	Steady()
}

// Paced is an optional Rule hook for a rule that is steady between events
// of its own: its Admit does the same at any tick before NextEvent given
// the same Core state (fairshare and budget recompute their priorities at
// calculation-period boundaries, and budget's minimum runtimes run out).
// Its EndTick is not called for skipped ticks: a paced rule accounts the
// ticks it did not see itself (the holdings did not change in them).
type Paced interface {
	// NextEvent is the first tick after now at which the rule's Admit may
	// decide differently (math.MaxInt: none).
	NextEvent(k *Core) int
}

// RequestRigid files a trace job (policy.RigidRequester): gpus GPUs whole
// or nothing, estimate seconds as backfilling believes it, run seconds as
// it really lasts, submitted at tick submitted (which may be the next
// tick, so that a job admitted at once has latency 0, §6.13). It never
// expires (§6.3). The pending list stays in submit order: a requeued job
// (§6.7) goes back behind the requests submitted no later than it.
func (k *Core) RequestRigid(c policy.CampaignID, gpus, estimate, run int, cls policy.Class, submitted int) (int, error) {
	if run < 1 || estimate < run {
		return -1, fmt.Errorf("rigid request: need 1 ≤ run ≤ estimate, got run %d, estimate %d", run, estimate)
	}
	if submitted > k.now+1 {
		return -1, fmt.Errorf("rigid request: submitted at %d, after the next tick %d", submitted, k.now+1)
	}
	id, err := k.file(c, gpus, estimate, cls)
	if err != nil {
		return id, err
	}
	last := len(k.pending) - 1
	r := k.pending[last]
	r.Rigid, r.Run, r.Submitted = true, run, submitted
	k.flexPending--
	at := last
	for at > 0 && k.pending[at-1].Submitted > submitted {
		at--
	}
	copy(k.pending[at+1:], k.pending[at:last])
	k.pending[at] = r
	if k.watch != nil {
		k.watch.Filed(k, &k.pending[at])
	}
	return id, nil
}

// Estimated is the lease's end as EASY believes it: a rigid lease's
// estimated end (or its preemption, under notice), any other lease's End.
func (l *Lease) Estimated() int {
	if !l.Rigid {
		return l.End()
	}
	if l.UnderNotice {
		return min(l.EstEnd, l.PreemptAt)
	}
	return l.EstEnd
}

// NextChange is the earliest tick at which a Tick may do more than the
// per-tick bookkeeping, given no call in between (policy.EventSkipper):
// the next tick after any change, and otherwise the first lease end,
// preemption or request expiry, or a Paced rule's next event. A rule
// that is neither Steady nor Paced changes every tick.
func (k *Core) NextChange() int {
	_, steady := k.rule.(Steady)
	paced, isPaced := k.rule.(Paced)
	if !steady && !isPaced || k.changedAt >= k.now {
		return k.now + 1
	}
	next := math.MaxInt
	if isPaced {
		next = paced.NextEvent(k)
	}
	for i := range k.leases {
		next = min(next, k.leases[i].End())
	}
	if k.flexPending > 0 { // rigid requests never expire
		for i := range k.pending {
			if r := &k.pending[i]; !r.Rigid {
				next = min(next, r.Submitted+policy.RequestTTL+1)
			}
		}
	}
	return max(next, k.now+1)
}

// SkipTo advances the clock to tick t exactly as Ticks would when t is
// before NextChange(): nothing starts, ends, expires or is noticed, so
// only credits and the utilization sum move, tick by tick in the same
// order as Tick, so that they match it bit for bit.
func (k *Core) SkipTo(t int) {
	if t <= k.now {
		return
	}
	if t >= k.NextChange() {
		panic(fmt.Sprintf("baseline: SkipTo(%d) at or beyond the next change %d", t, k.NextChange()))
	}
	// One tick resets the flows; with nobody consuming, further resets
	// change nothing.
	for i := range k.camps {
		cp := &k.camps[i]
		cp.io.usedLast, cp.io.usedNow = cp.io.usedNow, 0
		cp.inf.usedLast, cp.inf.usedNow = cp.inf.usedNow, 0
	}
	k.desiredLast, k.desiredNow = k.desiredNow, [2]float64{}
	k.left = [2]float64{k.cfg.IOCapacity, k.cfg.InferenceCapacity}
	u := float64(k.leased) / float64(k.cfg.Pool)
	// account() tick by tick, with each lease's debit computed once: the
	// same subtractions in the same order, so the same credits bit for
	// bit, without a multiplication and a division per lease and tick.
	k.debits = k.debits[:0]
	for i := range k.leases {
		l := &k.leases[i]
		k.debits = append(k.debits, debit{&k.camps[l.Campaign].credits, float64(l.GPUs) * l.Class.BasePrice() / 3600})
	}
	for k.now < t {
		k.now++
		for _, d := range k.debits {
			*d.credits -= d.amount
		}
		k.utilSum += u
		k.utilN++
	}
}

// debit is one lease's charge per tick to its campaign's credits.
type debit struct {
	credits *float64
	amount  float64
}
