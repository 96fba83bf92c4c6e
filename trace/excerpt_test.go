package trace

import (
	"slices"
	"testing"
)

const excerpt = "../testdata/traces/SDSC-SP2-1998-4.2-cln.days252-280.swf"

func loadExcerpt(t testing.TB, opt Options) *Workload {
	t.Helper()
	w, err := Load(excerpt, opt)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestExcerptReplayMatchesTickByTick(t *testing.T) {
	if testing.Short() {
		t.Skip("tick-by-tick over 28 days")
	}
	w := loadExcerpt(t, Options{})
	got, want := ReplayEASY(w), tickReplay(w)
	if !slices.Equal(got, want) {
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("job %d: event-driven start %d, tick-by-tick %d", w.Jobs[i].Number, got[i], want[i])
			}
		}
	}
	checkFeasible(t, w, got)
	a, b := Summarize(w, got), Summarize(w, want)
	if a.All.MeanWait != b.All.MeanWait || a.All.MeanBSLD != b.All.MeanBSLD {
		t.Fatalf("means differ: %+v vs %+v", a.All, b.All)
	}
	t.Logf("%+v", a)
}
