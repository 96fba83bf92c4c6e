package baseline

import (
	"fmt"
	"math"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
)

// The trace extension of the Core (docs/studies.md §3, §6.1, §6.3, §6.7): rigid
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
	return k.RequestRigidQueued(c, gpus, estimate, run, cls, submitted, "")
}

// QueuedRequester files a trace job into the site queue it was submitted
// to, by the queue's name (the SWF header's): the rules that read queues
// (priority's tiers, docs/studies.md §2) see it in Request.Queue and
// Lease.Queue. The Core implements it; a wrapper around a policy may
// forward it.
type QueuedRequester interface {
	RequestRigidQueued(c policy.CampaignID, gpus, estimate, run int, cls policy.Class, submitted int, queue string) (int, error)
}

var _ QueuedRequester = (*Core)(nil)

// RequestRigidQueued is RequestRigid into the site queue named queue
// ("": none, as RequestRigid).
func (k *Core) RequestRigidQueued(c policy.CampaignID, gpus, estimate, run int, cls policy.Class, submitted int, queue string) (int, error) {
	if run < 1 || estimate < run {
		return -1, fmt.Errorf("rigid request: need 1 ≤ run ≤ estimate, got run %d, estimate %d", run, estimate)
	}
	if submitted > k.now+1 {
		return -1, fmt.Errorf("rigid request: submitted at %d, after the next tick %d", submitted, k.now+1)
	}
	id, err := k.file(c, gpus, estimate, cls, true)
	if err != nil {
		return id, err
	}
	last := len(k.pending) - 1
	r := k.pending[last]
	r.Rigid, r.Run, r.Submitted, r.Queue = true, run, submitted, queue
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
	k.resetFlows()
	u := float64(k.leased) / float64(k.cfg.Pool)
	// Ticks in the same order as Tick, per variable: the credits, then
	// the utilization sum.
	k.debit(t - k.now)
	s := k.utilSum
	for range t - k.now {
		s += u
	}
	k.utilSum, k.utilN, k.now = s, k.utilN+t-k.now, t
}

// debit is account() n times, with each lease's charge computed once. A
// campaign's credits see the same subtractions in the same order as
// Tick's (its leases' in lease order, tick after tick), so they match bit
// for bit; different campaigns' credits do not interact, so each runs its
// ticks in a register instead of through memory, four campaigns side by
// side so that their subtractions overlap. A campaign with fewer leases
// than the others of its four subtracts +0 for the difference, which
// changes no float64 (x − +0 = x, −0 included). Debiting lease by lease
// through pointers was most of a skip, and a skip a sixth of a full-log
// replay.
func (k *Core) debit(n int) {
	if len(k.leases) == 0 || n <= 0 {
		return
	}
	d := &k.debits
	if len(d.slot) < len(k.camps) {
		d.slot = make([]int32, len(k.camps))
		for c := range d.slot {
			d.slot[c] = -1
		}
	}
	// Each campaign's chain of charges, in lease order.
	d.camp, d.size = d.camp[:0], d.size[:0]
	for i := range k.leases {
		c := k.leases[i].Campaign
		if d.slot[c] < 0 {
			d.slot[c] = int32(len(d.camp))
			d.camp = append(d.camp, c)
			d.size = append(d.size, 0)
		}
		d.size[d.slot[c]]++
	}
	d.off = append(d.off[:0], 0)
	for _, m := range d.size {
		d.off = append(d.off, d.off[len(d.off)-1]+m)
	}
	d.amount = slices.Grow(d.amount[:0], len(k.leases))[:len(k.leases)]
	for ch := range d.size {
		d.size[ch] = 0 // refilled below
	}
	for i := range k.leases {
		l := &k.leases[i]
		ch := d.slot[l.Campaign]
		d.amount[d.off[ch]+d.size[ch]] = float64(l.GPUs) * l.Class.BasePrice() / 3600
		d.size[ch]++
	}
	for _, c := range d.camp {
		d.slot[c] = -1
	}
	// Four chains at a time, padded with +0 to the longest of the four.
	var spare float64
	for first := 0; first < len(d.camp); first += 4 {
		var x [4]*float64
		m := 0
		for lane := range 4 {
			x[lane] = &spare
			if ch := first + lane; ch < len(d.camp) {
				x[lane] = &k.camps[d.camp[ch]].credits
				m = max(m, d.size[ch])
			}
		}
		pad := slices.Grow(d.pad[:0], 4*m)[:4*m]
		clear(pad)
		for lane := range 4 {
			if ch := first + lane; ch < len(d.camp) {
				for j, a := range d.amount[d.off[ch] : d.off[ch]+d.size[ch]] {
					pad[4*j+lane] = a
				}
			}
		}
		d.pad = pad
		x0, x1, x2, x3 := *x[0], *x[1], *x[2], *x[3]
		if m == 1 {
			a0, a1, a2, a3 := pad[0], pad[1], pad[2], pad[3]
			for range n {
				x0 -= a0
				x1 -= a1
				x2 -= a2
				x3 -= a3
			}
		} else {
			for range n {
				for j := 0; j+3 < len(pad); j += 4 {
					x0 -= pad[j]
					x1 -= pad[j+1]
					x2 -= pad[j+2]
					x3 -= pad[j+3]
				}
			}
		}
		*x[0], *x[1], *x[2], *x[3] = x0, x1, x2, x3
	}
}

// debits is debit's scratch, kept so that a skip allocates nothing once
// it has grown: by campaign, its chain (-1: none); by chain, its campaign,
// length and offset into amount, the charges; pad, four chains
// interleaved.
type debits struct {
	slot        []int32
	camp        []policy.CampaignID
	size, off   []int
	amount, pad []float64
}
