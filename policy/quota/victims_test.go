package quota_test

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/quota"
)

// randomCohort runs a quota allocator on a random cohort, calling audit on
// it before the first tick: random pools, grace periods, borrowing limits,
// queues, both queueing strategies and every list of preemption
// strategies; jobs of every class, rigid and elastic, several filed a tick
// (so that leases granted in one tick tie on their grant time), and a
// filler some of the time.
func randomCohort(t *rapid.T, audit func(a *baseline.Core)) {
	randomCohorts(t, cohortRun{twins: 1, ready: func(as []*baseline.Core) { audit(as[0]) }})
}

// cohortRun says how randomCohorts drives its allocators.
type cohortRun struct {
	twins   int                           // allocators given the same cohort and the same calls
	setup   func(x int, a *baseline.Core) // called on each as it is made (a recorder, Plain)
	ready   func(as []*baseline.Core)     // called once the cohort is registered, before the first tick
	cancels bool                          // now and then a queue withdraws a class of its requests
	ticked  func(as []*baseline.Core)     // called after every tick
	// anyKnobs draws fair sharing and reclaimWithinCohort too (every
	// combination Validate accepts), where the others run quota-fair's;
	// earlier files some rigid jobs with an earlier submit time (a
	// requeued job's place, in the middle of its queue) and bursts of
	// arrivals, so that queues run long.
	anyKnobs, earlier bool
}

// randomCohorts is randomCohort for r.twins allocators at once, each given
// the same cohort, arrivals and (with r.cancels) cancellations, in the
// same order: the twin tests compare what they write.
func randomCohorts(t *rapid.T, r cohortRun) {
	pool := rapid.SampledFrom([]int{8, 16, 64}).Draw(t, "pool")
	k := quota.FairKnobs()
	k.BorrowingLimit = rapid.SampledFrom([]int{-1, 0, 8}).Draw(t, "borrowing-limit")
	k.QueueingStrategy = rapid.SampledFrom([]string{quota.BestEffortFIFO, quota.StrictFIFO}).Draw(t, "strategy")
	k.PreemptionStrategies = rapid.SampledFrom(quota.ValidPreemptionStrategies).Draw(t, "preemption-strategies")
	if r.anyKnobs {
		k.FairSharing = rapid.Bool().Draw(t, "fair-sharing")
		k.ReclaimWithinCohort = quota.Never
		if k.FairSharing {
			k.ReclaimWithinCohort = rapid.SampledFrom([]string{quota.Never, quota.LowerPriority, quota.Any}).Draw(t, "reclaim")
		}
	}
	grace := rapid.IntRange(0, 10).Draw(t, "grace")
	as := make([]*baseline.Core, r.twins)
	for x := range as {
		a, err := quota.New(bt.Config(pool, grace), k)
		if err != nil {
			t.Fatal(err)
		}
		as[x] = a
		if r.setup != nil {
			r.setup(x, a)
		}
	}
	all := func(f func(a *baseline.Core)) {
		for _, a := range as {
			f(a)
		}
	}
	register := func(env policy.Envelope) policy.CampaignID {
		id := policy.CampaignID(-1)
		for _, a := range as {
			got, err := a.Register(env)
			if err != nil {
				t.Fatal(err)
			}
			id = got
		}
		return id
	}
	n := rapid.IntRange(2, 5).Draw(t, "queues")
	var ids []policy.CampaignID
	for i := range n {
		ids = append(ids, register(bt.Env(fmt.Sprintf("q%d", i), float64(rapid.IntRange(1, 6).Draw(t, "R")), policy.AgentBurst)))
	}
	filler := policy.CampaignID(-1)
	if rapid.Bool().Draw(t, "filler") {
		filler = register(bt.Env("filler", 1, policy.Opportunistic))
	}
	if r.ready != nil {
		r.ready(as)
	}
	classes := []policy.Class{policy.Interactive, policy.AgentBurst, policy.Opportunistic}
	burst := 3
	if r.earlier {
		burst = rapid.SampledFrom([]int{3, 12}).Draw(t, "burst")
	}
	for range rapid.IntRange(10, 200).Draw(t, "ticks") {
		for range rapid.IntRange(0, burst).Draw(t, "arrivals") {
			g := rapid.IntRange(1, pool).Draw(t, "gpus")
			d := rapid.IntRange(1, 60).Draw(t, "run")
			if filler >= 0 && rapid.IntRange(0, 4).Draw(t, "to-filler") == 0 {
				all(func(a *baseline.Core) { _, _ = a.Request(filler, g, d, policy.Opportunistic) })
				continue
			}
			c := ids[rapid.IntRange(0, n-1).Draw(t, "c")]
			cls := rapid.SampledFrom(classes).Draw(t, "class")
			if rapid.Bool().Draw(t, "rigid") {
				sub := as[0].Now() + 1
				if r.earlier {
					sub -= rapid.IntRange(0, 3).Draw(t, "earlier") * rapid.IntRange(0, 20).Draw(t, "by")
				}
				all(func(a *baseline.Core) { _, _ = a.RequestRigid(c, g, d, d, cls, sub) })
			} else {
				all(func(a *baseline.Core) { _, _ = a.Request(c, g, d, cls) })
			}
		}
		if r.cancels && rapid.IntRange(0, 9).Draw(t, "cancel") == 0 {
			c := ids[rapid.IntRange(0, n-1).Draw(t, "cancelled")]
			cls := rapid.SampledFrom(classes).Draw(t, "cancelled-class")
			all(func(a *baseline.Core) { _ = a.ReleaseAll(c, cls) })
		}
		all(func(a *baseline.Core) { a.Tick() })
		if r.ticked != nil {
			r.ticked(as)
		}
	}
}

