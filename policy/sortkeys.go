package policy

import (
	"math"
	"math/bits"
	"slices"
)

// The admission pass's two O(n log n) sorts (the pending list's runs when
// many are out of place, and the preemption candidates) sort flat uint64
// keys with slices.Sort, whose comparisons are inlined, instead of calling
// a comparator per comparison: at 10,000 campaigns the comparator calls
// made BenchmarkAdmission's time per n·log₂n 2.8 times what it is at 10.
// Both orders are total, so every correct sort gives the same permutation.

// sortKeysMin is the fewest runs sortRunsWhole sorts by keys: below it the
// comparator's sort is as fast and building the keys is overhead.
const sortKeysMin = 48

// sortRunsWhole sorts the runs by comparePendingKeys. The keys are the
// class, a prefix of the deficit (descending) and the run's index; runs
// whose class and prefix tie are then put in order by the comparator
// itself. A NaN deficit or token count, under which the comparator is no
// order, leaves the whole sort to slices.SortFunc as before.
func (b *Broker) sortRunsWhole(runs []pendingKey) {
	n := len(runs)
	if n < sortKeysMin || n > 1<<32 {
		slices.SortFunc(runs, comparePendingKeys)
		return
	}
	idxBits := uint(bits.Len(uint(n - 1)))
	prefixBits := 61 - idxBits
	keys := slices.Grow(b.sortKeys[:0], n)
	for i := range runs {
		k := &runs[i]
		// (Places ascend along the list, so a run's index stands for
		// its place in the keys.)
		if k.deficit != k.deficit || k.tokens != k.tokens || k.class >= 8 || i > 0 && k.pos <= runs[i-1].pos {
			b.sortKeys = keys
			slices.SortFunc(runs, comparePendingKeys)
			return
		}
		keys = append(keys, uint64(k.class)<<61|descendingBits(k.deficit)>>(64-prefixBits)<<idxBits|uint64(i))
	}
	slices.Sort(keys)
	// Runs of one class whose deficits share the prefix are put in the
	// comparator's order among themselves.
	b.sortKeys = keys
	b.sortedRuns = b.placeByKeys(runs, b.sortedRuns, keys, idxBits, true)
}

// placeByKeys puts runs in the order of the sorted keys, each ending in
// the index of its run in idxBits bits, through scratch, and returns the
// scratch. Stretches whose keys agree above the index are then sorted by
// sortTied (tied) or by the comparator.
func (b *Broker) placeByKeys(runs, scratch []pendingKey, keys []uint64, idxBits uint, tied bool) []pendingKey {
	n := len(runs)
	sorted := slices.Grow(scratch[:0], n)
	for _, key := range keys {
		sorted = append(sorted, runs[key&(1<<idxBits-1)])
	}
	for i := 0; i < n; {
		j := i + 1
		for j < n && keys[j]>>idxBits == keys[i]>>idxBits {
			j++
		}
		switch {
		case j-i < 2:
		case tied:
			b.sortTied(sorted[i:j])
		default:
			slices.SortFunc(sorted[i:j], comparePendingKeys)
		}
		i = j
	}
	copy(runs, sorted)
	return sorted
}

// sortTied puts runs of one class whose deficits share a prefix in the
// comparator's order; they come in the order of their places. Where their
// deficits are one value, as many campaigns' are (no usage, the same
// share), the tokens decide, and they are sorted by keys of a prefix of
// their tokens (descending) and their index, runs whose prefixes tie by the
// comparator.
func (b *Broker) sortTied(g []pendingKey) {
	n := len(g)
	if n < sortKeysMin {
		slices.SortFunc(g, comparePendingKeys)
		return
	}
	for i := range g {
		if g[i].deficit != g[0].deficit {
			slices.SortFunc(g, comparePendingKeys)
			return
		}
	}
	idxBits := uint(bits.Len(uint(n - 1)))
	keys := slices.Grow(b.sortTiedKeys[:0], n)
	for i := range g {
		keys = append(keys, descendingBits(g[i].tokens)>>idxBits<<idxBits|uint64(i))
	}
	slices.Sort(keys)
	b.sortTiedKeys = keys
	b.sortTiedRuns = b.placeByKeys(g, b.sortTiedRuns, keys, idxBits, false)
}

// descendingBits maps a float64 that is not NaN to a uint64 whose
// ascending order is the floats' descending order, −0 and +0 alike (the
// comparator sees them equal).
func descendingBits(f float64) uint64 {
	if f == 0 {
		f = 0
	}
	u := math.Float64bits(f)
	if u>>63 != 0 {
		u = ^u
	} else {
		u |= 1 << 63
	}
	return ^u
}

