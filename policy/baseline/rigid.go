package baseline

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

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
// Lease.Queue (Core.QueueName). The Core implements it; a wrapper around
// a policy may forward it.
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
	r.Rigid, r.Run, r.Submitted, r.Queue = true, run, submitted, k.siteQueue(queue)
	k.flexPending--
	at := last
	if k.unordered {
		k.notePos(last) // it stays at the end
	} else if k.pendUnsorted {
		for at > 0 && k.pending[at-1].Submitted > submitted {
			at--
		}
	} else {
		// The same place, behind every request submitted by then: a
		// requeued job's is far from the end of a trace's long queue.
		at = sort.Search(last, func(i int) bool { return k.pending[i].Submitted > submitted })
	}
	k.pending[last] = r
	k.pendInsert(at)
	if k.watch != nil {
		k.watch.Filed(k, &k.pending[at])
	}
	return id, nil
}

// siteQueue is the site queue named name, added to the Core's names if
// new; 0 for "" (none). A log names a few queues.
func (k *Core) siteQueue(name string) SiteQueue {
	if name == "" {
		return 0
	}
	if len(k.queueNames) == 0 {
		k.queueNames = append(k.queueNames, "")
	}
	for q, n := range k.queueNames {
		if n == name {
			return SiteQueue(q)
		}
	}
	k.queueNames = append(k.queueNames, name)
	return SiteQueue(len(k.queueNames) - 1)
}

// QueueName is site queue q's name ("" for 0, none).
func (k *Core) QueueName(q SiteQueue) string {
	if q <= 0 || int(q) >= len(k.queueNames) {
		return ""
	}
	return k.queueNames[q]
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
//
// A Paced rule's next event is its own as of its last admission (budget's
// victim order is the last search's), so the answer is worked out right
// after a tick that admitted and kept until something changes: asked
// later, after quiet ticks or a skip, it is the same answer, as a driver
// that skips asks once and skips to it. Asked later without one (only a
// change can get there, and a change means the next tick), it is the next
// tick.
func (k *Core) NextChange() int {
	_, steady := k.rule.(Steady)
	paced, isPaced := k.rule.(Paced)
	if !steady && !isPaced || k.changedAt >= k.now {
		return k.now + 1
	}
	if k.quietFrom == k.admittedAt && k.changedAt < k.quietFrom {
		return max(k.quietUntil, k.now+1)
	}
	if k.admittedAt != k.now {
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
		k.countWalk(len(k.pending))
		for i := range k.pending {
			if r := &k.pending[i]; !r.Rigid {
				next = min(next, r.Submitted+policy.RequestTTL+1)
			}
		}
	}
	next = max(next, k.now+1)
	k.quietFrom, k.quietUntil = k.now, next
	return next
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
	if k.grantsOnly {
		k.now = t
		return
	}
	u := float64(k.leased) / float64(k.cfg.Pool)
	// Ticks in the same order as Tick, per variable: the credits, then
	// the utilization sum (policy.SumSteps: n ticks of a sum, exactly).
	k.debit(t - k.now)
	k.debits.util[0] = u
	s := policy.SumSteps(k.utilSum, k.debits.util[:], t-k.now)
	k.utilSum, k.utilN, k.now = s, k.utilN+t-k.now, t
}

// debit is account() n times, with each lease's charge computed once. A
// campaign's credits see the same subtractions in the same order as
// Tick's (its leases' in lease order, tick after tick), each x − a being
// x + (−a) in floating point, so policy.SumSteps, n ticks of a sum in
// closed form where a stretch of them provably adds the same each tick
// (and tick by tick elsewhere), gives them bit for bit; different
// campaigns' credits do not interact. A full-log replay skips for weeks
// of the log at a time, and a subtraction per lease per second skipped
// was a quarter of a quota replay's time.
func (k *Core) debit(n int) {
	if len(k.leases) == 0 || n <= 0 {
		return
	}
	d := &k.debits
	if d.at != k.changes+1 || len(d.slot) < len(k.camps) {
		k.debitChains()
	}
	for ch, c := range d.camp {
		cr := &k.camps[c].credits
		*cr = policy.SumSteps(*cr, d.amount[d.off[ch]:d.off[ch+1]], n)
	}
}

// debitChains builds debit's chains of charges from the leases: they
// stand while the lease set does (every grant and end is a change of the
// Core's, Changes), so that a skip between two changes, most of them on
// a 300k-job log (a budget calculation's tick every 5 minutes, hundreds of
// leases), does not build them again.
func (k *Core) debitChains() {
	d := &k.debits
	d.at = k.changes + 1
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
		d.amount[d.off[ch]+d.size[ch]] = -(float64(l.GPUs) * l.Class.BasePrice() / 3600)
		d.size[ch]++
	}
	for _, c := range d.camp {
		d.slot[c] = -1
	}
}

// debits is debit's scratch, kept so that a skip allocates nothing once
// it has grown: by campaign, its chain (-1: none); by chain, its campaign,
// length and offset into amount, the charges (negated); util, the
// utilization's one addend; at, the Core's Changes + 1 the chains were
// built at (0: never).
type debits struct {
	at        uint64
	slot      []int32
	camp      []policy.CampaignID
	size, off []int
	amount    []float64
	util      [1]float64
}

