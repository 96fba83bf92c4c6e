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
		as := plainTwins(t, cohortRun{cancels: true})
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

// plainTwins runs randomCohorts (as r says) on twins, the second of
// them Plain, and fails at the first tick after which their journals
// differ. It returns the twins.
func plainTwins(t *rapid.T, r cohortRun) []*baseline.Core {
	var js [2]*bt.Journal
	var as []*baseline.Core
	r.twins = 2
	r.setup = func(x int, a *baseline.Core) {
		js[x] = &bt.Journal{}
		a.SetRecorder(js[x])
		if x == 1 {
			quota.Plain(a)
		}
	}
	r.ready = func(all []*baseline.Core) { as = all }
	r.ticked = func(as []*baseline.Core) {
		if !bytes.Equal(js[0].Bytes, js[1].Bytes) {
			t.Fatalf("tick %d: the journals differ:\n%s\nplain:\n%s", as[0].Now(), js[0].Bytes, js[1].Bytes)
		}
	}
	randomCohorts(t, r)
	return as
}

// The queues a pass asks (only those whose narrowest workload could be
// in reach), the narrowest kept as workloads come and go, the places
// kept for workloads that left from the middle of a queue and the block
// bounds a walk skips by only save work: twins given the same random
// cohort, arrivals (some with an earlier submit time, filed in the
// middle of long queues) and cancellations, one walking every queue from
// its start at every pass (Plain), write the same journal tick by tick,
// at every combination of the knobs: fair sharing on and off, every
// reclaimWithinCohort, both queueing strategies, every borrowing limit
// and list of preemption strategies, with and without a filler.
func TestWalksGrantAsPlainAtEveryKnob(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		plainTwins(t, cohortRun{cancels: true, anyKnobs: true, earlier: true})
	})
}
