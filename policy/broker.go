package policy

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/bursar-hpc/bursar/platform"
)

// Broker constants of the model (model.md §1).
const (
	DefaultGrace      = 60   // preemption grace, seconds
	CongestionWindow  = 60   // ticks of (unmet demand, free) history
	FairShareWindow   = 600  // ticks of per-campaign usage history
	RequestTTL        = 900  // seconds a request may wait
	PartialGrantMin   = 16   // smallest partial grant, GPUs
	InferencePrice    = 0.02 // credits per 1000 inference tokens
	flowJournalPeriod = 60   // ticks between flow-throttle records per pair
	flowSlack         = 1e-9 // a flow grant this close to the desire is whole
)

// CampaignID is a campaign's registration index (0 for the first).
type CampaignID int

// Config holds the broker parameters.
type Config struct {
	// Pool is the number of GPUs.
	Pool int `json:"pool"`
	// Grace is the preemption notice, in seconds, an opportunistic lease
	// gets before it is reclaimed.
	Grace int `json:"grace"`
	// GrantTimeOnly selects the leaky enforcement that checks tokens only at
	// grant time; the default (false) is prepaid leases.
	GrantTimeOnly bool `json:"grant_time_only"`
	// IOCapacity (GB/s) and InferenceCapacity (tokens/s) are the facility's
	// flow capacities per tick; use Unmetered for none.
	IOCapacity        float64 `json:"io_capacity"`
	InferenceCapacity float64 `json:"inference_capacity"`
}

// DefaultConfig is a pool with the model's grace and unmetered flows.
func DefaultConfig(pool int) Config {
	return Config{Pool: pool, Grace: DefaultGrace, IOCapacity: Unmetered, InferenceCapacity: Unmetered}
}

// Validate checks the broker parameters.
func (c Config) Validate() error {
	if c.Pool <= 0 {
		return fmt.Errorf("pool must be at least 1 GPU, got %d", c.Pool)
	}
	if c.Grace < 0 {
		return fmt.Errorf("grace must not be negative, got %d", c.Grace)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"io capacity", c.IOCapacity}, {"inference capacity", c.InferenceCapacity}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return fmt.Errorf("%s must be a finite number ≥ 0 (policy.Unmetered for none), got %v", f.name, f.v)
		}
	}
	return nil
}

// Lease is granted GPUs for a time.
type Lease struct {
	ID        int
	Campaign  CampaignID
	GPUs      int
	Class     Class
	Submitted int
	Granted   int
	Expires   int
	// PreemptAt is meaningful while UnderNotice.
	PreemptAt   int
	UnderNotice bool
	// rigid: a trace job's lease (RequestRigid); its expiry is the job's
	// own end, journaled released-by-agent.
	rigid bool

	// charge is the credits one tick of the lease costs at multiplier
	// chargeM (0 before the first accounting): the multiplier changes
	// rarely, so the division is done once per change, not per tick.
	charge, chargeM float64
}

// Request is a pending ask for GPUs. Class sits with the flags, in one
// word (56 bytes, not 64): a full trace log's pending list is thousands
// long, and the runs' sorts and a fair-start fork's copy move it.
type Request struct {
	ID        int
	Campaign  CampaignID
	GPUs      int
	Duration  int
	Submitted int
	Class     Class

	// throttleJournaled: a throttle record was written for this request.
	throttleJournaled bool
	// rigid marks a trace job (RequestRigid): whole or nothing, never
	// expired; run is its real run time (Duration is its estimate).
	rigid bool
	run   int
}

// flowState is one campaign's token bucket in one flow dimension.
type flowState struct {
	Flow
	tokens    float64
	usedNow   float64
	usedLast  float64
	throttled int
	// lastJournal is the tick of the last throttle record; -1 for none.
	lastJournal int
}

func newFlowState(f *Flow) flowState {
	fl := UnmeteredFlow
	if f != nil {
		fl = *f
	}
	return flowState{Flow: fl, tokens: fl.Bucket, lastJournal: -1}
}

// usageRing is a campaign's held GPUs over the fair-share window, with its
// running sum so that a tick never re-sums the window. Every campaign's
// ring is written at the broker's shared position (usagePos): a campaign
// registered late starts with zeros for the ticks before it, which add
// nothing to its sum, exactly as a shorter history would.
type usageRing struct {
	buf [FairShareWindow]int32
	sum int
}

type campaign struct {
	// What every tick reads of a busy campaign (refill, accounting, the
	// busy list's tests) comes first, near its fill: the agent scenario,
	// whose campaigns are all busy, ran 5 % slower with these fields at
	// the record's end (BenchmarkScenario).
	env     Envelope
	tokens  float64
	credits float64
	// busy: the campaign is on the broker's busy list (its per-tick
	// bookkeeping may still change something), whose next campaign is
	// busyNext (−1: the last). The list runs through the campaigns so
	// that keeping it allocates nothing.
	busy     bool
	busyNext int32
	// moving: the campaign is on the broker's moving list (next
	// movingNext, −1 the last): its GPU bucket or a flow bucket may still
	// move at a refill. A subset of the busy list's reasons: a campaign
	// whose buckets are at rest but whose usage window still slides is
	// busy and not moving, and refill passes it by.
	moving     bool
	movingNext int32
	// flowBusy: a flow bucket may still move (it was drawn on since
	// both were last at rest); off, refill and SkipTo leave them be.
	flowBusy bool
	// heldAt is the tick of the last change of held GPUs: from tick
	// heldAt + FairShareWindow + 1 on, every slot of the usage window
	// holds the current value and a write changes nothing (what SkipTo
	// and recordHistory rely on). It is kept here, not in the ring, so
	// that a tick learns it without reading the ring.
	heldAt  int
	io, inf flowState
	held    [numClasses]int
	heldAll int
	pending [numClasses]int
	// pendingAll is Σ pending: Outstanding(AnyClass), which the agent
	// scenario's backfill, storm and probe read every tick, without a
	// walk of the classes.
	pendingAll int
	// usage lives apart so that the campaign list stays compact: the
	// tick walks it several times.
	usage *usageRing
	// share is g / G, redone whenever G changes; deficit is the fair-share
	// deficit as of the broker's usageEpoch deficitAt (-1: never), so
	// that an admission pass computes it once per campaign, not once per
	// request.
	share     float64
	deficit   float64
	deficitAt int
	// line is its GPU bucket's line (lineOf); usageStep its usage sum's
	// step a tick over a stretch of sliding windows (slideStretch: 0
	// outside one). Skip scratch, kept here to allocate nothing.
	line      bucketLine
	usageStep int
	// tries counts its pending requests that admission must try whatever
	// the tokens, floor is the fill below which every pending trace job
	// of it is throttled (valid while floorOK; floorEpoch: the
	// refreshFloors walk that reset it), see throttled.go.
	tries      int
	floor      float64
	floorEpoch int
	floorOK    bool
	// The credits are charged lazily (settle): while the book stands
	// (bookOK), a campaign of it (bookGen the broker's) owes its charges,
	// book.vals[bookFrom:bookEnd], for every accounted tick after
	// chargedTo (Broker.accounted's count); settle takes them in closed
	// form when the credits are read or the book changes.
	bookGen           int
	bookFrom, bookEnd int32
	chargedTo         int
	// tail is the last inference charge, negated (consumeInference);
	// the ticks chargedTo+1 … tailTo each owe it after their charges
	// (chargedTo ≤ tailTo ≤ accounted).
	tail   float64
	tailTo int
}