// sortCandidatesByKeys sorts the candidates largest first, ties in lease
// order, through keys of (2³² − 1 − gpus, index); sizes or indices that
// do not fit 32 bits leave it to the comparator.
//
// Many candidates in lease order whose sizes span fewer than
// candCountSpan values (the pass builds them in lease order, and leases
// come in a few sizes) are placed by a counting sort on the size instead,
// O(n): stable, so ties keep lease order, and the same permutation.
// Fewer than candCountMin take the keys' sort as before, but at most
// candInsertMax, which are sorted by insertion (insertCandidates).
func (b *Broker) sortCandidatesByKeys(cands []candidate) {
	if len(cands) <= candInsertMax {
		insertCandidates(cands)
		return
	}
	if len(cands) >= candCountMin {
		if keys, ok := countBySize(b.sortKeys[:0], cands); ok {
			b.sortKeys = keys
			candidatesOf(cands, keys)
			return
		}
	}
	keys := slices.Grow(b.sortKeys[:0], len(cands))
	for _, c := range cands {
		if uint(c.gpus) > math.MaxUint32 || uint(c.index) > math.MaxUint32 {
			b.sortKeys = keys
			slices.SortFunc(cands, compareCandidates)
			return
		}
		keys = append(keys, candidateKey(c))
	}
	slices.Sort(keys)
	candidatesOf(cands, keys)
	b.sortKeys = keys
}

// candInsertMax is the most candidates sortCandidatesByKeys sorts by
// insertion on the candidates themselves: slices.Sort sorts that few keys
// by insertion too, so building and reading back the keys was all they
// bought (BenchmarkAdmission at 10 campaigns, callgrind: the keys' sort
// took 859 instructions of a 9,430-instruction pass, this one 476).
const candInsertMax = 12

// insertCandidates is an insertion sort of cands by compareCandidates
// (largest first, then lease order), written out.
func insertCandidates(cands []candidate) {
	for i := 1; i < len(cands); i++ {
		x := cands[i]
		j := i
		for ; j > 0; j-- {
			y := &cands[j-1]
			if x.gpus < y.gpus || x.gpus == y.gpus && x.index >= y.index {
				break
			}
			cands[j] = *y
		}
		cands[j] = x
	}
}

// candidateKey is candidate c's sort key: (2³² − 1 − gpus, index).
func candidateKey(c candidate) uint64 {
	return uint64(math.MaxUint32-c.gpus)<<32 | uint64(c.index)
}

// candidatesOf writes the candidates of the keys, in their order, to cands.
func candidatesOf(cands []candidate, keys []uint64) {
	for i, key := range keys {
		cands[i] = candidate{gpus: math.MaxUint32 - int(key>>32), index: int(key & math.MaxUint32)}
	}
}

// candCountMin is the fewest candidates sortCandidatesByKeys places by
// counting; candCountSpan bounds the sizes' spread it counts over.
const (
	candCountMin  = 64
	candCountSpan = 256
)

// countBySize puts the keys of cands in the order of the sizes, largest
// first and stable, into keys' room and returns them, for candidates in
// lease order (indices ascending) whose sizes and indices fit 32 bits and
// span fewer than candCountSpan values; ok is false for any others.
func countBySize(keys []uint64, cands []candidate) (_ []uint64, ok bool) {
	lo, hi := math.MaxInt, math.MinInt
	for i, c := range cands {
		if uint(c.gpus) > math.MaxUint32 || uint(c.index) > math.MaxUint32 || i > 0 && c.index <= cands[i-1].index {
			return keys, false
		}
		lo, hi = min(lo, c.gpus), max(hi, c.gpus)
	}
	if hi-lo >= candCountSpan {
		return keys, false
	}
	var at [candCountSpan + 1]int32
	for _, c := range cands {
		at[hi-c.gpus+1]++
	}
	for d := 1; d <= candCountSpan; d++ {
		at[d] += at[d-1]
	}
	keys = slices.Grow(keys, len(cands))[:len(cands)]
	for _, c := range cands {
		d := hi - c.gpus
		keys[at[d]] = candidateKey(c)
		at[d]++
	}
	return keys, true
}

// compareCandidates is the candidates' order: largest first, then lease
// order.
func compareCandidates(x, y candidate) int {
	if x.gpus != y.gpus {
		if x.gpus > y.gpus {
			return -1
		}
		return 1
	}
	if x.index < y.index {
		return -1
	}
	if x.index > y.index {
		return 1
	}
	return 0
}
