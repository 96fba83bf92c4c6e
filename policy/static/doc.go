// Package static is the ownership baseline (docs/studies.md §2): each team owns
// a fixed set of GPUs.
//
// Rule. Campaign c's partition is share_c × pool, rounded down, with
// share_c its sustained rate R normalised over the campaigns other than
// the filler (docs/studies.md §1); the remainder of the pool is the filler's
// (§6.2). A campaign is granted only inside its own partition, first come,
// first served within its own queue (a head that does not fit blocks that
// campaign's later requests, nobody else's). An idle partition is never
// lent, and nothing is ever preempted: no request can need another
// partition's GPUs. A request larger than its partition is denied
// (exceeds-limit, §6.1); partial grants follow the broker's rule.
//
// This is a dedicated partition per group, as a site sets it up with one
// Slurm partition per owner and no shared overflow partition
// (https://slurm.schedmd.com/slurm.conf.html, PartitionName with
// AllowAccounts).
package static