// congestionRing holds the last CongestionWindow (unmet priced demand, free
// GPUs) pairs with their running sums; both are integers, so the sums are
// exact.
type congestionRing struct {
	demand, free [CongestionWindow]int
	pos, n       int
	sumDemand    int
	sumFree      int
}

func (r *congestionRing) push(demand, free int) {
	// The slots are taken by pointer once and the position kept in a
	// local: written through r.pos, every store made the compiler load
	// it again and test it against the window (the history step runs
	// every tick: BenchmarkScenario, callgrind).
	p := r.pos
	d, f := &r.demand[p], &r.free[p]
	if r.n == CongestionWindow {
		r.sumDemand += demand - *d
		r.sumFree += free - *f
	} else {
		r.n++
		r.sumDemand += demand
		r.sumFree += free
	}
	*d, *f = demand, free
	if p++; p == CongestionWindow {
		p = 0
	}
	r.pos = p
}

// Broker is the admission core. It is a pure state machine: the caller
// registers campaigns, files requests and consumption between ticks, and
// advances time with Tick. It reads no clock and no random source, starts no
// goroutine and is not safe for concurrent use.
type Broker struct {
	cfg Config
	now int
	// placer seats the grants on a platform's nodes (nil: the pool is a
	// number; platform.go).
	placer *platform.Placer

	camps  []campaign
	leases []Lease
	nextID int

	leased        int // Σ gpus of all leases
	unmet         int // Σ over campaigns of max(0, g − held)
	guaranteed    int // Σ g
	usageTotal    int // Σ over campaigns of their usage window sums
	usagePos      int // where every usage ring writes next
	pendingDemand int // Σ gpus of pending requests not opportunistic
	// usageEpoch counts the changes of any usage sum or share: a cached
	// fair-share deficit holds while it stays (FairDeficit).
	usageEpoch int
	// busyHead is the first campaign of the busy list (−1: none): those
	// whose per-tick bookkeeping may change something (markBusy); every
	// other campaign is at rest (atRest), and refill, recordHistory and
	// SkipTo pass it by.
	busyHead int32
	// busyCount is the busy list's length: while every campaign is on
	// it (the agent scenario, half its ticks), recordHistory ranges over
	// the campaigns instead of following the list, which costs a
	// dependent load and a bounds check per campaign.
	busyCount int
	// movingHead is the first campaign of the moving list (−1: none):
	// those whose buckets a refill may move (campaign.moving). Every
	// campaign put on the busy list is put on it too; refill takes off
	// those it finds at rest.
	movingHead int32

	cong      congestionRing
	congIndex float64 // of cong, as of the last tick
	utilSum   float64
	utilN     int

	ioLeft, infLeft float64

	rec Recorder
	// touchSum is touchRuns' sum of what it read, which nothing reads.
	touchSum int
	// chargesFresh: every lease's charge is one tick's cost at multiplier
	// chargedM (chargeAt's cache, filled by the last accounting at that
	// multiplier); a grant clears it. While it holds and the multiplier
	// stays, account reads the charges without testing them.
	chargesFresh bool
	chargedM     float64
	// book is the leases' charges grouped by campaign, lease order kept
	// within each campaign (fillBook), valid while bookOK: what account
	// subtracts while the charges are fresh. bookAt is fillBook's
	// scratch, one entry per campaign, all zero between fills.
	book   chargeBook
	bookOK bool
	bookAt []int32
	// accounted counts the ticks account charged the book without
	// taking the charges (the campaigns' chargedTo are its values);
	// bookGen numbers fillBook's books.
	accounted, bookGen int
	// freshBefore: while the charges are not fresh (chargesFresh off),
	// the leases before it still hold their charges at chargedM (set by
	// the first grant since they were fresh; a removal resets it to 0).
	freshBefore int
	tailAdds    []float64 // settleOwed's scratch: a book's charges and a tail
	// sortKeys and sortedRuns are the admission sorts' scratch (sortkeys.go).
	sortKeys     []uint64
	sortedRuns   []pendingKey
	sortTiedKeys []uint64
	sortTiedRuns []pendingKey
	// grantsOnly: no credits, congestion window or utilization are kept
	// since tick booksAt (GrantsOnly, a fair-start fork).
	grantsOnly bool
	booksAt    int
	// rings is a copy's block of usage rings (Clone), nil in a broker
	// that is no copy.
	rings []usageRing

	// Preemption bookkeeping, so that admission never rescans the lease
	// list per request. inFlight is Σ gpus of the leases under notice.
	// cands holds the opportunistic leases not under notice (index into
	// leases, and size), largest first, ties in lease order; preemptFor
	// takes them from candPos on, always a prefix of what is left. The list
	// stays valid until a lease is removed (indices shift) or an
	// opportunistic lease is added.
	inFlight int
	// reclaimable is Σ gpus of the opportunistic leases not under notice.
	reclaimable int
	// nextDeadline is no later than the earliest expiry or preemption time
	// of any lease, so a tick before it has nothing to release.
	nextDeadline int
	cands        []candidate
	candPos      int
	candsValid   bool

	// runs are the pending list, run by run (pendingKey): maximal
	// stretches of one campaign and class, whose requests always share
	// their sort keys, so that ordering the list reads one key per run,
	// not one per request, and moves runs, not requests. A filed request
	// extends the last run or starts one; a removal merges the runs it
	// leaves meeting. runReqs are the runs' requests, by slot
	// (pendingKey.slot); freeSlots the slots no run holds, empty
	// (takeSlot).
	runs      []pendingKey
	runReqs   [][]Request
	freeSlots []int32
	// runSums are the runs' summaries, by slot (runSummary): what lets
	// admission and the site's scavenge step pass a run by unread.
	runSums []runSummary
	// floorEpoch numbers refreshFloors' walks (throttled.go);
	// rigidPending counts the pending trace jobs (none: no floor is read).
	floorEpoch   int
	rigidPending int

	// changedAt is the last tick at which anything admission reads other
	// than tokens and time changed (leases, held GPUs, pending requests,
	// notices, throttle records, campaigns): NextChange is the next tick
	// after it (skip.go).
	changedAt int
	// nextChange is NextChange's answer at tick nextChangeNow, with no
	// change since (-1: none).
	nextChange, nextChangeNow int
	// admittedAt is the last tick whose admission tried the pending
	// requests; NextChange's answer right after it is kept as quietUntil
	// (quietFrom = that tick, -1: none) while nothing changes, for the
	// quiet ticks of Tick. tickByTick: every Tick tries them
	// (SetTickByTick).
	admittedAt, quietFrom, quietUntil int
	// NextChange's per-campaign scratch (capSlope), numbered by
	// evaluation, and the campaigns it touched.
	exits       []campExit
	exitEpoch   int
	exitTouched []int32
	tickByTick  bool
	// SkipTo's scratch lists, kept so that a skip allocates nothing once
	// they have grown.
	skipToks, skipLazy, skipSlide []int32
	skipWatch                     []int32
	skipWatchCamps                []watchPair // the campaigns of skipWatch's pairs, and their crossings
	skipWatchSpare                []watchPair // the buffer tokenDecided builds the next list in
	skipLineEnd                   []int       // tokenLines' line ends of the pending campaigns, by campaign
	// skipWatchHeld: tokenDecided checks the held GPUs of the pairs it
	// keeps from the last list (a skip's first list). The earliest
	// crossing of the first skipPairsN watched pairs (−1: not worked
	// out) and the first tick it may no longer hold (watchedCrossings).
	skipWatchHeld                bool
	skipPairsN                   int
	skipPairCross, skipPairUntil int
	// skipMinEnd is the first end of the lines tokenLines last read.
	skipMinEnd                 int
	skipFlows                  []*flowState
	skipMuls                   []mulRun
	skipOff, skipAt, skipOrder []int32
	skipAdds, skipSlope        []float64
	skipTokLines               []bucketLine // skipQuiet's pending buckets' lines, beside skipToks
	// reorderMoved's: the moved campaigns, each campaign's runs (valid
	// while skipIdxOK), the pairs it checks and their ties before.
	skipMoved, skipPairs                    []int32
	skipRunFirst, skipRunNext, skipRunCamps []int32
	skipTies                                []bool
	skipIdxOK                               bool
	// tokenSegment's: the pending campaigns' bucket slopes over the open
	// segment of skipped ticks (skipSegOK) from skipSegStart to skipSegEnd.
	skipSeg                  []float64
	skipSegOK                bool
	skipSegStart, skipSegEnd int

	// work is what the broker did to its pending list (Work), kept
	// while counting (CountWork).
	work     Work
	counting bool
}

