package policy

// Optional extensions of the Allocator contract for replaying real job
// logs (docs/studies.md §3, §6.1, §6.3, §6.7). They are separate interfaces so
// that the contract the engine drives is unchanged; trace.Replay uses them.

// RigidRequester files a trace job: a rigid request of exactly gpus GPUs,
// granted whole or not at all (§6.1), that never expires (§6.3). estimate
// is the run time the job declared (what backfilling and prepaid leases
// read); run is its real run time: the lease ends by itself run seconds
// after its grant, journaled as a release with reason released-by-agent.
// submitted is the submit tick, at most Now()+1, so that a job filed just
// before the tick that admits it has latency 0 (§6.13), and a requeued job
// keeps its original submit time (§6.7). A request its campaign can never
// be granted is journaled deny with reason exceeds-limit and returns
// ErrExceedsLimit with its id.
type RigidRequester interface {
	RequestRigid(c CampaignID, gpus, estimate, run int, cls Class, submitted int) (int, error)
}

// TickByTicker is an optional Allocator hook: SetTickByTick(true) makes
// every Tick run its whole admission even where NextChange says the tick
// is quiet, the oracle the event-skipping tests compare against (the
// baselines' Core and the Bursar broker take this shortcut inside Tick).
type TickByTicker interface {
	SetTickByTick(on bool)
}

// EventSkipper is a policy that can say when its state next changes by
// itself, so that a driver may jump over the quiet ticks between events
// (arrivals, lease ends, notice deadlines, request expiries).
type EventSkipper interface {
	// NextChange is the earliest tick > Now() at which a Tick may change
	// more than per-tick bookkeeping, given no call in between.
	NextChange() int
	// SkipTo advances to tick t < NextChange() with exactly the effect of
	// t − Now() Ticks.
	SkipTo(t int)
}
