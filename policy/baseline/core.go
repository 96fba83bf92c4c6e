package baseline

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/bursar-hpc/bursar/platform"
	"github.com/bursar-hpc/bursar/policy"
)

// Rule is what one baseline decides; the Core does everything else (the
// lease table, the pending list, expiry, accounting, flows, the filler, the
// journal). A Rule reads and changes the Core only through its exported
// methods, during the calls below.
type Rule interface {
	// Name is the policy's name as configs and reports write it.
	Name() string
	// Limit is the most GPUs campaign c may ever hold: its partition, its
	// quota plus borrowing limit, or the pool (docs/studies.md §6.1).
	Limit(k *Core, c policy.CampaignID) int
	// Room is how many more GPUs campaign c could be granted now without
	// preempting anyone; it never exceeds k.FreeGeneral(). It is what
	// Supply(c).Free reports (docs/studies.md §6.5).
	Room(k *Core, c policy.CampaignID) int
	// ClassFor is the class a request of campaign c is filed and priced
	// in, given the class it asked for (priority's inflation).
	ClassFor(k *Core, c policy.CampaignID, asked policy.Class) policy.Class
	// Admit is one admission pass over the pending requests of the
	// campaigns that are not the filler, after expiry (model.md §4 step 5).
	Admit(k *Core)
	// EndTick runs once per tick after admission, with the tick's holdings
	// final: usage accounting for fair share and budgets.
	EndTick(k *Core)
}

// Watcher is an optional Rule hook told of every request that joins the
// pending list (once it is in its place, its fields final) and of every
// one that leaves it (granted, expired, released), so that a rule may
// keep its own index of the queue instead of walking the whole list every
// pass. It must not change the Core, and Left must read only r (a copy,
// so that the Core's removals stay free of allocations): the list may be
// half rewritten when it is called.
type Watcher interface {
	Filed(k *Core, r *Request)
	Left(k *Core, r Request)
}

// HoldWatcher is an optional Rule hook told of every change to a
// campaign's holding (Held): a lease granted, or one ending. A rule that
// keeps every campaign's holding as of its last EndTick reads again only
// the campaigns named since, not every campaign after every change
// (fairshare: 437 campaigns, and a change at 600,000 of a 300k-job log's
// ticks). It must not change the Core, and may be told of a campaign
// whose holding is back where it was.
type HoldWatcher interface {
	HoldChanged(k *Core, c policy.CampaignID)
}

// RigidLimiter is an optional Rule hook: the widest rigid (trace) job
// campaign c may ever run, where it differs from Limit. A wider one is
// denied exceeds-limit at filing (docs/studies.md §6.1); an elastic request
// is still judged by Limit. static uses it: a rigid job wider than its
// partition is denied under lend none, while an elastic request is cut to
// what the partition has free.
type RigidLimiter interface {
	RigidLimit(k *Core, c policy.CampaignID) int
}

// FillerAdmitter is an optional Rule marker: the rule admits the filler's
// requests itself, inside Admit, and the Core does not run its own filler
// admission after it (static: the backfill runs only as a scavenger on
// the partitions' books, docs/studies.md §6.2).
type FillerAdmitter interface {
	AdmitsFiller()
}

// Marked is an optional Rule (and Core) hook: what the rule says of the
// run that a reader of its results must know (static's "minima scaled":
// some owner's widest job is wider than its partition). A study writes
// the marks beside the run's numbers and warns of them.
type Marked interface {
	// Marks are short phrases ("minima scaled"); nil: none.
	Marks() []string
}

// Marks are the rule's marks on the run so far (Marked); nil if the
// rule makes none.
func (k *Core) Marks() []string {
	if m, ok := k.rule.(Marked); ok {
		return m.Marks()
	}
	return nil
}

// Registrar is an optional Rule hook called after every registration, so
// that a rule can size its per-campaign state.
type Registrar interface {
	Registered(k *Core, c policy.CampaignID)
}

// Lease is one grant. ReservedFor is the request whose admission put it
// under notice: the GPUs it frees are reserved for that request
// (docs/studies.md §6.6).
type Lease struct {
	ID       int
	Campaign policy.CampaignID
	GPUs     int
	// Class is the class it is served and priced in; Asked the class the
	// agent asked for, which its Held, Outstanding and ReleaseAll filters
	// use (they differ only under priority's inflation: the agent's own
	// bookkeeping is by its own label).
	Class policy.Class
	Asked policy.Class
	// (The flags and the queue sit together, in one word: a lease is 96
	// bytes, not 120, and the table is compacted at every executed tick
	// and copied into every fair-start fork.)
	UnderNotice bool
	// Rigid marks a trace job's lease (RequestRigid): Expires is the job's
	// real end and EstEnd its estimated end, which EASY reads.
	Rigid bool
	// Queue is the site queue its request was filed in (RequestRigidQueued:
	// a trace job's queue, Core.QueueName); 0, none, for an agent's.
	Queue       SiteQueue
	Submitted   int
	Granted     int
	Expires     int
	PreemptAt   int
	NoticedAt   int // the tick of its notice, under notice
	ReservedFor int
	// reservedSubmitted is the submit time of request ReservedFor, by
	// which end finds it in the pending list (IndexSubmitted) without
	// rebuilding every position after a grant shifted them.
	reservedSubmitted int
	EstEnd            int
}

// End is when the lease ends if nothing else happens: its expiry, or
// earlier under notice. It is also the lease's estimated end for EASY: an
// agent lease runs until it expires unless released.
func (l *Lease) End() int {
	if l.UnderNotice {
		return min(l.Expires, l.PreemptAt)
	}
	return l.Expires
}

// Request is one pending ask. Reserved is the GPUs freed by its victims
// and held for it; Key is the rule's ordering score, written into the
// grant record's rule.fair_deficit. The one-byte fields sit together, so
// that a request is 88 bytes, not 112: a grant or a requeued job in the
// middle of a trace's long queue moves the requests on one side of it.
type Request struct {
	ID       int
	Campaign policy.CampaignID
	GPUs     int
	Duration int
	Class    policy.Class
	Asked    policy.Class
	// Rigid marks a trace job (RequestRigid): granted whole or not at
	// all, never expired; Duration is its estimate and Run its real run.
	Rigid             bool
	throttleJournaled bool
	// Queue is the site queue it was filed in (RequestRigidQueued,
	// Core.QueueName); 0, none, for an agent's request. (An index and not
	// the name: with it in the padding after the flags a request is 72
	// bytes, not 88, and holds no pointer, and the pending list, moved at
	// every grant and copied into every fair-start fork, is that much
	// less to move and nothing for the garbage collector to scan.)
	Queue     SiteQueue
	Submitted int
	Reserved  int
	Key       float64
	Run       int
}

