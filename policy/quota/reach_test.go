package quota

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// reachOf finds what candidate's search over the widths found (plain
// still searches so): the widest w ≤ hi with w ≤ free + touchable(q, w),
// at least min(free, hi), for any borrowers (excesses with ties, kept
// GPUs, the filler's), any queue's kept and nominal GPUs, free GPUs and
// bound hi (negative too: a queue over its limit).
func TestReachOfIsTheSearchOverWidths(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := &Rule{}
		if rapid.Bool().Draw(t, "never") {
			r.reclaim = Never
		}
		r.fillerKept = rapid.IntRange(0, 50).Draw(t, "fillerKept")
		excess := rapid.SliceOfN(rapid.IntRange(1, 60), 0, 8).Draw(t, "excess")
		slices.SortFunc(excess, func(a, b int) int { return b - a }) // most first, as Admit sorts them
		r.excess, r.keptSum = excess, []int{0}
		for x, e := range excess {
			kept := e + rapid.IntRange(0, 40).Draw(t, "nominal") // a borrower keeps more than its nominal
			r.keptSum = append(r.keptSum, r.keptSum[x]+kept)
		}
		r.kept = []int{rapid.IntRange(0, 80).Draw(t, "kept")}
		r.nominal = []int{rapid.IntRange(0, 80).Draw(t, "nominalQ")}
		free := rapid.IntRange(0, 100).Draw(t, "free")
		hi := rapid.IntRange(-20, 300).Draw(t, "hi")
		want := min(free, hi)
		for lo, top := want+1, hi; lo <= top; {
			m := int(uint(lo+top) >> 1)
			if m <= free+r.touchable(0, m) {
				want, lo = m, m+1
			} else {
				top = m - 1
			}
		}
		if got := r.reachOf(0, free, hi); got != want {
			t.Fatalf("reachOf = %d, the search over widths %d", got, want)
		}
	})
}
