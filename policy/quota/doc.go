// Package quota is the Kueue baseline (docs/studies.md §2, §6.10): one
// ClusterQueue per campaign, all in one cohort.
//
// Rule. A campaign's nominal quota is share × pool, rounded down like a
// static partition (§6.10); the cohort's capacity is the sum of the
// nominal quotas. A campaign may borrow the cohort's unused nominal quota
// up to BorrowingLimit GPUs above its own (default unlimited: the cohort's
// capacity). Inside a queue, StrictFIFO: the head is the oldest request of
// the highest class, and a head that does not fit blocks its queue
// (Kueue's queueingStrategy StrictFIFO orders by priority, then creation
// time). Across queues, each admission round orders the heads
// non-borrowers first, then by dominant-resource share including the
// request (borrowed GPUs after admission ÷ the cohort's capacity, weight
// 1), then class, then submit time (§6.10; Kueue's fair sharing admits the
// lowest DRS first). Rounds repeat within a tick until one admits nothing,
// as Kueue's scheduler runs cycle after cycle.
//
// Preemption is reclaimWithinCohort: Any. A head that does not fit but
// would fit within its own nominal quota preempts leases of borrowing
// campaigns (those holding more than their nominal quota), most
// over-quota campaign first, then lowest class, then newest, as a minimal
// set and only if it then fits, with the grace notice; a campaign stops
// being a candidate once the victims taken bring it back to its nominal
// quota (Kueue preempts only workloads of a ClusterQueue that is
// borrowing). The filler, outside the cohort, is preempted for any head.
//
// Sources: https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/ (nominal
// quota, cohorts, borrowingLimit, queueingStrategy), .../preemption/
// (reclaimWithinCohort, candidate order, minimal set), .../fair_sharing/
// (dominant resource share).
package quota
