package policy

import "errors"

// Allocator is the contract every allocation policy serves (docs/studies.md §1):
// exactly the operations the engine drives on the Bursar broker. A policy
// is a pure state machine like the broker: the caller registers campaigns,
// files requests, releases and consumption between ticks and advances time
// one second at a time with Tick; it reads no clock and no random source
// and starts no goroutine. A grant is a lease with an expiry; a preemption
// is a preempt-notice record followed, Config().Grace seconds later, by a
// release with reason ReasonPreempted. Every implementation journals with
// the vocabulary of journal.go (register, deny, grant, throttle,
// throttle-io, throttle-inference, preempt-notice, release with reason
// expired / preempted / released-by-agent, request-expired), so that the
// metrics and the replay read any policy's journal unchanged.
//
// *Broker is the Bursar implementation; the baselines live in
// policy/fifo, policy/priority, policy/static, policy/fairshare,
// policy/quota and policy/budget, on the plumbing of policy/baseline.
type Allocator interface {
	// SetRecorder routes the journal to r (nil: no journal).
	SetRecorder(r Recorder)
	// Config is the pool, grace and facility flow capacities.
	Config() Config
	// Now is the clock, in ticks.
	Now() int
	// NumCampaigns is the number of registered campaigns.
	NumCampaigns() int
	// Envelope is what campaign c registered with.
	Envelope(c CampaignID) Envelope
	// Lookup finds a campaign by name.
	Lookup(name string) (CampaignID, bool)

	// Register admits a campaign with its envelope; an error changes nothing.
	Register(env Envelope) (CampaignID, error)
	// Request asks for gpus GPUs for duration seconds in class cls
	// (AnyClass: the envelope's) and returns the request id, which the
	// lease takes if it is granted.
	Request(c CampaignID, gpus, duration int, cls Class) (int, error)
	// ReleaseAll releases c's leases of class cls (AnyClass: all) and drops
	// its pending requests of that class.
	ReleaseAll(c CampaignID, cls Class) error
	// ReleaseLease releases one lease of c.
	ReleaseLease(c CampaignID, lease int) error
	// Consume meters c's io (GB) and inference (tokens) this tick and
	// returns what it may use.
	Consume(c CampaignID, io, inference float64) (allowedIO, allowedInference float64, err error)

	// Held is what c holds in class cls (AnyClass: all classes).
	Held(c CampaignID, cls Class) int
	// Outstanding is Held plus c's pending GPUs (same filter).
	Outstanding(c CampaignID, cls Class) int
	// Free is the pool's GPUs that nobody holds (and, under a baseline,
	// that no preemption has reserved).
	Free() int
	// Tokens is c's GPU bucket fill as the campaign reads it.
	Tokens(c CampaignID) float64
	// FlowTokens is c's bucket fill in flow dimension d as it reads it.
	FlowTokens(c CampaignID, d Dimension) float64
	// FlowUsedLastTick is what c used of d in the last completed tick.
	FlowUsedLastTick(c CampaignID, d Dimension) float64
	// FlowThrottled counts the consume calls in which c got less of d than
	// it asked for.
	FlowThrottled(c CampaignID, d Dimension) int
	// Credits and Spent: what c has left of its budget, and has used.
	Credits(c CampaignID) float64
	Spent(c CampaignID) float64
	// Multiplier is the congestion price multiplier (1 under a baseline).
	Multiplier() float64
	// Supply is what campaign c reads before it asks.
	Supply(c CampaignID) Supply
	// Utilization is the mean leased fraction over completed ticks.
	Utilization() float64

	// Tick advances time one second.
	Tick()
}

// The Bursar broker is one Allocator; the assertion costs nothing at run
// time and fails the build if the contract and the broker drift apart.
var _ Allocator = (*Broker)(nil)

// ReasonExceedsLimit is the deny reason of a request larger than its
// campaign can ever hold under a baseline (its partition, its quota plus
// borrowing limit, or the pool): docs/studies.md §6.1.
const ReasonExceedsLimit = "exceeds-limit"

// ErrExceedsLimit is returned by a baseline's Request for a request larger
// than its campaign can ever hold; it takes an id, like a budget denial.
var ErrExceedsLimit = errors.New("request exceeds what the campaign can ever hold")
