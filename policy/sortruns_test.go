package policy

import (
	"cmp"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// sortRuns, on runs that hold their keys, leaves the pending list as the
// stable sort of its requests by those keys and returns its runs: the
// insertion path (one run moved past several, two runs swapped, several
// moved) and the whole sort beyond sortRunsInsertionMax inversions; runs
// that meet after it are one, each at its place. Keys come from a few values per campaign, so that
// runs tie and cross often; half of the lists are in order but for a
// campaign or two whose keys moved, as in a skip.
func TestSortRunsIsTheStableSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := bareBroker(t, 64)
		nc := rapid.IntRange(1, 6).Draw(t, "campaigns")
		deficit, tokens := make([]float64, nc), make([]float64, nc)
		for c := range nc {
			deficit[c] = float64(rapid.IntRange(-2, 0).Draw(t, "deficit"))
			tokens[c] = float64(rapid.IntRange(0, 3).Draw(t, "tokens"))
		}
		var list []Request
		for i := range rapid.IntRange(0, 60).Draw(t, "requests") {
			c := CampaignID(rapid.IntRange(0, nc-1).Draw(t, "campaign"))
			cls := rapid.SampledFrom([]Class{Interactive, AgentBurst}).Draw(t, "class")
			list = append(list, Request{ID: i + 1, Campaign: c, GPUs: 1, Class: cls})
		}
		byKeys := func(x, y Request) int {
			if c := cmp.Compare(x.Class, y.Class); c != 0 {
				return c
			}
			if c := cmp.Compare(deficit[y.Campaign], deficit[x.Campaign]); c != 0 {
				return c
			}
			return cmp.Compare(tokens[y.Campaign], tokens[x.Campaign])
		}
		if rapid.Bool().Draw(t, "nearly sorted") {
			// As in a skip: the list in order, then a campaign or two
			// move (their buckets or usage did), so that few runs
			// are out of place and the insertion path sorts them.
			slices.SortStableFunc(list, byKeys)
			for range rapid.IntRange(1, 2).Draw(t, "moved") {
				c := rapid.IntRange(0, nc-1).Draw(t, "moved campaign")
				deficit[c] = float64(rapid.IntRange(-2, 0).Draw(t, "new deficit"))
				tokens[c] = float64(rapid.IntRange(0, 3).Draw(t, "new tokens"))
			}
		}
		keyed := func(b *Broker, runs []pendingKey) {
			for i := range runs {
				c := b.reqsOf(&runs[i])[0].Campaign
				runs[i].deficit, runs[i].tokens = deficit[c], tokens[c]
			}
		}
		runs := setPending(b, list)
		keyed(b, runs)
		want := slices.Clone(list)
		slices.SortStableFunc(want, byKeys)
		b.runs = b.sortRuns(runs)
		if got := listOf(b, b.runs); !slices.Equal(got, want) {
			t.Fatalf("sorted list\n%v\nthe stable sort\n%v", got, want)
		}
		checkRuns(t, b)
		wb := bareBroker(t, 64)
		wantRuns := setPending(wb, want)
		keyed(wb, wantRuns)
		if len(b.runs) != len(wantRuns) {
			t.Fatalf("%d runs, the list has %d", len(b.runs), len(wantRuns))
		}
		for i := range wantRuns {
			if g, w := b.runs[i], wantRuns[i]; g.pos != w.pos || g.class != w.class || g.camp != w.camp || g.deficit != w.deficit || g.tokens != w.tokens ||
				!slices.Equal(b.reqsOf(&g), wb.reqsOf(&w)) {
				t.Fatalf("run %d %+v, the list's %+v", i, g, w)
			}
		}
	})
}

// tokenDecided lists the adjacent runs that their class and deficit leave
// tied, with each pair's campaigns as the pending list has them (chains
// of tied runs included).
func TestTokenDecidedPairsTheirCampaigns(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := bareBroker(t, 64)
		nc := rapid.IntRange(1, 6).Draw(t, "campaigns")
		var list []Request
		for i := range rapid.IntRange(0, 40).Draw(t, "requests") {
			c := CampaignID(rapid.IntRange(0, nc-1).Draw(t, "campaign"))
			cls := rapid.SampledFrom([]Class{Interactive, AgentBurst}).Draw(t, "class")
			list = append(list, Request{ID: i + 1, Campaign: c, GPUs: 1, Class: cls})
		}
		runs := setPending(b, list)
		for i := range runs {
			runs[i].deficit = float64(rapid.IntRange(-1, 0).Draw(t, "deficit"))
		}
		watch := b.tokenDecided(runs, nil)
		var want []int32
		for i := 1; i < len(runs); i++ {
			if tiedRuns(&runs[i-1], &runs[i]) {
				want = append(want, int32(i))
			}
		}
		if !slices.Equal(watch, want) {
			t.Fatalf("watched %v, tied %v", watch, want)
		}
		for k, i := range watch {
			p := b.skipWatchCamps[k]
			if a, c := b.reqsOf(&runs[i-1])[0].Campaign, b.reqsOf(&runs[i])[0].Campaign; p.a != int32(a) || p.c != int32(c) {
				t.Fatalf("pair %d (runs %d, %d): campaigns %+v, the list's %d, %d", k, i-1, i, p, a, c)
			}
		}
	})
}
