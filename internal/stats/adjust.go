package stats

import (
	"cmp"
	"math"
	"slices"
)

// Holm is Holm's step-down adjustment of a family of p-values (Holm
// 1979), which controls the family-wise error rate: with the m p-values
// sorted ascending, p_(1) ≤ … ≤ p_(m), the adjusted p_(i) is
// max over j ≤ i of min(1, (m − j + 1) · p_(j)). A family member is
// rejected at level α when its adjusted p is at most α. The result is in
// the order of ps; a NaN p-value (a contrast that could not be tested) is
// not a member of the family and stays NaN.
func Holm(ps []float64) []float64 {
	adj, order := adjustPrep(ps)
	m := len(order)
	run := 0.0
	for j, i := range order {
		run = max(run, min(1, float64(m-j)*ps[i]))
		adj[i] = run
	}
	return adj
}

// BenjaminiHochberg is the Benjamini–Hochberg step-up adjustment
// (Benjamini & Hochberg 1995), which controls the false discovery rate:
// with the m p-values sorted ascending, the adjusted p_(i) is min over
// j ≥ i of min(1, m/j · p_(j)). In the order of ps; NaN stays NaN and is
// not counted in m. It is never above Holm's.
func BenjaminiHochberg(ps []float64) []float64 {
	adj, order := adjustPrep(ps)
	m := len(order)
	run := 1.0
	for j := m - 1; j >= 0; j-- {
		i := order[j]
		run = min(run, float64(m)/float64(j+1)*ps[i])
		adj[i] = run
	}
	return adj
}

// adjustPrep is a NaN-filled result for ps and the indices of its
// non-NaN p-values, ascending by p (ties in input order).
func adjustPrep(ps []float64) (adj []float64, order []int) {
	adj = make([]float64, len(ps))
	for i, p := range ps {
		adj[i] = math.NaN()
		if !math.IsNaN(p) {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ps[a], ps[b]) })
	return adj, order
}
