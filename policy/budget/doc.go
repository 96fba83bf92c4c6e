// Package budget is the AI lab's replacement for strict priorities
// (docs/studies.md §2, §6.11): GPU-time budgets as shares, fair share over a
// sliding window, and a minimum-runtime contract.
//
// Rule. A campaign's priority is its share less its usage fraction: share
// (R normalised over the campaigns other than the filler, docs/studies.md §1)
// − its GPU-seconds in the last W seconds ÷ all GPU-seconds in that window,
// the filler's usage excluded so that the fractions sum to 1 like the
// shares (§6.11). With no usage in the window every fraction is 0.
// Admission is EASY backfilling in priority order (policy/easy, through
// policy/baseline's AdmitEASY), ties by submit time, then request id.
//
// Calculation period: the priorities are recomputed once per period P
// (CalcPeriod; default 1, every tick; the trace studies use Slurm's
// PriorityCalcPeriod default, 300 s): the ticks of a
// period (1…P, P+1…2P, …) are ordered by the windows ending the tick
// before its first tick. P = 1 is the per-tick rule bit for bit. The
// window usage is kept as exact integer change points, so it is the same
// whether the ticks between events were executed or skipped; with the
// period's starts and the minimum runtimes running out as its events,
// the rule is steady in between (baseline.Paced), and a trace replay
// skips from event to event.
//
// Minimum runtime: a request declares a minimum runtime m by its class
// (defaults: deadline 0, interactive 0, agent-burst 300 s, opportunistic
// 0). A lease younger than m is never preempted — not even the filler's.
// An older one is preemptible, with the grace notice, when its campaign
// is above its share (priority < 0) and the blocked head of the queue
// belongs to a campaign below its share (priority > 0); victims are taken
// lowest class first, newest first, as a minimal set, only if the head
// then fits (§6.6). A preempted agent lease is not requeued: the agent
// asks again (§6.7); its lost GPU-seconds are its GPUs × its age, which
// the journal's grant and release records give.
//
// Hierarchy (§6.11): with Groups, the queue is ordered level by level —
// the group's priority (Σ of its members' shares less Σ of their usage
// fractions), then the member's inside the group (its share of the
// group's shares less its share of the group's window usage) — as Slurm's
// Fair Tree walks the tree (https://slurm.schedmd.com/fair_tree.html);
// "above its share" is judged at the level where the preempting and the
// preempted campaigns' paths split. A campaign in no group is a group of
// its own; with no groups the policy is flat, as for the agent scenario.
//
// Knobs: Window W (default 7 days), MinRuntime per class, Groups (default
// none), CalcPeriod (default 300 s).
package budget