// ErrOverbooked is returned by Register when the guarantees would exceed the
// pool.
var ErrOverbooked = errors.New("sum of guarantees exceeds pool")

// ErrBudgetExhausted is returned by Request when a campaign with no credits
// left asks for a class other than opportunistic.
var ErrBudgetExhausted = errors.New("budget exhausted")

// ErrUnknownCampaign is returned for a CampaignID that was never registered.
var ErrUnknownCampaign = errors.New("unknown campaign")

// New returns a broker at time 0 with no campaigns.
func New(cfg Config) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Broker{cfg: cfg, nextID: 1, ioLeft: cfg.IOCapacity, infLeft: cfg.InferenceCapacity, nextDeadline: math.MaxInt, nextChangeNow: -1, quietFrom: -1, busyHead: -1, movingHead: -1}, nil
}

// SetRecorder routes the journal to r (nil: no journal, and no cost).
func (b *Broker) SetRecorder(r Recorder) { b.rec = r }

// Config returns the broker parameters.
func (b *Broker) Config() Config { return b.cfg }

// Now is the broker's clock, in ticks.
func (b *Broker) Now() int { return b.now }

// NumCampaigns is the number of registered campaigns.
func (b *Broker) NumCampaigns() int { return len(b.camps) }

// Envelope returns the envelope campaign c registered with.
func (b *Broker) Envelope(c CampaignID) Envelope { return b.camps[c].env }

// Lookup finds a campaign by name.
func (b *Broker) Lookup(name string) (CampaignID, bool) {
	for i := range b.camps {
		if b.camps[i].env.Name == name {
			return CampaignID(i), true
		}
	}
	return -1, false
}

// Leases is the lease list in grant order. The slice is the broker's own:
// read it, do not keep or change it.
func (b *Broker) Leases() []Lease { return b.leases }

// Pending is the pending request list in admission order (the order of the
// last pass, new requests behind): a copy, the broker keeps it run by run.
func (b *Broker) Pending() []Request {
	list := make([]Request, 0, b.pendingLen())
	for i := range b.runs {
		list = append(list, b.reqsOf(&b.runs[i])...)
	}
	return list
}

// NumPendingRuns is the number of runs of the pending list: its maximal
// stretches of one campaign and class, in admission order.
func (b *Broker) NumPendingRuns() int { return len(b.runs) }

// PendingRun is run i of the pending list (NumPendingRuns), its requests
// in admission order: the pending list read in place, without Pending's
// copy (sitemeter reads it at every busy tick). The slice is the
// broker's own: read it, do not keep or change it; any call but a read
// may change it.
func (b *Broker) PendingRun(i int) []Request { return b.reqsOf(&b.runs[i]) }

// PendingRunNarrowest is the fewest GPUs a request of run i asks for
// (NumPendingRuns), from the run's summary: read without its requests
// where the summary holds, worked out again (and counted walked) where it
// does not. The scavenge step passes a run by when no idle GPUs can seat
// it (sitemeter).
func (b *Broker) PendingRunNarrowest(i int) int {
	k := &b.runs[i]
	s := b.sumOf(k.slot)
	if !s.ok {
		reqs := b.reqsOf(k)
		summarize(s, reqs)
		if b.counting {
			b.work.Walked += int64(len(reqs))
		}
	}
	return s.narrowest
}

func (b *Broker) record(e Event) {
	e.T = b.now
	b.rec.Record(e)
}

// Register admits a campaign with its envelope. It refuses an invalid
// envelope, a duplicate name, and one whose guarantee would overbook the
// pool; nothing changes then.
func (b *Broker) Register(env Envelope) (CampaignID, error) {
	if err := env.Validate(); err != nil {
		return -1, err
	}
	if _, dup := b.Lookup(env.Name); dup {
		return -1, fmt.Errorf("campaign %s: %w: a campaign of that name is registered already", env.Name, ErrInvalidEnvelope)
	}
	if sum := b.guaranteed + env.Guaranteed; sum > b.cfg.Pool {
		return -1, fmt.Errorf("campaign %s: %w: guarantees would sum to %d GPUs on a pool of %d", env.Name, ErrOverbooked, sum, b.cfg.Pool)
	}
	id := CampaignID(len(b.camps))
	b.camps = append(b.camps, campaign{
		env:     env,
		tokens:  env.Bucket,
		credits: env.Budget,
		io:      newFlowState(env.IO),
		inf:     newFlowState(env.Inference),
		usage:   new(usageRing),
		// deficitAt: -1 as every other campaign's (the epoch moves).
		deficitAt: -1,
	})
	b.markBusy(id)
	b.guaranteed += env.Guaranteed
	g := float64(max(b.guaranteed, 1))
	for i := range b.camps {
		b.camps[i].share = float64(b.camps[i].env.Guaranteed) / g
	}
	b.usageEpoch++ // every share moved
	b.unmet += env.Guaranteed
	b.changedAt = b.now
	if b.rec != nil {
		b.record(Event{Kind: EventRegister, Campaign: env.Name, CampaignID: id,
			Guaranteed: env.Guaranteed, Sustained: env.Sustained, Bucket: env.Bucket, Burst: env.BurstCeiling})
	}
	return id, nil
}

