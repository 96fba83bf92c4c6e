package baseline_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/fifo"
)

func newFIFO(t *testing.T, cfg policy.Config) (*baseline.Core, *bt.Journal) {
	t.Helper()
	a, err := fifo.New(cfg)
	require.NoError(t, err)
	j := &bt.Journal{}
	a.SetRecorder(j)
	return a, j
}

// Flows (docs/studies.md §6.8) on an io capacity of 10 GB/s. With no previous
// desire, A's 8 are allowed whole and B gets the 2 left. Next tick the
// total desired last tick was 14, so each gets desired · 10/14.
func TestFlowsSplitInProportionToDesire(t *testing.T) {
	cfg := bt.Config(16, 60)
	cfg.IOCapacity = 10
	a, j := newFIFO(t, cfg)
	ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
	cb, _ := a.Register(bt.Env("b", 1, policy.AgentBurst))
	io, _, err := a.Consume(ca, 8, 0)
	require.NoError(t, err)
	require.Equal(t, 8.0, io)
	io, _, _ = a.Consume(cb, 6, 0)
	require.Equal(t, 2.0, io)
	require.Equal(t, 1, a.FlowThrottled(cb, policy.IO))
	require.Len(t, j.Of(policy.EventThrottleIO), 1)
	a.Tick()
	require.Equal(t, 8.0, a.FlowUsedLastTick(ca, policy.IO))
	ioA, _, _ := a.Consume(ca, 8, 0)
	ioB, _, _ := a.Consume(cb, 6, 0)
	require.InDelta(t, 8*10.0/14, ioA, 1e-12)
	require.InDelta(t, 6*10.0/14, ioB, 1e-12)
	require.InDelta(t, 10, ioA+ioB, 1e-12)
	// Flow tokens read as the full bucket: nobody is metered per campaign.
	require.Equal(t, policy.Unmetered, a.FlowTokens(ca, policy.IO))
	_, _, err = a.Consume(ca, math.NaN(), 0)
	require.Error(t, err)
}

// What agents read (§6.5) and what they pay (§1).
func TestSupplyAndCredits(t *testing.T) {
	a, _ := newFIFO(t, bt.Config(64, 60))
	env := bt.Env("a", 16, policy.AgentBurst)
	env.Budget, env.Bucket = 1000, 5000
	ca, _ := a.Register(env)
	_, _ = a.Request(ca, 10, 4000, policy.AnyClass)
	a.Tick()
	s := a.Supply(ca)
	require.Equal(t, 54, s.Free)
	require.Equal(t, 1.0, s.Multiplier)
	require.Equal(t, 5000.0, s.Tokens)
	require.Equal(t, 5000.0, s.Bucket)
	require.Equal(t, 5000.0, a.Tokens(ca))
	require.Equal(t, policy.Warm, s.ExpectedPath)
	require.Equal(t, 1.0, a.Multiplier())
	// Charged from the tick after the grant: 3600 ticks of 10 GPUs at
	// agent-burst's 3.0 per GPU-hour = 30 credits, whatever the load.
	bt.Ticks(a, 3600)
	require.InDelta(t, 30, a.Spent(ca), 1e-9)
	_, inf, _ := a.Consume(ca, 0, 1000)
	require.Equal(t, 1000.0, inf)
	require.InDelta(t, 30.02, a.Spent(ca), 1e-9)
	require.InDelta(t, 10.0/64, a.Utilization(), 1e-3)
}

// Partial grants by the broker's rule (§6.1): at least min(want, 16).
func TestPartialGrants(t *testing.T) {
	a, j := newFIFO(t, bt.Config(40, 60))
	ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
	cb, _ := a.Register(bt.Env("b", 1, policy.AgentBurst))
	_, _ = a.Request(ca, 20, 1000, policy.AnyClass)
	a.Tick()
	lb, _ := a.Request(cb, 30, 100, policy.AnyClass)
	a.Tick()
	g, ok := j.Grant(lb)
	require.True(t, ok)
	require.Equal(t, 20, g.GPUs)
	require.Equal(t, 0, a.Outstanding(cb, policy.AnyClass)-a.Held(cb, policy.AnyClass)) // the request is finished
	// Below 16 and below want: no partial grant.
	_ = a.ReleaseAll(cb, policy.AnyClass)
	_, _ = a.Request(ca, 10, 1000, policy.AnyClass)
	a.Tick() // a holds 30, 10 free
	lb, _ = a.Request(cb, 12, 100, policy.AnyClass)
	a.Tick()
	_, ok = j.Grant(lb)
	require.False(t, ok)
}