// SiteQueue is a site queue by its place among the queue names a Core has
// seen (Core.QueueName); 0 is none.
type SiteQueue int32

type flowState struct {
	env       policy.Flow
	usedNow   float64
	usedLast  float64
	throttled int
	lastJ     int
}

// Campaign is one registered campaign as the rules see it.
type Campaign struct {
	Env policy.Envelope
	// Filler marks the facility's opportunistic filler (an envelope whose
	// default class is opportunistic: the scenario's backfill).
	Filler bool
	// Share is the campaign's entitlement, a fraction of the pool
	// (docs/studies.md §1): its member share of the entitlements
	// (SetEntitlements), or else R normalised over the campaigns that are
	// not the filler; 0 for the filler.
	Share float64
	// Group is its index in Core.Groups; −1 for the filler.
	Group int
	// Held is by the class asked for (see Lease.Asked).
	Held    [4]int
	HeldAll int
	pending [4]int
	credits float64
	io, inf flowState
}

// Core is the plumbing every baseline shares. It is a pure, caller-ticked
// state machine and implements policy.Allocator through its Rule.
type Core struct {
	cfg  policy.Config
	rule Rule
	now  int
	// restart, where restartSet, is the study's restart rule for every
	// preempted trace job, over the rule's own (SetRestart).
	restart    Restart
	restartSet bool

	camps   []Campaign
	leases  []Lease
	pending []Request
	nextID  int

	leased   int // Σ gpus of all leases
	reserved int // Σ Reserved of pending requests

	// fillerPending counts the filler's pending requests and flexPending
	// the pending requests that are not rigid: a trace has neither, and
	// the loops over the whole pending list that only they concern
	// (admitFiller, expireRequests, NextChange) cost most of a replay's
	// ticks on a long queue.
	fillerPending, flexPending int

	// Facility flows (docs/studies.md §6.8): capacity left this tick, and the
	// total desired this tick and the last.
	left, desiredNow, desiredLast [2]float64

	utilSum float64
	utilN   int

	// flowResets is how many tick starts it takes until every campaign's
	// flow use is 0 (see resetFlows).
	flowResets int

	rec policy.Recorder

	// ent are the entitlements (nil: R normalised), entOf each named
	// campaign's place in them, groups the groups as the rules see them
	// (see shares.go).
	ent    *Entitlements
	entOf  map[string]entRef
	groups []Group
	// sharesEpoch counts the reshares (SharesEpoch).
	sharesEpoch uint64
	// history is the usage before the replay by campaign name (shares.go).
	history map[string][]Usage

	watch Watcher     // the rule's, if it is one
	holds HoldWatcher // the rule's, if it is one

	// posOf caches pending positions by request id (see pendingIndex),
	// each plus posShift: a removal or insertion at the front of the list
	// moves the requests before it (see pendRemove), and posShift moves
	// with them, so that their cached positions stay right.
	posOf    []int32
	posShift int
	// pendBase is the pending list's backing array, the list starting at
	// pendHead in it: the room before pendHead lets a grant or a requeued
	// job near the front of a long queue shift the requests before it,
	// not the thousands behind it (see pendRemove, pendInsert).
	pendBase []Request
	pendHead int
	// queueNames are the site queues' names by SiteQueue, "" first (none),
	// each added when a request is first filed in it.
	queueNames []string

	// pendUnsorted: the pending list may be out of submit order (an
	// agent's request filed behind a trace job of the next tick), until
	// it empties. In order, as a trace's list always is, a rigid request
	// finds its place by binary search (RequestRigidQueued).
	pendUnsorted bool
	// unordered: the pending list is in no order (UnorderedPending), and
	// posOf is kept for every request in it.
	unordered bool

	// yielding are the GPUs held by leases a blocked head may take under
	// a rule that preempts only the opportunistic class (fairshare): the
	// filler's and the opportunistic class's (AdmitEASYKeyed).
	yielding int

	// changes counts them (Changes).
	changes uint64
	// changedAt is the last tick at which a lease started or ended or a
	// notice was issued: NextChange ticks once more after one.
	changedAt int
	// admittedAt is the last tick that ran the rule's admission; as of
	// it (NextChange asked right after it), the ticks before quietUntil
	// are quiet, which holds while nothing changes (changedAt <
	// quietFrom = admittedAt then). See NextChange and Tick.
	admittedAt            int
	quietFrom, quietUntil int
	// tickByTick: every Tick admits, even a quiet one (SetTickByTick).
	tickByTick bool
	// plainQueue: no pass reads a kept queue (SetPlainQueue).
	plainQueue bool
	// grantsOnly: credits and the utilization sum are no longer kept
	// (GrantsOnly), in a copy read only for its grants.
	grantsOnly bool

	// placer seats the grants on a platform's nodes (nil: the pool is a
	// number; platform.go), board is its scratch for a pass.
	placer *platform.Placer
	board  platform.Board

	// scratch for Preempt, kept so that a pass allocates nothing.
	cands  []int
	victim []int
	keyed  VictimSorter // a search by key's sort (PreemptKeyed)
	// scratch for SkipTo.
	debits debits

	// work is what the Core did to its pending list (policy.Work),
	// kept while counting (CountWork).
	work     policy.Work
	counting bool
	// readList: the rule read the pending list (Pending) in this pass,
	// of passLen requests (countPass).
	readList bool
	passLen  int
}

var _ policy.Allocator = (*Core)(nil)

// New returns a baseline at time 0 with no campaigns, deciding by rule.
func New(cfg policy.Config, rule Rule) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	k := &Core{cfg: cfg, rule: rule, nextID: 1, quietFrom: -1}
	k.watch, _ = rule.(Watcher)
	k.holds, _ = rule.(HoldWatcher)
	_, k.unordered = rule.(UnorderedPending)
	k.left = [2]float64{cfg.IOCapacity, cfg.InferenceCapacity}
	return k, nil
}

