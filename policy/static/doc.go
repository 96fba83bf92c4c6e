// Package static is the ownership baseline (docs/studies.md §2, §6.2,
// §6.19): each team owns a fixed set of GPUs, as on a condo cluster.
//
// Rule. The Owners groups with the largest entitlements each own a
// partition and every other group shares one general partition. By
// default (partitions condo) each is first at least its owners' widest
// job and the rest of the pool is split by share (CondoSizes); minima
// over the pool are scaled down and the run is marked (MinimaScaled,
// Marks). The variant static-share (SharePolicy) sizes them by the
// largest-remainder split of the pool by share alone (§6.15). Both
// cover the pool. Each partition runs FCFS + EASY (§2.1) for its owners. With
// lend none (the default) an idle partition is never lent, nothing is
// preempted, a rigid job wider than its partition is denied (§6.1) and
// the filler gets nothing (§6.2). With lend scavenger, jobs that cannot
// start in their own partition (and the filler's requests) may run
// preemptibly in the GPUs the owners leave idle, never with a
// reservation; each partition keeps books of the GPUs its owners hold and
// those it lent, to which leases, and reclaims only from its own books,
// newest lease first, with the grace notice, when its owners' schedule
// needs them. An elastic request is cut to what its partition has free by
// the broker's partial-grant rule. A lease no one can preempt is priced at
// the non-preemptible (agent-burst) price whatever class it claims.
//
// Fair starts. Under lend none without a platform the partitions share
// nothing, so a fair start's fork (trace) needs only its job's partition:
// FirstGrants (forecast.go) runs that partition's passes alone, at the
// ticks its owners' leases end, instead of the Core's every tick.
//
// docs/policies.md states every rule, knob and choice; the condo model is
// Slurm's partition-priority preemption
// (https://slurm.schedmd.com/preempt.html).
package static
