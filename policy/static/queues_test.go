package static_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/static"
)

// TestQueuesAdmitAsThePendingList: the partitions' queues the rule keeps
// (and the backfill candidates their trees find) admit what queues taken
// from the whole pending list at every pass admit: twin allocators, one
// admitting plain, write the same journal tick by tick, under either
// lend and either partitions knob, with rigid jobs of any width and
// estimate (some submitted in the past, as a requeued job is), elastic
// requests (which may put the list out of submit order), the filler,
// releases, and a campaign registered late (the partitions cut again).
func TestQueuesAdmitAsThePendingList(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool, grace, kn, elastic := drawTwinSetup(t, []int{8, 16, 32, 64})
		twins, journals := journaledTwins(t, pool, grace, kn)
		static.PlainAdmit(rule(twins[1]))
		n := rapid.IntRange(1, 5).Draw(t, "campaigns")
		var ids []policy.CampaignID
		register := func(name string, r float64, cls policy.Class) {
			var id policy.CampaignID
			for _, a := range twins {
				id, _ = a.Register(bt.Env(name, r, cls))
			}
			ids = append(ids, id)
		}
		for i := range n {
			register(fmt.Sprintf("c%d", i), float64(i%3+1), policy.AgentBurst)
		}
		if rapid.Bool().Draw(t, "backfill") {
			register("backfill", 0, policy.Opportunistic)
		}
		late := rapid.IntRange(0, 200).Draw(t, "late")
		for tick := range rapid.IntRange(10, 200).Draw(t, "ticks") {
			if tick == late {
				register("late", float64(rapid.IntRange(1, 4).Draw(t, "lateR")), policy.AgentBurst)
			}
			fileTick(t, twins[:], ids, pool, elastic)
			for _, a := range twins {
				a.Tick()
			}
			require.Equal(t, journals[1].Events, journals[0].Events, "tick %d", tick)
		}
		if !elastic {
			// Every rigid job a backfill's search finds passes its test:
			// the search asks the whole of it (backfillIndexed). An
			// elastic request's least is 1 GPU, less than it is cut to.
			require.Zero(t, static.Refused(rule(twins[0])), "jobs found and refused")
		}
	})
}

// A hand-worked backfill (backfillIndexed): one partition of 8 GPUs, A
// (6 GPUs, estimate 10) running since t = 1; then H (8 GPUs) blocks the
// queue, and behind it X (2 GPUs, estimate 20) and Y (2 GPUs, estimate 3)
// fit the 2 free GPUs. H's shadow time is A's estimated end, 11, with no
// extra GPUs: X would run past it, Y ends by it. Y starts, X and H wait;
// the search, which knows the shadow time before it looks, never finds
// X (Pass's test at the first job that fits made the search find X, then
// refuse it).
func TestBackfillSearchesWithTheShadowTime(t *testing.T) {
	a, j, ids := newStatic(t, 8, 60, static.DefaultKnobs(), 1)
	require.Equal(t, []int{8}, rule(a).Sizes())
	idA, err := a.RequestRigid(ids[0], 6, 10, 10, policy.AgentBurst, 1)
	require.NoError(t, err)
	a.Tick()
	_, ok := j.Grant(idA)
	require.True(t, ok, "A starts")
	start := a.Now()
	idH, err := a.RequestRigid(ids[0], 8, 10, 10, policy.AgentBurst, start)
	require.NoError(t, err)
	idX, err := a.RequestRigid(ids[0], 2, 20, 20, policy.AgentBurst, start)
	require.NoError(t, err)
	idY, err := a.RequestRigid(ids[0], 2, 3, 3, policy.AgentBurst, start)
	require.NoError(t, err)
	a.Tick()
	_, ok = j.Grant(idY)
	require.True(t, ok, "Y backfills: it ends by the shadow time")
	for _, id := range []int{idH, idX} {
		_, ok = j.Grant(id)
		require.False(t, ok, "request %d waits", id)
	}
	require.Zero(t, static.Refused(rule(a)), "X found and refused")
}

