// Package policy is the Bursar broker: the admission core that meters how
// fast agent campaigns may consume a shared GPU pool.
//
// It owns the envelopes (guarantee, sustained rate R, token bucket B, burst
// ceiling, service class, credit budget, and the io and inference flow
// buckets), the lease and pending-request lists, the congestion price, the
// fair-share deficit, preemption of the opportunistic tier after a grace
// period, and the journal of every decision.
//
// The Broker is a pure, deterministic state machine in the manner of a raft
// core: it never reads a clock or a random source, starts no goroutine and
// does no I/O. Its caller registers campaigns, files requests and
// consumption between ticks, and advances time one second at a time with
// Tick. Every iteration that affects a result runs over slices in
// registration, lease or admission order. The journal is handed, record by
// record, to an optional Recorder; without one no record is built.
//
// For replaying long job logs the broker is also an EventSkipper
// (skip.go): NextChange says when a Tick may next do more than its
// per-tick bookkeeping, and SkipTo jumps there replaying only the
// bookkeeping that still moves, with the same floating-point operations in
// the same order, so that a skipping replay and one that ticks every
// second write the same journal and the same numbers.
//
// Work (work.go) counts what an allocator does to its pending list —
// passes, requests walked, runs read, requests moved — in units that do
// not depend on the machine, for the scaling test and the counts of
// docs/traces.md; the broker and the baselines' Core keep it while
// asked to (WorkCounter), and nothing else reads it.
//
// The rules are those of docs/model.md §1–5; docs/ records the few
// choices the model leaves open.
package policy