// Rule is the policy's rule.
func (k *Core) Rule() Rule { return k.rule }

// SetRecorder routes the journal to r (nil: no journal, and no cost).
func (k *Core) SetRecorder(r policy.Recorder) { k.rec = r }

// Config returns the parameters.
func (k *Core) Config() policy.Config { return k.cfg }

// Now is the clock, in ticks.
func (k *Core) Now() int { return k.now }

// NumCampaigns is the number of registered campaigns.
func (k *Core) NumCampaigns() int { return len(k.camps) }

// Campaign is campaign c's state, for the rules. Read only.
func (k *Core) Campaign(c policy.CampaignID) *Campaign { return &k.camps[c] }

// Envelope returns the envelope campaign c registered with.
func (k *Core) Envelope(c policy.CampaignID) policy.Envelope { return k.camps[c].Env }

// Lookup finds a campaign by name.
func (k *Core) Lookup(name string) (policy.CampaignID, bool) {
	for i := range k.camps {
		if k.camps[i].Env.Name == name {
			return policy.CampaignID(i), true
		}
	}
	return -1, false
}

// Leases is the lease table in grant order. Read only.
func (k *Core) Leases() []Lease { return k.leases }

// Pending is the pending list in submit order (in none under a rule that
// reads no order, UnorderedPending, while it holds only rigid requests of
// campaigns other than the filler). A rule may change the Key of a
// request; nothing else. While counting (CountWork), a rule that reads
// the list during an admission pass is counted as walking all of it
// once in that pass (policy.Work.Walked).
func (k *Core) Pending() []Request {
	if k.counting {
		k.readList = true
	}
	return k.pending
}

func (k *Core) record(e policy.Event) {
	e.T = k.now
	k.rec.Record(e)
}

// Register admits a campaign. It refuses what the broker refuses (an
// invalid envelope, a duplicate name, guarantees above the pool), so that
// the report's overbooking proof reads the same under every policy.
func (k *Core) Register(env policy.Envelope) (policy.CampaignID, error) {
	if err := env.Validate(); err != nil {
		return -1, err
	}
	if _, dup := k.Lookup(env.Name); dup {
		return -1, fmt.Errorf("campaign %s: %w: a campaign of that name is registered already", env.Name, policy.ErrInvalidEnvelope)
	}
	sum := env.Guaranteed
	for i := range k.camps {
		sum += k.camps[i].Env.Guaranteed
	}
	if sum > k.cfg.Pool {
		return -1, fmt.Errorf("campaign %s: %w: guarantees would sum to %d GPUs on a pool of %d", env.Name, policy.ErrOverbooked, sum, k.cfg.Pool)
	}
	id := policy.CampaignID(len(k.camps))
	k.camps = append(k.camps, Campaign{
		Env:     env,
		Filler:  env.Class == policy.Opportunistic,
		credits: env.Budget,
		io:      newFlow(env.IO),
		inf:     newFlow(env.Inference),
	})
	k.reshare()
	k.changed() // the shares changed
	if k.rec != nil {
		k.record(policy.Event{Kind: policy.EventRegister, Campaign: env.Name, CampaignID: id,
			Guaranteed: env.Guaranteed, Sustained: env.Sustained, Bucket: env.Bucket, Burst: env.BurstCeiling})
	}
	if r, ok := k.rule.(Registrar); ok {
		r.Registered(k, id)
	}
	return id, nil
}

func newFlow(f *policy.Flow) flowState {
	fl := policy.UnmeteredFlow
	if f != nil {
		fl = *f
	}
	return flowState{env: fl, lastJ: -1}
}

func (k *Core) check(c policy.CampaignID) error {
	if uint(c) < uint(len(k.camps)) {
		return nil
	}
	return fmt.Errorf("%w: id %d", policy.ErrUnknownCampaign, c)
}

// Request files a request. Like the broker it denies a campaign with no
// credits left outside the opportunistic class; it also denies a request
// larger than the campaign can ever hold (docs/studies.md §6.1). Both take an
// id and journal deny.
func (k *Core) Request(c policy.CampaignID, gpus, duration int, cls policy.Class) (int, error) {
	id, err := k.file(c, gpus, duration, cls, false)
	if err == nil && k.watch != nil {
		k.watch.Filed(k, &k.pending[len(k.pending)-1])
	}
	return id, err
}

// file is Request without telling the rule's Watcher: RequestRigid tells
// it once the request is in its place.
func (k *Core) file(c policy.CampaignID, gpus, duration int, cls policy.Class, rigid bool) (int, error) {
	if err := k.check(c); err != nil {
		return -1, err
	}
	if gpus < 1 {
		return -1, fmt.Errorf("request must ask for at least 1 GPU, got %d", gpus)
	}
	if duration < 0 {
		return -1, fmt.Errorf("request duration must not be negative, got %d", duration)
	}
	cp := &k.camps[c]
	if cls == policy.AnyClass {
		cls = cp.Env.Class
	}
	if !cls.Valid() {
		return -1, fmt.Errorf("request: unknown service class %d", uint8(cls))
	}
	asked := cls
	cls = k.rule.ClassFor(k, c, cls)
	id := k.nextID
	k.nextID++
	limit := 0
	if rl, ok := k.rule.(RigidLimiter); ok && rigid {
		limit = rl.RigidLimit(k, c)
	} else {
		limit = k.rule.Limit(k, c)
	}
	var reason string
	var err error
	switch {
	case cp.credits <= 0 && cls != policy.Opportunistic:
		reason, err = policy.ReasonBudgetExhausted, policy.ErrBudgetExhausted
	case gpus > limit:
		reason, err = policy.ReasonExceedsLimit, policy.ErrExceedsLimit
	}
	if err != nil {
		if k.rec != nil {
			k.record(policy.Event{Kind: policy.EventDeny, Campaign: cp.Env.Name, CampaignID: c, GPUs: gpus, Class: cls, Reason: reason})
		}
		return id, err
	}
	if k.unordered && (!rigid || cp.Filler) {
		k.restoreOrder()
	}
	if n := len(k.pending); n == 0 {
		k.pendUnsorted = false
	} else if !rigid && k.pending[n-1].Submitted > k.now {
		k.pendUnsorted = true // behind a trace job submitted at the next tick
	}
	k.pendPush(Request{ID: id, Campaign: c, GPUs: gpus, Duration: duration, Class: cls, Asked: asked, Submitted: k.now})
	cp.pending[asked] += gpus
	k.flexPending++ // RequestRigid takes it back
	if cp.Filler {
		k.fillerPending++
	}
	k.changed()
	return id, nil
}

