package baseline_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/policy"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
)

// GrantsOnly stops the books only where no campaign's credits can run out
// before the tick it is given. Pool 64 at the dearest price (deadline, 4
// credits a GPU-hour): at most 64 × 4 / 3600 ≈ 0.0711 credits a second.
// A budget of 1,000 lasts ≥ 14,062 s of that: 14,000 s ahead is safe,
// 15,000 s is not, and a copy asked for the latter keeps its books.
func TestGrantsOnlyOnlyWhereCreditsCannotRunOut(t *testing.T) {
	a, _ := newFIFO(t, bt.Config(64, 60))
	env := bt.Env("a", 16, policy.Deadline)
	env.Budget = 1000
	_, err := a.Register(env)
	require.NoError(t, err)
	require.False(t, a.GrantsOnly(15000))
	require.True(t, a.GrantsOnly(14000))
	require.True(t, a.GrantsOnly(1<<40), "once on, it stays on")
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
