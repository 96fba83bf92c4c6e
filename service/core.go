package service

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"

	"github.com/bursar-hpc/bursar/policy"
)

// Operation names, as written in the journal file.
const (
	opOpen         = "open"
	opRegister     = "register"
	opRequest      = "request"
	opReleaseAll   = "release-all"
	opReleaseLease = "release-lease"
	opConsume      = "consume"
	opTick         = "tick"
	// opTicks is a run of N ticks: snapshots write idle time this way.
	opTicks = "ticks"
)

// op is one state-changing operation on the broker. It is both the argument
// of core.apply and the record of the journal file: the broker is a
// deterministic state machine, so replaying the same operations in the same
// order onto a fresh broker rebuilds campaigns, credits, buckets, leases and
// the id counter exactly; a snapshot is one "state" record, the dump of
// what those operations built (dump.go).
type op struct {
	Op string `json:"op"`
	// T is the broker time the operation ran at (for a tick: the time it
	// advanced to); replay checks it, which catches a journal that does not
	// belong to this broker.
	T int `json:"t"`

	// open (the file header)
	Version int            `json:"version,omitempty"`
	Config  *policy.Config `json:"config,omitempty"`
	// Base is, in a journal segment's header, the number of operations
	// before its first record (in the snapshot and earlier segments); in
	// a snapshot's header, the number of operations it covers.
	Base int64 `json:"base,omitempty"`

	// Wall is the wall-clock time the operation was applied at, UTC Unix
	// milliseconds (for a folded run of ticks: the last one's), so that
	// the journal can be reconciled with other systems' records (a batch
	// scheduler's accounting). Replay does not read it; journals written
	// before it have none.
	Wall int64 `json:"wall,omitempty"`

	// ticks: how many (T is the time after the last).
	N int `json:"n,omitempty"`

	// register
	Env       *policy.Envelope `json:"env,omitempty"`
	TokenHash string           `json:"token_hash,omitempty"`

	// campaign operations; an absent c decodes as 0, which is right.
	C        int     `json:"c,omitempty"`
	GPUs     int     `json:"gpus,omitempty"`
	Duration int     `json:"duration,omitempty"`
	Class    string  `json:"cls,omitempty"` // "" is policy.AnyClass
	Lease    int     `json:"lease,omitempty"`
	IO       float64 `json:"io,omitempty"`
	Inf      float64 `json:"inf,omitempty"`
	// slurm-job: the Slurm job id bound to the lease (slurmjob.go).
	Job string `json:"job,omitempty"`

	// state: the whole state, a snapshot's one record (dump.go).
	State *coreDump `json:"state,omitempty"`
}

// result is what apply reports back to a handler.
type result struct {
	id                           int // campaign id (register), the broker's request id (request)
	releasedLeases, releasedGPUs int
	droppedRequests, droppedGPUs int
	allowedIO, allowedInference  float64
}

// campState is what the service keeps per campaign beside the broker.
type campState struct {
	name    string
	hash    [32]byte // SHA-256 of the campaign's token
	journal ring     // the campaign's own journal records
	grants  ring     // the campaign's grants
	// grantedGPUs is the sum over every grant ever made (not only the
	// retained ones).
	grantedGPUs int64
	// pending counts the campaign's pending requests so that the per
	// campaign cap costs nothing to check.
	pending int
	// revoked: no token reaches the campaign (until a rotation).
	revoked bool
	// reqs pairs the campaign's request ids with the broker's, in filing
	// order, and filed counts its requests ever filed (ids.go).
	reqs  []reqPair
	filed int
	// slurmJobs binds the campaign's leases (the broker's ids) to the
	// Slurm job each admitted (slurmjob.go).
	slurmJobs map[int]string
	// slurmOver are the campaign's leases (the broker's ids) that are
	// over but still held while a Slurm job of theirs runs
	// (slurmhold.go): true for a lease its user released (slurm-release),
	// false for one held past its own end (slurm-hold). No token is issued
	// for them, and the enforcer is told a released one is not held.
	slurmOver map[int]bool
	// consumeT and consumeN count the consume calls taken at broker time
	// consumeT (tenant.go); live only, not replayed.
	consumeT, consumeN int
}

