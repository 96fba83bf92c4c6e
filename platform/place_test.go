package platform

import (
	"slices"
	"testing"
)

func seatOf(t *testing.T, p *Placer, lease, g int) Seat {
	t.Helper()
	s, err := p.Seat(lease, g)
	if err != nil {
		t.Fatalf("seat lease %d of %d GPUs: %v", lease, g, err)
	}
	return s
}

func wantSeat(t *testing.T, got Seat, nodes, gpus []int) {
	t.Helper()
	if !slices.Equal(got.Nodes, nodes) || !slices.Equal(got.GPUs, gpus) {
		t.Fatalf("seat %v/%v, want nodes %v with %v GPUs", got.Nodes, got.GPUs, nodes, gpus)
	}
}

// The rule of docs/platform.md §2, worked by hand on 4 nodes of 8 GPUs.
func TestPlacementRule(t *testing.T) {
	p := New(Spec{Nodes: 4, GPUsPerNode: 8})
	// Empty nodes tie: the lowest index.
	wantSeat(t, seatOf(t, p, 1, 3), []int{0}, []int{3})
	// Best fit: node 0 has 5 free, the others 8; 4 GPUs go on node 0.
	wantSeat(t, seatOf(t, p, 2, 4), []int{0}, []int{4})
	// 2 GPUs do not fit on node 0 (1 free): node 1, the lowest empty one.
	wantSeat(t, seatOf(t, p, 3, 2), []int{1}, []int{2})
	// 6 GPUs: node 1 has exactly 6 free, the best fit.
	wantSeat(t, seatOf(t, p, 4, 6), []int{1}, []int{6})
	// 12 GPUs: one whole node (2, the lowest empty) and 4 by best fit on
	// the rest (node 3, the only one with 4 free).
	wantSeat(t, seatOf(t, p, 5, 12), []int{2, 3}, []int{8, 4})
	if p.Fits(5) || !p.Fits(4) || p.Open() != 5 {
		t.Fatalf("open %d, fits(5) %v, fits(4) %v; want 5 free: 1 on node 0, 4 on node 3", p.Open(), p.Fits(5), p.Fits(4))
	}
	// A global count of 5 free GPUs, but no node holds 5: refused.
	if _, err := p.Seat(6, 5); err == nil {
		t.Fatal("5 GPUs seated with at most 4 free on one node")
	}
	p.Vacate(4) // node 1 empty again
	p.Vacate(3)
	// 16 GPUs need two whole nodes: only node 1 is whole.
	if p.Fits(16) {
		t.Fatal("16 GPUs fit with one whole node")
	}
	// 9 GPUs: node 1 whole, the remaining 1 by best fit: node 0 (1 free).
	wantSeat(t, seatOf(t, p, 7, 9), []int{0, 1}, []int{1, 8})
}

// The remainder of a large grant never lands on a node the grant takes whole.
func TestRemainderNotOnWholeNode(t *testing.T) {
	p := New(Spec{Nodes: 3, GPUsPerNode: 4})
	wantSeat(t, seatOf(t, p, 1, 6), []int{0, 1}, []int{4, 2})
	p = New(Spec{Nodes: 2, GPUsPerNode: 4})
	if p.Fits(5) != true || p.Fits(9) {
		t.Fatal("5 of 8 GPUs on two empty nodes must fit, 9 must not")
	}
}

// A draining or down node takes no new work; its leases stay seated and
// listed; back in service it takes work on its GPUs not in use.
func TestNodeStates(t *testing.T) {
	p := New(Spec{Nodes: 2, GPUsPerNode: 8})
	seatOf(t, p, 10, 4)
	seatOf(t, p, 11, 2)
	p.Drain(0)
	if got := p.Node(0); got.State != Draining || got.Used != 6 || got.Free != 0 {
		t.Fatalf("node 0 draining: %+v", got)
	}
	if l := p.Leases(0, nil); !slices.Equal(l, []int{10, 11}) {
		t.Fatalf("leases on node 0: %v, want [10 11]", l)
	}
	// 2 GPUs fitted on node 0 before; now they go on node 1.
	wantSeat(t, seatOf(t, p, 12, 2), []int{1}, []int{2})
	p.Fail(1)
	if p.Fits(1) {
		t.Fatal("a GPU seated with one node draining and the other down")
	}
	p.Vacate(10)
	if p.Node(0).Free != 0 || p.Node(0).Used != 2 {
		t.Fatalf("vacating on a draining node reopened it: %+v", p.Node(0))
	}
	p.Restore(0)
	if got := p.Node(0); got.State != Up || got.Free != 6 {
		t.Fatalf("node 0 restored: %+v, want up with 6 free", got)
	}
	if l := p.Leases(0, nil); !slices.Equal(l, []int{11}) {
		t.Fatalf("leases on node 0: %v, want [11]", l)
	}
	if p.Vacate(10) {
		t.Fatal("a lease vacated twice")
	}
}