// The victim lists a pass keeps (built once from the lease table, a
// grant filed into its queue's list) give every preemption attempt the
// candidates a fresh gathering and sort would: the filler's leases and
// those of each other queue that borrows, not under notice, in victim
// order.
func TestVictimListsAreAFreshSort(t *testing.T) {
	attempts := 0
	rapid.Check(t, func(t *rapid.T) {
		randomCohort(t, func(a *baseline.Core) {
			quota.AuditVictims(a, func(diff string) {
				attempts++
				if diff != "" {
					t.Fatalf("tick %d: %s", a.Now(), diff)
				}
			})
		})
	})
	if attempts == 0 {
		t.Fatal("no preemption was attempted: the audit checked nothing")
	}
	t.Logf("%d preemption attempts checked", attempts)
}

// The bound that turns a preemption attempt away before the search
// (takable) never turns away one the search would have let through.
func TestTakableBoundsThePreemption(t *testing.T) {
	beyond, succeeded := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		randomCohort(t, func(a *baseline.Core) {
			quota.AuditBound(a, func(b, s bool) {
				if b {
					beyond++
				}
				if s {
					succeeded++
				}
				if b && s {
					t.Fatalf("tick %d: turned away a preemption the search lets through", a.Now())
				}
			})
		})
	})
	if beyond == 0 || succeeded == 0 {
		t.Fatalf("%d attempts turned away, %d succeeded: the test checked nothing", beyond, succeeded)
	}
	t.Logf("%d attempts the bound turns away, %d that succeed", beyond, succeeded)
}

// takable skips its walk of the holding queues when the request would
// be at least as far above its quota as any queue has kept above its
// own since the pass began (maxExcess), and works out what the walk
// does at every call along random cohorts: a grant that makes a queue
// borrow more during a pass must raise that bound (keep), or a later
// call this pass misses the queue's leases.
func TestTakableSkipsNoBorrower(t *testing.T) {
	audits := 0
	rapid.Check(t, func(t *rapid.T) {
		randomCohorts(t, cohortRun{twins: 1, cancels: true, anyKnobs: true, earlier: true, ready: func(as []*baseline.Core) {
			quota.AuditTakable(as[0], func(diff string) {
				audits++
				if diff != "" {
					t.Fatalf("tick %d: %s", as[0].Now(), diff)
				}
			})
		}})
	})
	if audits == 0 {
		t.Fatal("takable was never called: the audit checked nothing")
	}
	t.Logf("%d bounds checked", audits)
}

