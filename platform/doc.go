// Package platform is the machine a policy schedules on when the pool is
// more than a number: nodes of a fixed number of GPUs, optionally grouped
// into named partitions (ranges of nodes), and the placer that seats each
// grant on them (docs/platform.md).
//
// It owns three things and nothing else:
//
//   - Spec, the platform as a config gives it (nodes × GPUs per node and the
//     partitions), read from YAML with errors that name the file, the line
//     and the field (Read, FromNode);
//   - the placement rule of docs/platform.md §2: a grant of g GPUs no larger
//     than a node is packed on one node (best fit: the node it leaves with
//     the fewest free GPUs, the lowest index on ties); a larger grant takes
//     ⌊g/n⌋ whole free nodes (the lowest indices) and its remainder packed
//     on one more node by the same best fit;
//   - the Placer, the state of every node (up, draining, down; the GPUs in
//     use; the leases seated on it, in seating order) with the operations a
//     policy and a failure process need: can g GPUs be seated now, seat a
//     lease, vacate it, mark a node draining or down, return it to service.
//
// A Placer is pure and deterministic: no clock, no randomness, no map
// iteration on any path that decides a placement (the lease index is a map
// used only for lookup). A policy without a platform holds a nil *Placer
// and never calls it, so that the pool-as-a-number path is unchanged.
package platform