func (b *Broker) check(c CampaignID) error {
	if uint(c) < uint(len(b.camps)) {
		return nil // kept small enough to inline: every call checks
	}
	return unknownCampaign(c)
}

func unknownCampaign(c CampaignID) error { return fmt.Errorf("%w: id %d", ErrUnknownCampaign, c) }

// Request asks for gpus GPUs for duration seconds in class cls (AnyClass:
// the envelope's). It returns the request id. The id counter advances even
// when the request is denied with ErrBudgetExhausted.
func (b *Broker) Request(c CampaignID, gpus, duration int, cls Class) (int, error) {
	if err := b.check(c); err != nil {
		return -1, err
	}
	if gpus < 1 {
		return -1, fmt.Errorf("request must ask for at least 1 GPU, got %d", gpus)
	}
	if duration < 0 {
		return -1, fmt.Errorf("request duration must not be negative, got %d", duration)
	}
	cp := &b.camps[c]
	if cls == AnyClass {
		cls = cp.env.Class
	}
	if !cls.Valid() {
		return -1, fmt.Errorf("request: unknown service class %d", uint8(cls))
	}
	if b.grantsOnly && cls != Opportunistic && !b.creditsLeft(cp) {
		return -1, fmt.Errorf("campaign %s: %w", cp.env.Name, ErrBooksNotKept)
	}
	id := b.nextID
	b.nextID++
	b.settle(cp)
	if cp.credits <= 0 && cls != Opportunistic {
		if b.rec != nil {
			b.record(Event{Kind: EventDeny, Campaign: cp.env.Name, CampaignID: c, GPUs: gpus, Class: cls, Reason: ReasonBudgetExhausted})
		}
		return id, ErrBudgetExhausted
	}
	r := Request{ID: id, Campaign: c, GPUs: gpus, Duration: duration, Class: cls, Submitted: b.now}
	if n := len(b.runs); n > 0 && b.runs[n-1].class == cls && b.runs[n-1].camp == int32(c) {
		s := b.runs[n-1].slot
		b.runReqs[s] = append(b.runReqs[s], r)
		b.sumOf(s).filed(gpus)
	} else {
		s := b.takeSlot()
		b.runReqs[s] = append(b.runReqs[s], r)
		b.sumOf(s).filed(gpus)
		b.runs = append(b.runs, pendingKey{pos: int32(n), class: cls, camp: int32(c), slot: s})
	}
	b.addPending(cp, cls, gpus)
	cp.fileTried()
	return id, nil
}

func (b *Broker) addPending(cp *campaign, cls Class, gpus int) {
	b.changedAt = b.now
	cp.pending[cls] += gpus
	cp.pendingAll += gpus
	if cls != Opportunistic {
		b.pendingDemand += gpus
	}
}

func unmetOf(cp *campaign) int { return max(0, cp.env.Guaranteed-cp.heldAll) }

// markBusy puts campaign c on the busy list and the moving list.
func (b *Broker) markBusy(c CampaignID) {
	cp := &b.camps[c]
	if !cp.busy {
		cp.busy, cp.busyNext, b.busyHead = true, b.busyHead, int32(c)
		b.busyCount++
	}
	if !cp.moving {
		cp.moving, cp.movingNext, b.movingHead = true, b.movingHead, int32(c)
	}
}

// atRest is whether a tick's bookkeeping leaves campaign cp exactly as it
// is: its GPU bucket at a fixed point of its refill, both flow buckets
// too with nothing drawn this tick or the last (flowBusy off: refill
// turns it off once flowState.atRest holds for both), and
// its usage window holding its held GPUs in every slot (they last
// changed a whole window ago: from tick heldAt + FairShareWindow + 1 on,
// see usageRing).
func (b *Broker) atRest(cp *campaign) bool {
	return cp.heldAt+FairShareWindow < b.now && !cp.flowBusy && cp.gpuBucketAtRest()
}

// gpuBucketAtRest is whether refill leaves the GPU bucket exactly as it is.
func (cp *campaign) gpuBucketAtRest() bool {
	return cp.env.GPUBucket().AtRest(cp.tokens, float64(cp.heldAll))
}

// atRest is whether refill leaves the flow bucket exactly as it is.
func (f *flowState) atRest() bool {
	return f.usedNow == 0 && f.usedLast == 0 &&
		(f.tokens == f.Bucket || f.tokenBucket().AtRest(f.tokens, f.usedNow))
}

func (b *Broker) addHeld(c CampaignID, cls Class, gpus int) {
	cp := &b.camps[c]
	b.markBusy(c) // its bucket and usage window move
	b.changedAt = b.now
	cp.heldAt = b.now
	b.unmet -= unmetOf(cp)
	cp.held[cls] += gpus
	cp.heldAll += gpus
	cp.floorOK = false // every trace job's floor moves with held GPUs
	b.unmet += unmetOf(cp)
	b.leased += gpus
}

// releaseLease drops the lease's GPUs from the counters and journals it; the
// caller removes it from the list.
func (b *Broker) releaseLease(l *Lease, reason string) {
	cp := &b.camps[l.Campaign]
	if b.placer != nil {
		b.placer.Vacate(l.ID)
	}
	b.addHeld(l.Campaign, l.Class, -l.GPUs)
	if l.UnderNotice {
		b.inFlight -= l.GPUs
	} else if l.Class == Opportunistic {
		b.reclaimable -= l.GPUs
	}
	b.candsValid = false // the caller removes the lease: indices shift
	if b.rec != nil {
		b.record(Event{Kind: EventRelease, Lease: l.ID, Campaign: cp.env.Name, CampaignID: l.Campaign, GPUs: l.GPUs, Class: l.Class, Reason: reason})
	}
}

func classMatches(filter, cls Class) bool { return filter == AnyClass || filter == cls }