// Unserved requests expire after the broker's TTL (§6.3); denials take an
// id and journal deny (§6.1, and the broker's budget rule).
func TestExpiryAndDenials(t *testing.T) {
	a, j := newFIFO(t, bt.Config(16, 60))
	ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
	broke := bt.Env("broke", 1, policy.AgentBurst)
	broke.Budget = 0
	cb, _ := a.Register(broke)
	_, _ = a.Request(ca, 16, 5000, policy.AnyClass)
	a.Tick()
	_, _ = a.Request(ca, 16, 10, policy.AnyClass)
	bt.Ticks(a, policy.RequestTTL)
	require.Empty(t, j.Of(policy.EventRequestExpired))
	a.Tick()
	e := j.Of(policy.EventRequestExpired)
	require.Len(t, e, 1)
	require.Equal(t, 1+policy.RequestTTL+1, e[0].T)

	id, err := a.Request(cb, 1, 10, policy.AnyClass)
	require.ErrorIs(t, err, policy.ErrBudgetExhausted)
	id2, err := a.Request(ca, 17, 10, policy.AnyClass)
	require.ErrorIs(t, err, policy.ErrExceedsLimit)
	require.Equal(t, id+1, id2)
	_, err = a.Request(cb, 1, 10, policy.Opportunistic)
	require.NoError(t, err)
	d := j.Of(policy.EventDeny)
	require.Len(t, d, 2)
	require.Equal(t, policy.ReasonBudgetExhausted, d[0].Reason)
	require.Equal(t, policy.ReasonExceedsLimit, d[1].Reason)

	_, err = a.Request(99, 1, 10, policy.AnyClass)
	require.ErrorIs(t, err, policy.ErrUnknownCampaign)
	_, err = a.Request(ca, 0, 10, policy.AnyClass)
	require.Error(t, err)
	_, err = a.Register(bt.Env("a", 1, policy.AgentBurst))
	require.ErrorIs(t, err, policy.ErrInvalidEnvelope)
	over := bt.Env("over", 1, policy.AgentBurst)
	over.Guaranteed = 17
	_, err = a.Register(over)
	require.ErrorIs(t, err, policy.ErrOverbooked)
	require.ErrorContains(t, err, "17 GPUs on a pool of 16")
}

// The journal of a baseline reads like the broker's: a grant record in
// the same layout, with the rule block.
func TestJournalLayout(t *testing.T) {
	a, j := newFIFO(t, bt.Config(16, 60))
	ca, _ := a.Register(bt.Env("a", 1, policy.AgentBurst))
	_, _ = a.Request(ca, 4, 10, policy.AnyClass)
	a.Tick()
	bt.Ticks(a, 10)
	require.Equal(t, `{"t": 0, "event": "register", "campaign": "a", "guaranteed": 0, "R": 1, "B": 1000000, "burst": 1048576}
{"t": 1, "event": "grant", "lease": 1, "campaign": "a", "gpus": 4, "cls": "agent-burst", "latency": 1, "path": "warm", "rule": {"class_rank": 2, "fair_deficit": 0, "tokens": 1000000}}
{"t": 11, "event": "release", "lease": 1, "campaign": "a", "gpus": 4, "reason": "expired"}
`, string(j.Bytes))
}

// A trace job's site queue is kept by its place among the names filed so
// far (Request.Queue, Lease.Queue), 0 for none, and QueueName gives the
// name back; a copy of the Core (a fair-start fork) names its own new
// queues without renaming the original's.
func TestSiteQueuesByName(t *testing.T) {
	a, _ := newFIFO(t, bt.Config(8, 10))
	c, err := a.Register(bt.Env("c", 1, policy.AgentBurst))
	require.NoError(t, err)
	_, err = a.RequestRigid(c, 8, 1000, 1000, policy.AgentBurst, 1) // the whole pool: the others wait
	require.NoError(t, err)
	a.Tick()
	file := func(k *baseline.Core, queue string) baseline.SiteQueue {
		t.Helper()
		id, err := k.RequestRigidQueued(c, 1, 10, 10, policy.AgentBurst, k.Now()+1, queue)
		require.NoError(t, err)
		return k.Pend(k.Index(id)).Queue
	}
	require.Equal(t, baseline.SiteQueue(0), file(a, ""))
	low, high := file(a, "low"), file(a, "high")
	require.Equal(t, low, file(a, "low"))
	require.NotEqual(t, low, high)
	require.Positive(t, low)
	require.Equal(t, "low", a.QueueName(low))
	require.Equal(t, "high", a.QueueName(high))
	require.Empty(t, a.QueueName(0))
	require.Empty(t, a.QueueName(99))
	cp, err := a.Clone()
	require.NoError(t, err)
	k := cp.(*baseline.Core)
	standby := file(k, "standby")
	other := file(a, "normal")
	require.Equal(t, "standby", k.QueueName(standby))
	require.Equal(t, "normal", a.QueueName(other))
	require.Equal(t, "low", k.QueueName(low))
}
