package platform

// place is the placement rule of docs/platform.md §2 on a vector of the
// GPUs each node can take now (0 for a node that takes no new work), over
// nodes [lo, hi). A grant g ≤ size goes on one node, by best fit: the node
// with the fewest free GPUs that still holds g, the lowest index on ties,
// so that whole nodes stay whole for the large grants. A larger grant takes
// ⌊g/size⌋ whole free nodes, the lowest indices first, and its remainder
// goes on one more node by the same best fit. It appends the seat to nodes
// and gpus (parallel: gpus[k] GPUs on node nodes[k]) and says whether g
// fits; with fill false it only answers and appends nothing.
func place(free []int, size, g, lo, hi int, fill bool, seat *Seat) bool {
	if g <= 0 {
		return true
	}
	if g <= size {
		best := bestFit(free, g, lo, hi, -1, -1)
		if best < 0 {
			return false
		}
		if fill {
			seat.add(best, g)
		}
		return true
	}
	whole, rest := g/size, g%size
	// The whole nodes: the lowest-index entirely free ones. Their indices
	// are found twice (once to count, once to fill) rather than kept, so
	// that a dry run allocates nothing.
	last, n := -1, 0
	for i := lo; i < hi && n < whole; i++ {
		if free[i] == size {
			last, n = i, n+1
		}
	}
	if n < whole {
		return false
	}
	// The remainder: best fit among the nodes not taken whole (the taken
	// ones are exactly the free nodes at or below last).
	extra := -1
	if rest > 0 {
		if extra = bestFit(free, rest, lo, hi, last, size); extra < 0 {
			return false
		}
	}
	if fill {
		// In node order, so that a seat lists its nodes increasing.
		for i := lo; i <= max(last, extra); i++ {
			switch {
			case i == extra:
				seat.add(i, rest)
			case i <= last && free[i] == size:
				seat.add(i, size)
			}
		}
	}
	return true
}

// bestFit is the node in [lo, hi) with the fewest free GPUs ≥ g, the
// lowest index on ties, or −1. Nodes at or below skipTo with exactly
// skipFree free GPUs are taken whole by the same grant and skipped.
func bestFit(free []int, g, lo, hi, skipTo, skipFree int) int {
	best := -1
	for i := lo; i < hi; i++ {
		f := free[i]
		if f < g || (i <= skipTo && f == skipFree) {
			continue
		}
		if best < 0 || f < free[best] {
			best = i
			if f == g {
				break
			}
		}
	}
	return best
}
