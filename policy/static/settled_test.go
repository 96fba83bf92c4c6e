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

// A copy read only for its grants (baseline.Core.GrantsOnly, a fair
// start's fork) skips the tick after its own grants when the rule says it
// is settled (static.Rule.Settled), and grants as the original, which
// runs that tick: twins, the second a copy of the first made before any
// request, given the same requests and releases, write the same journal
// tick by tick, under either lend and either partitions knob, with rigid
// jobs and elastic requests (which may be refused for a width a later
// pass would cut them to, or put the list out of submit order).
func TestSettledForkGrantsAsTheOriginal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool, grace, kn, elastic := drawTwinSetup(t, []int{8, 16, 32})
		a, err := static.New(bt.Config(pool, grace), kn)
		require.NoError(t, err)
		n := rapid.IntRange(1, 5).Draw(t, "campaigns")
		var ids []policy.CampaignID
		for i := range n {
			id, err := a.Register(bt.Env(fmt.Sprintf("c%d", i), float64(i%3+1), policy.AgentBurst))
			require.NoError(t, err)
			ids = append(ids, id)
		}
		c, err := a.Clone()
		require.NoError(t, err)
		fork := c.(*baseline.Core)
		require.True(t, fork.GrantsOnly(1000), "the twins run 200 ticks at most")
		twins := [2]*baseline.Core{a, fork}
		var journals [2]bt.Journal
		for x, b := range twins {
			b.SetRecorder(&journals[x])
		}
		for tick := range rapid.IntRange(10, 200).Draw(t, "ticks") {
			fileTick(t, twins[:], ids, pool, elastic) // no filler: elastic only when drawn
			for _, b := range twins {
				b.Tick()
			}
			require.Equal(t, journals[0].Events, journals[1].Events, "tick %d", tick)
		}
	})
}

// forkTwins is a static Core on pool GPUs (grace 0) with campaigns of
// shares rs, and a copy of it read only for its grants made before any
// request (GrantsOnly to tick 1000), each writing its own journal.
func forkTwins(t *testing.T, pool int, kn static.Knobs, rs ...float64) ([2]*baseline.Core, [2]*bt.Journal, []policy.CampaignID) {
	t.Helper()
	a, _, ids := newStatic(t, pool, 0, kn, rs...)
	c, err := a.Clone()
	require.NoError(t, err)
	fork := c.(*baseline.Core)
	require.True(t, fork.GrantsOnly(1000))
	twins := [2]*baseline.Core{a, fork}
	var journals [2]*bt.Journal
	for x, b := range twins {
		journals[x] = &bt.Journal{}
		b.SetRecorder(journals[x])
	}
	return twins, journals, ids
}

// A hand-worked pass that is not quiet (quietAfter: an elastic request
// waits): one partition of 8 GPUs, lend none. R (rigid, 4 GPUs, estimate
// 100) starts at t = 1. Then H (rigid, 8 GPUs) blocks the queue until
// R's end, 101, with no extra GPUs; behind it B (rigid, 2 GPUs, estimate
// 10) and E (elastic, 8 GPUs, 10 s) fit before that. At t = 2 the
// backfill starts B, and refuses E, cut to the 4 GPUs free when the pass
// began, for the 2 left after B. At t = 3, the tick after B's grant, E is
// cut to those 2 and starts. A fork that took the pass at t = 2 for
// settled would skip t = 3 and start E only at B's end, t = 12, with 4.
func TestForkRunsTheTickAfterAPassThatWasNotQuiet(t *testing.T) {
	twins, journals, cs := forkTwins(t, 8, static.DefaultKnobs(), 1)
	var ids [4]int
	for _, a := range twins {
		var err error
		ids[0], err = a.RequestRigid(cs[0], 4, 100, 100, policy.AgentBurst, 1)
		require.NoError(t, err)
		a.Tick()
		ids[1], err = a.RequestRigid(cs[0], 8, 10, 10, policy.AgentBurst, a.Now())
		require.NoError(t, err)
		ids[2], err = a.RequestRigid(cs[0], 2, 10, 10, policy.AgentBurst, a.Now())
		require.NoError(t, err)
		ids[3], err = a.Request(cs[0], 8, 10, policy.AnyClass)
		require.NoError(t, err)
		bt.Ticks(a, 20)
	}
	require.Equal(t, journals[0].Events, journals[1].Events, "the fork's journal")
	for x, want := range []struct{ t, gpus int }{{1, 4}, {-1, 0}, {2, 2}, {3, 2}} {
		g, ok := journals[1].Grant(ids[x])
		if want.t < 0 {
			require.False(t, ok, "request %d waits for R's end", x)
			continue
		}
		require.True(t, ok, "request %d", x)
		require.Equal(t, want.t, g.T, "request %d's grant", x)
		require.Equal(t, want.gpus, g.GPUs, "request %d's GPUs", x)
	}
}

// A hand-worked pass whose scavenge grants a queued job (lend
// scavenger): c0 owns partition 0 and c1 the other, 8 GPUs each. R
// (rigid, 6 GPUs, estimate 100) starts in partition 0 at t = 1. Then H
// (rigid, 8 GPUs, estimate 10) blocks c0's queue until R's end, 101, with
// no extra GPUs, and J (rigid, 2 GPUs, estimate 200) behind it runs past
// that: at t = 2 the owners' pass starts nothing. The scavenge then starts
// H in partition 1's 8 idle GPUs, and J finds no idle GPUs but its own
// partition's. At t = 3, the tick after H's grant, J heads c0's queue
// and fits its 2 free GPUs. A fork that took the pass at t = 2 for
// settled would start J only at H's end, t = 12.
func TestForkRunsTheTickAfterAScavenge(t *testing.T) {
	kn := scavenger()
	kn.Partitions, kn.Owners = static.PartitionsShare, 1
	twins, journals, cs := forkTwins(t, 16, kn, 1, 1)
	require.Equal(t, []int{8, 8}, rule(twins[0]).Sizes())
	var ids [3]int
	for _, a := range twins {
		var err error
		ids[0], err = a.RequestRigid(cs[0], 6, 100, 100, policy.AgentBurst, 1)
		require.NoError(t, err)
		a.Tick()
		ids[1], err = a.RequestRigid(cs[0], 8, 10, 10, policy.AgentBurst, a.Now())
		require.NoError(t, err)
		ids[2], err = a.RequestRigid(cs[0], 2, 200, 200, policy.AgentBurst, a.Now())
		require.NoError(t, err)
		bt.Ticks(a, 20)
	}
	require.Equal(t, journals[0].Events, journals[1].Events, "the fork's journal")
	for x, want := range []int{1, 2, 3} {
		g, ok := journals[1].Grant(ids[x])
		require.True(t, ok, "request %d", x)
		require.Equal(t, want, g.T, "request %d's grant", x)
	}
}
