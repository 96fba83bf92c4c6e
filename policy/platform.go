package policy

import (
	"fmt"

	"github.com/bursar-hpc/bursar/platform"
)

// The broker on a platform's nodes (docs/platform.md): with a placer,
// admission grants a request only what the nodes seat now — a whole grant
// if the placement rule seats it, else a partial grant cut to the largest
// the nodes seat (Placer.Largest), by the same partial-grant rule — and
// every grant is seated, every release vacated. The GPUs a request lacks
// on nodes are reclaimed as the GPUs it lacks in the count are
// (preemptFor, which counts GPUs, not nodes). Without a placer (nil, the
// default) none of this runs and admission is exactly the model's.

// Placed is an allocator that can schedule on a platform's nodes: the
// Bursar broker and the baselines' Core. SetPlacer is called once, before
// any grant, with a placer whose GPUs are the pool's; NodesChanged after
// a node changed state outside a grant or a release (a drain, a failure,
// a return to service), so that the next tick admits again.
type Placed interface {
	SetPlacer(p *platform.Placer) error
	Placer() *platform.Placer
	NodesChanged()
}

var _ Placed = (*Broker)(nil)

// SetPlacer puts the broker on p's nodes (Placed).
func (b *Broker) SetPlacer(p *platform.Placer) error {
	if err := CheckPlacer(p, b.cfg.Pool, len(b.leases)); err != nil {
		return err
	}
	b.placer = p
	return nil
}

// CheckPlacer is SetPlacer's check, shared by every Placed: p's GPUs are
// the pool's, and nothing was granted yet.
func CheckPlacer(p *platform.Placer, pool, leases int) error {
	if p == nil {
		return fmt.Errorf("no placer")
	}
	if got := p.Spec().GPUs(); got != pool {
		return fmt.Errorf("platform %s has %d GPUs, the pool %d", p.Spec(), got, pool)
	}
	if leases > 0 {
		return fmt.Errorf("platform set after %d grants", leases)
	}
	return nil
}

// Placer is the broker's placer (nil: no platform).
func (b *Broker) Placer() *platform.Placer { return b.placer }

// NodesChanged marks a change, so that the next tick is not skipped as
// quiet (Placed).
func (b *Broker) NodesChanged() { b.changedAt = b.now }

// seatable is x cut to the largest grant the nodes seat now.
func (b *Broker) seatable(x int) int {
	if b.placer == nil {
		return x
	}
	return min(x, b.placer.Largest())
}

// seat seats a grant admission has cut to what the nodes seat.
func (b *Broker) seat(id, n int) {
	if b.placer == nil {
		return
	}
	if _, err := b.placer.Seat(id, n); err != nil {
		panic(fmt.Sprintf("broker: grant of request %d: %v", id, err))
	}
}

// PlaceOn puts a fresh policy on spec's nodes (docs/platform.md); a zero
// spec leaves the pool a number and the policy untouched.
func PlaceOn(a Allocator, spec platform.Spec) error {
	if spec.IsZero() {
		return nil
	}
	if err := spec.Validate(); err != nil {
		return fmt.Errorf("platform: %w", err)
	}
	p, ok := a.(Placed)
	if !ok {
		return fmt.Errorf("policy %T cannot schedule on nodes", a)
	}
	return p.SetPlacer(platform.New(spec))
}
