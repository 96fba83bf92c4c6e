package baseline

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
)

// TestVictimSorterIsTheKeyedOrder: sorting by keys worked out once per
// candidate (VictimSorter, what PreemptKeyed and budget's order-change
// search use) gives the order a comparison sort by KeyedVictimOrder gives
// when it works the keys out at every comparison, over leases drawn with
// many ties in class, key and grant time.
func TestVictimSorterIsTheKeyedOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 60).Draw(t, "n")
		leases := make([]Lease, n)
		keys := make(map[int]int, n) // by lease id: the key a rule would compute
		calls := 0
		for i := range leases {
			leases[i] = Lease{
				ID:      i + 1,
				Class:   policy.Class(rapid.IntRange(0, 2).Draw(t, "class")),
				Granted: rapid.IntRange(0, 5).Draw(t, "granted"),
			}
			keys[leases[i].ID] = rapid.IntRange(-3, 3).Draw(t, "key")
		}
		key := func(l *Lease) int { calls++; return keys[l.ID] }
		cands := rapid.Permutation(seq(n)).Draw(t, "cands")
		cands = cands[:rapid.IntRange(0, n).Draw(t, "m")]
		want := slices.Clone(cands)
		slices.SortFunc(want, func(a, b int) int {
			return KeyedVictimOrder(&leases[a], &leases[b], keys[leases[a].ID], keys[leases[b].ID])
		})
		var s VictimSorter
		got := slices.Clone(cands)
		s.Sort(leases, got, key)
		if !slices.Equal(got, want) {
			t.Fatalf("sorted %v, want %v", got, want)
		}
		if calls != len(cands) {
			t.Fatalf("key worked out %d times for %d candidates", calls, len(cands))
		}
	})
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// TestKeyedVictimOrderWorked: the order on a hand-made table: the lowest
// class first, then the lower key (fewer GPU-seconds lost), then the
// newest grant, then the larger id.
func TestKeyedVictimOrderWorked(t *testing.T) {
	leases := []Lease{
		{ID: 1, Class: 1, Granted: 10}, // key 5
		{ID: 2, Class: 2, Granted: 10}, // key 9: class 2 is the lowest class here
		{ID: 3, Class: 1, Granted: 20}, // key 5, newer than 1
		{ID: 4, Class: 1, Granted: 20}, // key 5, same grant as 3, larger id
		{ID: 5, Class: 1, Granted: 0},  // key 1
	}
	keys := []int{5, 9, 5, 5, 1}
	cands := []int{0, 1, 2, 3, 4}
	var s VictimSorter
	s.Sort(leases, cands, func(l *Lease) int { return keys[l.ID-1] })
	var ids []int
	for _, j := range cands {
		ids = append(ids, leases[j].ID)
	}
	if want := []int{2, 5, 4, 3, 1}; !slices.Equal(ids, want) {
		t.Fatalf("victim order %v, want %v", ids, want)
	}
}
