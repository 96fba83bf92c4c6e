package quota_test

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/quota"
)

// A pass skipped because the last one changed nothing and nothing it reads
// has changed since (quiet) decides what the pass would have: two
// allocators given the same random cohort, the same arrivals and the same
// cancellations, one of them running every pass (Plain), write the same
// journal tick by tick, under both queueing strategies, every borrowing
// limit and list of preemption strategies, with and without a filler.
func TestQuietPassesChangeNothing(t *testing.T) {
	skipped := 0
	rapid.Check(t, func(t *rapid.T) {
		var js [2]*bt.Journal
		var as []*baseline.Core
		randomCohorts(t, cohortRun{
			twins: 2,
			setup: func(x int, a *baseline.Core) {
				js[x] = &bt.Journal{}
				a.SetRecorder(js[x])
				if x == 1 {
					quota.Plain(a)
				}
			},
			ready:   func(all []*baseline.Core) { as = all },
			cancels: true,
			ticked: func(as []*baseline.Core) {
				if !bytes.Equal(js[0].Bytes, js[1].Bytes) {
					t.Fatalf("tick %d: the journals differ:\n%s\nwith every pass:\n%s", as[0].Now(), js[0].Bytes, js[1].Bytes)
				}
			},
		})
		skipped += quota.Skipped(as[0])
		if quota.Skipped(as[1]) != 0 {
			t.Fatal("Plain skipped a pass")
		}
	})
	if skipped == 0 {
		t.Fatal("no pass was skipped: the test compared nothing")
	}
	t.Logf("%d passes skipped", skipped)
}