// core is the broker with the service's bookkeeping around it. Every state
// change, live or replayed, goes through apply, so the two cannot disagree.
// It is not safe for concurrent use: the Service's lock guards it.
type core struct {
	b       *policy.Broker
	camps   []*campState
	byName  map[string]policy.CampaignID
	journal ring // every journal record

	keepCampaign, keepGrants int
	// idKeep is how many request ids a campaign keeps before a request
	// drops those nothing refers to (pruneIDs).
	idKeep int
	// wall is the wall-clock time of the operation being applied, which
	// the records it makes carry.
	wall int64
}

func newCore(cfg policy.Config, keepAll, keepCampaign, keepGrants int) (*core, error) {
	b, err := policy.New(cfg)
	if err != nil {
		return nil, err
	}
	c := &core{b: b, byName: map[string]policy.CampaignID{}, journal: newRing(keepAll),
		keepCampaign: keepCampaign, keepGrants: keepGrants, idKeep: idKeepFor(DefaultMaxLeases, keepCampaign, keepGrants)}
	b.SetRecorder(c)
	return c, nil
}

func (c *core) camp(id policy.CampaignID) *campState {
	for int(id) >= len(c.camps) {
		c.camps = append(c.camps, &campState{journal: newRing(c.keepCampaign), grants: newRing(c.keepGrants)})
	}
	return c.camps[id]
}

// Record receives the broker's journal (policy.Recorder). Every record the
// broker writes names the campaign it concerns, which is how a campaign's
// token reads its own records and no one else's.
func (c *core) Record(e policy.Event) {
	c.journal.push(e, c.wall)
	cs := c.camp(e.CampaignID)
	cs.journal.push(e, c.wall)
	switch e.Kind {
	case policy.EventGrant:
		cs.grants.push(e, c.wall)
		cs.grantedGPUs += int64(e.GPUs)
		cs.pending--
	case policy.EventRequestExpired:
		cs.pending--
	}
}

// errReplay marks an operation that cannot be applied: on replay it means
// the journal file does not match this broker.
var errReplay = errors.New("operation does not apply")

func (c *core) lookup(id int) (policy.CampaignID, error) {
	if id < 0 || id >= c.b.NumCampaigns() {
		return -1, fmt.Errorf("%w: unknown campaign %d", errReplay, id)
	}
	return policy.CampaignID(id), nil
}