// ReleaseAll releases every lease of campaign c (of class cls, or all with
// AnyClass) in lease order and drops its pending requests of that class.
func (b *Broker) ReleaseAll(c CampaignID, cls Class) error {
	if err := b.check(c); err != nil {
		return err
	}
	// An agent with nothing to give back calls this every tick (the
	// science agents when their work is cold or done): every lease and
	// request holds at least one GPU, so a campaign that holds and asks
	// for none of the class has none to release, and the walks over the
	// lease table and the queue would change nothing.
	cp := &b.camps[c]
	if b.Outstanding(c, cls) == 0 {
		return nil
	}
	if cp.heldAll > 0 && (cls == AnyClass || cp.held[cls] > 0) {
		w := 0
		for i := range b.leases {
			if l := &b.leases[i]; l.Campaign == c && classMatches(cls, l.Class) {
				b.releaseLease(l, ReasonReleasedByAgent)
				continue
			}
			if w != i {
				b.leases[w] = b.leases[i]
			}
			w++
		}
		b.leases = b.leases[:w]
		b.leasesRemoved()
	}
	if b.Outstanding(c, cls) == 0 {
		return nil
	}
	// Only the campaign's runs of the class are walked; the others
	// keep their places, merged where they now meet.
	runs := b.runs
	nr, walked, moved := 0, 0, 0
	for i := range runs {
		if k := &runs[i]; k.camp == int32(c) && classMatches(cls, k.class) {
			reqs := b.reqsOf(k)
			walked += len(reqs)
			for j := range reqs {
				b.dropPending(cp, &reqs[j])
			}
			b.freeSlot(k.slot)
			continue
		}
		var m int
		nr, m = b.keepRun(runs, nr, runs[i])
		moved += m
	}
	clear(runs[nr:])
	b.runs = runs[:nr]
	if b.counting {
		b.work.Walked += int64(walked)
		b.work.Moved += int64(moved)
	}
	return nil
}

// ReleaseLease releases one lease of campaign c.
func (b *Broker) ReleaseLease(c CampaignID, lease int) error {
	if err := b.check(c); err != nil {
		return err
	}
	for i := range b.leases {
		if b.leases[i].ID == lease && b.leases[i].Campaign == c {
			b.releaseLease(&b.leases[i], ReasonReleasedByAgent)
			b.leases = append(b.leases[:i], b.leases[i+1:]...)
			b.leasesRemoved()
			return nil
		}
	}
	return fmt.Errorf("campaign %s holds no lease %d", b.camps[c].env.Name, lease)
}

// Held is the GPUs campaign c holds in class cls (AnyClass: all classes).
func (b *Broker) Held(c CampaignID, cls Class) int {
	cp := &b.camps[c]
	if cls == AnyClass {
		return cp.heldAll
	}
	return cp.held[cls]
}

// Outstanding is Held plus the GPUs of c's pending requests (same class
// filter).
func (b *Broker) Outstanding(c CampaignID, cls Class) int {
	cp := &b.camps[c]
	if cls == AnyClass {
		return cp.heldAll + cp.pendingAll
	}
	return cp.held[cls] + cp.pending[cls]
}

// Free is the pool less every leased GPU.
func (b *Broker) Free() int { return b.cfg.Pool - b.leased }

// Credits is what campaign c has left to spend.
func (b *Broker) Credits(c CampaignID) float64 {
	cp := &b.camps[c]
	b.settle(cp)
	return cp.credits
}

// Spent is the budget campaign c has used.
func (b *Broker) Spent(c CampaignID) float64 {
	cp := &b.camps[c]
	b.settle(cp)
	return cp.env.Budget - cp.credits
}

// Tokens is campaign c's GPU bucket fill, in GPU-seconds.
func (b *Broker) Tokens(c CampaignID) float64 { return b.camps[c].tokens }

// Dimension names a flow dimension.
type Dimension uint8

const (
	IO Dimension = iota
	Inference
)

func (d Dimension) String() string {
	if d == IO {
		return "io"
	}
	return "inference"
}

func (cp *campaign) flow(d Dimension) *flowState {
	if d == IO {
		return &cp.io
	}
	return &cp.inf
}

// FlowTokens is campaign c's bucket fill in dimension d.
func (b *Broker) FlowTokens(c CampaignID, d Dimension) float64 { return b.camps[c].flow(d).tokens }

// FlowUsedLastTick is what campaign c used of dimension d in the last
// completed tick.
func (b *Broker) FlowUsedLastTick(c CampaignID, d Dimension) float64 {
	return b.camps[c].flow(d).usedLast
}

// FlowUsedThisTick is what campaign c has used of dimension d since the last
// tick.
func (b *Broker) FlowUsedThisTick(c CampaignID, d Dimension) float64 {
	return b.camps[c].flow(d).usedNow
}

// FlowThrottled counts the consume calls in which campaign c got less of
// dimension d than it asked for.
func (b *Broker) FlowThrottled(c CampaignID, d Dimension) int { return b.camps[c].flow(d).throttled }

// FacilityLeft is the facility capacity of dimension d left this tick.
func (b *Broker) FacilityLeft(d Dimension) float64 {
	if d == IO {
		return b.ioLeft
	}
	return b.infLeft
}

// Consume meters campaign c's filesystem bandwidth (GB this tick) and
// inference (tokens this tick) at the source, and returns what it may use.
// Allowed inference is charged to its credits.
func (b *Broker) Consume(c CampaignID, io, inference float64) (allowedIO, allowedInference float64, err error) {
	// One test for both refusals (written so that NaN fails it too), with
	// the error built out of line: no call on the accepted path, so the
	// arguments are not spilled on entry.
	if uint(c) >= uint(len(b.camps)) || !(io >= 0 && io <= math.MaxFloat64 && inference >= 0 && inference <= math.MaxFloat64) {
		return 0, 0, b.consumeRefusal(c, io, inference)
	}
	// Agents usually meter one dimension per call: skip the other's call.
	if io > 0 {
		allowedIO = b.consumeIO(c, io)
	}
	if inference > 0 {
		allowedInference = b.consumeInference(c, inference)
	}
	return allowedIO, allowedInference, nil
}

// ConsumeIO is Consume(c, io, 0)'s allowed filesystem bandwidth, for a
// caller that meters io alone and reads no refusal: a refused call (an
// unknown campaign, an amount not finite and ≥ 0) allows nothing and
// changes nothing, as Consume's does. The agent scenario's science
// agents meter every tick; Consume's tests of the amount not asked for,
// and its error, were a twentieth of the run (BenchmarkScenario,
// callgrind).
func (b *Broker) ConsumeIO(c CampaignID, io float64) float64 {
	if uint(c) >= uint(len(b.camps)) || !(io > 0 && io <= math.MaxFloat64) {
		return 0
	}
	return b.consumeIO(c, io)
}

// ConsumeInference is Consume(c, 0, inference)'s allowed tokens, charged
// to the campaign's credits as Consume charges them; a refused call
// allows nothing (ConsumeIO).
func (b *Broker) ConsumeInference(c CampaignID, inference float64) float64 {
	if uint(c) >= uint(len(b.camps)) || !(inference > 0 && inference <= math.MaxFloat64) {
		return 0
	}
	return b.consumeInference(c, inference)
}

// consumeIO and consumeInference meter one dimension of a valid call
// with a positive amount.
func (b *Broker) consumeIO(c CampaignID, io float64) float64 {
	cp := &b.camps[c]
	return b.consumeFlow(c, cp, &cp.io, &b.ioLeft, EventThrottleIO, io)
}

