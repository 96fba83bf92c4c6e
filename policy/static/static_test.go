package static_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/policy"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/static"
)

// Partitions 30 and 70 of 100 GPUs (R 3 and 7): A at its partition waits
// while B's 70 GPUs sit idle, for as long as the request lives.
func TestIdlePartitionIsNeverLent(t *testing.T) {
	a, err := static.New(bt.Config(100, 60))
	require.NoError(t, err)
	j := &bt.Journal{}
	a.SetRecorder(j)
	ca, _ := a.Register(bt.Env("a", 3, policy.AgentBurst))
	cb, _ := a.Register(bt.Env("b", 7, policy.AgentBurst))
	_, _ = a.Request(ca, 30, 5000, policy.AnyClass)
	a.Tick()
	require.Equal(t, 30, a.Held(ca, policy.AnyClass))
	_, _ = a.Request(ca, 10, 100, policy.AnyClass)
	bt.Ticks(a, policy.RequestTTL+1)
	require.Equal(t, 30, a.Held(ca, policy.AnyClass))
	require.Equal(t, 70, a.Free())
	require.Equal(t, 0, a.Supply(ca).Free)
	require.Equal(t, 70, a.Supply(cb).Free)
	require.Len(t, j.Of(policy.EventRequestExpired), 1)
	require.Empty(t, j.Of(policy.EventPreemptNotice))
	// B's partition is whole for B.
	_, _ = a.Request(cb, 70, 10, policy.AnyClass)
	a.Tick()
	require.Equal(t, 70, a.Held(cb, policy.AnyClass))
}

// A request larger than the partition is denied at once (§6.1).
func TestLargerThanPartitionIsDenied(t *testing.T) {
	a, err := static.New(bt.Config(100, 60))
	require.NoError(t, err)
	j := &bt.Journal{}
	a.SetRecorder(j)
	ca, _ := a.Register(bt.Env("a", 3, policy.AgentBurst))
	_, _ = a.Register(bt.Env("b", 7, policy.AgentBurst))
	id, err := a.Request(ca, 31, 10, policy.AnyClass)
	require.ErrorIs(t, err, policy.ErrExceedsLimit)
	require.Positive(t, id)
	d := j.Of(policy.EventDeny)
	require.Len(t, d, 1)
	require.Equal(t, policy.ReasonExceedsLimit, d[0].Reason)
	require.Equal(t, 0, a.Outstanding(ca, policy.AnyClass))
}

// Floors: R 1 and 2 on 10 GPUs give partitions 3 and 6; the filler gets
// the remainder, 1 GPU, and only that, even with the partitions idle.
func TestFillerGetsOnlyTheRemainder(t *testing.T) {
	a, err := static.New(bt.Config(10, 60))
	require.NoError(t, err)
	ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
	_, _ = a.Register(bt.Env("b", 2, policy.AgentBurst))
	fill, _ := a.Register(bt.Env("backfill", 10, policy.Opportunistic))
	_, err = a.Request(fill, 5, 300, policy.AnyClass)
	require.ErrorIs(t, err, policy.ErrExceedsLimit)
	_, _ = a.Request(fill, 1, 300, policy.AnyClass)
	a.Tick()
	require.Equal(t, 1, a.Held(fill, policy.AnyClass))
	require.Equal(t, 3, a.Supply(ca).Free)
	// A partial grant inside the partition: 20 asked can never fit, 3 can.
	_, err = a.Request(ca, 3, 10, policy.AnyClass)
	require.NoError(t, err)
	a.Tick()
	require.Equal(t, 3, a.Held(ca, policy.AnyClass))
}
