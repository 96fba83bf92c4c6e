package platform

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// Over random seats, vacates and state changes: no node is ever
// over-committed, a node not up never gains a lease, every seat holds
// exactly its grant, Fits answers what Seat does, and the node lists
// match the seats.
func TestPlacerProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec := Spec{Nodes: rapid.IntRange(1, 6).Draw(t, "nodes"), GPUsPerNode: rapid.IntRange(1, 8).Draw(t, "size")}
		p := New(spec)
		var live []int
		next := 0
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0, 1:
				g := rapid.IntRange(1, spec.GPUs()+2).Draw(t, "g")
				before := slices.Clone(p.leases)
				fits := p.Fits(g)
				if rule := place(p.open, p.spec.GPUsPerNode, g, 0, len(p.open), false, nil); fits != rule {
					t.Fatalf("Fits(%d) = %v (Largest %d), the rule says %v", g, fits, p.Largest(), rule)
				}
				s, err := p.Seat(next, g)
				if fits != (err == nil) {
					t.Fatalf("Fits(%d) = %v but Seat: %v", g, fits, err)
				}
				if err != nil {
					continue
				}
				if s.Size() != g {
					t.Fatalf("seat %v holds %d GPUs, want %d", s, s.Size(), g)
				}
				for _, i := range s.Nodes {
					if p.state[i] != Up {
						t.Fatalf("lease seated on node %d, %s", i, p.state[i])
					}
				}
				for i := range before {
					if p.state[i] != Up && len(p.leases[i]) != len(before[i]) {
						t.Fatalf("node %d (%s) gained a lease", i, p.state[i])
					}
				}
				live = append(live, next)
				next++
			case 2:
				if len(live) == 0 {
					continue
				}
				k := rapid.IntRange(0, len(live)-1).Draw(t, "vacate")
				if !p.Vacate(live[k]) {
					t.Fatalf("lease %d not vacated", live[k])
				}
				live = slices.Delete(live, k, k+1)
			case 3:
				p.SetState(rapid.IntRange(0, spec.Nodes-1).Draw(t, "node"), State(rapid.IntRange(0, 2).Draw(t, "state")))
			}
			for i := range spec.Nodes {
				n := p.Node(i)
				sum := 0
				for _, l := range p.leases[i] {
					s := p.seats[l]
					sum += s.GPUs[slices.Index(s.Nodes, i)]
				}
				if n.Used > spec.GPUsPerNode || n.Used != sum {
					t.Fatalf("node %d uses %d GPUs (seats say %d) of %d", i, n.Used, sum, spec.GPUsPerNode)
				}
				if want := spec.GPUsPerNode - n.Used; (n.State == Up && n.Free != want) || (n.State != Up && n.Free != 0) {
					t.Fatalf("node %d %s: free %d, used %d", i, n.State, n.Free, n.Used)
				}
			}
			if p.Seated() != len(live) {
				t.Fatalf("%d leases seated, %d live", p.Seated(), len(live))
			}
		}
	})
}