func classMatches(filter, cls policy.Class) bool { return filter == policy.AnyClass || filter == cls }

// ReleaseAll releases c's leases of class cls (AnyClass: all) in lease
// order and drops its pending requests of that class without a record.
func (k *Core) ReleaseAll(c policy.CampaignID, cls policy.Class) error {
	if err := k.check(c); err != nil {
		return err
	}
	// An agent with nothing to give back calls this every tick (the
	// science agents when their work is cold or done): every lease and
	// request holds at least one GPU, so a campaign that holds and asks
	// for none of the class has none to release, and the two walks over
	// a trace's lease table and queue would change nothing.
	cp := &k.camps[c]
	if k.Outstanding(c, cls) == 0 {
		return nil
	}
	if cp.HeldAll > 0 && (cls == policy.AnyClass || cp.Held[cls] > 0) {
		w := 0
		for i := range k.leases {
			if l := &k.leases[i]; l.Campaign == c && classMatches(cls, l.Asked) {
				k.end(l, policy.ReasonReleasedByAgent)
				continue
			}
			if w != i {
				k.leases[w] = k.leases[i]
			}
			w++
		}
		k.leases = k.leases[:w]
	}
	if k.Outstanding(c, cls) == 0 {
		return nil
	}
	// A request leaving the queue may let another start (a head no
	// longer blocks it): the next tick admits.
	k.changed()
	w, moved := 0, 0
	for i := range k.pending {
		if r := &k.pending[i]; r.Campaign == c && classMatches(cls, r.Asked) {
			k.drop(r)
			continue
		}
		if w != i {
			k.pending[w] = k.pending[i]
			if k.unordered {
				k.notePos(w)
			}
			moved++
		}
		w++
	}
	k.countCompaction(len(k.pending), moved)
	k.pending = k.pending[:w]
	return nil
}

// ReleaseLease releases one lease of campaign c.
func (k *Core) ReleaseLease(c policy.CampaignID, lease int) error {
	if err := k.check(c); err != nil {
		return err
	}
	for i := range k.leases {
		if k.leases[i].ID == lease && k.leases[i].Campaign == c {
			l := k.leases[i]
			k.leases = append(k.leases[:i], k.leases[i+1:]...)
			k.end(&l, policy.ReasonReleasedByAgent)
			return nil
		}
	}
	return fmt.Errorf("campaign %s holds no lease %d", k.camps[c].Env.Name, lease)
}

// end returns a lease's GPUs (the caller removes it from the table) and,
// when a preemption reserved them, hands them to the waiting request.
func (k *Core) end(l *Lease, reason string) {
	k.changed()
	if k.placer != nil {
		k.placer.Vacate(l.ID)
	}
	cp := &k.camps[l.Campaign]
	cp.Held[l.Asked] -= l.GPUs
	cp.HeldAll -= l.GPUs
	if k.holds != nil {
		k.holds.HoldChanged(k, l.Campaign)
	}
	k.leased -= l.GPUs
	if cp.Filler || l.Class == policy.Opportunistic {
		k.yielding -= l.GPUs
	}
	if l.UnderNotice && l.ReservedFor >= 0 {
		if i := k.IndexSubmitted(l.ReservedFor, l.reservedSubmitted); i >= 0 {
			k.pending[i].Reserved += l.GPUs
			k.reserved += l.GPUs
		}
	}
	if k.rec != nil {
		e := policy.Event{Kind: policy.EventRelease, Lease: l.ID, Campaign: cp.Env.Name, CampaignID: l.Campaign, GPUs: l.GPUs, Class: l.Class, Reason: reason}
		if reason == policy.ReasonPreempted && l.Rigid {
			e.Kept = k.Restart().Kept(l.Granted, l.NoticedAt)
		}
		k.record(e)
	}
}

// pendingIndex finds request id in the pending list. Rules look every
// request up once per pass, so a linear search made a pass quadratic in the
// queue (minutes on a trace's long queues); posOf remembers each id's last
// known position and is checked before use, so a stale entry (the list
// shifted) only costs one rebuild.
func (k *Core) pendingIndex(id int) int {
	if id >= 0 && id < len(k.posOf) {
		if p := int(k.posOf[id]) - k.posShift; uint(p) < uint(len(k.pending)) && k.pending[p].ID == id {
			return p
		}
	}
	if id >= k.nextID || id < 0 {
		return -1
	}
	if k.unordered {
		// posOf is kept for every request in the list (RequestRigidQueued,
		// pendRemove and the compactions of ReleaseAll and expireRequests
		// note each place): a miss is a request not in it, which a
		// rebuild would not find either. The Core's end of a lease under
		// notice looks up the request its GPUs are reserved for, granted
		// since as often as not, and each rebuild walked a trace's list
		// thousands long.
		return -1
	}
	if cap(k.posOf) < k.nextID {
		k.posOf = make([]int32, k.nextID, 2*k.nextID)
	}
	k.posOf = k.posOf[:k.nextID]
	found := -1
	for i := range k.pending {
		r := k.pending[i].ID
		k.posOf[r] = int32(i + k.posShift)
		if r == id {
			found = i
		}
	}
	return found
}