func TestPartitions(t *testing.T) {
	spec := Spec{Nodes: 4, GPUsPerNode: 8, Partitions: []Partition{{Name: "a", First: 2, Count: 2}}}
	p := New(spec)
	part, _ := spec.Partition("a")
	s, err := p.SeatIn(part, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	wantSeat(t, s, []int{2}, []int{3})
	if p.FitsIn(part, 16) || !p.FitsIn(part, 13) {
		t.Fatal("partition a (nodes 2-3, 3 GPUs used) must seat 13 GPUs and not 16")
	}
}

func TestClone(t *testing.T) {
	p := New(Spec{Nodes: 2, GPUsPerNode: 4})
	seatOf(t, p, 1, 3)
	q := p.Clone()
	seatOf(t, q, 2, 4)
	q.Drain(0)
	if p.Node(1).Used != 0 || p.Node(0).State != Up || p.Seated() != 1 {
		t.Fatal("a clone's changes reached the original")
	}
}

// EASY on nodes (docs/platform.md §4), worked by hand: 2 nodes of 8.
// Node 0 runs A (6 GPUs, ends at 100); node 1 runs B (4 GPUs, ends at 50).
// Free: 2 on node 0, 4 on node 1 — 6 in all. The head asks for 6: the
// global count says it starts now, but no node holds 6. At 50 B ends and
// node 1 holds 8: the shadow is 50, the head's seat 6 on node 1 (best
// fit), leaving extra 2 on node 0 and 2 on node 1.
func TestBoardReservation(t *testing.T) {
	p := New(Spec{Nodes: 2, GPUsPerNode: 8})
	seatOf(t, p, 1, 6)
	seatOf(t, p, 2, 4)
	var b Board
	b.Reset(p)
	if b.Fits(6) {
		t.Fatal("the head fits now: 6 GPUs with 2 and 4 free per node")
	}
	if s := b.Reserve(6, []int{1, 2}, []int64{100, 50}, nil); s != 50 {
		t.Fatalf("shadow %d, want 50", s)
	}
	// A 4-GPU job running past the shadow would sit on node 1 (4 free,
	// best fit) where only 2 extra remain: refused.
	if b.TakeBeside(4) {
		t.Fatal("a long 4-GPU job took the head's GPUs on node 1")
	}
	// A 2-GPU long job sits on node 0 (2 free, best fit) within its extra.
	if !b.TakeBeside(2) {
		t.Fatal("a long 2-GPU job on node 0's extra GPUs was refused")
	}
	// Node 0 has no extra left, node 1 has 2: a second 2-GPU long job goes on node 1.
	if !b.TakeBeside(2) {
		t.Fatal("a second long 2-GPU job on node 1's extra GPUs was refused")
	}
	if b.TakeBeside(1) {
		t.Fatal("a long job took GPUs beyond every node's extra")
	}
}

// Seating the board's plan in order gives the planned seats.
func TestBoardPlanIsSeating(t *testing.T) {
	p := New(Spec{Nodes: 3, GPUsPerNode: 4})
	seatOf(t, p, 1, 3)
	var b Board
	b.Reset(p)
	sizes := []int{1, 5, 2, 1}
	for _, g := range sizes {
		if !b.Take(g) {
			t.Fatalf("%d GPUs refused on the board", g)
		}
	}
	for k, g := range sizes {
		s := seatOf(t, p, 10+k, g)
		wantSeat(t, s, b.seats[k].Nodes, b.seats[k].GPUs)
	}
}
