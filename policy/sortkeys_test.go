package policy

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// The key sorts give exactly the comparators' sorts: runs with tied,
// nearly tied (a prefix apart), signed-zero, infinite and NaN deficits and
// tokens, and candidates with tied sizes.
func TestSortByKeysIsTheComparatorsSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 300).Draw(t, "runs")
		defs := rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 1, -1, 0.5, 0.5 + 1e-15, 0.5 - 1e-15, 3e9, -7.25, math.Inf(1), math.Inf(-1), 1e-300})
		toks := rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 10, 10.000001, -3, math.Inf(1)})
		nan := rapid.Bool().Draw(t, "nan")
		runs := make([]pendingKey, n)
		for i := range runs {
			runs[i] = pendingKey{
				class:   Class(rapid.IntRange(0, int(numClasses)-1).Draw(t, "class")),
				deficit: defs.Draw(t, "deficit"), tokens: toks.Draw(t, "tokens"),
				pos: int32(i), camp: int32(rapid.IntRange(0, 50).Draw(t, "camp")), slot: int32(i),
			}
			if rapid.Bool().Draw(t, "free-deficit") {
				runs[i].deficit = rapid.Float64Range(-2, 2).Draw(t, "deficit-value")
			}
		}
		if nan && n > 0 {
			runs[rapid.IntRange(0, n-1).Draw(t, "nan-at")].tokens = math.NaN()
		}
		want := slices.Clone(runs)
		slices.SortFunc(want, comparePendingKeys)
		b := &Broker{}
		b.sortRunsWhole(runs)
		for i := range runs {
			w, g := want[i], runs[i]
			if g.slot != w.slot {
				t.Fatalf("place %d: run %d, the comparator's sort has run %d", i, g.slot, w.slot)
			}
		}

		m := rapid.IntRange(0, 200).Draw(t, "candidates")
		cands := make([]candidate, m)
		for i := range cands {
			cands[i] = candidate{gpus: rapid.IntRange(1, 6).Draw(t, "gpus"), index: rapid.IntRange(0, 1000).Draw(t, "index")}
		}
		// In lease order, as the pass builds them (the counting sort's
		// case when their sizes span little).
		if rapid.Bool().Draw(t, "lease-order") {
			maxG := rapid.SampledFrom([]int{1, 6, 255, 256, 300, 1 << 20}).Draw(t, "max-gpus")
			next := 0
			for i := range cands {
				next += rapid.IntRange(1, 3).Draw(t, "index-step")
				cands[i] = candidate{gpus: rapid.IntRange(1, maxG).Draw(t, "gpus"), index: next}
			}
		}
		wantC := slices.Clone(cands)
		slices.SortFunc(wantC, compareCandidates)
		b.sortCandidatesByKeys(cands)
		if !slices.Equal(cands, wantC) {
			t.Fatalf("candidates %v, the comparator's sort %v", cands, wantC)
		}
	})
}