// IndexSubmitted is Index for a rule that knows the request's submit
// time: when the remembered position is stale (every grant shifts the
// requests behind it), it searches the pending list by (submit time, id),
// the order it nearly always has (see BuildByKey), and rebuilds the
// positions only if that search misses. A quota pass looks up each
// campaign's head every round, and a rebuild per granting round, linear
// in a trace's long queue, cost a sixth of a full-log replay.
func (k *Core) IndexSubmitted(id, submitted int) int {
	if k.unordered {
		return k.pendingIndex(id) // posOf is kept
	}
	if id >= 0 && id < len(k.posOf) {
		if p := int(k.posOf[id]) - k.posShift; uint(p) < uint(len(k.pending)) && k.pending[p].ID == id {
			return p
		}
	}
	lo, hi := 0, len(k.pending)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r := &k.pending[m]; r.Submitted < submitted || r.Submitted == submitted && r.ID < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(k.pending) && k.pending[lo].ID == id {
		if id < len(k.posOf) {
			k.posOf[id] = int32(lo + k.posShift)
		}
		return lo
	}
	return k.pendingIndex(id)
}

// drop forgets a request's pending GPUs and frees its reservation; the
// caller removes it from the list.
func (k *Core) drop(r *Request) {
	if k.watch != nil {
		k.watch.Left(k, *r)
	}
	cp := &k.camps[r.Campaign]
	cp.pending[r.Asked] -= r.GPUs
	if cp.Filler {
		k.fillerPending--
	}
	if !r.Rigid {
		k.flexPending--
	}
	k.reserved -= r.Reserved
	r.Reserved = 0
}

// Held is what c holds in class cls (AnyClass: all).
func (k *Core) Held(c policy.CampaignID, cls policy.Class) int {
	cp := &k.camps[c]
	if cls == policy.AnyClass {
		return cp.HeldAll
	}
	return cp.Held[cls]
}

// Outstanding is Held plus c's pending GPUs (same filter).
func (k *Core) Outstanding(c policy.CampaignID, cls policy.Class) int {
	cp := &k.camps[c]
	if cls == policy.AnyClass {
		n := cp.HeldAll
		for _, p := range cp.pending {
			n += p
		}
		return n
	}
	return cp.Held[cls] + cp.pending[cls]
}

// Leased is Σ gpus of all leases.
func (k *Core) Leased() int { return k.leased }

// FreeGeneral is the GPUs nobody holds and no preemption has reserved:
// what any request without a reservation may take.
func (k *Core) FreeGeneral() int { return k.cfg.Pool - k.leased - k.reserved }

// Free is FreeGeneral: the GPUs a newcomer could be granted now.
func (k *Core) Free() int { return k.FreeGeneral() }

// Tokens is what a campaign reads as its GPU tokens under a baseline: its
// bucket B, always full (docs/studies.md §6.5).
func (k *Core) Tokens(c policy.CampaignID) float64 { return k.camps[c].Env.Bucket }

// FlowTokens is the flow bucket, always full: a baseline meters no flow
// per campaign (docs/studies.md §6.5).
func (k *Core) FlowTokens(c policy.CampaignID, d policy.Dimension) float64 {
	return k.camps[c].flow(d).env.Bucket
}

func (cp *Campaign) flow(d policy.Dimension) *flowState {
	if d == policy.IO {
		return &cp.io
	}
	return &cp.inf
}

// FlowUsedLastTick is what c used of d in the last completed tick.
func (k *Core) FlowUsedLastTick(c policy.CampaignID, d policy.Dimension) float64 {
	return k.camps[c].flow(d).usedLast
}

// FlowThrottled counts c's consume calls that got less of d than desired.
func (k *Core) FlowThrottled(c policy.CampaignID, d policy.Dimension) int {
	return k.camps[c].flow(d).throttled
}

// Credits is what c has left; Spent what it has used.
func (k *Core) Credits(c policy.CampaignID) float64 { return k.camps[c].credits }

// Spent is the budget campaign c has used.
func (k *Core) Spent(c policy.CampaignID) float64 {
	return k.camps[c].Env.Budget - k.camps[c].credits
}

// Multiplier is 1: only Bursar prices congestion (docs/studies.md §1).
func (k *Core) Multiplier() float64 { return 1 }

// Consume splits the facility's flow capacity in proportion to desire
// (docs/studies.md §6.8): allowed = min(desired, capacity left this tick,
// desired · min(1, C / D_prev)). Allowed inference is charged at the
// broker's inference price, so that credits compare across policies.
func (k *Core) Consume(c policy.CampaignID, io, inference float64) (allowedIO, allowedInference float64, err error) {
	if err := k.check(c); err != nil {
		return 0, 0, err
	}
	if !(io >= 0 && io <= math.MaxFloat64 && inference >= 0 && inference <= math.MaxFloat64) {
		return 0, 0, fmt.Errorf("consume: io and inference must be finite and ≥ 0, got %v and %v", io, inference)
	}
	cp := &k.camps[c]
	if io > 0 {
		allowedIO = k.consumeFlow(c, cp, policy.IO, io)
	}
	if inference > 0 {
		allowedInference = k.consumeFlow(c, cp, policy.Inference, inference)
	}
	if allowedInference != 0 {
		cp.credits -= allowedInference * policy.InferencePrice / 1000
	}
	return allowedIO, allowedInference, nil
}

func (k *Core) capacity(d policy.Dimension) float64 {
	if d == policy.IO {
		return k.cfg.IOCapacity
	}
	return k.cfg.InferenceCapacity
}

func (k *Core) consumeFlow(c policy.CampaignID, cp *Campaign, d policy.Dimension, desired float64) float64 {
	f := cp.flow(d)
	k.flowResets = 2 // see resetFlows
	k.desiredNow[d] += desired
	scale := 1.0
	if dp := k.desiredLast[d]; dp > 0 {
		scale = min(1, k.capacity(d)/dp)
	}
	grant := min(desired, k.left[d], desired*scale)
	grant = max(grant, 0)
	k.left[d] -= grant
	f.usedNow += grant
	if grant < desired-1e-9 {
		f.throttled++
		if f.lastJ < 0 || k.now-f.lastJ >= 60 {
			f.lastJ = k.now
			if k.rec != nil {
				kind := policy.EventThrottleIO
				if d == policy.Inference {
					kind = policy.EventThrottleInference
				}
				k.record(policy.Event{Kind: kind, Campaign: cp.Env.Name, CampaignID: c, Desired: desired, Allowed: grant, Tokens: f.env.Bucket})
			}
		}
	}
	return grant
}

