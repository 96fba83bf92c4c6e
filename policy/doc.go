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
// The rules are those of docs/model.md §1–5; docs/ records the few
// choices the model leaves open.
package policy
