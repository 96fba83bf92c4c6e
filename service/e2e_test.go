package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/service"
)

// TestLoop walks the whole negotiation through httptest with a manual
// clock, checking each answer against the broker's rules.
func TestLoop(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, service.Options{})
	h, err := e.admin.Health(ctx)
	require.NoError(t, err)
	assert.Equal(t, client.Health{Status: "ok", T: 0, Durable: false}, *h)

	reg, err := e.admin.Register(ctx, spec("sci"))
	require.NoError(t, err)
	assert.Equal(t, 0, reg.ID)
	assert.Regexp(t, `^bursar_c0_[0-9a-f]{32}$`, reg.Token)
	sci := e.admin.WithToken(reg.Token)

	sup, err := sci.Supply(ctx, "sci")
	require.NoError(t, err)
	assert.Equal(t, 512, sup.Free)
	assert.Equal(t, 10000.0, sup.Tokens)
	assert.Equal(t, 1000.0, sup.Credits)
	assert.Equal(t, client.PathWarm, sup.ExpectedPath)
	assert.Equal(t, 4.0, sup.IO.Ceiling)

	acc, err := sci.Request(ctx, "sci", client.LeaseRequest{GPUs: 48, Duration: 100})
	require.NoError(t, err)
	assert.Equal(t, client.RequestAccepted{RequestID: 1, State: client.StatePending, T: 0, GPUs: 48, Duration: 100, Class: client.ClassAgentBurst}, *acc)
	st, err := sci.RequestStatus(ctx, "sci", acc.RequestID)
	require.NoError(t, err)
	assert.Equal(t, client.StatePending, st.State)

	require.NoError(t, e.svc.Tick())
	g, err := sci.WaitGrant(ctx, "sci", acc.RequestID, 0)
	require.NoError(t, err)
	assert.Equal(t, 48, g.GPUs)
	assert.Equal(t, 1, g.Latency)
	assert.Equal(t, client.PathWarm, g.Path)
	assert.Equal(t, 2, g.Rule.ClassRank)

	ls, err := sci.Leases(ctx, "sci")
	require.NoError(t, err)
	require.Len(t, ls.Leases, 1)
	assert.Equal(t, client.Lease{ID: 1, GPUs: 48, Class: client.ClassAgentBurst, Submitted: 0, Granted: 1, Expires: 101}, ls.Leases[0])

	cr, err := sci.Consume(ctx, "sci", 10, 300)
	require.NoError(t, err)
	assert.Equal(t, client.FlowGrant{Desired: 10, Allowed: 4, Throttled: true, Tokens: 20}, cr.IO)
	assert.Equal(t, client.FlowGrant{Desired: 300, Allowed: 300, Throttled: false, Tokens: 5000}, cr.Inference)
	assert.InDelta(t, 1000-300*0.02/1000, cr.Credits, 1e-9)

	// A second request beyond the burst ceiling is held by the rate cap:
	// cap = min(64, trunc(32 + tokens/100)) = 64, held 48, so 16 of 40.
	acc2, err := sci.Request(ctx, "sci", client.LeaseRequest{GPUs: 40, Duration: 100, Class: client.ClassInteractive})
	require.NoError(t, err)
	assert.Equal(t, client.ClassInteractive, acc2.Class)
	require.NoError(t, e.svc.Tick())
	g2, err := sci.WaitGrant(ctx, "sci", acc2.RequestID, 0)
	require.NoError(t, err)
	assert.Equal(t, 16, g2.GPUs, "partial grant up to the burst ceiling")

	rr, err := sci.ReleaseLease(ctx, "sci", g.Lease)
	require.NoError(t, err)
	assert.Equal(t, client.ReleaseResult{T: 2, ReleasedLeases: 1, ReleasedGPUs: 48}, *rr)
	_, err = sci.ReleaseLease(ctx, "sci", g.Lease)
	assert.ErrorIs(t, err, client.ErrNotFound)

	_, err = sci.Request(ctx, "sci", client.LeaseRequest{GPUs: 8, Duration: 10, Class: client.ClassOpportunistic})
	require.NoError(t, err)
	rr, err = sci.ReleaseAll(ctx, "sci", client.ClassOpportunistic)
	require.NoError(t, err)
	assert.Equal(t, client.ReleaseResult{T: 2, DroppedRequests: 1, DroppedGPUs: 8}, *rr)
	rr, err = sci.ReleaseAll(ctx, "sci", "")
	require.NoError(t, err)
	assert.Equal(t, client.ReleaseResult{T: 2, ReleasedLeases: 1, ReleasedGPUs: 16}, *rr)
	rr, err = sci.ReleaseAll(ctx, "sci", "")
	require.NoError(t, err)
	assert.Equal(t, client.ReleaseResult{T: 2}, *rr, "releasing nothing is fine")

	gs, err := sci.Grants(ctx, "sci", client.Page{After: 0})
	require.NoError(t, err)
	assert.Equal(t, int64(2), gs.TotalGrants)
	assert.Equal(t, int64(64), gs.TotalGPUs)
	require.Len(t, gs.Grants, 2)
	assert.Equal(t, int64(2), gs.Next)

	j, err := sci.Journal(ctx, "", client.Page{After: 0})
	require.NoError(t, err)
	var kinds []string
	for _, r := range j.Records {
		var m map[string]any
		require.NoError(t, json.Unmarshal(r.Record, &m))
		assert.Equal(t, "sci", m["campaign"])
		kinds = append(kinds, m["event"].(string))
	}
	assert.Equal(t, []string{"register", "grant", "throttle-io", "grant", "release", "release"}, kinds)
	assert.Equal(t, "sci", j.Scope)

	c, err := sci.Campaign(ctx, "sci")
	require.NoError(t, err)
	assert.Equal(t, 2, c.Campaign.Grants)
	assert.Equal(t, 64, c.Campaign.GrantedGPUs)
	assert.Equal(t, 0, c.Campaign.Held)
}

