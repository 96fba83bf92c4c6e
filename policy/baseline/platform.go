package baseline

import (
	"fmt"
	"math"

	"github.com/bursar-hpc/bursar/platform"
	"github.com/bursar-hpc/bursar/policy"
)

// The Core on a platform's nodes (docs/platform.md): with a placer, every
// grant is seated on nodes by its rule, and a request starts only if the
// nodes seat it, whatever the free count says. TryStart trims a grant to
// what the nodes seat (Largest), preemption chooses victims until their
// GPUs seat the request, EASY's pass counts GPUs per node (easyPass), and
// a lease's end vacates its seat. Without a placer (nil, the default)
// none of this runs: the pool is a number, as before.

var _ policy.Placed = (*Core)(nil)

// SetPlacer puts the Core on p's nodes (policy.Placed); p's GPUs must be
// the pool's. It is called once, before any grant.
func (k *Core) SetPlacer(p *platform.Placer) error {
	if err := policy.CheckPlacer(p, k.cfg.Pool, len(k.leases)); err != nil {
		return err
	}
	k.placer = p
	return nil
}

// Placer is the Core's placer (nil: no platform). A failure process marks
// its nodes draining or down through it and then calls NodesChanged.
func (k *Core) Placer() *platform.Placer { return k.placer }

// NodesChanged tells the Core that its placer's nodes changed state
// outside a grant or an end (a node drained, failed or came back), so
// that the next tick admits again instead of skipping as quiet.
func (k *Core) NodesChanged() { k.changed() }

// Seats says whether a grant of n GPUs can be seated now (always true
// without a platform): what a rule that grants by itself asks first.
func (k *Core) Seats(n int) bool { return k.placer == nil || k.placer.Fits(n) }

// Seatable is the largest grant the nodes seat now (no limit without a
// platform): what a rule that cuts an elastic grant by itself cuts it to.
func (k *Core) Seatable() int {
	if k.placer == nil {
		return math.MaxInt
	}
	return k.placer.Largest()
}

// seat seats a grant the caller has checked (TryStart, easyPass, Seats).
// A grant that does not fit is a rule's bug: it would over-commit a node.
func (k *Core) seat(id, n int) {
	if k.placer == nil {
		return
	}
	if _, err := k.placer.Seat(id, n); err != nil {
		panic(fmt.Sprintf("baseline %s: grant of request %d: %v", k.rule.Name(), id, err))
	}
}

// seatsAfter is the node test of a preemption (preempt): whether request
// r would be seated once the victims (indices into the lease table, less
// the one at position skip, -1 for none) and the leases already under
// notice for r had ended. An elastic request needs a partial grant's
// worth. Always true without a platform.
func (k *Core) seatsAfter(r *Request, victims []int, skip int) bool {
	if k.placer == nil {
		return true
	}
	k.board.Reset(k.placer)
	for v, j := range victims {
		if v != skip {
			k.board.Release(k.leases[j].ID)
		}
	}
	for j := range k.leases {
		if l := &k.leases[j]; l.UnderNotice && l.ReservedFor == r.ID {
			k.board.Release(l.ID)
		}
	}
	need := r.GPUs
	if !r.Rigid {
		need = min(need, policy.PartialGrantMin)
	}
	return k.board.Fits(need)
}
