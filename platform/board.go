package platform

import (
	"math"
	"slices"
)

// Board is a scratch copy of the placer's free GPUs per node, on which a
// scheduling pass plans what it will start before it seats anything: the
// same rule on the same vector, so that seating the planned grants in the
// planned order gives exactly the planned seats. It also computes EASY's
// reservation on nodes (docs/platform.md §4). The zero value is ready;
// Reset points it at a placer.
type Board struct {
	p     *Placer
	free  []int
	seats []Seat // what Take planned, in order
	avail []int
	ends  []ending
	extra []int
	seat  Seat
}

type ending struct {
	at   int64
	seat Seat
}

// NoReservation is the shadow time of a head that no known end lets seat
// (docs/platform.md §4): nothing can delay it, so nothing is held for it.
const NoReservation = math.MaxInt64

// Reset copies p's free GPUs per node and forgets what was planned.
func (b *Board) Reset(p *Placer) {
	b.p = p
	b.free = append(b.free[:0], p.open...)
	for i := range b.seats {
		b.seats[i] = Seat{Nodes: b.seats[i].Nodes[:0], GPUs: b.seats[i].GPUs[:0]}
	}
	b.seats = b.seats[:0]
}

// Fits says whether g GPUs can be seated on the board now.
func (b *Board) Fits(g int) bool {
	return place(b.free, b.p.spec.GPUsPerNode, g, 0, len(b.free), false, nil)
}

// Take plans a grant of g GPUs on the board (they are no longer free on
// it) and says whether it fitted.
func (b *Board) Take(g int) bool {
	if len(b.seats) < cap(b.seats) {
		b.seats = b.seats[:len(b.seats)+1]
	} else {
		b.seats = append(b.seats, Seat{})
	}
	s := &b.seats[len(b.seats)-1]
	s.Nodes, s.GPUs = s.Nodes[:0], s.GPUs[:0]
	if !place(b.free, b.p.spec.GPUsPerNode, g, 0, len(b.free), true, s) {
		b.seats = b.seats[:len(b.seats)-1]
		return false
	}
	for k, i := range s.Nodes {
		b.free[i] -= s.GPUs[k]
	}
	return true
}

// Release returns lease's GPUs to the board, on its nodes that are up, as
// if it ended now (a preemption's victims, to see whether their GPUs seat
// the request they are chosen for). Leases not seated are ignored.
func (b *Board) Release(lease int) {
	s, ok := b.p.seats[lease]
	if !ok {
		return
	}
	for k, i := range s.Nodes {
		if b.p.state[i] == Up {
			b.free[i] += s.GPUs[k]
		}
	}
}

// Reserve computes the reservation of a head of g GPUs that does not fit
// now: walking the estimated ends in ascending order — of the running
// leases (ids seated in the placer, each with its estimated end) and of
// the grants this board planned with Take (ending at planned[k]) — the
// first end at which g fits on the nodes in service, every lease ending at
// that second included. It returns that shadow time and keeps, per node,
// the GPUs free then beyond the head's seat (the extra GPUs, read by
// TakeBeside). Without such an end the shadow is NoReservation and the
// extra GPUs are all those free after every end.
func (b *Board) Reserve(g int, leases []int, leaseEnds []int64, planned []int64) int64 {
	size := b.p.spec.GPUsPerNode
	ends := b.ends[:0]
	for k, l := range leases {
		if s, ok := b.p.seats[l]; ok {
			ends = append(ends, ending{at: leaseEnds[k], seat: s})
		}
	}
	for k, at := range planned {
		ends = append(ends, ending{at: at, seat: b.seats[k]})
	}
	slices.SortStableFunc(ends, func(x, y ending) int {
		switch {
		case x.at < y.at:
			return -1
		case x.at > y.at:
			return 1
		}
		return 0
	})
	b.ends = ends
	avail := append(b.avail[:0], b.free...)
	b.avail = avail
	shadow := int64(NoReservation)
	for k := 0; k < len(ends); {
		t := ends[k].at
		for ; k < len(ends) && ends[k].at == t; k++ {
			s := ends[k].seat
			for j, i := range s.Nodes {
				if b.p.state[i] == Up {
					avail[i] += s.GPUs[j]
				}
			}
		}
		b.seat.Nodes, b.seat.GPUs = b.seat.Nodes[:0], b.seat.GPUs[:0]
		if place(avail, size, g, 0, len(avail), true, &b.seat) {
			shadow = t
			for j, i := range b.seat.Nodes {
				avail[i] -= b.seat.GPUs[j]
			}
			break
		}
	}
	b.extra = append(b.extra[:0], avail...)
	return shadow
}

// TakeBeside plans a grant of g GPUs that would still run at the shadow
// time: it is taken only if its seat now uses, on every node, no more than
// that node's extra GPUs (which then shrink by it), so that the head's
// reserved seat stays whole. It says whether it was taken.
func (b *Board) TakeBeside(g int) bool {
	b.seat.Nodes, b.seat.GPUs = b.seat.Nodes[:0], b.seat.GPUs[:0]
	if !place(b.free, b.p.spec.GPUsPerNode, g, 0, len(b.free), true, &b.seat) {
		return false
	}
	for j, i := range b.seat.Nodes {
		if b.seat.GPUs[j] > b.extra[i] {
			return false
		}
	}
	for j, i := range b.seat.Nodes {
		b.extra[i] -= b.seat.GPUs[j]
	}
	return b.Take(g)
}

// Clone is a fresh board for a policy's fork: a board holds only scratch
// space, and every pass starts with Reset on the fork's own placer.
func (b *Board) Clone() Board { return Board{} }
