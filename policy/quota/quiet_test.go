package quota_test

import (
	"bytes"
	"slices"
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
	checkSaved(t, "passes skipped", func(t *rapid.T) int {
		as := plainTwins(t, cohortRun{cancels: true})
		if quota.Skipped(as[1]) != 0 {
			t.Fatal("Plain skipped a pass")
		}
		return quota.Skipped(as[0])
	})
}

// checkSaved runs a twin comparison under rapid, each case returning how
// many times the first twin took the shortcut under test (what), and
// fails if none did in any case: the comparison would then have
// compared nothing.
func checkSaved(t *testing.T, what string, twins func(t *rapid.T) int) {
	saved := 0
	rapid.Check(t, func(t *rapid.T) { saved += twins(t) })
	if saved == 0 {
		t.Fatalf("no %s: the test compared nothing", what)
	}
	t.Logf("%d %s", saved, what)
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

// The candidates a round sets aside unsorted because their turn could
// only set them aside (doomed), and the queues it finds done without
// asking them (a failed preemption as narrow as their narrowest), leave
// what a round giving every candidate its turn in order leaves: twins,
// the second Unsettled, write the same journal, count the same work and
// end every pass with the same cursors, queues done and failed widths
// (the last are read only by later rounds, so a failure noted when a
// later preemption had cleared it would change nothing else at once).
func TestSettledRoundsAsEveryTurn(t *testing.T) {
	checkSaved(t, "candidates and queues settled", func(t *rapid.T) int {
		var js [2]*bt.Journal
		var as []*baseline.Core
		r := cohortRun{twins: 2, cancels: true, anyKnobs: true, earlier: true}
		r.setup = func(x int, a *baseline.Core) {
			js[x] = &bt.Journal{}
			a.SetRecorder(js[x])
			a.CountWork(true)
			if x == 1 {
				quota.Unsettled(a)
			}
		}
		r.ready = func(all []*baseline.Core) { as = all }
		r.ticked = func(as []*baseline.Core) {
			if !bytes.Equal(js[0].Bytes, js[1].Bytes) {
				t.Fatalf("tick %d: the journals differ:\n%s\nunsettled:\n%s", as[0].Now(), js[0].Bytes, js[1].Bytes)
			}
			if w0, w1 := as[0].Work(), as[1].Work(); w0 != w1 {
				t.Fatalf("tick %d: work %+v, unsettled %+v", as[0].Now(), w0, w1)
			}
			c0, d0, m0 := quota.PassState(as[0])
			c1, d1, m1 := quota.PassState(as[1])
			if !slices.Equal(c0, c1) || !slices.Equal(d0, d1) || !slices.Equal(m0, m1) {
				t.Fatalf("tick %d: cursors %v, done %v, failed %v; unsettled %v, %v, %v", as[0].Now(), c0, d0, m0, c1, d1, m1)
			}
		}
		randomCohorts(t, r)
		if quota.Settled(as[1]) != 0 {
			t.Fatal("Unsettled settled a candidate")
		}
		return quota.Settled(as[0])
	})
}
