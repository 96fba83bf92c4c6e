// Package easy is the EASY backfilling pass shared by every policy that
// schedules a queue of rigid requests: the trace replay's FCFS + EASY, and
// the baselines that backfill in priority order (fifo, fairshare, budget).
//
// It owns steps (3) and (4) of docs/studies.md §2.1 and nothing
// else: given the free GPUs, the running leases' estimated ends and the
// queue in the caller's order, it says which jobs start now. Ending leases,
// joining the queue, ordering it, and advancing time belong to the caller.
//
// The rule is EASY backfilling as described by Lifka, "The ANL/IBM SP
// scheduling system" (JSSPP 1995), and by Mu'alem & Feitelson, "Utilization,
// predictability, workloads, and user runtime estimates in scheduling the
// IBM SP2 with backfilling" (IEEE TPDS 12(6), 2001): only the queue's head
// holds a reservation (the shadow time), and a later job may start ahead of
// it only if it cannot delay that reservation — it ends by the shadow time,
// or it uses only the GPUs the head will not need at the shadow time (the
// "extra" GPUs). docs/studies.md fixes the points where readings differ: ties at
// the shadow time count towards the extra GPUs, the heads started in step
// (3) count as running leases, and s and x are computed once per pass.
//
// A caller that knows nothing but arrivals happened since its last pass
// (no lease ended; the last pass's starts applied) may call PassAfter
// with the number of jobs that pass left: none of them can start, the
// head's reservation is the one that pass left, and only the arrivals are
// tried, with Pass's result.
//
// A Scheduler is pure and deterministic (no clock, no randomness, no map
// iteration) and allocates nothing once its scratch slices have grown to
// the largest pass seen.
package easy
