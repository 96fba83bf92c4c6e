package policy

import (
	"testing"

	"pgregory.net/rapid"
)

// The congestion window's ring against a plain recomputation: after
// every push its sums are those of the last CongestionWindow pairs
// pushed (all of them before the window fills), its count is how many
// it holds, and its slots hold those pairs in push order from pos.
//
// Mutations caught (each tried): a full window not taking out the
// slot's old pair, the count not counting, the position not wrapping to
// 0 (an index out of range).
func TestCongestionRingIsTheWindow(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var r congestionRing
		var pushed [][2]int
		for range rapid.IntRange(0, 3*CongestionWindow).Draw(t, "pushes") {
			d, f := rapid.IntRange(0, 1<<20).Draw(t, "demand"), rapid.IntRange(0, 1<<20).Draw(t, "free")
			r.push(d, f)
			pushed = append(pushed, [2]int{d, f})
			last := pushed[max(0, len(pushed)-CongestionWindow):]
			sd, sf := 0, 0
			for _, p := range last {
				sd += p[0]
				sf += p[1]
			}
			if r.sumDemand != sd || r.sumFree != sf || r.n != len(last) {
				t.Fatalf("after %d pushes: sums %d, %d over %d; want %d, %d over %d", len(pushed), r.sumDemand, r.sumFree, r.n, sd, sf, len(last))
			}
			if len(last) == CongestionWindow {
				for i, p := range last {
					j := (r.pos + i) % CongestionWindow
					if r.demand[j] != p[0] || r.free[j] != p[1] {
						t.Fatalf("after %d pushes: slot %d holds %d, %d; want %d, %d", len(pushed), j, r.demand[j], r.free[j], p[0], p[1])
					}
				}
			}
		}
	})
}
