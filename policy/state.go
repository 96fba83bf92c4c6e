package policy

import (
	"errors"
	"fmt"
	"math"
)

// State is the broker's whole state as plain data, for a service that
// writes it to disk as its snapshot instead of the operation history that
// rebuilt it (docs/service.md, "Bounded disk"): its size is set by the
// campaigns, leases and pending requests, not by the broker's age.
// Restore gives back a broker that goes on exactly as the one Dump read
// (TestDumpRestoreContinues draws workloads and compares every journal
// record and reading afterwards; service's TestSnapshotReplayProperty
// does the same through the journal file).
//
// What is dumped is every field a later call reads before writing it,
// copied as it stands, running sums and caches included: worked out again
// they could differ in the last bit of a float sum. What is not dumped is
// scratch that is rebuilt before it is read (the preemption candidates,
// the pending list's runs, NextChange's and SkipTo's scratch): Restore
// marks it stale. TestStateCoversEveryField lists each field of the
// broker's records as one or the other, so that a field added later
// fails the test until it is placed.
type State struct {
	Config    Config          `json:"config"`
	Now       int             `json:"now"`
	NextID    int             `json:"next_id"`
	Campaigns []CampaignState `json:"campaigns"`
	Leases    []LeaseState    `json:"leases"`
	Pending   []RequestState  `json:"pending"`

	Leased        int `json:"leased"`
	Unmet         int `json:"unmet"`
	Guaranteed    int `json:"guaranteed"`
	UsageTotal    int `json:"usage_total"`
	UsagePos      int `json:"usage_pos"`
	PendingDemand int `json:"pending_demand"`
	UsageEpoch    int `json:"usage_epoch"`
	BusyHead      int `json:"busy_head"`
	BusyCount     int `json:"busy_count"`

	CongDemand    []int   `json:"cong_demand"`
	CongFree      []int   `json:"cong_free"`
	CongPos       int     `json:"cong_pos"`
	CongN         int     `json:"cong_n"`
	CongSumDemand int     `json:"cong_sum_demand"`
	CongSumFree   int     `json:"cong_sum_free"`
	CongIndex     float64 `json:"cong_index"`
	UtilSum       float64 `json:"util_sum"`
	UtilN         int     `json:"util_n"`
	IOLeft        float64 `json:"io_left"`
	InfLeft       float64 `json:"inf_left"`

	ChargesFresh bool    `json:"charges_fresh"`
	ChargedM     float64 `json:"charged_m"`
	GrantsOnly   bool    `json:"grants_only,omitempty"`
	BooksAt      int     `json:"books_at,omitempty"`

	InFlight     int `json:"in_flight"`
	Reclaimable  int `json:"reclaimable"`
	NextDeadline int `json:"next_deadline"`
	FloorEpoch   int `json:"floor_epoch"`
	RigidPending int `json:"rigid_pending"`

	ChangedAt     int  `json:"changed_at"`
	NextChange    int  `json:"next_change"`
	NextChangeNow int  `json:"next_change_now"`
	AdmittedAt    int  `json:"admitted_at"`
	QuietFrom     int  `json:"quiet_from"`
	QuietUntil    int  `json:"quiet_until"`
	ExitEpoch     int  `json:"exit_epoch"`
	TickByTick    bool `json:"tick_by_tick,omitempty"`

	Work     Work `json:"work"`
	Counting bool `json:"counting,omitempty"`
}

// CampaignState is one campaign's part of State.
type CampaignState struct {
	Env        Envelope        `json:"env"`
	Tokens     float64         `json:"tokens"`
	Credits    float64         `json:"credits"`
	Busy       bool            `json:"busy"`
	BusyNext   int32           `json:"busy_next"`
	FlowBusy   bool            `json:"flow_busy"`
	HeldAt     int             `json:"held_at"`
	IO         FlowState       `json:"io"`
	Inference  FlowState       `json:"inference"`
	Held       [numClasses]int `json:"held"`
	HeldAll    int             `json:"held_all"`
	Pending    [numClasses]int `json:"pending"`
	Usage      []int32         `json:"usage"`
	UsageSum   int             `json:"usage_sum"`
	Share      float64         `json:"share"`
	Deficit    float64         `json:"deficit"`
	DeficitAt  int             `json:"deficit_at"`
	Tries      int             `json:"tries"`
	Floor      float64         `json:"floor"`
	FloorEpoch int             `json:"floor_epoch"`
	FloorOK    bool            `json:"floor_ok"`
}