// A hand-worked quiet pass (quietAfter): as above, Y backfills at t = 2
// beside A (6 GPUs to t = 11), H (8 GPUs) and X (2 GPUs, estimate 20)
// waiting. The Core runs the next tick, as after every grant; there the
// partition's queue and leases are as the pass left them, and the pass
// would start nothing: H still does not fit the 0 GPUs free, nor X. It is
// skipped: admission reads nothing of the queue. Later, at each lease's
// end, the partition is passed again, and the journal is the journal of
// a twin that passes every partition at every tick: H starts at A's end,
// t = 11, once Y (ended at 5) and A have left 8 GPUs, and X at H's end,
// t = 21.
func TestPassAfterRigidStartsIsQuiet(t *testing.T) {
	var twins [2]*baseline.Core
	var journals [2]*bt.Journal
	var ids [4]int
	for x := range twins {
		a, j, cs := newStatic(t, 8, 60, static.DefaultKnobs(), 1)
		twins[x], journals[x] = a, j
		if x == 1 {
			static.PlainAdmit(rule(a))
		}
		a.CountWork(true)
		var err error
		ids[0], err = a.RequestRigid(cs[0], 6, 10, 10, policy.AgentBurst, 1)
		require.NoError(t, err)
		a.Tick()
		for k, r := range []struct{ gpus, est int }{{8, 10}, {2, 20}, {2, 3}} {
			ids[k+1], err = a.RequestRigid(cs[0], r.gpus, r.est, r.est, policy.AgentBurst, a.Now())
			require.NoError(t, err)
		}
		a.Tick()
	}
	a := twins[0]
	_, ok := journals[0].Grant(ids[3])
	require.True(t, ok, "Y backfills")
	walked := a.Work().Walked
	a.Tick()
	require.Equal(t, walked, a.Work().Walked, "the pass after Y's start read the queue")
	twins[1].Tick()
	for range 40 {
		for _, b := range twins {
			b.Tick()
		}
	}
	require.Equal(t, journals[1].Events, journals[0].Events)
	h, ok := journals[0].Grant(ids[1])
	require.True(t, ok, "H starts")
	x, ok := journals[0].Grant(ids[2])
	require.True(t, ok, "X starts")
	require.Equal(t, 11, h.T, "H's start")
	require.Equal(t, 21, x.T, "X's start, at H's end")
}

// drawTwinSetup draws what the twin property tests of the kept queues and
// of settled forks share: a pool from pools, a grace, static's knobs
// across lend, partitions and owners, and whether elastic requests are
// filed too.
func drawTwinSetup(t *rapid.T, pools []int) (pool, grace int, kn static.Knobs, elastic bool) {
	pool = rapid.SampledFrom(pools).Draw(t, "pool")
	grace = rapid.IntRange(0, 4).Draw(t, "grace")
	kn = static.DefaultKnobs()
	kn.Lend = rapid.SampledFrom([]string{static.LendNone, static.LendScavenger}).Draw(t, "lend")
	kn.Partitions = rapid.SampledFrom([]string{static.PartitionsCondo, static.PartitionsShare}).Draw(t, "partitions")
	kn.Owners = rapid.IntRange(0, 3).Draw(t, "owners")
	elastic = rapid.Bool().Draw(t, "elastic")
	return pool, grace, kn, elastic
}

// fileTick files one tick's drawn requests on every twin alike: up to
// four arrivals of any width up to pool, rigid ones with an estimate at
// least their run and some submitted up to 3 s in the past (a requeued
// job's place), elastic ones when elastic (and the filler's always), and
// now and then the release of all of one campaign's leases.
func fileTick(t *rapid.T, twins []*baseline.Core, ids []policy.CampaignID, pool int, elastic bool) {
	for range rapid.IntRange(0, 4).Draw(t, "arrivals") {
		c := ids[rapid.IntRange(0, len(ids)-1).Draw(t, "c")]
		g := rapid.IntRange(1, pool).Draw(t, "gpus")
		run := rapid.IntRange(1, 30).Draw(t, "run")
		est := run + rapid.IntRange(0, 30).Draw(t, "slack")
		back := rapid.IntRange(0, 3).Draw(t, "back")
		flex := elastic && rapid.IntRange(0, 3).Draw(t, "flex") == 0
		for _, a := range twins {
			if flex || a.Campaign(c).Filler {
				_, _ = a.Request(c, g, est, policy.AnyClass)
			} else {
				_, _ = a.RequestRigid(c, g, est, run, policy.AgentBurst, max(0, a.Now()+1-back))
			}
		}
	}
	if rapid.IntRange(0, 30).Draw(t, "release") == 0 {
		c := ids[rapid.IntRange(0, len(ids)-1).Draw(t, "rc")]
		for _, a := range twins {
			require.NoError(t, a.ReleaseAll(c, policy.AnyClass))
		}
	}
}
