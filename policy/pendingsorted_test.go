package policy

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// pendingKeysSorted writes comparePendingKeys out by hand: it must agree
// with slices.IsSortedFunc on that comparison for any keys, ties, NaNs and
// out-of-order positions included.
func TestPendingKeysSortedMatchesCompare(t *testing.T) {
	// Few distinct values, so that ties on every key are common.
	floats := []float64{-1, 0, 0.5, 2, math.Inf(1), math.NaN()}
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 6).Draw(t, "n")
		keys := make([]pendingKey, n)
		for i := range keys {
			keys[i] = pendingKey{
				class:   Class(rapid.IntRange(0, int(numClasses)-1).Draw(t, "class")),
				deficit: rapid.SampledFrom(floats).Draw(t, "deficit"),
				tokens:  rapid.SampledFrom(floats).Draw(t, "tokens"),
				pos:     int32(rapid.IntRange(0, 3).Draw(t, "pos")),
			}
		}
		want := slices.IsSortedFunc(keys, comparePendingKeys)
		if got := pendingKeysSorted(keys); got != want {
			t.Fatalf("pendingKeysSorted(%+v) = %v, IsSortedFunc says %v", keys, got, want)
		}
		// keyBefore, the same comparison for one pair, on every pair.
		for i := range keys {
			for j := range keys {
				if got, want := keyBefore(&keys[i], &keys[j]), comparePendingKeys(keys[i], keys[j]) < 0; got != want {
					t.Fatalf("keyBefore(%+v, %+v) = %v, comparePendingKeys says %v", keys[i], keys[j], got, want)
				}
			}
		}
	})
}

func TestPendingKeysSortedWorked(t *testing.T) {
	k := func(cls Class, deficit, tokens float64, pos int) pendingKey {
		return pendingKey{class: cls, deficit: deficit, tokens: tokens, pos: int32(pos)}
	}
	cases := []struct {
		keys []pendingKey
		want bool
	}{
		{nil, true},
		{[]pendingKey{k(Interactive, 0, 0, 0), k(AgentBurst, 0, 0, 1)}, true},
		{[]pendingKey{k(AgentBurst, 0, 0, 0), k(Interactive, 0, 0, 1)}, false},
		{[]pendingKey{k(AgentBurst, 0.2, 0, 0), k(AgentBurst, 0.1, 0, 1)}, true},        // deficit descending
		{[]pendingKey{k(AgentBurst, 0.1, 0, 0), k(AgentBurst, 0.2, 0, 1)}, false},       // larger deficit behind
		{[]pendingKey{k(AgentBurst, 0.1, 9, 0), k(AgentBurst, 0.1, 3, 1)}, true},        // tokens descending
		{[]pendingKey{k(AgentBurst, 0.1, 3, 0), k(AgentBurst, 0.1, 9, 1)}, false},       // more tokens behind
		{[]pendingKey{k(AgentBurst, 0.1, 3, 1), k(AgentBurst, 0.1, 3, 0)}, false},       // position breaks the tie
		{[]pendingKey{k(AgentBurst, math.NaN(), 3, 0), k(AgentBurst, 0.1, 3, 1)}, true}, // NaN compares as "after"
	}
	for i, c := range cases {
		if got := pendingKeysSorted(c.keys); got != c.want {
			t.Errorf("case %d: pendingKeysSorted = %v, want %v", i, got, c.want)
		}
		if got := slices.IsSortedFunc(c.keys, comparePendingKeys); got != c.want {
			t.Errorf("case %d: the worked answer disagrees with comparePendingKeys (%v)", i, got)
		}
	}
}