// FlowState is one campaign's bucket in one flow dimension.
type FlowState struct {
	Flow        Flow    `json:"flow"`
	Tokens      float64 `json:"tokens"`
	UsedNow     float64 `json:"used_now"`
	UsedLast    float64 `json:"used_last"`
	Throttled   int     `json:"throttled"`
	LastJournal int     `json:"last_journal"`
}

// LeaseState is a lease with its unexported fields.
type LeaseState struct {
	Lease
	Rigid   bool    `json:"rigid,omitempty"`
	Charge  float64 `json:"charge"`
	ChargeM float64 `json:"charge_m"`
}

// RequestState is a pending request with its unexported fields.
type RequestState struct {
	Request
	ThrottleJournaled bool `json:"throttle_journaled,omitempty"`
	Rigid             bool `json:"rigid,omitempty"`
	Run               int  `json:"run,omitempty"`
}

func dumpFlow(f *flowState) FlowState {
	return FlowState{Flow: f.Flow, Tokens: f.tokens, UsedNow: f.usedNow, UsedLast: f.usedLast, Throttled: f.throttled, LastJournal: f.lastJournal}
}

func restoreFlow(f FlowState) flowState {
	return flowState{Flow: f.Flow, tokens: f.Tokens, usedNow: f.UsedNow, usedLast: f.UsedLast, throttled: f.Throttled, lastJournal: f.LastJournal}
}

// Dump is the broker's state (State); it shares nothing with the broker.
// A broker on a platform's nodes (SetPlacer) is dumped without its placer:
// the service schedules on a pool that is a number (docs/platform.md).
func (b *Broker) Dump() *State {
	b.settleAll() // the credits less the charges owed (account)
	s := &State{Config: b.cfg, Now: b.now, NextID: b.nextID,
		Leased: b.leased, Unmet: b.unmet, Guaranteed: b.guaranteed, UsageTotal: b.usageTotal, UsagePos: b.usagePos,
		PendingDemand: b.pendingDemand, UsageEpoch: b.usageEpoch, BusyHead: int(b.busyHead), BusyCount: b.busyCount,
		CongDemand: append([]int(nil), b.cong.demand[:]...), CongFree: append([]int(nil), b.cong.free[:]...),
		CongPos: b.cong.pos, CongN: b.cong.n, CongSumDemand: b.cong.sumDemand, CongSumFree: b.cong.sumFree,
		CongIndex: b.congIndex, UtilSum: b.utilSum, UtilN: b.utilN, IOLeft: b.ioLeft, InfLeft: b.infLeft,
		ChargesFresh: b.chargesFresh, ChargedM: b.chargedM, GrantsOnly: b.grantsOnly, BooksAt: b.booksAt,
		InFlight: b.inFlight, Reclaimable: b.reclaimable, NextDeadline: b.nextDeadline,
		FloorEpoch: b.floorEpoch, RigidPending: b.rigidPending,
		ChangedAt: b.changedAt, NextChange: b.nextChange, NextChangeNow: b.nextChangeNow,
		AdmittedAt: b.admittedAt, QuietFrom: b.quietFrom, QuietUntil: b.quietUntil, ExitEpoch: b.exitEpoch,
		TickByTick: b.tickByTick, Work: b.work, Counting: b.counting,
		Campaigns: make([]CampaignState, len(b.camps)), Leases: make([]LeaseState, len(b.leases)), Pending: make([]RequestState, 0, b.pendingLen())}
	for i := range b.camps {
		cp := &b.camps[i]
		env := cp.env
		if f := env.IO; f != nil {
			g := *f
			env.IO = &g
		}
		if f := env.Inference; f != nil {
			g := *f
			env.Inference = &g
		}
		s.Campaigns[i] = CampaignState{Env: env, Tokens: cp.tokens, Credits: cp.credits, Busy: cp.busy, BusyNext: cp.busyNext,
			FlowBusy: cp.flowBusy, HeldAt: cp.heldAt, IO: dumpFlow(&cp.io), Inference: dumpFlow(&cp.inf),
			Held: cp.held, HeldAll: cp.heldAll, Pending: cp.pending,
			Usage: append([]int32(nil), cp.usage.buf[:]...), UsageSum: cp.usage.sum,
			Share: cp.share, Deficit: cp.deficit, DeficitAt: cp.deficitAt,
			Tries: cp.tries, Floor: cp.floor, FloorEpoch: cp.floorEpoch, FloorOK: cp.floorOK}
	}
	for i, l := range b.leases {
		s.Leases[i] = LeaseState{Lease: l, Rigid: l.rigid, Charge: l.charge, ChargeM: l.chargeM}
		s.Leases[i].Lease.rigid, s.Leases[i].Lease.charge, s.Leases[i].Lease.chargeM = false, 0, 0
	}
	for i := range b.runs {
		for _, r := range b.reqsOf(&b.runs[i]) {
			q := RequestState{Request: r, ThrottleJournaled: r.throttleJournaled, Rigid: r.rigid, Run: r.run}
			q.Request.throttleJournaled, q.Request.rigid, q.Request.run = false, false, 0
			s.Pending = append(s.Pending, q)
		}
	}
	return s
}

