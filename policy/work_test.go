package policy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWorkCountsByHand: the broker's work counts on a worked example.
// Campaign a holds the whole pool of 4 at its ceiling; a's two requests
// (one run) and b's (another) wait a tick. The pass reads both runs'
// keys to find them out of order (b has used less: its deficit is
// larger) and both again to sort them, swaps the two runs (no request
// moves: each run holds its own), and tries the 3 requests. a's release
// walks a's run alone (2) and moves nothing: b's run stays. The next
// pass tries b's request, which is granted. Nothing is counted before
// CountWork, and the counts are kept after it is turned off.
func TestWorkCountsByHand(t *testing.T) {
	b := bareBroker(t, 4)
	a := mustRegister(t, b, env("a", 0, 4, 4, 1e6, AgentBurst))
	c := mustRegister(t, b, env("b", 0, 4, 4, 1e6, AgentBurst))
	mustRequest(t, b, a, 4, 3600, AgentBurst)
	b.Tick()
	require.Equal(t, 4, b.Held(a, AnyClass))
	require.Equal(t, Work{}, b.Work(), "counted before CountWork")

	b.CountWork(true)
	mustRequest(t, b, a, 2, 60, AgentBurst)
	mustRequest(t, b, a, 2, 60, AgentBurst)
	mustRequest(t, b, c, 2, 60, AgentBurst)
	b.Tick()
	require.Len(t, b.Pending(), 3)
	require.Equal(t, c, b.Pending()[0].Campaign)
	require.Equal(t, Work{Passes: 1, Pending: 3, Runs: 2, Walked: 3, RunsRead: 4}, b.Work())

	require.NoError(t, b.ReleaseAll(a, AnyClass))
	require.Equal(t, Work{Passes: 1, Pending: 3, Runs: 2, Walked: 5, RunsRead: 4}, b.Work())
	b.Tick()
	require.Equal(t, 2, b.Held(c, AnyClass))
	want := Work{Passes: 2, Pending: 4, Runs: 3, Walked: 6, RunsRead: 4}
	require.Equal(t, want, b.Work())
	require.Equal(t, int64(10), want.Total())

	b.CountWork(false)
	mustRequest(t, b, c, 2, 60, AgentBurst)
	b.Tick()
	require.Equal(t, want, b.Work(), "counted after CountWork(false)")
}

// TestWorkSub: Sub undoes Add, count by count.
func TestWorkSub(t *testing.T) {
	a := Work{Passes: 1, Pending: 2, Runs: 3, Walked: 4, RunsRead: 5, Moved: 6, ForkTicks: 7}
	b := Work{Passes: 10, Pending: 20, Runs: 30, Walked: 40, RunsRead: 50, Moved: 60, ForkTicks: 70}
	s := b
	s.Add(a)
	require.Equal(t, b, s.Sub(a))
	require.Equal(t, int64(4+5+6+7), a.Total())
}