// Restart is how a preempted trace job resumes when it is requeued
// (docs/studies.md §6.7). The zero value is `zero`: it restarts from
// scratch and its whole aborted run is lost (GPUs × its length). With
// Checkpoint S > 0 (`checkpoint:S`) the job writes a checkpoint every S
// seconds of run and resumes from the last one, so only the GPU-seconds
// since it are lost. No checkpoint is written during the grace period:
// the notice ends the run's useful part.
type Restart struct {
	Checkpoint int
}

// DefaultCheckpoint is S of `checkpoint` written without one: an hour,
// how the AI lab's training runs checkpoint (docs/studies.md §2, budget).
const DefaultCheckpoint = 3600

// Kept is the seconds of run a lease granted at tick granted and noticed
// at tick noticed keeps: the last checkpoint before the notice, ⌊(noticed
// − granted) / S⌋ × S; 0 under `zero`.
func (r Restart) Kept(granted, noticed int) int {
	if r.Checkpoint <= 0 || noticed <= granted {
		return 0
	}
	return (noticed - granted) / r.Checkpoint * r.Checkpoint
}

// String is the knob's text: `zero` or `checkpoint:S`.
func (r Restart) String() string {
	if r.Checkpoint <= 0 {
		return "zero"
	}
	return "checkpoint:" + strconv.Itoa(r.Checkpoint)
}

// ParseRestart reads `zero`, `checkpoint` (S = DefaultCheckpoint) or
// `checkpoint:S` with S ≥ 1 seconds.
func ParseRestart(s string) (Restart, error) {
	switch {
	case s == "zero":
		return Restart{}, nil
	case s == "checkpoint":
		return Restart{Checkpoint: DefaultCheckpoint}, nil
	case strings.HasPrefix(s, "checkpoint:"):
		n, err := strconv.Atoi(strings.TrimPrefix(s, "checkpoint:"))
		if err != nil || n < 1 {
			return Restart{}, fmt.Errorf("restart %q: the checkpoint interval must be a whole number of seconds ≥ 1 (checkpoint:3600)", s)
		}
		return Restart{Checkpoint: n}, nil
	}
	return Restart{}, fmt.Errorf("restart %q: want zero, checkpoint or checkpoint:S (S in seconds)", s)
}

// MarshalText writes the knob's text.
func (r Restart) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads the knob's text (ParseRestart).
func (r *Restart) UnmarshalText(b []byte) error {
	v, err := ParseRestart(string(b))
	if err == nil {
		*r = v
	}
	return err
}

// Restarter is an optional Rule hook: the restart rule of its preempted
// trace jobs (budget's `restart` knob). A rule without it restarts them
// from zero.
type Restarter interface {
	Restart() Restart
}

// SetRestart makes every preempted trace job of the policy restart by r,
// whatever its rule's own: a study restarts every policy's jobs by one
// rule (docs/studies.md §6.7).
func (k *Core) SetRestart(r Restart) { k.restart, k.restartSet = r, true }

// Restart is the restart rule for preempted trace jobs: the study's
// (SetRestart), else the rule's (Restarter), else zero. The
// release record of a preempted rigid lease carries the seconds of run
// its checkpoints kept (policy.Event.Kept), from which the replay
// requeues what is left of the job (§6.7).
func (k *Core) Restart() Restart {
	if k.restartSet {
		return k.restart
	}
	if r, ok := k.rule.(Restarter); ok {
		return r.Restart()
	}
	return Restart{}
}

// LostIfNoticed is the GPU-seconds lease l would lose if it were put
// under notice now: its run until the notice ends it (now + grace, or its
// own end if sooner — then nothing is lost), less what a rigid lease's
// checkpoints keep (Restart). An agent lease is not requeued (§6.7): its
// whole run is lost.
func (k *Core) LostIfNoticed(l *Lease) int {
	slope, at := k.LostLine(l)
	return slope*k.now + at
}

// LostLine is LostIfNoticed as a line in the tick t, slope × t + at,
// valid from now until LostBreak: it grows by the lease's GPUs a tick,
// and drops at each checkpoint and to 0 once the lease would end by
// itself within the grace — by its estimate, which is what a scheduler
// knows of a trace job (Lease.Estimated).
func (k *Core) LostLine(l *Lease) (slope, at int) {
	if l.Estimated() <= k.now+k.cfg.Grace {
		return 0, 0 // it ends by itself first
	}
	kept := 0
	if l.Rigid {
		kept = k.Restart().Kept(l.Granted, k.now)
	}
	return l.GPUs, l.GPUs * (k.cfg.Grace - l.Granted - kept)
}

// LostBreak is the first tick after now at which lease l's LostLine
// changes: its next checkpoint, or the tick from which it would end by
// itself within the grace (math.MaxInt: never).
func (k *Core) LostBreak(l *Lease) int {
	next := math.MaxInt
	if e := l.Estimated() - k.cfg.Grace; e > k.now {
		next = e
	}
	if s := k.Restart().Checkpoint; l.Rigid && s > 0 {
		next = min(next, l.Granted+((k.now-l.Granted)/s+1)*s)
	}
	return next
}
