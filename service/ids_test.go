package service_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/service"
)

// openIDs starts a service on dir; close stops it (and is idempotent, so
// that a test may restart the service before its cleanup runs).
func openIDs(t *testing.T, dir string) (e *env, close func()) {
	t.Helper()
	svc, err := service.New(service.Options{Broker: testConfig(), AdminToken: adminToken, DataDir: dir, SnapshotEvery: 5})
	require.NoError(t, err)
	srv := httptest.NewServer(svc.Handler())
	closed := false
	close = func() {
		if !closed {
			closed = true
			srv.Close()
			require.NoError(t, svc.Close())
		}
	}
	t.Cleanup(close)
	admin, err := client.New(srv.URL, adminToken)
	require.NoError(t, err)
	return &env{svc: svc, url: srv.URL, admin: admin}, close
}

// journalLeases is the lease field of every record of a journal page that
// has one.
func journalLeases(t *testing.T, j *client.Journal) []int {
	t.Helper()
	var out []int
	for _, r := range j.Records {
		var rec struct {
			Lease int `json:"lease"`
		}
		require.NoError(t, json.Unmarshal(r.Record, &rec))
		if rec.Lease != 0 {
			out = append(out, rec.Lease)
		}
	}
	return out
}

// TestCampaignRequestIDs: two campaigns that interleave their requests
// each see ids 1, 2, 3, … in every answer that carries one (request,
// status, long poll, leases, grants, their journal scope, withdraw,
// release), so that neither learns how many requests the other filed;
// the numbering survives a restart (from a snapshot and the journal tail);
// the administrator's whole journal keeps the broker's global ids.
func TestCampaignRequestIDs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, stop := openIDs(t, dir)
	tokens := map[string]string{}
	for _, name := range []string{"a", "b"} {
		reg, err := e.admin.Register(ctx, spec(name))
		require.NoError(t, err)
		tokens[name] = reg.Token
	}
	a, b := e.admin.WithToken(tokens["a"]), e.admin.WithToken(tokens["b"])

	// b files bursts of 0, 3, 1 and 2 requests between a's.
	file := func(c *client.Client, name string) int {
		acc, err := c.Request(ctx, name, client.LeaseRequest{GPUs: 2, Duration: 1000})
		require.NoError(t, err)
		return acc.RequestID
	}
	var aIDs, bIDs []int
	for _, burst := range []int{0, 3, 1, 2} {
		for range burst {
			bIDs = append(bIDs, file(b, "b"))
		}
		aIDs = append(aIDs, file(a, "a"))
	}
	assert.Equal(t, []int{1, 2, 3, 4}, aIDs, "a's ids do not count b's requests")
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6}, bIDs, "b's ids do not count a's requests")

	// The same number is a different request for each campaign.
	st, err := a.RequestStatus(ctx, "a", 4)
	require.NoError(t, err)
	assert.Equal(t, 4, st.Pending.ID)
	_, err = b.RequestStatus(ctx, "b", 6)
	require.NoError(t, err)
	_, err = a.RequestStatus(ctx, "a", 5)
	require.ErrorIs(t, err, client.ErrNotFound, "a filed four requests; b's fifth is not a's")
	ls, err := a.Leases(ctx, "a")
	require.NoError(t, err)
	ids := []int{}
	for _, p := range ls.Pending {
		ids = append(ids, p.ID)
	}
	assert.Equal(t, []int{1, 2, 3, 4}, ids)

	// Withdraw a's request 2 by its own id; b's request 2 stays.
	w, err := a.WithdrawRequest(ctx, "a", 2)
	require.NoError(t, err)
	assert.Equal(t, 2, w.RequestID)
	_, err = b.RequestStatus(ctx, "b", 2)
	require.NoError(t, err, "b's request 2 is untouched")

	require.NoError(t, e.svc.Tick())
	wait, err := a.AwaitRequest(ctx, "a", 3, 0)
	require.NoError(t, err)
	require.Equal(t, client.StateGranted, wait.State)
	assert.Equal(t, 3, wait.RequestID)
	assert.Equal(t, 3, wait.Grant.Lease)
	require.NotNil(t, wait.Lease)
	assert.Equal(t, 3, wait.Lease.ID)
	ls, err = a.Leases(ctx, "a")
	require.NoError(t, err)
	ids = ids[:0]
	for _, l := range ls.Leases {
		ids = append(ids, l.ID)
	}
	assert.Equal(t, []int{1, 3, 4}, ids)
	gs, err := a.Grants(ctx, "a", client.Page{After: -1})
	require.NoError(t, err)
	ids = ids[:0]
	for _, g := range gs.Grants {
		ids = append(ids, g.Lease)
	}
	assert.Equal(t, []int{1, 3, 4}, ids)

	// Release a's lease 4 by its own id: b's lease 4 stays.
	rr, err := a.ReleaseLease(ctx, "a", 4)
	require.NoError(t, err)
	assert.Equal(t, 1, rr.ReleasedLeases)
	st, err = b.RequestStatus(ctx, "b", 4)
	require.NoError(t, err)
	assert.Equal(t, client.StateGranted, st.State)
	_, err = a.ReleaseLease(ctx, "a", 4)
	require.ErrorIs(t, err, client.ErrNotFound)

	// The campaign's journal scope, read by its token or by the
	// administrator, carries its own ids; the whole journal the broker's.
	ja, err := a.Journal(ctx, "", client.Page{After: 0})
	require.NoError(t, err)
	assert.Equal(t, "a", ja.Scope)
	assert.Equal(t, []int{1, 3, 4, 4}, journalLeases(t, ja), "grants of 1, 3, 4, the release of 4; nothing of b's")
	jaAdmin, err := e.admin.Journal(ctx, "a", client.Page{After: 0})
	require.NoError(t, err)
	assert.Equal(t, journalLeases(t, ja), journalLeases(t, jaAdmin))
	jb, err := b.Journal(ctx, "", client.Page{After: 0})
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6}, journalLeases(t, jb))
	all, err := e.admin.Journal(ctx, "", client.Page{After: 0})
	require.NoError(t, err)
	// The broker numbered a's 1 as 1, b's 1–3 as 2–4, a's 2 (withdrawn)
	// as 5, b's 4 as 6, a's 3 as 7, b's 5–6 as 8–9 and a's 4 as 10; every
	// request but the withdrawn one was granted, and a's lease 4 (the
	// broker's 10) was released.
	assert.ElementsMatch(t, []int{1, 2, 3, 4, 6, 7, 8, 9, 10, 10}, journalLeases(t, all))

	// A restart rebuilds the numbering from the snapshot and the tail.
	want := func(c *client.Client, name string) string {
		ls, err := c.Leases(ctx, name)
		require.NoError(t, err)
		gs, err := c.Grants(ctx, name, client.Page{After: 0})
		require.NoError(t, err)
		j, err := c.Journal(ctx, "", client.Page{After: 0})
		require.NoError(t, err)
		for i := range j.Records {
			j.Records[i].Wall = 0 // a folded snapshot keeps one wall time per run of ticks
		}
		out, err := json.Marshal([]any{ls, gs, j})
		require.NoError(t, err)
		return string(out)
	}
	beforeA, beforeB := want(a, "a"), want(b, "b")
	stop()
	e2, _ := openIDs(t, dir)
	require.Positive(t, e2.svc.Report().Snapshot, "the restart loaded a snapshot")
	a2, b2 := e2.admin.WithToken(tokens["a"]), e2.admin.WithToken(tokens["b"])
	assert.Equal(t, beforeA, want(a2, "a"))
	assert.Equal(t, beforeB, want(b2, "b"))
	assert.Equal(t, 5, file(a2, "a"), "a's next request after the restart")
	assert.Equal(t, 7, file(b2, "b"))
	st, err = a2.RequestStatus(ctx, "a", 3)
	require.NoError(t, err)
	assert.Equal(t, 3, st.Grant.Lease)
	rr, err = a2.ReleaseLease(ctx, "a", 3)
	require.NoError(t, err)
	assert.Equal(t, 1, rr.ReleasedLeases)

	code, body := raw(t, e2.url, http.MethodGet, "/v1/campaigns/a/requests/6", tokens["a"], "")
	assert.Equal(t, http.StatusNotFound, code, "%s", body)
}