// Supply is what campaign c reads under a baseline (docs/studies.md §6.5):
// multiplier 1, GPU tokens = B, flow tokens = the flow bucket, and free =
// what c could be granted now without preempting anyone.
func (k *Core) Supply(c policy.CampaignID) (s policy.Supply) {
	cp := &k.camps[c]
	s.Free = k.rule.Room(k, c)
	for i := range k.leases {
		if l := &k.leases[i]; l.Class == policy.Opportunistic && !l.UnderNotice {
			s.Reclaimable += l.GPUs
		}
	}
	switch {
	case s.Free > 0:
		s.ExpectedPath = policy.Warm
	case s.Reclaimable > 0:
		s.ExpectedPath = policy.Reclaim
	default:
		s.ExpectedPath = policy.Cold
	}
	s.Multiplier = 1
	s.Tokens, s.Bucket, s.Sustained, s.Credits = cp.Env.Bucket, cp.Env.Bucket, cp.Env.Sustained, cp.credits
	for d, fs := range [2]*policy.FlowSupply{&s.IO, &s.Inference} {
		f := cp.flow(policy.Dimension(d))
		*fs = policy.FlowSupply{Tokens: f.env.Bucket, Bucket: f.env.Bucket, Rate: f.env.Rate, Ceiling: f.env.Ceiling, FacilityLeft: k.left[d]}
	}
	return s
}

// Utilization is the mean leased fraction over completed ticks.
func (k *Core) Utilization() float64 {
	if k.utilN == 0 {
		return math.NaN()
	}
	return k.utilSum / float64(k.utilN)
}

// Tick advances one second in the broker's order (model.md §4): expire
// leases, reset the flows, charge credits, admit, record.
//
// A quiet tick (one before NextChange) only keeps the books, as SkipTo
// would: no lease ends, no request expires, and the rule's Admit and
// EndTick are not called, since nothing they read has changed since the
// last tick that called them (the Steady and Paced contracts). A caller
// that ticks every second because it acts between ticks (the agents of
// agents-arrive, who meter their flows every tick) then pays for an
// admission pass only when a call or an event changed something.
func (k *Core) Tick() {
	if !k.tickByTick && k.NextChange() > k.now+1 {
		k.now++
		k.resetFlows()
		if !k.grantsOnly {
			k.account()
			k.utilSum += float64(k.leased) / float64(k.cfg.Pool)
			k.utilN++
		}
		return
	}
	k.now++
	k.expire()
	k.resetFlows()
	if !k.grantsOnly {
		k.account()
	}
	k.expireRequests()
	if k.counting {
		k.countPass()
	}
	k.rule.Admit(k)
	if _, own := k.rule.(FillerAdmitter); !own {
		k.admitFiller()
	}
	k.rule.EndTick(k)
	if k.readList {
		k.countListRead()
	}
	k.admittedAt = k.now
	if k.grantsOnly && !k.tickByTick {
		if s, ok := k.rule.(Settler); ok && s.Settled(k) {
			// The pass saw this tick's changes and its own grants leave
			// it with nothing to decide: the next tick is not one after
			// a change (NextChange).
			k.changedAt = k.now - 1
		}
	}
	if !k.grantsOnly {
		k.utilSum += float64(k.leased) / float64(k.cfg.Pool)
		k.utilN++
	}
}

// changed notes a change NextChange watches: a lease started or ended, a
// notice, a request filed or cancelled by its campaign, a registration or
// new entitlements.
func (k *Core) changed() {
	k.changedAt = k.now
	k.changes++
}

// Changes counts the changes NextChange watches (changed) since the Core
// began. With the requests a Watcher is told of (filed, or leaving the
// pending list), they are every change to what a Steady rule's admission
// reads: a rule whose last pass changed neither, and finds neither
// changed since, would decide the same again (quota skips that pass).
func (k *Core) Changes() uint64 { return k.changes }

// SetTickByTick makes every Tick admit, quiet or not: the oracle that
// the tests of the quiet ticks compare against (trace.ReplayOptions and
// engine.Options TickByTick set it).
func (k *Core) SetTickByTick(on bool) { k.tickByTick = on }

// resetFlows starts a tick's flows: this tick's use becomes the last
// tick's. Once two resets have passed without a consume, every campaign's
// use is 0 now and last tick, and a reset changes none of it: a trace
// consumes nothing, and the loop over its hundreds of campaigns was paid
// at every tick and skip.
func (k *Core) resetFlows() {
	if k.flowResets > 0 {
		k.flowResets--
		for i := range k.camps {
			cp := &k.camps[i]
			cp.io.usedLast, cp.io.usedNow = cp.io.usedNow, 0
			cp.inf.usedLast, cp.inf.usedNow = cp.inf.usedNow, 0
		}
	}
	k.desiredLast, k.desiredNow = k.desiredNow, [2]float64{}
	k.left = [2]float64{k.cfg.IOCapacity, k.cfg.InferenceCapacity}
}

func (k *Core) expire() {
	w := 0
	for i := range k.leases {
		l := &k.leases[i] // only the leases behind an ended one move
		switch {
		case l.Expires <= k.now:
			reason := policy.ReasonExpired
			if l.Rigid {
				reason = policy.ReasonReleasedByAgent // the job's own end
			}
			k.end(l, reason)
			continue
		case l.UnderNotice && l.PreemptAt <= k.now:
			k.end(l, policy.ReasonPreempted)
			continue
		}
		if w != i {
			k.leases[w] = *l
		}
		w++
	}
	k.leases = k.leases[:w]
}

// account debits every held GPU-second at its class's base price, with no
// congestion multiplier (docs/studies.md §1).
func (k *Core) account() {
	for i := range k.leases {
		l := &k.leases[i]
		k.camps[l.Campaign].credits -= float64(l.GPUs) * l.Class.BasePrice() / 3600
	}
}

