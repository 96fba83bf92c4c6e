package fifo_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/policy"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/fifo"
)

// The EASY reservation, worked by hand on 10 GPUs. A holds 6 until t=101.
// B (8 GPUs, the head) cannot start: its shadow time is s = 101, with
// x = 4 + 6 − 8 = 2 extra GPUs. C (4 GPUs, 200 s) fits now but would end
// at 202 > s and is larger than x: it must wait, or B would be late. D
// (2 GPUs, 200 s) fits in x and starts; E (2 GPUs, 50 s) ends by s and
// starts. B starts at 101, exactly its reservation; C when B ends, 151.
func TestEASYBackfillNeverDelaysTheReservation(t *testing.T) {
	a, err := fifo.New(bt.Config(10, 60))
	require.NoError(t, err)
	j := &bt.Journal{}
	a.SetRecorder(j)
	var c [5]policy.CampaignID
	for i, n := range []string{"a", "b", "c", "d", "e"} {
		c[i], err = a.Register(bt.Env(n, 1, policy.AgentBurst))
		require.NoError(t, err)
	}
	la, _ := a.Request(c[0], 6, 100, policy.AnyClass)
	a.Tick()
	lb, _ := a.Request(c[1], 8, 50, policy.AnyClass)
	lc, _ := a.Request(c[2], 4, 200, policy.AnyClass)
	ld, _ := a.Request(c[3], 2, 200, policy.AnyClass)
	le, _ := a.Request(c[4], 2, 50, policy.AnyClass)
	bt.Ticks(a, 200)
	want := map[int]int{la: 1, ld: 2, le: 2, lb: 101, lc: 151}
	for id, at := range want {
		g, ok := j.Grant(id)
		require.True(t, ok, "lease %d granted", id)
		require.Equal(t, at, g.T, "lease %d", id)
	}
	require.Empty(t, j.Of(policy.EventPreemptNotice))
}

// The filler is preempted (newest first, with notice) when that lets the
// head start, and the GPUs freed are reserved for the head: a later,
// smaller request that fits in them does not take them.
func TestFillerPreemptedForHeadWithReservation(t *testing.T) {
	a, err := fifo.New(bt.Config(10, 5))
	require.NoError(t, err)
	j := &bt.Journal{}
	a.SetRecorder(j)
	fill, _ := a.Register(bt.Env("backfill", 10, policy.Opportunistic))
	ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
	cb, _ := a.Register(bt.Env("b", 1, policy.AgentBurst))
	f1, _ := a.Request(fill, 4, 1000, policy.AnyClass)
	a.Tick()
	f2, _ := a.Request(fill, 6, 1000, policy.AnyClass)
	a.Tick()
	require.Equal(t, 0, a.Free())
	la, _ := a.Request(ca, 5, 100, policy.AnyClass)
	a.Tick() // t=3: the head needs 5: the newest filler lease (6) covers it
	n := j.Of(policy.EventPreemptNotice)
	require.Len(t, n, 1)
	require.Equal(t, f2, n[0].Lease)
	_, _ = a.Request(cb, 1, 100, policy.AnyClass)
	bt.Ticks(a, 5) // t=8: f2 ends; 5 for a, 1 for b
	g, ok := j.Grant(la)
	require.True(t, ok)
	require.Equal(t, 8, g.T)
	require.Equal(t, 1, a.Held(cb, policy.AnyClass))
	require.Equal(t, 4, a.Held(fill, policy.AnyClass))
	_ = f1
}

// fifo copies its own rule for a fork (CloneRule): what
// internal/deepcopy would copy, field for field, along a small workload.
func TestCloneRuleCopiesEveryField(t *testing.T) {
	a, err := fifo.New(bt.Config(8, 10))
	require.NoError(t, err)
	require.NoError(t, bt.CloneRuleMatchesAlong(a))
}
