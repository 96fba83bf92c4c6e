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