// expireRequests drops the requests older than the broker's TTL
// (docs/studies.md §6.3), journaling request-expired.
func (k *Core) expireRequests() {
	if k.flexPending == 0 {
		return // only requests that are not rigid expire
	}
	// Most ticks expire nothing: find the first expiry before copying
	// anything.
	first := len(k.pending)
	for i := range k.pending {
		if r := &k.pending[i]; k.now-r.Submitted > policy.RequestTTL && !r.Rigid {
			first = i
			break
		}
	}
	w := first
	for i := first; i < len(k.pending); i++ {
		r := k.pending[i]
		if k.now-r.Submitted > policy.RequestTTL && !r.Rigid {
			k.drop(&r)
			if k.rec != nil {
				cp := &k.camps[r.Campaign]
				k.record(policy.Event{Kind: policy.EventRequestExpired, Campaign: cp.Env.Name, CampaignID: r.Campaign, GPUs: r.GPUs, Class: r.Class})
			}
			continue
		}
		if w != i {
			k.pending[w] = r
			if k.unordered {
				k.notePos(w)
			}
		}
		w++
	}
	k.countCompaction(len(k.pending), w-first)
	k.pending = k.pending[:w]
}

// admitFiller grants the filler's requests, in submit order, from what
// admission left (docs/studies.md §6.2). The filler never preempts.
func (k *Core) admitFiller() {
	if k.fillerPending == 0 {
		return
	}
	k.countWalk(len(k.pending))
	for i := 0; i < len(k.pending); i++ {
		r := &k.pending[i]
		if !k.camps[r.Campaign].Filler {
			continue
		}
		if k.TryStart(i, k.rule.Room(k, r.Campaign)) {
			i--
		}
	}
}

// Want is what request i may be granted at most: its size, capped by what
// its campaign may still hold. It journals a throttle record (once per
// request) and returns 0 when the campaign is at its limit.
func (k *Core) Want(i int) int {
	if k.counting {
		k.work.Walked++
	}
	r := &k.pending[i]
	cp := &k.camps[r.Campaign]
	limit := k.rule.Limit(k, r.Campaign)
	headroom := limit - cp.HeldAll
	if headroom <= 0 && !(r.Rigid && limit >= k.cfg.Pool) {
		if !r.throttleJournaled {
			r.throttleJournaled = true
			if k.rec != nil {
				k.record(policy.Event{Kind: policy.EventThrottle, Campaign: cp.Env.Name, CampaignID: r.Campaign, GPUs: r.GPUs, Class: r.Class, Tokens: cp.Env.Bucket, Cap: limit})
			}
		}
		return 0
	}
	if r.Rigid && headroom < r.GPUs && limit < k.cfg.Pool {
		// Whole or nothing: it cannot start until its campaign holds less
		// of its partition or quota, so it does not hold the queue. Under
		// the pool alone it waits at its place like any job that does not
		// fit (held + free never exceed the pool).
		return 0
	}
	if r.Rigid {
		return r.GPUs
	}
	return min(r.GPUs, headroom)
}

// TryStart applies the broker's grant rule (model.md §5 step 5,
// docs/studies.md §6.1) to pending request i, given room GPUs its campaign may
// take now without preemption (its reservation comes on top): grant want
// if it fits, else a partial grant of at least min(want, 16). It reports
// whether the request was granted and so left the list (indices behind i
// shift down by one).
func (k *Core) TryStart(i, room int) bool {
	want := k.Want(i)
	if want == 0 {
		return false
	}
	x := min(want, room+k.pending[i].Reserved)
	if k.placer != nil {
		x = min(x, k.placer.Largest()) // what the nodes seat (platform.go)
	}
	if x >= want || (!k.pending[i].Rigid && x >= min(want, policy.PartialGrantMin)) {
		k.Grant(i, x)
		return true
	}
	return false
}

// Reprice files pending request i in class cls, the class its lease is
// served and priced in, before it is granted (the class it asked for, by
// which its campaign keeps its books, stays): static prices a lease no
// one can preempt at the non-preemptible class's price, whatever class it
// claims (docs/studies.md §2).
func (k *Core) Reprice(i int, cls policy.Class) { k.pending[i].Class = cls }

// Grant grants n GPUs to pending request i and removes it from the list;
// a partial grant finishes the request (the agent asks again).
func (k *Core) Grant(i, n int) {
	r := k.pending[i]
	k.pendRemove(i)
	k.drop(&r)
	cp := &k.camps[r.Campaign]
	latency := k.now - r.Submitted
	path := policy.PathFor(latency, k.cfg.Grace)
	l := Lease{ID: r.ID, Campaign: r.Campaign, GPUs: n, Class: r.Class, Asked: r.Asked,
		Submitted: r.Submitted, Granted: k.now, Expires: k.now + r.Duration, ReservedFor: -1, Queue: r.Queue}
	if r.Rigid {
		l.Rigid, l.Expires, l.EstEnd = true, k.now+r.Run, k.now+r.Duration
	}
	k.leases = append(k.leases, l)
	k.seat(r.ID, n)
	k.changed()
	cp.Held[r.Asked] += n
	cp.HeldAll += n
	if k.holds != nil {
		k.holds.HoldChanged(k, r.Campaign)
	}
	k.leased += n
	if cp.Filler || l.Class == policy.Opportunistic {
		k.yielding += n
	}
	if k.rec != nil {
		k.record(policy.Event{Kind: policy.EventGrant, Lease: r.ID, Campaign: cp.Env.Name, CampaignID: r.Campaign,
			GPUs: n, Class: r.Class, Latency: latency, Path: path, FairDeficit: r.Key, RuleTokens: cp.Env.Bucket})
	}
}

// InFlight is the GPUs under notice whose release is reserved for request
// id: they count towards its need (docs/studies.md §6.6).
func (k *Core) InFlight(id int) int {
	n := 0
	for i := range k.leases {
		if l := &k.leases[i]; l.UnderNotice && l.ReservedFor == id {
			n += l.GPUs
		}
	}
	return n
}

// pendPush appends r to the pending list.
func (k *Core) pendPush(r Request) {
	n := len(k.pending)
	if k.pendHead+n == len(k.pendBase) {
		k.pendMove(n/8+8, 2*n+8)
	}
	k.pending = k.pendBase[k.pendHead : k.pendHead+n+1]
	k.pending[n] = r
}

// pendMove moves the pending list into a new backing array, with room
// for front requests before it and behind requests after it.
func (k *Core) pendMove(front, behind int) {
	n := len(k.pending)
	base := make([]Request, front+n+behind)
	copy(base[front:], k.pending)
	k.countMoved(n)
	k.pendBase, k.pendHead = base, front
	k.pending = base[front : front+n]
}

