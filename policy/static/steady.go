package static

import (
	"math"

	"github.com/bursar-hpc/bursar/policy/baseline"
)

// Steady marks the rule as time-invariant (baseline.Steady): its
// admission reads no clock, ages nothing and keeps no per-tick usage, so
// the Core may skip the quiet ticks between events of a trace replay.
func (*Rule) Steady() {}

// NextEvent makes the rule Paced (baseline.Paced) as well: between events
// its Admit decides the same, except after a pass that planned a job (its
// schedule started it, but the idle GPUs or the nodes that are up could
// not seat it, so it waits for scavengers to leave or a node to return).
// The next pass plans it again as starting then, so its end, and the
// shadow time of EASY's pass, move with the clock: a tick later the pass
// may backfill a job it refused, so the next tick is not quiet. Found by
// the replay's check that skipping quiet ticks changes nothing, on nodes
// that drain (trace, TestReplayHostsNeverOnADownNode).
func (r *Rule) NextEvent(k *baseline.Core) int {
	if r.aging {
		return k.Now() + 1
	}
	return math.MaxInt
}

// Settled reports that the pass just run left every partition quiet
// (baseline.Settler): under lend none and without a platform, its next
// pass would pass every partition by (Admit, quietAfter) until a lease
// ends or a job is filed or leaves, each of which the Core watches, so
// that the tick after the pass's own grants is spared in a copy read only
// for its grants (a fair start's fork).
func (r *Rule) Settled(k *baseline.Core) bool {
	if r.knobs.Lend != LendNone || k.Seatable() != math.MaxInt || r.plainAdmit || r.unordered || r.stale || r.aging {
		return false
	}
	// Resliced to one length, so that the walk reads them without a
	// bounds check: after every pass of a fork.
	quiet := r.quiet
	leases, ownersNow := r.leases[:len(quiet)], r.ownersNow[:len(quiet)]
	for p := range quiet {
		if !quiet[p] || leases[p] != ownersNow[p] {
			return false
		}
	}
	return true
}