func (b *Broker) consumeInference(c CampaignID, inference float64) float64 {
	cp := &b.camps[c]
	allowed := b.consumeFlow(c, cp, &cp.inf, &b.infLeft, EventThrottleInference, inference)
	if allowed != 0 {
		// A campaign of the book that paid v for inference after the
		// last tick pays it again after this one: the tick's charges and
		// then −v, the same additions every tick, which settle takes in
		// closed form with the tick's (tailTo). The agent scenario's
		// adaptive agent holds most of the leases and pays for
		// inference every tick, at a price that moves with its held
		// GPUs only.
		v := allowed * InferencePrice / 1000
		if cp.tailTo == b.accounted-1 && cp.tail == -v && b.bookOK && cp.bookGen == b.bookGen {
			cp.tailTo = b.accounted
		} else {
			b.settle(cp) // after the ticks' charges, as the books took them
			cp.credits -= v
			cp.tail = -v
		}
	}
	return allowed
}

// consumeRefusal is Consume's error: an unknown campaign first, else a
// negative, infinite or NaN amount.
func (b *Broker) consumeRefusal(c CampaignID, io, inference float64) error {
	if err := b.check(c); err != nil {
		return err
	}
	return fmt.Errorf("consume: io and inference must be finite and ≥ 0, got %v and %v", io, inference)
}

// consumeFlow meters campaign c's flow f, of which the facility has *left
// this tick, for desired > 0; a throttle is journaled as kind.
func (b *Broker) consumeFlow(c CampaignID, cp *campaign, f *flowState, left *float64, kind EventKind, desired float64) float64 {
	limit := f.Rate
	if f.tokens > 0 {
		limit = f.Ceiling
	}
	room := pyMax(0, limit-f.usedNow)
	grant := pyMin(pyMin(desired, room), *left)
	*left -= grant
	f.usedNow += grant
	if !cp.flowBusy && grant != 0 { // (flowBusy first: a campaign drawing on its flows keeps it)
		// Its flow bucket moves at the next refill (a campaign whose
		// flows are busy is on the busy list already).
		cp.flowBusy = true
		b.markBusy(c)
	}
	if grant < desired-flowSlack {
		f.throttled++
		if f.lastJournal < 0 || b.now-f.lastJournal >= flowJournalPeriod {
			f.lastJournal = b.now
			if b.rec != nil {
				b.recordThrottle(c, cp, f, kind, desired, grant)
			}
		}
	}
	return grant
}

// recordThrottle journals a flow's throttle; out of consumeFlow, whose
// frame the record made ten times larger (the agent scenario meters a
// flow three times a tick: BenchmarkScenario, callgrind).
//
//go:noinline
func (b *Broker) recordThrottle(c CampaignID, cp *campaign, f *flowState, kind EventKind, desired, grant float64) {
	b.record(Event{Kind: kind, Campaign: cp.env.Name, CampaignID: c, Desired: desired, Allowed: grant, Tokens: f.tokens})
}

// CongestionIndex is the unmet priced demand over the free GPUs of the last
// CongestionWindow ticks, capped at 10 (0 with no history).
func (b *Broker) CongestionIndex() float64 { return b.congIndex }

// MultiplierFor maps a congestion index to the price multiplier.
func MultiplierFor(index float64) float64 {
	switch {
	case index < 0.5:
		return 1.0
	case index < 1.0:
		return 1.5
	case index < 2.0:
		return 2.25
	default:
		return 3.0
	}
}

// Multiplier is the current congestion price multiplier.
func (b *Broker) Multiplier() float64 { return MultiplierFor(b.CongestionIndex()) }

// FlowSupply is what a campaign can see of one flow dimension.
type FlowSupply struct {
	Tokens       float64 `json:"tokens"`
	Bucket       float64 `json:"bucket"`
	Rate         float64 `json:"rate"`
	Ceiling      float64 `json:"ceiling"`
	FacilityLeft float64 `json:"facility_left"`
}

// Supply is what a campaign can see before it asks.
type Supply struct {
	Free            int        `json:"free"`
	Reclaimable     int        `json:"reclaimable"`
	CongestionIndex float64    `json:"congestion_index"`
	Multiplier      float64    `json:"multiplier"`
	Tokens          float64    `json:"tokens"`
	Bucket          float64    `json:"bucket"`
	Sustained       float64    `json:"sustained"`
	Credits         float64    `json:"credits"`
	ExpectedPath    Path       `json:"-"`
	IO              FlowSupply `json:"io"`
	Inference       FlowSupply `json:"inference"`
}

// Supply reports campaign c's view of the pool.
func (b *Broker) Supply(c CampaignID) (s Supply) {
	cp := &b.camps[c]
	s.Free, s.Reclaimable = b.Free(), b.reclaimable
	switch {
	case s.Free > 0:
		s.ExpectedPath = Warm
	case s.Reclaimable > 0:
		s.ExpectedPath = Reclaim
	default:
		s.ExpectedPath = Cold
	}
	s.CongestionIndex = b.congIndex
	s.Multiplier = MultiplierFor(s.CongestionIndex)
	b.settle(cp)
	s.Tokens, s.Bucket, s.Sustained, s.Credits = cp.tokens, cp.env.Bucket, cp.env.Sustained, cp.credits
	cp.io.supply(&s.IO, b.ioLeft)
	cp.inf.supply(&s.Inference, b.infLeft)
	return s
}

func (f *flowState) supply(s *FlowSupply, left float64) {
	*s = FlowSupply{Tokens: f.tokens, Bucket: f.Bucket, Rate: f.Rate, Ceiling: f.Ceiling, FacilityLeft: left}
}

// Utilization is the mean over completed ticks of the leased fraction of the
// pool (NaN before the first tick).
func (b *Broker) Utilization() float64 {
	if b.utilN == 0 {
		return math.NaN()
	}
	return b.utilSum / float64(b.utilN)
}

// Tick advances the broker one second: expiry, buckets, accounting,
// admission, history, in that order (model.md §4).
//
// A quiet tick (before NextChange) keeps the books and the pending list's
// order but does not try the requests: none of them would be granted,
// expire, be throttled for the first time or notice a lease (skip.go), so
// trying them changes nothing. A driver that ticks every second because
// it acts between ticks (the agents of agents-arrive meter their flows
// every tick) pays for the tries only when a call or an event may change
// their outcome.
func (b *Broker) Tick() {
	if !b.tickByTick && b.NextChange() > b.now+1 {
		b.now++
		b.expire()
		b.refill()
		if !b.grantsOnly {
			b.account()
		}
		b.order()
		b.recordHistory()
		return
	}
	b.now++
	b.expire()
	b.refill()
	if !b.grantsOnly {
		b.account()
	}
	b.admit()
	b.recordHistory()
	b.admittedAt = b.now
}

// SetTickByTick makes every Tick try the pending requests, quiet or not:
// the oracle the tests of the quiet ticks compare against
// (TickByTicker).
func (b *Broker) SetTickByTick(on bool) { b.tickByTick = on }

