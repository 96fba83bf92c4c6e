// Package budget is the AI lab's replacement for strict priorities
// (docs/studies.md §2, §6.6, §6.7, §6.11): GPU-time budgets as
// entitlements, hierarchical fair share over a sliding window, and a
// minimum-runtime contract ("after [the minimum runtime] the scheduler
// can rebalance and requeue you").
//
// Order. A campaign's usage is the GPU-seconds it held in the last W
// seconds (the filler's excluded); its usage ratio is that ÷ (its
// entitlement × pool × W), the fraction of its entitled share of the
// window it used. The queue is ordered level by level, lowest ratio
// first: groups by the ratio of their members' usage to their members'
// entitlements, then members inside a group by their own, then submit
// time, then request id. Ranking siblings by usage ÷ shares is ranking
// them by Slurm Fair Tree's Level Fairshare S / U highest first (both
// normalised among the siblings, which divides every sibling's value by
// the same number; a sibling with no usage has LF = ∞ and ratio 0), and
// walking groups before members is Fair Tree's depth-first walk
// (https://slurm.schedmd.com/fair_tree.html). Admission is EASY
// backfilling in that order (policy/easy through baseline's
// AdmitEASYRanked). The groups are the Groups knob's if it is set, else
// the Core's entitlements' (baseline.Core.SetEntitlements: on a trace,
// the SWF groups). A campaign in no group is a group of its own; with no
// groups the order is flat. The entitlements are the Core's shares
// (docs/studies.md §1: a campaign is one (user, group) association and
// a group's members split its entitlement), so the group's entitlement is
// the sum of its members'.
//
// Calculation period: the ratios are recomputed once per period P
// (CalcPeriod; default 1, every tick; the trace studies use Slurm's
// PriorityCalcPeriod default, 300 s): the ticks of a period (1…P,
// P+1…2P, …) are ordered by the windows ending the tick before its first
// tick. The window usage is kept as exact integer change points, so it is
// the same whether the ticks between events were executed or skipped.
//
// Preemption (the contract), judged on what campaigns hold now, as Kueue
// judges quota. Only the blocked head of the queue — the request holding
// the EASY reservation — may preempt. With q_c = the GPUs c holds and not
// under notice ÷ (its entitlement × pool), taken at the level where the
// head's campaign P and the victim's campaign V part (the groups', or the
// members' inside one group), a lease of V may be noticed only when
//   - it is at least m old, m its class's minimum runtime (default:
//     deadline and interactive Never — never preempted —, agent-burst
//     1 h, opportunistic 0 — at once);
//   - q_V > 1 and q_P < 1;
//   - after the preemption q_P, counting the head's GPUs, is at most q_V,
//     counting everything V loses to this search: Kueue's
//     LessThanOrEqualToFinalShare ("only preempt a workload if the share
//     of the preemptor CQ with the preemptor workload is less than or
//     equal to the share of the preemptee CQ without the workload to be
//     preempted", kueue apis/config/v1beta1/configuration_types.go,
//     FairSharing.PreemptionStrategies; Kueue's preemption and
//     fair-sharing concept pages).
//
// Victims (§6.6): lowest class first, then the fewest GPU-seconds lost if
// noticed now (baseline.Core.LostIfNoticed: the run since its last
// checkpoint, plus the grace), then newest first, taken greedily and cut
// to a minimal set by baseline's Preempt, and only if the head then fits.
// The filler's leases are always candidates (§6.2). Revision 1's rule
// (priority = share − usage fraction, any lease of a campaign above its
// share) let two campaigns preempt each other back and forth;
// TestPingPongRevisionOneAllowedCannotHappen works that case by hand. The
// contract stops a preemption back while the holdings stand; one the
// other way needs the victim to have grown above its entitlement since
// (a borrow, then Kueue's reclaim).
//
// Restart (§6.7, the Restart knob): a preempted trace job is requeued by
// the replay with its original submit time; under `checkpoint:S` (the
// default, S = 3600) it resumes from its last checkpoint, written every S
// seconds of run and never during the grace period, and only the
// GPU-seconds since it are lost; under `zero` it restarts from scratch.
// The release record of a preempted trace lease carries the seconds kept
// (policy.Event.Kept). A resumed job is a new lease with a new minimum
// runtime. A preempted agent lease is not requeued: the agent asks again.
//
// Preloading the window (§6.16). A replay of a window of a log starts
// with the usage the log records before it: the history given to the
// Core (baseline.Core.SetHistory, policies.Knobs.History) enters each
// campaign's window as it registers, as if those ticks had been replayed.
//
// Knobs: Window W (default 7 days), MinRuntime per class (Never = −1),
// Groups (default none), CalcPeriod (default 1; 300 in the trace
// studies), Restart (default checkpoint:3600).
package budget
