package policy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Admission between ticks (Broker.Admit), worked by hand.
//
// Campaign c (g 0, R 10, burst 100, B 1000) asks for 40 GPUs for 5 s at
// t = 1, after the tick that reached 1. Admit grants it at once: granted at
// 1, latency 0 (the warm path), expiring at 6. It is the lease a request
// filed at t = 0 gets from the pass of tick 1 (TestLeaseLifetimeAndGPUBucket),
// but for the latency: held at ticks 2–5 (released by the expiry step of
// tick 6), 30 tokens a tick drawn at the refills of ticks 2–5
// (1000 → 970 → 940 → 910 → 880, then +10 a tick), and the same credits.
func TestAdmitBetweenTicks(t *testing.T) {
	onRequest, j := newBroker(t, 100)
	c := mustRegister(t, onRequest, env("c", 0, 10, 100, 1000, AgentBurst))
	onRequest.Tick()
	id := mustRequest(t, onRequest, c, 40, 5, AnyClass)
	onRequest.Admit()
	require.Equal(t, 1, onRequest.Now(), "Admit does not move the clock")
	require.Empty(t, onRequest.Pending())
	l := leaseByID(t, onRequest, id)
	require.Equal(t, Lease{ID: id, Campaign: c, GPUs: 40, Class: AgentBurst, Submitted: 1, Granted: 1, Expires: 6}, l)
	g := j.of(EventGrant)
	require.Len(t, g, 1)
	require.Equal(t, 1, g[0].T)
	require.Zero(t, g[0].Latency)
	require.Equal(t, Warm, g[0].Path)

	atTick, _ := newBroker(t, 100)
	c2 := mustRegister(t, atTick, env("c", 0, 10, 100, 1000, AgentBurst))
	mustRequest(t, atTick, c2, 40, 5, AnyClass)
	atTick.Tick()
	require.Equal(t, 1, leaseByID(t, atTick, id).Granted)

	var held []int
	var tokens []float64
	for range 9 {
		onRequest.Tick()
		atTick.Tick()
		held = append(held, onRequest.Held(c, AnyClass))
		tokens = append(tokens, onRequest.Tokens(c))
		require.Equal(t, atTick.Held(c2, AnyClass), onRequest.Held(c, AnyClass), "t=%d", onRequest.Now())
		require.Equal(t, atTick.Tokens(c2), onRequest.Tokens(c), "t=%d", onRequest.Now())
		require.Equal(t, atTick.Credits(c2), onRequest.Credits(c), "t=%d", onRequest.Now())
	}
	require.Equal(t, []int{40, 40, 40, 40, 0, 0, 0, 0, 0}, held)
	require.Equal(t, []float64{970, 940, 910, 880, 890, 900, 910, 920, 930}, tokens)
	rel := j.of(EventRelease)
	require.Len(t, rel, 1)
	require.Equal(t, 6, rel[0].T)
	require.Equal(t, ReasonExpired, rel[0].Reason)
}

// Admit keeps the guarantees' reserve, as a tick's pass does: on a pool of
// 16 where sci is guaranteed 8 and holds nothing, the storm (g 0, burst
// 16) gets 8 at once and its next request waits, although 8 GPUs are free
// and its cap is not reached; sci's request for 8 is granted at once. An Admit with nothing grantable
// changes nothing and writes nothing.
func TestAdmitKeepsTheGuaranteeReserve(t *testing.T) {
	b, j := newBroker(t, 16)
	sci := mustRegister(t, b, env("sci", 8, 16, 16, 1e7, Deadline))
	storm := mustRegister(t, b, env("storm", 0, 2, 16, 1e5, AgentBurst))
	b.Tick()
	mustRequest(t, b, storm, 8, 8, AnyClass)
	b.Admit()
	require.Equal(t, 8, b.Held(storm, AnyClass))
	next := mustRequest(t, b, storm, 1, 8, AnyClass)
	j.reset()
	b.Admit()
	require.Equal(t, 8, b.Free())
	require.Len(t, b.Pending(), 1)
	require.Equal(t, next, b.Pending()[0].ID)
	require.Len(t, j.of(EventGrant), 0)
	mustRequest(t, b, sci, 8, 8, AnyClass)
	b.Admit()
	require.Equal(t, 8, b.Held(sci, AnyClass))
	require.Zero(t, b.Free())
	require.Len(t, b.Pending(), 1, "the storm's request still waits")
}