// Admit runs one admission pass at the current time without advancing
// the clock: the last step of a tick but expiry, buckets and accounting
// (model.md §5), for a caller that decides a request as it arrives
// instead of at the next tick (the service's admission on request,
// docs/service.md). A lease granted here is granted at Now, exactly as if
// the pass of the tick that reached Now had seen the request: it is
// counted from the next refill on and expires at Now + duration; the rate
// cap reads the tokens that tick's refill left, which are the ones the
// prepaid bound charges a grant at Now against (docs/prepaid-bound.md).
// Like every call between ticks it is the caller's to journal: replaying
// the same calls in the same order gives the same broker.
func (b *Broker) Admit() { b.admit() }

func (b *Broker) expire() {
	if b.now < b.nextDeadline {
		return // most ticks: no lease is due
	}
	next := math.MaxInt
	w := 0
	for i := range b.leases {
		l := &b.leases[i]
		switch {
		case l.Expires <= b.now:
			reason := ReasonExpired
			if l.rigid {
				reason = ReasonReleasedByAgent // the job's own end
			}
			b.releaseLease(l, reason)
			continue
		case l.UnderNotice && l.PreemptAt <= b.now:
			b.releaseLease(l, ReasonPreempted)
			continue
		}
		next = min(next, l.deadline())
		if w != i {
			b.leases[w] = *l
		}
		w++
	}
	if w < len(b.leases) {
		b.leases = b.leases[:w]
		b.leasesRemoved()
	}
	b.nextDeadline = next
}

// deadline is when the lease ends: at expiry, or earlier under notice.
func (l *Lease) deadline() int {
	if l.UnderNotice {
		return min(l.Expires, l.PreemptAt)
	}
	return l.Expires
}

// pyMin and pyMax are Python's min and max of two numbers: the first one
// unless the second is strictly smaller (larger). Unlike Go's builtins they
// need no NaN or signed-zero handling, which keeps them branch-cheap on the
// hot path, and they pick between equal values the way the prototype does.
func pyMin(a, b float64) float64 {
	if b < a {
		return b
	}
	return a
}

func pyMax(a, b float64) float64 {
	if b > a {
		return b
	}
	return a
}

func (f *flowState) refill() {
	// A full bucket that was not drawn on stays full: most dimensions of
	// most campaigns, most ticks (and every unmetered one).
	if f.usedNow != 0 || f.tokens != f.Bucket {
		f.tokens = f.tokenBucket().Refill(f.tokens, f.usedNow)
	}
	f.usedLast = f.usedNow
	f.usedNow = 0
}

func (b *Broker) refill() {
	// The slice is read once: stores through cp would otherwise make the
	// compiler reload b.camps on every campaign (so in account and
	// recordHistory).
	// A campaign off the moving list refills to what it holds: its GPU
	// bucket is at a fixed point of its refill (the map is the same
	// every tick while its held GPUs stay) and both flows at rest. Such
	// a campaign is taken off the list here, and put back by whatever
	// may move a bucket again: a change of held GPUs or a draw on a
	// flow (markBusy). The agent scenario's victim, backfill and probe
	// hold GPUs below their sustained rates, their buckets full, and
	// stayed on the busy list for their usage windows alone: refilling
	// them was a fifth of refill's instructions (BenchmarkScenario,
	// callgrind). The campaigns' buckets do not interact, so the
	// list's order does not matter.
	camps := b.camps
	prev := &b.movingHead
	for i := b.movingHead; i >= 0; i = camps[i].movingNext {
		cp := &camps[i]
		before := cp.tokens
		cp.tokens = cp.env.GPUBucket().Refill(before, float64(cp.heldAll))
		if cp.flowBusy {
			// Nothing draws on a flow between here and the next
			// Consume (expiry, accounting and admission leave flows
			// be), so both at rest now stay at rest until a draw marks
			// the campaign again. A flow drawn on this tick (the
			// common case) is not at rest, its use now usedLast: that
			// is tested first, on the uses read before the refills,
			// without reading the flows back.
			ioUsed, infUsed := cp.io.usedNow, cp.inf.usedNow
			cp.io.refill()
			cp.inf.refill()
			if ioUsed == 0 && infUsed == 0 && cp.io.atRest() && cp.inf.atRest() {
				cp.flowBusy = false
			}
		}
		if !cp.flowBusy && math.Float64bits(cp.tokens) == math.Float64bits(before) {
			cp.moving, *prev = false, cp.movingNext
			continue
		}
		prev = &cp.movingNext
	}
	b.ioLeft, b.infLeft = b.cfg.IOCapacity, b.cfg.InferenceCapacity
}

// account charges every lease one tick; a copy that keeps no books
// (grantsOnly) is not charged, which its caller (Tick) tests: the test
// here made the loop 4 % dearer (BenchmarkScenario, callgrind).
//
// The multiplier is a step function of the congestion index and moves
// rarely, and leases are added only by grants: so most ticks find every
// charge already worked out at this multiplier (chargesFresh) and only
// count the tick (accounted): the charges, grouped by campaign in the
// book, are the same every such tick, and each campaign takes its
// accounted ticks at once when its credits are read or the book changes
// (settle), in closed form. Campaigns' credits do not interact, so only
// the order within a campaign matters, and it is kept. Taking them tick
// by tick, four instructions a lease, was the agent scenario's largest
// cost after refill (BenchmarkScenario, callgrind: 1.5 M of 18.4 M a
// run).
func (b *Broker) account() {
	if m := b.Multiplier(); !b.chargesFresh || m != b.chargedM {
		b.freshCharges(m)
	}
	if !b.bookOK {
		b.fillBook()
	}
	b.accounted++
}

// freshCharges works every lease's charge out at multiplier m, after a
// grant (whose charge is not worked out) or a change of multiplier; the
// ticks owed before are owed at the old charges, so the book is settled
// and dropped first.
//
// At the same multiplier only the leases from freshBefore on can need
// it: those granted since the charges were last fresh (a grant appends
// its lease), where no lease was removed since.
func (b *Broker) freshCharges(m float64) {
	b.dropBook()
	leases := b.leases
	from := 0
	if m == b.chargedM {
		from = min(b.freshBefore, len(leases))
	}
	for i := range leases[from:] {
		leases[from+i].chargeAt(m)
	}
	b.chargesFresh, b.chargedM = true, m
}

// leasesRemoved is the bookkeeping of a removal from the lease list:
// the book goes, and the leases shift, so freshBefore no longer marks
// the fresh ones.
func (b *Broker) leasesRemoved() {
	b.dropBook()
	b.freshBefore = 0
}

// chargeBook is the leases' charges campaign by campaign, negated (a
// credit x less a charge v is x + (−v), bit for bit, the addition
// sumSteps repeats): groups in order of each campaign's first lease,
// each group's charges in lease order in vals[previous end:end].
type chargeBook struct {
	groups []chargeGroup
	vals   []float64
}

type chargeGroup struct {
	camp, end int32
}

