// Package hosts is the life of a platform's nodes under failures and
// drains (docs/hosts.md): the per-node process of hard failures,
// degradations and repairs, the drain rule with its minimum-runtime
// contract, and the tally of what they cost (human interventions, repairs
// that always need a human, drain times).
//
// It owns three things and nothing else:
//
//   - Config, the knobs and their defaults (docs/hosts.md §2 says where
//     each default comes from: Llama 3's training report for the rates and
//     the share of repairs needing a human, Meta's research-cluster study
//     for the two-hour minimum runtime, Schroeder & Gibson for lognormal
//     repair times);
//   - the process (§1): each node, while up, waits an exponential time for
//     its next event, a hard failure (the node and its jobs stop at once)
//     or a degradation (the node must be drained); a failed node is down
//     for a repair time; a degraded node drains, then is down for its
//     repair; a repaired node is up again. Each node draws from its own
//     PCG stream, seeded from the run's seed and the node's index, so
//     that what one node does never shifts another's draws;
//   - the drain rule (§3): a draining node takes no new work; each job on
//     it ends by itself, or is requeued (an opportunistic job at any time;
//     under the contract, once it has run its minimum runtime), or, at the
//     operator's threshold after the drain began, a human ends it: one
//     human intervention.
//
// Hosts never touches a policy. Step is told what is seated on each node
// (Machine, which a placer implements), sets the nodes' states there, and
// returns the leases to end and why; the replay driver (package trace)
// ends them and requeues their jobs. NextAct says when Hosts next acts,
// so that a driver that skips quiet ticks never skips one of its events.
//
// It is pure and deterministic: no clock, no global random source, slices
// iterated in node and seating order, never a map.
package hosts
