package platform

import (
	"fmt"
	"slices"
)

// State is a node's service state (docs/platform.md §3).
type State uint8

const (
	// Up: in service, takes new work.
	Up State = iota
	// Draining: its leases run on, but it takes no new work.
	Draining
	// Down: out of service; takes no new work. Ending the leases that were
	// on it is the caller's business (the failure process's), as is
	// returning it to service.
	Down
)

func (s State) String() string {
	switch s {
	case Up:
		return "up"
	case Draining:
		return "draining"
	case Down:
		return "down"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Seat is where a grant sits: GPUs[k] of its GPUs on node Nodes[k], nodes
// in increasing order.
type Seat struct {
	Nodes []int
	GPUs  []int
}

func (s *Seat) add(node, gpus int) {
	s.Nodes = append(s.Nodes, node)
	s.GPUs = append(s.GPUs, gpus)
}

// Size is the seat's GPUs.
func (s Seat) Size() int {
	n := 0
	for _, g := range s.GPUs {
		n += g
	}
	return n
}

// NodeInfo is one node as a caller sees it.
type NodeInfo struct {
	State State
	// Used is the GPUs the leases seated on it hold (a draining or down
	// node may still hold some).
	Used int
	// Free is the GPUs it would take now: size − Used when Up, else 0.
	Free int
}

// Placer seats grants on a platform's nodes by the rule of
// docs/platform.md §2 and keeps each node's state and leases. The zero
// value is not usable; New builds one. A nil *Placer means "no platform"
// to the policies, which then never call it.
type Placer struct {
	spec  Spec
	state []State
	used  []int
	// open[i] is what node i takes now: size − used[i] when Up, else 0.
	// The rule reads only this vector.
	open   []int
	leases [][]int
	seats  map[int]Seat
	// largest caches Largest while largestOK: admission asks once per
	// request tried, and the nodes change only at a seat, a vacate or a
	// change of state.
	largest   int
	largestOK bool
}

// New is a placer on spec with every node up and empty. spec must be valid
// (Spec.Validate); New panics otherwise, a caller's bug.
func New(spec Spec) *Placer {
	if err := spec.Validate(); err != nil {
		panic("platform.New: " + err.Error())
	}
	p := &Placer{
		spec:   spec,
		state:  make([]State, spec.Nodes),
		used:   make([]int, spec.Nodes),
		open:   make([]int, spec.Nodes),
		leases: make([][]int, spec.Nodes),
		seats:  map[int]Seat{},
	}
	for i := range p.open {
		p.open[i] = spec.GPUsPerNode
	}
	return p
}

// Spec is the platform the placer seats on.
func (p *Placer) Spec() Spec { return p.spec }

// Nodes is the number of nodes.
func (p *Placer) Nodes() int { return p.spec.Nodes }

// NodeSize is the GPUs of each node.
func (p *Placer) NodeSize() int { return p.spec.GPUsPerNode }

// Node is node i's state, GPUs in use and GPUs it takes now.
func (p *Placer) Node(i int) NodeInfo {
	return NodeInfo{State: p.state[i], Used: p.used[i], Free: p.open[i]}
}

// Open is the GPUs that the nodes in service take now, summed: at most
// the pool's free count, less when nodes drain or are down.
func (p *Placer) Open() int {
	n := 0
	for _, f := range p.open {
		n += f
	}
	return n
}

// Fits says whether a grant of g GPUs can be seated now, on any node: g
// is at most Largest (TestPlacerProperties checks it against Seat).
func (p *Placer) Fits(g int) bool { return g <= p.Largest() }

// Largest is the largest grant that can be seated now: the whole free
// nodes, plus the most free GPUs of a node in part use (docs/platform.md
// §2: a grant that fits leaves every smaller one fitting, so every g up to
// Largest fits and none above it).
func (p *Placer) Largest() int {
	if p.largestOK {
		return p.largest
	}
	size := p.spec.GPUsPerNode
	whole, part := 0, 0
	for _, f := range p.open {
		if f == size {
			whole++
		} else {
			part = max(part, f)
		}
	}
	p.largest, p.largestOK = whole*size+part, true
	return p.largest
}

// FitsIn says whether g GPUs can be seated now within partition part.
func (p *Placer) FitsIn(part Partition, g int) bool {
	return place(p.open, p.spec.GPUsPerNode, g, part.First, part.First+part.Count, false, nil)
}

// Seat seats lease's grant of g GPUs on any nodes, by the rule. It fails,
// changing nothing, when g does not fit now or the lease is seated already.
func (p *Placer) Seat(lease, g int) (Seat, error) {
	return p.seatIn(lease, g, 0, len(p.open))
}

// SeatIn is Seat within partition part.
func (p *Placer) SeatIn(part Partition, lease, g int) (Seat, error) {
	return p.seatIn(lease, g, part.First, part.First+part.Count)
}

func (p *Placer) seatIn(lease, g, lo, hi int) (Seat, error) {
	if _, dup := p.seats[lease]; dup {
		return Seat{}, fmt.Errorf("platform: lease %d is seated already", lease)
	}
	seat := Seat{}
	if !place(p.open, p.spec.GPUsPerNode, g, lo, hi, true, &seat) {
		return Seat{}, fmt.Errorf("platform: %d GPUs do not fit on nodes %d-%d now", g, lo, hi-1)
	}
	p.largestOK = false
	for k, i := range seat.Nodes {
		p.used[i] += seat.GPUs[k]
		p.open[i] -= seat.GPUs[k]
		p.leases[i] = append(p.leases[i], lease)
	}
	p.seats[lease] = seat
	return seat, nil
}

// Vacate frees lease's GPUs; it says false (and does nothing) for a lease
// that is not seated, so that a caller may vacate on every release.
func (p *Placer) Vacate(lease int) bool {
	seat, ok := p.seats[lease]
	if !ok {
		return false
	}
	delete(p.seats, lease)
	p.largestOK = false
	for k, i := range seat.Nodes {
		p.used[i] -= seat.GPUs[k]
		if p.state[i] == Up {
			p.open[i] += seat.GPUs[k]
		}
		l := p.leases[i]
		j := slices.Index(l, lease)
		p.leases[i] = append(l[:j], l[j+1:]...)
	}
	return true
}

// SeatOf is where lease sits.
func (p *Placer) SeatOf(lease int) (Seat, bool) {
	s, ok := p.seats[lease]
	return s, ok
}

// Seated is the number of leases seated.
func (p *Placer) Seated() int { return len(p.seats) }

// Leases appends to dst the leases seated on node i, in seating order.
func (p *Placer) Leases(i int, dst []int) []int { return append(dst, p.leases[i]...) }

// SetState puts node i in state s. A node that leaves Up takes no new
// work from then on; its leases stay seated until vacated. A node that
// returns to Up takes work on its GPUs not in use.
func (p *Placer) SetState(i int, s State) {
	p.largestOK = false
	p.state[i] = s
	p.open[i] = 0
	if s == Up {
		p.open[i] = p.spec.GPUsPerNode - p.used[i]
	}
}

// Drain marks node i draining, Fail marks it down, Restore returns it to
// service: the three calls of a failure process (docs/platform.md §3).
func (p *Placer) Drain(i int)   { p.SetState(i, Draining) }
func (p *Placer) Fail(i int)    { p.SetState(i, Down) }
func (p *Placer) Restore(i int) { p.SetState(i, Up) }

// Clone is an independent copy, for a policy's fork.
func (p *Placer) Clone() *Placer {
	if p == nil {
		return nil
	}
	q := &Placer{
		spec:    p.spec,
		state:   slices.Clone(p.state),
		used:    slices.Clone(p.used),
		open:    slices.Clone(p.open),
		leases:  make([][]int, len(p.leases)),
		seats:   make(map[int]Seat, len(p.seats)),
		largest: p.largest, largestOK: p.largestOK,
	}
	for i, l := range p.leases {
		q.leases[i] = slices.Clone(l)
	}
	for k, s := range p.seats {
		q.seats[k] = s
	}
	return q
}