// fillBook groups the leases' cached charges by campaign (a counting sort
// over the campaigns that hold leases, O(leases)), a new book (bookGen)
// whose campaigns owe nothing yet.
func (b *Broker) fillBook() {
	leases := b.leases
	at := b.bookAt
	if len(at) < len(b.camps) {
		at = make([]int32, len(b.camps))
		b.bookAt = at
	}
	for i := range leases {
		at[leases[i].Campaign]++
	}
	// A count (> 0) becomes −(start + 1) at the campaign's first lease,
	// then each write moves it one on.
	groups, off := b.book.groups[:0], int32(0)
	for i := range leases {
		c := leases[i].Campaign
		if n := at[c]; n > 0 {
			groups = append(groups, chargeGroup{camp: int32(c), end: off + n})
			at[c] = -off - 1
			off += n
		}
	}
	vals := slices.Grow(b.book.vals[:0], len(leases))[:len(leases)]
	for i := range leases {
		c := leases[i].Campaign
		vals[-at[c]-1] = -leases[i].charge
		at[c]--
	}
	b.bookGen++
	from := int32(0)
	for _, g := range groups {
		at[g.camp] = 0
		cp := &b.camps[g.camp]
		cp.bookGen, cp.bookFrom, cp.bookEnd = b.bookGen, from, g.end
		cp.chargedTo, cp.tailTo = b.accounted, b.accounted
		from = g.end
	}
	b.book.groups, b.book.vals, b.bookOK = groups, vals, true
}

// settle takes the charges campaign cp owes (account) into its credits:
// its book's charges, in lease order, once for every tick accounted
// since it last settled. Every read of the credits settles first.
func (b *Broker) settle(cp *campaign) {
	if cp.chargedTo != b.accounted {
		b.settleOwed(cp)
	}
}

// settleOwed is settle's work, out of line: the ticks up to tailTo
// with their inference charge (tail) after the book's charges, the
// ticks after it without; a campaign of no book owes nothing, and is
// marked settled.
func (b *Broker) settleOwed(cp *campaign) {
	if b.bookOK && cp.bookGen == b.bookGen {
		vals, x := b.book.vals[cp.bookFrom:cp.bookEnd], cp.credits
		if k := cp.tailTo - cp.chargedTo; k > 0 {
			adds := append(append(b.tailAdds[:0], vals...), cp.tail)
			b.tailAdds = adds
			x = chargeSteps(x, adds, k)
		}
		if n := b.accounted - max(cp.chargedTo, cp.tailTo); n > 0 {
			x = chargeSteps(x, vals, n)
		}
		cp.credits = x
	}
	cp.chargedTo, cp.tailTo = b.accounted, b.accounted
}

// dropBook settles every campaign of the book and drops it: before the
// leases or their charges change (a grant, a release, an expiry, a new
// multiplier), whose ticks are owed at the charges of the old book.
func (b *Broker) dropBook() {
	b.settleAll()
	b.bookOK = false
}

// settleAll settles every campaign that owes charges.
func (b *Broker) settleAll() {
	if !b.bookOK {
		return
	}
	for _, g := range b.book.groups {
		b.settle(&b.camps[g.camp])
	}
}

// chargeSteps is n ticks of x ← fl(…fl(x + a₀)… + aₘ₋₁): stepped for a
// few ticks, where repeatRun's look at every addend costs more than the
// steps (a campaign read every tick or two), and in closed form
// (sumSteps) beyond.
func chargeSteps(x float64, adds []float64, n int) float64 {
	if n > chargeStepsMax {
		return sumSteps(x, adds, n)
	}
	for ; n > 0; n-- {
		for _, a := range adds {
			x += a
		}
	}
	return x
}

// chargeStepsMax is the most ticks chargeSteps steps one by one.
const chargeStepsMax = 3

// chargeAt is what one tick of the lease costs at congestion multiplier m
// (which applies to the burst and interactive classes).
func (l *Lease) chargeAt(m float64) float64 {
	lm := 1.0
	if l.Class == AgentBurst || l.Class == Interactive {
		lm = m
	}
	if l.chargeM != lm {
		l.charge, l.chargeM = float64(float64(l.GPUs)*basePrice[l.Class]*lm)/3600, lm
	}
	return l.charge
}

// writeUsage writes the campaign's held GPUs into its usage window's slot
// pos, for a campaign whose window still holds older values (past
// heldAt + FairShareWindow every slot holds the current one already), and
// returns the change of its sum.
func (cp *campaign) writeUsage(pos int) int {
	u := cp.usage
	d := cp.heldAll - int(u.buf[pos])
	u.buf[pos] = int32(cp.heldAll)
	u.sum += d
	return d
}

func (b *Broker) recordHistory() {
	free := b.Free()
	b.cong.push(b.pendingDemand, max(free, 0))
	b.congIndex = pyMin(10, float64(b.cong.sumDemand)/float64(max(b.cong.sumFree, 1)))
	// A campaign at rest writes the value its slot holds; one that has
	// come to rest leaves the busy list.
	pos := b.usagePos
	if uint(pos) >= FairShareWindow {
		// Never: usagePos stays in the window. Shown here once, so the
		// slot's bounds check leaves the campaigns' loops.
		panic("policy: usage position outside the window")
	}
	camps, total := b.camps, b.usageTotal
	// The tests are atRest's, taken apart: a campaign whose window still
	// holds older values is not at rest whatever its buckets, and refill
	// has cleared flowBusy already where both flows are at rest. The
	// windows' sums are integers, so the order of the campaigns does not
	// matter; the list is walked (and kept in its order) only where one
	// leaves it. (The agent scenario, whose campaigns are all busy,
	// spends a tenth of its broker time here: BenchmarkScenario.)
	rest := false
	if b.busyCount == len(camps) {
		for i := range camps {
			cp := &camps[i]
			if cp.heldAt+FairShareWindow >= b.now {
				total += cp.writeUsage(pos)
			} else if !cp.flowBusy && cp.gpuBucketAtRest() {
				rest = true
			}
		}
	} else {
		for i := b.busyHead; i >= 0; i = camps[i].busyNext {
			cp := &camps[i]
			if cp.heldAt+FairShareWindow >= b.now {
				total += cp.writeUsage(pos)
			} else if !cp.flowBusy && cp.gpuBucketAtRest() {
				rest = true
			}
		}
	}
	if rest {
		prev := &b.busyHead
		for i := b.busyHead; i >= 0; i = camps[i].busyNext {
			cp := &camps[i]
			if cp.heldAt+FairShareWindow < b.now && !cp.flowBusy && cp.gpuBucketAtRest() {
				cp.busy, *prev = false, cp.busyNext
				b.busyCount--
				continue
			}
			prev = &cp.busyNext
		}
	}
	b.usageTotal = total
	b.usageEpoch++
	if b.usagePos++; b.usagePos == FairShareWindow {
		b.usagePos = 0
	}
	b.utilSum += 1 - float64(free)/float64(b.cfg.Pool)
	b.utilN++
}
