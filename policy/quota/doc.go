// Package quota is the Kueue baseline (docs/studies.md §2, §6.10): one
// ClusterQueue per group, all in one cohort that is the whole pool.
//
// Rule. A queue's nominal quota is its entitlement × pool by the largest
// remainder (§6.15); it may borrow the cohort's unused quota up to
// BorrowingLimit GPUs above it (default unlimited). Within a queue,
// workloads go by class, then submit time; BestEffortFIFO (the default)
// lets a later workload start when an earlier one cannot, StrictFIFO does
// not.
//
// The knobs' defaults are Kueue's API defaults (reclaimWithinCohort,
// withinClusterQueue and borrowWithinCohort Never, fair sharing off;
// DefaultKnobs cites each to Kueue's source): across queues, admission
// rounds then take the candidates in Kueue's classical order, those that
// do not borrow first, then class, then submit time, and nothing but the
// filler is preempted — a queue below its nominal quota waits for the GPUs
// lent out to come back. The variant quota-fair (FairPolicy, FairKnobs)
// is the rule of before: fair sharing on and reclaimWithinCohort Any.
//
// With fair sharing on, admission rounds take each queue's candidate lowest
// fair-sharing share first (GPUs above nominal, with the request, ÷ the
// cohort's lendable quota), then class, then submit time. A candidate that
// does not fit preempts as Kueue's fair sharing does: the filler first;
// then, from the borrowing queue with the highest share, every lease if
// the preemptor stays within its nominal quota (reclaimWithinCohort: Any),
// else the leases that LessThanOrEqualToFinalShare allows and then those
// LessThanInitialShare allows (PreemptionStrategies: Kueue's
// fairSharing.preemptionStrategies, both by default), as a minimal set,
// only if the request then fits, with the grace notice (§6.6). Under
// StrictFIFO a preemptor in flight goes before its queue's head (a
// requeued victim may come back ahead of it).
//
// docs/policies.md states every rule, knob and choice with its source:
// Kueue's cluster_queue, preemption and fair_sharing concept pages and
// kubernetes-sigs/kueue's pkg/scheduler/preemption.
package quota
