package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/service"
)

const admin = "client-test-admin-token-0123"

func newService(t *testing.T) (*service.Service, *client.Client) {
	svc, err := service.New(service.Options{Broker: policy.DefaultConfig(64), AdminToken: admin})
	require.NoError(t, err)
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(func() {
		srv.Close()
		svc.Close()
	})
	c, err := client.New(srv.URL+"/", admin)
	require.NoError(t, err)
	return svc, c
}

func TestNewRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8642", "ftp://x", "http://", "http://[::1"} {
		_, err := client.New(u, "")
		assert.Error(t, err, u)
	}
}

func TestAgainstService(t *testing.T) {
	ctx := context.Background()
	svc, adm := newService(t)
	reg, err := adm.Register(ctx, client.CampaignSpec{Name: "c", Budget: 10, Guaranteed: 4, Sustained: 4, BurstCeiling: 8, Bucket: 100, Class: client.ClassDeadline})
	require.NoError(t, err)
	c := adm.WithToken(reg.Token)
	assert.Equal(t, adm.BaseURL(), c.BaseURL())

	acc, err := c.Request(ctx, "c", client.LeaseRequest{GPUs: 4, Duration: 10})
	require.NoError(t, err)
	require.NoError(t, svc.Tick())
	g, err := c.WaitGrant(ctx, "c", acc.RequestID, time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, client.ClassDeadline, g.Class)

	// A request the rate cap holds: WaitGrant gives up with the context.
	acc, err = c.Request(ctx, "c", client.LeaseRequest{GPUs: 8, Duration: 100000})
	require.NoError(t, err)
	require.NoError(t, svc.Tick())
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	_, err = c.WaitGrant(short, "c", acc.RequestID, 5*time.Millisecond)
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	_, err = c.Request(ctx, "c", client.LeaseRequest{GPUs: 0, Duration: 10})
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 422, ce.StatusCode)
	assert.Equal(t, []string{"body.gpus"}, ce.Locations())
	assert.Contains(t, err.Error(), "POST /v1/campaigns/c/requests: 422 Unprocessable Entity")
	assert.Contains(t, err.Error(), "body.gpus:")

	_, err = c.Campaigns(ctx)
	assert.ErrorIs(t, err, client.ErrForbidden)
	assert.Equal(t, 403, client.StatusCode(err))
	_, err = adm.WithToken("").Supply(ctx, "c")
	assert.ErrorIs(t, err, client.ErrUnauthorized)
	assert.False(t, errors.Is(err, client.ErrForbidden))
	assert.Equal(t, 0, client.StatusCode(errors.New("other")))
}

// TestNonProblemAnswers: whatever a proxy in between answers, the client
// returns an *Error with the status, and sends the token as a bearer token.
func TestNonProblemAnswers(t *testing.T) {
	var gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		switch r.URL.Path {
		case "/healthz":
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "<html>bad gateway</html>")
		default:
			_, _ = io.WriteString(w, "{not json")
		}
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, "tok")
	require.NoError(t, err)
	_, err = c.Health(context.Background())
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 502, ce.StatusCode)
	assert.Contains(t, ce.Problem.Detail, "bad gateway")
	assert.Equal(t, "Bearer tok", gotAuth)
	_, err = c.Supply(context.Background(), "x")
	assert.ErrorContains(t, err, "decode answer")

	_, err = c.WithToken("").Health(context.Background())
	require.Error(t, err)
	assert.Empty(t, gotAuth, "no token, no header")
}

func TestPageQuery(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.RawQuery)
		_, _ = io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, "")
	require.NoError(t, err)
	ctx := context.Background()
	_, _ = c.Journal(ctx, "", client.Tail)
	_, _ = c.Journal(ctx, "x", client.Page{After: 0, Limit: 5})
	_, _ = c.Grants(ctx, "x", client.Page{After: 7})
	_, _ = c.ReleaseAll(ctx, "x", client.ClassOpportunistic)
	assert.Equal(t, []string{"", "after=0&campaign=x&limit=5", "after=7", "class=opportunistic"}, got)
}
