package quota

import (
	"cmp"
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

// shareCmp orders two borrowing queues as comparing their shares did
// (share: the GPUs above the nominal quota ÷ the lendable quota), for any
// nominal quotas, GPUs kept above them and lendable quota up to a machine
// of 2³¹ GPUs, ties (the same GPUs above different quotas) included, and
// for none to lend (every share 0). Comparing what they keep, not what
// they keep above their quotas, fails at the first case with unequal
// quotas that the above-quota numbers order otherwise.
func TestShareCmpIsTheSharesOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := &Rule{}
		r.lendable = rapid.SampledFrom([]int{0, 1, 7, 64, 93056, 1 << 31}).Draw(t, "lendable")
		top := max(r.lendable, 2)
		r.nominal = []int{rapid.IntRange(0, top).Draw(t, "nominal0"), rapid.IntRange(0, top).Draw(t, "nominal1")}
		above0 := rapid.IntRange(1, top).Draw(t, "above0")
		above1 := above0
		if !rapid.Bool().Draw(t, "tie") {
			above1 = rapid.IntRange(1, top).Draw(t, "above1")
		}
		r.sim = []int{r.nominal[0] + above0, r.nominal[1] + above1}
		want := cmp.Compare(r.share(0, r.sim[0]), r.share(1, r.sim[1]))
		if got := r.shareCmp(0, 1); got != want {
			t.Fatalf("shareCmp = %d, the shares compare %d (%v, %v)", got, want, r.share(0, r.sim[0]), r.share(1, r.sim[1]))
		}
	})
}