// pendRemove removes pending request i, shifting the shorter side of
// the list by one: the requests before it one place back, or those
// behind it one place forward. Either way the indices before i stay and
// those behind it drop by one, as callers expect (see TryStart).
func (k *Core) pendRemove(i int) {
	n := len(k.pending)
	if k.unordered {
		// The last request takes its place, and its position is noted.
		if i != n-1 {
			k.pending[i] = k.pending[n-1]
			k.notePos(i)
			k.countMoved(1)
		}
		k.pending[n-1] = Request{}
		k.pending = k.pending[:n-1]
		return
	}
	if i < n-1-i {
		k.countMoved(i)
		copy(k.pending[1:i+1], k.pending[:i])
		k.pending[0] = Request{}
		k.pending = k.pending[1:]
		k.pendHead++
		k.posShift++
		return
	}
	k.countMoved(n - 1 - i)
	copy(k.pending[i:], k.pending[i+1:])
	k.pending[n-1] = Request{}
	k.pending = k.pending[:n-1]
}

// notePos remembers that pending request i is at i (posOf).
func (k *Core) notePos(i int) {
	id := k.pending[i].ID
	if id >= len(k.posOf) {
		k.posOf = append(k.posOf, make([]int32, id+1-len(k.posOf))...)
	}
	k.posOf[id] = int32(i + k.posShift)
}

// restoreOrder puts the pending list back in submit order, for good: a
// request that is not rigid, or the filler's, is filed, and the rest of
// the Core reads the order again (admitFiller, expireRequests). Ties go
// by id, the order in which the Core filed them, which is where each
// rigid request's binary search would have put it (RequestRigidQueued).
func (k *Core) restoreOrder() {
	k.unordered = false
	k.countMoved(len(k.pending))
	slices.SortFunc(k.pending, func(a, b Request) int {
		if c := cmp.Compare(a.Submitted, b.Submitted); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// RigidOnly reports whether every pending request is rigid (a trace's
// jobs), none elastic nor the filler's.
func (k *Core) RigidOnly() bool { return k.flexPending == 0 }

// Ordered reports whether the pending list is in submit order: always,
// but under a rule that reads no order (UnorderedPending) while it holds
// only rigid requests of campaigns other than the filler.
func (k *Core) Ordered() bool { return !k.unordered }

// KeepOrder keeps the pending list in submit order from now on, whatever
// the rule (the oracle the tests of UnorderedPending compare with).
func (k *Core) KeepOrder() {
	if k.unordered {
		k.restoreOrder()
	}
}

// UnorderedPending is an optional Rule marker: the rule reads the pending
// list only request by request (Index, IndexSubmitted, Pend, then
// TryStart or NoticeFor at once) and orders its candidates itself
// (quota's queues), so that the order of the list is nothing to it. While
// the list holds only rigid requests of campaigns other than the filler
// (a trace's), the Core then takes a granted request out by moving the
// last one into its place, and files a requeued job at the end, with
// every position noted, where it shifted a sorted list thousands long
// (quota grants each queue's head, wherever it waits: the full SDSC-SP2
// log's StrictFIFO replay with fair starts moved the list for a quarter
// of its time). The first request of any other kind puts the list back
// in submit order for good. TryStart's grant then moves the last request
// to i, not the ones behind i down by one.
type UnorderedPending interface {
	UnorderedPending()
}

// pendInsert moves the last pending request to index at, shifting the
// shorter side of the list: the requests before at one place forward
// into the room before the list (made when there is none), or those from
// at on one place back.
func (k *Core) pendInsert(at int) {
	last := len(k.pending) - 1
	if at >= last {
		return
	}
	r := k.pending[last]
	if at >= last-at {
		k.countMoved(last - at)
		copy(k.pending[at+1:], k.pending[at:last])
		k.pending[at] = r
		return
	}
	if k.pendHead == 0 {
		k.pendMove(last/8+8, last/8+8)
	}
	k.pending[last] = Request{}
	k.pendHead--
	k.posShift--
	k.pending = k.pendBase[k.pendHead : k.pendHead+last+1]
	k.countMoved(at)
	copy(k.pending[:at], k.pending[1:at+1])
	k.pending[at] = r
}

// CountWork turns the Core's work counting on or off
// (policy.WorkCounter).
func (k *Core) CountWork(on bool) { k.counting = on }

// Work is what the Core counted (policy.WorkCounter).
func (k *Core) Work() policy.Work { return k.work }

// countPass counts an admission pass: the pending list's length and
// its runs (one campaign and class), walked only while counting.
func (k *Core) countPass() {
	k.readList, k.passLen = false, len(k.pending)
	k.work.Passes++
	k.work.Pending += int64(len(k.pending))
	k.work.Runs += int64(policy.CountRuns(k.pending, func(r *Request) (policy.CampaignID, policy.Class) { return r.Campaign, r.Class }))
}

// countListRead counts the pass's read of the whole pending list by
// its rule (Pending).
func (k *Core) countListRead() {
	k.work.Walked += int64(k.passLen)
	k.readList = false
}

// countWalk counts n pending requests looked at (policy.Work.Walked).
func (k *Core) countWalk(n int) {
	if k.counting {
		k.work.Walked += int64(n)
	}
}

// CountWalked counts n steps of a rule's walk of its own index of the
// pending list (policy.Work.Walked): a rule that keeps one (Watcher)
// counts what its passes read of it, as the Core counts its own walks.
func (k *Core) CountWalked(n int) { k.countWalk(n) }

// CountMoved counts n entries of a rule's own index of the pending list
// rewritten elsewhere (policy.Work.Moved), as by a compaction.
func (k *Core) CountMoved(n int) { k.countMoved(n) }

// countMoved counts n pending requests moved (policy.Work.Moved).
func (k *Core) countMoved(n int) {
	if k.counting {
		k.work.Moved += int64(n)
	}
}

// countCompaction counts a compacting walk over n pending requests
// that moved moved of them.
func (k *Core) countCompaction(n, moved int) {
	if k.counting {
		k.work.Walked += int64(n)
		k.work.Moved += int64(moved)
	}
}