func TestRegisterConflicts(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, service.Options{})
	e.register(t, spec("a"))
	_, err := e.admin.Register(ctx, spec("a"))
	assert.ErrorIs(t, err, client.ErrConflict, "duplicate name")

	big := spec("big")
	big.Guaranteed, big.BurstCeiling = 500, 500
	_, err = e.admin.Register(ctx, big)
	require.ErrorIs(t, err, client.ErrConflict, "overbooked")
	assert.Contains(t, err.Error(), "516 GPUs on a pool of 512")

	bad := spec("bad")
	bad.BurstCeiling = 8
	_, err = e.admin.Register(ctx, bad)
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 422, ce.StatusCode)
	assert.Equal(t, []string{"body.burst_ceiling"}, ce.Locations())

	l, err := e.admin.Campaigns(ctx)
	require.NoError(t, err)
	require.Len(t, l.Campaigns, 1, "refused registrations leave nothing behind")
	assert.Equal(t, 512, l.Free)
}

func TestBudgetExhausted(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, service.Options{})
	s := spec("poor")
	s.Budget = 0
	poor := e.register(t, s)
	_, err := poor.Request(ctx, "poor", client.LeaseRequest{GPUs: 1, Duration: 10})
	require.ErrorIs(t, err, client.ErrBudgetExhausted)
	assert.Equal(t, 402, client.StatusCode(err))
	assert.Contains(t, err.Error(), "request 1 was denied")
	acc, err := poor.Request(ctx, "poor", client.LeaseRequest{GPUs: 1, Duration: 10, Class: client.ClassOpportunistic})
	require.NoError(t, err, "opportunistic requests are free")
	assert.Equal(t, 2, acc.RequestID, "the denied request used up id 1")
	j, err := poor.Journal(ctx, "", client.Tail)
	require.NoError(t, err)
	assert.Contains(t, string(j.Records[len(j.Records)-1].Record), `"event":"deny"`)
}