// apply runs one operation. changed reports whether it changed the state,
// that is whether it must be journaled: a refused registration or a
// release of nothing leaves no trace. A request denied for budget does
// change state (it takes an id and writes a deny record), so it reports
// changed together with policy.ErrBudgetExhausted.
func (c *core) apply(o *op) (res result, changed bool, err error) {
	c.wall = o.Wall
	switch o.Op {
	case opTick, opTicks, opState, opRegister, opRequest, opReleaseAll, opReleaseLease, opConsume, opWithdraw, opToken, opAdmit, opSlurmJob, opSlurmHold, opSlurmRelease:
	default:
		return res, false, fmt.Errorf("%w: unknown operation %q", errReplay, o.Op)
	}
	now := c.b.Now()
	want := now
	switch o.Op {
	case opState:
		if o.State != nil && o.State.Broker != nil {
			want = o.State.Broker.Now
		}
	case opTick:
		want = now + 1
	case opTicks:
		if o.N < 1 {
			return res, false, fmt.Errorf("%w: a run of %d ticks", errReplay, o.N)
		}
		want = now + o.N
	}
	if o.T != want {
		return res, false, fmt.Errorf("%w: %s stamped t=%d at broker time %d", errReplay, o.Op, o.T, now)
	}
	switch o.Op {
	case opTick:
		c.b.Tick()
		return res, true, nil
	case opTicks:
		for range o.N {
			c.b.Tick()
		}
		return res, true, nil
	case opState:
		return res, true, c.restore(o.State)
	case opAdmit:
		// Always journaled: a pass that grants nothing may still reorder
		// the pending list (admit.go).
		c.b.Admit()
		return res, true, nil

	case opRegister:
		if o.Env == nil {
			return res, false, fmt.Errorf("%w: register without envelope", errReplay)
		}
		var h [32]byte
		if n, err := hex.Decode(h[:], []byte(o.TokenHash)); err != nil || n != len(h) || len(o.TokenHash) != 2*len(h) {
			return res, false, fmt.Errorf("%w: register: bad token hash", errReplay)
		}
		id, err := c.b.Register(*o.Env)
		if err != nil {
			return res, false, err
		}
		cs := c.camp(id)
		cs.name, cs.hash = o.Env.Name, h
		c.byName[o.Env.Name] = id
		res.id = int(id)
		return res, true, nil
	}

	cid, err := c.lookup(o.C)
	if err != nil {
		return res, false, err
	}
	cs := c.camp(cid)
	switch o.Op {
	case opToken:
		return c.applyToken(cs, o)
	case opSlurmJob:
		return c.applySlurmJob(cid, cs, o)
	case opSlurmHold:
		return c.applySlurmHold(cid, cs, o)
	case opSlurmRelease:
		return c.applySlurmRelease(cid, cs, o)
	case opWithdraw:
		return c.applyWithdraw(cid, cs, o)
	case opRequest:
		cls := policy.AnyClass
		if o.Class != "" {
			if cls, err = policy.ParseClass(o.Class); err != nil {
				return res, false, err
			}
		}
		id, err := c.b.Request(cid, o.GPUs, o.Duration, cls)
		res.id = id
		switch {
		case err == nil:
			cs.pending++
			c.noteRequest(cid, cs, id)
			return res, true, nil
		case errors.Is(err, policy.ErrBudgetExhausted):
			c.noteRequest(cid, cs, id)
			return res, true, err
		}
		return res, false, err

	case opReleaseAll:
		cls := policy.AnyClass
		if o.Class != "" {
			if cls, err = policy.ParseClass(o.Class); err != nil {
				return res, false, err
			}
		}
		match := func(k policy.Class) bool { return cls == policy.AnyClass || cls == k }
		for _, l := range c.b.Leases() {
			if l.Campaign == cid && match(l.Class) {
				res.releasedLeases++
				res.releasedGPUs += l.GPUs
			}
		}
		// The broker drops pending requests without a journal record, so
		// the count is taken here, before it does.
		for _, r := range c.b.Pending() {
			if r.Campaign == cid && match(r.Class) {
				res.droppedRequests++
				res.droppedGPUs += r.GPUs
			}
		}
		if res.releasedLeases == 0 && res.droppedRequests == 0 {
			return res, false, nil
		}
		if err := c.b.ReleaseAll(cid, cls); err != nil {
			return result{}, false, err
		}
		cs.pending -= res.droppedRequests
		return res, true, nil

	case opReleaseLease:
		gpus := -1
		for _, l := range c.b.Leases() {
			if l.ID == o.Lease && l.Campaign == cid {
				gpus = l.GPUs
				break
			}
		}
		if err := c.b.ReleaseLease(cid, o.Lease); err != nil {
			return res, false, err
		}
		res.releasedLeases, res.releasedGPUs = 1, gpus
		return res, true, nil

	case opConsume:
		if !(o.IO >= 0 && o.Inf >= 0) || math.IsInf(o.IO, 0) || math.IsInf(o.Inf, 0) {
			return res, false, fmt.Errorf("%w: consume amounts must be finite and ≥ 0", errReplay)
		}
		io, inf, err := c.b.Consume(cid, o.IO, o.Inf)
		if err != nil {
			return res, false, err
		}
		res.allowedIO, res.allowedInference = io, inf
		return res, o.IO > 0 || o.Inf > 0, nil
	}
	panic("unreachable: operation " + o.Op)
}