// The Core keeps quota's pending list in no order while it holds only
// rigid requests (baseline.UnorderedPending), and that changes nothing:
// twin allocators, one kept in submit order (KeepOrder), given the same
// random rigid jobs (some filed with an earlier submit time, as a
// requeued job is), now and then a queue withdrawing its requests and
// leases (ReleaseAll, whose compaction of the list notes the places it
// moves: the Core takes a request it has no place for as gone), write the
// same journal, and once a request that is not
// rigid arrives their pending lists are the same, in submit order.
func TestUnorderedPendingChangesNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.SampledFrom([]int{8, 16, 64}).Draw(t, "pool")
		k := quota.FairKnobs()
		k.QueueingStrategy = rapid.SampledFrom([]string{quota.BestEffortFIFO, quota.StrictFIFO}).Draw(t, "strategy")
		grace := rapid.IntRange(0, 10).Draw(t, "grace")
		n := rapid.IntRange(2, 4).Draw(t, "queues")
		var twins [2]*baseline.Core
		var journals [2]*bt.Journal
		for x := range twins {
			a, err := quota.New(bt.Config(pool, grace), k)
			if err != nil {
				t.Fatal(err)
			}
			journals[x] = &bt.Journal{}
			a.SetRecorder(journals[x])
			for i := range n {
				if _, err := a.Register(bt.Env(fmt.Sprintf("q%d", i), float64(i+1), policy.AgentBurst)); err != nil {
					t.Fatal(err)
				}
			}
			twins[x] = a
		}
		twins[1].KeepOrder()
		for range rapid.IntRange(10, 150).Draw(t, "ticks") {
			for range rapid.IntRange(0, 3).Draw(t, "arrivals") {
				c := policy.CampaignID(rapid.IntRange(0, n-1).Draw(t, "c"))
				g := rapid.IntRange(1, pool).Draw(t, "gpus")
				d := rapid.IntRange(1, 60).Draw(t, "run")
				sub := twins[0].Now() + 1 - rapid.IntRange(0, 3).Draw(t, "earlier")*rapid.IntRange(0, 20).Draw(t, "by")
				for _, a := range twins {
					_, _ = a.RequestRigid(c, g, d, d, policy.AgentBurst, sub)
				}
			}
			if rapid.IntRange(0, 9).Draw(t, "cancel") == 0 {
				c := policy.CampaignID(rapid.IntRange(0, n-1).Draw(t, "cancelled"))
				for _, a := range twins {
					_ = a.ReleaseAll(c, policy.AnyClass)
				}
			}
			for _, a := range twins {
				a.Tick()
			}
		}
		for _, a := range twins {
			_, _ = a.Request(0, 1, 10, policy.AgentBurst)
		}
		if len(journals[0].Events) != len(journals[1].Events) {
			t.Fatalf("%d journal records, %d kept in order", len(journals[0].Events), len(journals[1].Events))
		}
		for i := range journals[0].Events {
			if journals[0].Events[i] != journals[1].Events[i] {
				t.Fatalf("record %d: %+v, kept in order %+v", i, journals[0].Events[i], journals[1].Events[i])
			}
		}
		p0, p1 := twins[0].Pending(), twins[1].Pending()
		if len(p0) != len(p1) {
			t.Fatalf("%d pending, %d kept in order", len(p0), len(p1))
		}
		for i := range p0 {
			if p0[i] != p1[i] {
				t.Fatalf("pending %d: %+v, kept in order %+v", i, p0[i], p1[i])
			}
		}
	})
}
