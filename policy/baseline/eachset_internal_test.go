package baseline

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// eachSet reading only the words marked not 0 calls f with the bits
// reading every word does, and those are the bits set up to most: on
// random sets of up to 10,000 bits (dense and sparse), their word marks
// as Ranked keeps them, and random bounds.
func TestEachSetReadsTheMarkedWords(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 10_000).Draw(t, "bits")
		set := make([]uint64, (n+63)/64)
		words := make([]uint64, (len(set)+63)/64)
		var want []int
		for _, b := range rapid.SliceOfDistinct(rapid.IntRange(0, n-1), rapid.ID[int]).Draw(t, "set") {
			set[b/64] |= 1 << (b % 64)
			words[b/4096] |= 1 << (b / 64 % 64)
			want = append(want, b)
		}
		slices.Sort(want)
		most := rapid.IntRange(-1, n+100).Draw(t, "most")
		want = slices.DeleteFunc(want, func(b int) bool { return b > most })
		var plain, marked []int
		eachSet(set, nil, most, func(b int) { plain = append(plain, b) })
		eachSet(set, words, most, func(b int) { marked = append(marked, b) })
		if !slices.Equal(plain, want) || !slices.Equal(marked, want) {
			t.Fatalf("most %d: want %v, every word %v, marked words %v", most, want, plain, marked)
		}
	})
}
