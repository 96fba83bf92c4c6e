package policy

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// A withdrawn request is never granted, stops counting as demand at once,
// and leaves the others in their order; a granted request, an unknown id
// and another campaign's request are not withdrawn.
func TestWithdraw(t *testing.T) {
	b, j := newBroker(t, 100)
	a := mustRegister(t, b, env("a", 10, 20, 40, 500, AgentBurst))
	o := mustRegister(t, b, env("o", 0, 20, 40, 500, AgentBurst))
	r1 := mustRequest(t, b, a, 8, 60, AnyClass)
	r2 := mustRequest(t, b, a, 4, 60, AnyClass)
	r3 := mustRequest(t, b, o, 2, 60, AnyClass)
	require.Equal(t, 12, b.Outstanding(a, AnyClass))

	_, ok, err := b.Withdraw(o, r1)
	require.NoError(t, err)
	require.False(t, ok, "another campaign's request")
	got, ok, err := b.Withdraw(a, r1)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, Request{ID: r1, Campaign: a, GPUs: 8, Duration: 60, Class: AgentBurst}, got)
	require.Equal(t, 4, b.Outstanding(a, AnyClass), "the 8 GPUs are no longer demand")
	require.Equal(t, []int{r2, r3}, []int{b.Pending()[0].ID, b.Pending()[1].ID})
	_, ok, _ = b.Withdraw(a, r1)
	require.False(t, ok, "withdrawn twice")

	j.reset()
	b.Tick()
	require.Len(t, j.of(EventGrant), 2)
	for _, l := range b.Leases() {
		require.NotEqual(t, r1, l.ID, "the withdrawn request was granted")
	}
	_, ok, _ = b.Withdraw(a, r2)
	require.False(t, ok, "a granted request is a lease, not a request")
	_, _, err = b.Withdraw(CampaignID(7), r2)
	require.ErrorIs(t, err, ErrUnknownCampaign)
}

// Filing a request and withdrawing it before the next tick leaves the
// broker as if it had never been filed, but for the id counter: every
// later grant, lease and counter is the same.
func TestWithdrawLeavesNoTrace(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		pool := rapid.IntRange(16, 256).Draw(rt, "pool")
		gpus := rapid.IntRange(1, pool).Draw(rt, "gpus")
		n := rapid.IntRange(0, 6).Draw(rt, "others")
		run := func(withdraw bool) ([]Lease, int, int) {
			b, _ := newBroker(t, pool)
			a := mustRegister(t, b, env("a", 0, float64(pool), pool, 1e6, AgentBurst))
			c := mustRegister(t, b, env("c", 0, float64(pool), pool, 1e6, Opportunistic))
			// The withdrawn request is filed first: its id is the
			// lowest, and the others' ids are shifted by one in
			// both runs alike.
			if withdraw {
				id := mustRequest(t, b, c, gpus, 50, AnyClass)
				if _, ok, err := b.Withdraw(c, id); !ok || err != nil {
					rt.Fatalf("withdraw: %v %v", ok, err)
				}
			} else {
				b.nextID++
			}
			for i := range n {
				mustRequest(t, b, a, 1+(i*7)%pool, 20+i, AnyClass)
			}
			for range 30 {
				b.Tick()
			}
			return b.Leases(), b.Free(), b.Outstanding(c, AnyClass)
		}
		l1, f1, o1 := run(true)
		l2, f2, o2 := run(false)
		require.Equal(rt, l2, l1)
		require.Equal(rt, f2, f1)
		require.Equal(rt, 0, o1)
		require.Equal(rt, o2, o1)
	})
}

// TestDropAtKeepsTheOrder: a request dropped from a run leaves the others
// in their order, whichever side of it they shift from, as slices.Delete
// leaves them.
func TestDropAtKeepsTheOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "n")
		j := rapid.IntRange(0, n-1).Draw(t, "j")
		reqs := make([]Request, n)
		for i := range reqs {
			reqs[i] = Request{ID: i, GPUs: i + 1}
		}
		want := slices.Delete(slices.Clone(reqs), j, j+1)
		if got := dropAt(reqs, j); !slices.Equal(got, want) {
			t.Fatalf("dropAt(%d of %d) = %v, want %v", j, n, got, want)
		}
	})
}