// ErrBadState wraps every reason Restore refuses a State.
var ErrBadState = errors.New("broker state does not hold together")

// Restore is the broker whose state s is (Dump), without a recorder. It
// checks what would make the broker misbehave rather than merely differ
// (sizes, campaign indices, the busy list), not every running sum.
func Restore(s *State) (*Broker, error) {
	b, err := New(s.Config)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadState, err)
	}
	n := len(s.Campaigns)
	bad := func(format string, args ...any) (*Broker, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrBadState}, args...)...)
	}
	if len(s.CongDemand) != CongestionWindow || len(s.CongFree) != CongestionWindow {
		return bad("congestion window of %d and %d entries, want %d", len(s.CongDemand), len(s.CongFree), CongestionWindow)
	}
	if s.CongPos < 0 || s.CongPos >= CongestionWindow || s.UsagePos < 0 || s.UsagePos >= FairShareWindow {
		return bad("window position out of range")
	}
	if s.BusyHead < -1 || s.BusyHead >= n || s.BusyCount < 0 || s.BusyCount > n {
		return bad("busy list head %d (count %d) for %d campaigns", s.BusyHead, s.BusyCount, n)
	}
	if s.Now < 0 || s.NextID < 1 {
		return bad("time %d, next id %d", s.Now, s.NextID)
	}
	b.now, b.nextID = s.Now, s.NextID
	b.leased, b.unmet, b.guaranteed, b.usageTotal, b.usagePos = s.Leased, s.Unmet, s.Guaranteed, s.UsageTotal, s.UsagePos
	b.pendingDemand, b.usageEpoch, b.busyHead, b.busyCount = s.PendingDemand, s.UsageEpoch, int32(s.BusyHead), s.BusyCount
	copy(b.cong.demand[:], s.CongDemand)
	copy(b.cong.free[:], s.CongFree)
	b.cong.pos, b.cong.n, b.cong.sumDemand, b.cong.sumFree = s.CongPos, s.CongN, s.CongSumDemand, s.CongSumFree
	b.congIndex, b.utilSum, b.utilN, b.ioLeft, b.infLeft = s.CongIndex, s.UtilSum, s.UtilN, s.IOLeft, s.InfLeft
	b.chargesFresh, b.chargedM, b.grantsOnly, b.booksAt = s.ChargesFresh, s.ChargedM, s.GrantsOnly, s.BooksAt
	b.inFlight, b.reclaimable, b.nextDeadline = s.InFlight, s.Reclaimable, s.NextDeadline
	b.floorEpoch, b.rigidPending = s.FloorEpoch, s.RigidPending
	b.changedAt, b.nextChange, b.nextChangeNow = s.ChangedAt, s.NextChange, s.NextChangeNow
	b.admittedAt, b.quietFrom, b.quietUntil, b.exitEpoch = s.AdmittedAt, s.QuietFrom, s.QuietUntil, s.ExitEpoch
	b.tickByTick, b.work, b.counting = s.TickByTick, s.Work, s.Counting

	b.camps = make([]campaign, n)
	rings := make([]usageRing, n)
	for i := range s.Campaigns {
		c := &s.Campaigns[i]
		if err := c.Env.Validate(); err != nil {
			return bad("campaign %d: %v", i, err)
		}
		if len(c.Usage) != FairShareWindow {
			return bad("campaign %s: usage window of %d entries, want %d", c.Env.Name, len(c.Usage), FairShareWindow)
		}
		if c.BusyNext < -1 || int(c.BusyNext) >= n {
			return bad("campaign %s: busy list link %d", c.Env.Name, c.BusyNext)
		}
		env := c.Env
		if f := env.IO; f != nil {
			g := *f
			env.IO = &g
		}
		if f := env.Inference; f != nil {
			g := *f
			env.Inference = &g
		}
		copy(rings[i].buf[:], c.Usage)
		rings[i].sum = c.UsageSum
		b.camps[i] = campaign{env: env, tokens: c.Tokens, credits: c.Credits, busy: c.Busy, busyNext: c.BusyNext,
			flowBusy: c.FlowBusy, heldAt: c.HeldAt, io: restoreFlow(c.IO), inf: restoreFlow(c.Inference),
			held: c.Held, heldAll: c.HeldAll, pending: c.Pending, usage: &rings[i],
			share: c.Share, deficit: c.Deficit, deficitAt: c.DeficitAt,
			tries: c.Tries, floor: c.Floor, floorEpoch: c.FloorEpoch, floorOK: c.FloorOK}
		for _, p := range c.Pending {
			b.camps[i].pendingAll += p // derived: Σ pending
		}
	}
	// The moving list is not dumped: every busy campaign is put on it
	// (one off the busy list is at rest), and the first refill takes off
	// those at rest.
	for i := range b.camps {
		if b.camps[i].busy {
			b.camps[i].moving, b.camps[i].movingNext, b.movingHead = true, b.movingHead, int32(i)
		}
	}
	b.leases = make([]Lease, len(s.Leases))
	for i, l := range s.Leases {
		if l.Campaign < 0 || int(l.Campaign) >= n || l.GPUs < 1 || l.Class >= numClasses {
			return bad("lease %d: campaign %d, %d GPUs, class %d", l.ID, l.Campaign, l.GPUs, l.Class)
		}
		b.leases[i] = l.Lease
		b.leases[i].rigid, b.leases[i].charge, b.leases[i].chargeM = l.Rigid, l.Charge, l.ChargeM
	}
	// The pending list, run by run: its maximal stretches of one
	// campaign and class, their keys read when next ordered.
	for _, r := range s.Pending {
		if r.Campaign < 0 || int(r.Campaign) >= n || r.GPUs < 1 || r.Class >= numClasses {
			return bad("request %d: campaign %d, %d GPUs, class %d", r.ID, r.Campaign, r.GPUs, r.Class)
		}
		q := r.Request
		q.throttleJournaled, q.rigid, q.run = r.ThrottleJournaled, r.Rigid, r.Run
		if k := len(b.runs); k > 0 && b.runs[k-1].class == q.Class && b.runs[k-1].camp == int32(q.Campaign) {
			s := b.runs[k-1].slot
			b.runReqs[s] = append(b.runReqs[s], q)
			continue
		}
		b.runReqs = append(b.runReqs, []Request{q})
		b.runs = append(b.runs, pendingKey{pos: int32(len(b.runs)), class: q.Class, camp: int32(q.Campaign), slot: int32(len(b.runReqs) - 1)})
	}
	if math.IsNaN(b.congIndex) {
		return bad("congestion index is NaN")
	}
	// Scratch, rebuilt before it is read: the preemption candidates are
	// stale (New leaves every other scratch list empty, and NextChange's
	// numbering starts past any entry).
	b.candsValid = false
	return b, nil
}
