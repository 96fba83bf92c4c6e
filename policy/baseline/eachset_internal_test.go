package baseline

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
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

// Ranked's marks of the campaigns waiting list what reading every
// campaign's list finds, in id order: on random requests of up to 200
// campaigns filed and granted (each campaign's last included), and
// rebuilds from an empty pending list.
func TestRankedWaitingReadsTheMarks(t *testing.T) {
	k, err := New(policy.Config{Pool: 8, IOCapacity: policy.Unmetered, InferenceCapacity: policy.Unmetered}, greedyRule{})
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(t *rapid.T) {
		var q Ranked
		var ids []int
		n := rapid.IntRange(1, 200).Draw(t, "campaigns")
		steps := rapid.IntRange(1, 300).Draw(t, "steps")
		for id := 1; id <= steps; id++ {
			switch op := rapid.IntRange(0, 30).Draw(t, "op"); {
			case op == 0:
				q.build(k)
				ids = ids[:0]
			case op < 10 && len(ids) > 0:
				x := rapid.IntRange(0, len(ids)-1).Draw(t, "grant")
				p := slices.IndexFunc(q.jobs, func(j rankedJob) bool { return j.id == ids[x] })
				q.remove(int32(p))
				ids = slices.Delete(ids, x, x+1)
			default:
				c := policy.CampaignID(rapid.IntRange(0, n-1).Draw(t, "campaign"))
				q.add(&Request{ID: id, Campaign: c, GPUs: 1, Duration: 1, Submitted: rapid.IntRange(0, 10).Draw(t, "submitted")})
				ids = append(ids, id)
			}
			var want []int
			for c, list := range q.camps {
				if len(list) > 0 {
					want = append(want, c)
				}
			}
			if got := q.Waiting(nil); !slices.Equal(got, want) {
				t.Fatalf("waiting %v, lists %v", got, want)
			}
		}
	})
}
