package baseline_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/fifo"
)

// GrantsOnly stops the books only where no campaign's credits can run out
// before the tick it is given. Pool 64 at the dearest price (deadline, 4
// credits a GPU-hour): at most 64 × 4 / 3600 ≈ 0.0711 credits a second.
// A budget of 1,000 lasts ≥ 14,062 s of that: 14,000 s ahead is safe,
// 15,000 s is not, and a copy asked for the latter keeps its books.
// budgetedFIFO is the example's Core: fifo on a pool of 64 with one
// deadline campaign holding 1,000 credits.
func budgetedFIFO(t *testing.T) *baseline.Core {
	a, _ := newFIFO(t, bt.Config(64, 60))
	env := bt.Env("a", 16, policy.Deadline)
	env.Budget = 1000
	_, err := a.Register(env)
	require.NoError(t, err)
	return a
}

func TestGrantsOnlyOnlyWhereCreditsCannotRunOut(t *testing.T) {
	a := budgetedFIFO(t)
	require.False(t, a.GrantsOnly(15000))
	require.True(t, a.GrantsOnly(14000))
	require.True(t, a.GrantsOnly(1<<40), "once on, it stays on")
}

// GrantsOnlyReach is the last tick GrantsOnly accepts: on the example
// above, 1,000 credits at ≤ 64 × 4 / 3600 × (1 + 10⁻⁶) a second last
// 14,062 s (14,062.49 less the margin of 10⁻⁶ of the budget); within a
// smaller limit, the limit; now if the credits cannot last a second, and
// one before now below now; the limit once the books are stopped. Random budgets and
// limits: GrantsOnly accepts the reach on a copy and refuses the next
// tick on another.
func TestGrantsOnlyReachIsWhereGrantsOnlyStops(t *testing.T) {
	a := budgetedFIFO(t)
	require.Equal(t, 14062, a.GrantsOnlyReach(1<<40))
	require.Equal(t, 9000, a.GrantsOnlyReach(9000))
	require.Equal(t, -1, a.GrantsOnlyReach(-5), "a limit before now")
	require.True(t, a.GrantsOnly(100))
	require.Equal(t, 1<<40, a.GrantsOnlyReach(1<<40), "stopped: any tick")

	poor, _ := newFIFO(t, bt.Config(64, 60))
	env := bt.Env("a", 16, policy.Deadline)
	env.Budget = 0.01
	_, err := poor.Register(env)
	require.NoError(t, err)
	require.Equal(t, 0, poor.GrantsOnlyReach(1000), "0.01 credits last no second, only now")

	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.IntRange(1, 512).Draw(t, "pool")
		k, err := fifo.New(bt.Config(pool, 60))
		require.NoError(t, err)
		for i := range rapid.IntRange(1, 4).Draw(t, "campaigns") {
			e := bt.Env(fmt.Sprintf("c%d", i), 1, policy.Deadline)
			e.Budget = rapid.Float64Range(0, 1e7).Draw(t, "budget")
			_, err := k.Register(e)
			require.NoError(t, err)
		}
		for range rapid.IntRange(0, 50).Draw(t, "ticks") {
			k.Tick()
		}
		limit := k.Now() + rapid.IntRange(-2, 1<<30).Draw(t, "limit ahead")
		reach := k.GrantsOnlyReach(limit)
		require.LessOrEqual(t, reach, max(limit, k.Now()-1))
		if reach >= k.Now() {
			c, err := k.Clone()
			require.NoError(t, err)
			require.True(t, c.(*baseline.Core).GrantsOnly(reach), "the reach %d is refused", reach)
		} else {
			require.Equal(t, k.Now()-1, reach)
		}
		if reach < limit {
			c, err := k.Clone()
			require.NoError(t, err)
			require.False(t, c.(*baseline.Core).GrantsOnly(max(reach+1, k.Now())), "a tick past the reach %d is accepted", reach)
		}
	})
}

// With its books stopped a Core grants and releases exactly as with them
// kept: two campaigns' rigid jobs, skipped through their runs.
func TestGrantsOnlyGrantsTheSame(t *testing.T) {
	run := func(grantsOnly bool) []byte {
		a, j := newFIFO(t, bt.Config(16, 60))
		ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
		cb, _ := a.Register(bt.Env("b", 1, policy.Deadline))
		if grantsOnly {
			require.True(t, a.GrantsOnly(100000))
		}
		for i, c := range []policy.CampaignID{ca, cb, ca, cb, ca} {
			_, err := a.RequestRigid(c, 4+4*(i%3), 3000+1000*i, 2000+500*i, policy.AnyClass, 0)
			require.NoError(t, err)
		}
		for a.Now() < 20000 {
			a.Tick()
			if next := min(a.NextChange(), 20000); next-1 > a.Now() {
				a.SkipTo(next - 1)
			}
		}
		require.Empty(t, a.Pending())
		require.Empty(t, a.Leases())
		if !grantsOnly {
			require.Less(t, a.Credits(ca), 1e9, "the books were kept")
		} else {
			require.Equal(t, 1e9, a.Credits(ca), "the books were stopped")
		}
		return j.Bytes
	}
	kept, stopped := run(false), run(true)
	require.True(t, bytes.Equal(kept, stopped), "kept:\n%s\nstopped:\n%s", kept, stopped)
	require.Equal(t, 5, bytes.Count(kept, []byte(`"event": "grant"`)))
}
