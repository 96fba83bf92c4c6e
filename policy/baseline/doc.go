// Package baseline is the plumbing every baseline allocation policy shares
// (docs/studies.md §1, §6): a pure, caller-ticked state machine (no clock, no
// randomness, no goroutines) that implements policy.Allocator and leaves
// one decision — who is admitted, and whom that may preempt — to a Rule.
//
// It owns:
//   - the lease table (grant order) and the pending list (submit order;
//     in none under a rule that orders its own candidates while the list
//     holds only rigid requests, UnorderedPending), ids shared by requests
//     and leases as in the broker (model.md §2);
//   - the tick, in the broker's order (model.md §4): expire leases (reason
//     expired, or preempted once a notice's grace has run), reset the
//     flows, charge credits, drop requests older than the broker's TTL
//     (request-expired, docs/studies.md §6.3), the rule's admission, then the
//     filler's, then the rule's usage accounting;
//   - grants (Core.TryStart: the broker's rule — want, or a partial grant
//     of at least min(want, 16) GPUs, §6.1) and denials (a request larger
//     than its campaign can ever hold is denied exceeds-limit, §6.1; an
//     exhausted budget outside the opportunistic class is denied
//     budget-exhausted, as the broker does);
//   - preemption (Core.Preempt, §6.6): notices only during admission,
//     victims lowest class first then newest first, a minimal set, only if
//     the request then fits, the GPUs under notice for a request counting
//     towards its need and reserved for it once freed;
//   - the filler (the campaign whose envelope's class is opportunistic:
//     the scenario's backfill, §6.2), which gets only what admission left
//     each tick and is preempted whenever that lets another request start;
//   - EASY admission (Core.AdmitEASY) on policy/easy's pass, for fifo,
//     fairshare and budget (§2.1), and the queues kept between passes
//     that decide as it does on a trace's long queue without reading all
//     of it (Ranked for budget; Waiting, Core.AdmitEASYWaiting, for fifo
//     and priority; Keyed, Core.AdmitEASYKeyed, for fairshare;
//     docs/traces.md "Work per job");
//   - credits at the class's base price with no congestion multiplier (§1)
//     and inference at the broker's price; flows split in proportion to
//     desire (§6.8); what agents read (§6.5: multiplier 1, tokens = B, flow
//     tokens = the flow bucket, free = what the campaign could be granted
//     now without preempting anyone);
//   - the journal, in the broker's vocabulary and layout, so that metrics
//     and the replay read any policy's journal unchanged;
//   - copies of itself for the fair start times' forks (docs/studies.md
//     §4.4): Core.Clone (a rule may copy its own state, RuleCloner) and
//     Core.GrantsOnly, a copy that keeps no books where no grant can
//     depend on them.
//
// docs/policies.md states every rule, knob, default and source.
package baseline