func TestRequestLimits(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, service.Options{MaxPending: 3})
	a := e.register(t, spec("a"))
	_, err := a.Request(ctx, "a", client.LeaseRequest{GPUs: 513, Duration: 10})
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 422, ce.StatusCode)
	assert.Equal(t, []string{"body.gpus"}, ce.Locations())
	for range 3 {
		_, err := a.Request(ctx, "a", client.LeaseRequest{GPUs: 600 / 10, Duration: 10000})
		require.NoError(t, err)
	}
	_, err = a.Request(ctx, "a", client.LeaseRequest{GPUs: 1, Duration: 10})
	assert.ErrorIs(t, err, client.ErrTooManyPending)
	_, err = a.ReleaseAll(ctx, "a", "")
	require.NoError(t, err)
	_, err = a.Request(ctx, "a", client.LeaseRequest{GPUs: 1, Duration: 10})
	assert.NoError(t, err, "dropping pending requests frees their places")
}

func TestRequestGoneAndExpired(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, service.Options{})
	a := e.register(t, spec("a"))
	b := e.register(t, spec("b"))
	_, err := a.RequestStatus(ctx, "a", 99)
	assert.ErrorIs(t, err, client.ErrNotFound)

	acc, err := b.Request(ctx, "b", client.LeaseRequest{GPUs: 1, Duration: 10})
	require.NoError(t, err)
	_, err = a.RequestStatus(ctx, "a", acc.RequestID)
	assert.ErrorIs(t, err, client.ErrNotFound, "another campaign's request is not found through one's own URL")

	acc, err = a.Request(ctx, "a", client.LeaseRequest{GPUs: 1, Duration: 10})
	require.NoError(t, err)
	_, err = a.ReleaseAll(ctx, "a", "")
	require.NoError(t, err)
	_, err = a.WaitGrant(ctx, "a", acc.RequestID, 0)
	assert.ErrorIs(t, err, client.ErrRequestGone)
}

func TestPaging(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, service.Options{JournalKeep: 5, CampaignJournalKeep: 4, GrantKeep: 3})
	a := e.register(t, spec("a"))
	for range 6 {
		_, err := a.Request(ctx, "a", client.LeaseRequest{GPUs: 1, Duration: 1})
		require.NoError(t, err)
		require.NoError(t, e.svc.Tick())
	}
	gs, err := a.Grants(ctx, "a", client.Tail)
	require.NoError(t, err)
	assert.Equal(t, int64(6), gs.TotalGrants)
	assert.Equal(t, int64(4), gs.Oldest)
	assert.Equal(t, []int64{4, 5, 6}, seqs(gs.Grants))
	gs, err = a.Grants(ctx, "a", client.Page{After: 4, Limit: 1})
	require.NoError(t, err)
	assert.Equal(t, []int64{5}, seqs(gs.Grants))
	assert.Equal(t, int64(5), gs.Next)

	// 1 register, 6 grants, 5 expiries: 12 records, 4 retained for a.
	j, err := a.Journal(ctx, "", client.Page{After: 2})
	require.NoError(t, err)
	assert.True(t, j.Truncated)
	assert.Equal(t, int64(9), j.Oldest)
	assert.Len(t, j.Records, 4)
	assert.Equal(t, int64(12), j.Next)
	j, err = a.Journal(ctx, "", client.Page{After: j.Next})
	require.NoError(t, err)
	assert.Empty(t, j.Records)
	assert.False(t, j.Truncated)
	assert.Equal(t, int64(12), j.Next)

	all, err := e.admin.Journal(ctx, "", client.Tail)
	require.NoError(t, err)
	assert.Equal(t, "all", all.Scope)
	assert.Len(t, all.Records, 5)
	one, err := e.admin.Journal(ctx, "a", client.Page{After: -1, Limit: 2})
	require.NoError(t, err)
	assert.Equal(t, "a", one.Scope)
	assert.Equal(t, int64(12), one.Records[1].Seq)
	_, err = e.admin.Journal(ctx, "nobody", client.Tail)
	assert.ErrorIs(t, err, client.ErrNotFound)
}

func seqs(gs []client.Grant) []int64 {
	out := []int64{}
	for _, g := range gs {
		out = append(out, g.Seq)
	}
	return out
}

func TestClosedServiceAnswers503(t *testing.T) {
	e := newEnv(t, service.Options{})
	require.NoError(t, e.svc.Close())
	_, err := e.admin.Campaigns(context.Background())
	assert.True(t, errors.Is(err, client.ErrUnavailable), "%v", err)
}
