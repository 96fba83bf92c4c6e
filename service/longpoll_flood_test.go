package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/service"
)

// pollTally counts what a crowd of long polls was answered.
type pollTally struct{ ok, early, tooMany, other, conn atomic.Int64 }

// poller re-sends one long poll on its own connection as soon as it is
// answered, until stop: the tenant of issue 34 §1.
func poller(url, token, campaign string, req int, stop <-chan struct{}, tally *pollTally) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	target := fmt.Sprintf("%s/v1/campaigns/%s/requests/%d/wait?wait=20s", url, campaign, req)
	for {
		select {
		case <-stop:
			return
		default:
		}
		r, _ := http.NewRequest(http.MethodGet, target, nil)
		r.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(r)
		if err != nil {
			// Its connection was shed while idle (more pollers than
			// the cap) or closed after a reclaimed wait's answer.
			tally.conn.Add(1)
			continue
		}
		var w client.RequestWait
		err = json.NewDecoder(resp.Body).Decode(&w)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK && err == nil && w.EndedEarly:
			tally.early.Add(1)
		case resp.StatusCode == http.StatusOK && err == nil:
			tally.ok.Add(1)
		case resp.StatusCode == http.StatusTooManyRequests:
			tally.tooMany.Add(1)
		default:
			tally.other.Add(1)
		}
	}
}

// operatorServed makes n administrator requests, each on a new
// connection, and counts those answered 200 within the timeout.
func operatorServed(t *testing.T, hc *http.Client, url, path string, n int) int {
	t.Helper()
	served := 0
	for range n {
		r, err := http.NewRequest(http.MethodGet, url+path, nil)
		require.NoError(t, err)
		r.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := hc.Do(r)
		if err != nil {
			t.Logf("%s: %v", path, err)
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			served++
		} else {
			t.Logf("%s: %d", path, resp.StatusCode)
		}
	}
	return served
}

// TestLongPollsCannotLockOutOperator: under a cap of 64 connections, one
// tenant re-sending 100 long polls on one request, then 10 tenants
// re-sending 10 each on their own pending requests, leave the operator
// served: 20/20 administrator requests and 20/20 /metrics, each on a new
// connection, on the administrator's Unix socket, and at least 18/20 on
// the main listener (20/20 unless the machine is starved of CPU). The tenants' waits beyond their share are answered 200 with
// ended_early, not dropped. Before issue 34 the long polls, busy trusted
// connections that are never shed, held every slot.
func TestLongPollsCannotLockOutOperator(t *testing.T) {
	if testing.Short() {
		t.Skip("holds 100 long polls")
	}
	sock := filepath.Join(t.TempDir(), "admin.sock")
	aln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	e, _ := serveEnv(t, service.Options{MaxConns: 64, AdminListener: aln})
	ctx := context.Background()
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	viaSocket := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}

	// Every request is left pending: the clock is driven by hand and
	// never ticks here.
	type tenant struct {
		name, token string
		reqs        []int
	}
	newTenant := func(name string, pending int) tenant {
		reg, err := e.admin.Register(ctx, spec(name))
		require.NoError(t, err)
		c := e.admin.WithToken(reg.Token)
		tn := tenant{name: name, token: reg.Token}
		for range pending {
			acc, err := c.Request(ctx, name, client.LeaseRequest{GPUs: 1, Duration: 100})
			require.NoError(t, err)
			tn.reqs = append(tn.reqs, acc.RequestID)
		}
		return tn
	}
	crowd := func(t *testing.T, tenants []tenant, perRequest int) {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var tally pollTally
		for _, tn := range tenants {
			for _, req := range tn.reqs {
				for range perRequest {
					wg.Go(func() { poller(e.url, tn.token, tn.name, req, stop, &tally) })
				}
			}
		}
		time.Sleep(time.Second) // let the crowd fill the cap
		// The main listener cannot tell the operator's new connection
		// from a tenant's until its request is read: on a machine starved
		// of CPU a connection can still lose that race (measured 19 or 20
		// of 20 with the package's tests running alongside, 7 of 20
		// before the booking). The administrator's own socket is the
		// guarantee.
		adminMain := operatorServed(t, fresh, e.url, "/v1/campaigns", 20)
		metricsMain := operatorServed(t, fresh, e.url, "/metrics", 20)
		t.Logf("main listener: administrator %d/20, /metrics %d/20", adminMain, metricsMain)
		assert.GreaterOrEqual(t, adminMain, 18, "administrator on the main listener")
		assert.GreaterOrEqual(t, metricsMain, 18, "/metrics on the main listener")
		assert.Equal(t, 20, operatorServed(t, viaSocket, "http://admin", "/v1/campaigns", 20), "administrator on its socket")
		assert.Equal(t, 20, operatorServed(t, viaSocket, "http://admin", "/metrics", 20), "/metrics on the socket")
		close(stop)
		wg.Wait()
		t.Logf("polls answered: %d at their end, %d early (made room), %d 429, %d other; %d connections lost between polls",
			tally.ok.Load(), tally.early.Load(), tally.tooMany.Load(), tally.other.Load(), tally.conn.Load())
		assert.Positive(t, tally.early.Load(), "waits over the share are answered early")
		assert.Zero(t, tally.other.Load(), "every poll is answered 200 (or 429 at the in-flight limit), none fails")
	}
	t.Run("one tenant, 100 polls on one request", func(t *testing.T) {
		crowd(t, []tenant{newTenant("alpha", 1)}, 100)
	})
	t.Run("10 tenants, 10 polls each", func(t *testing.T) {
		var ts []tenant
		for i := range 10 {
			ts = append(ts, newTenant(fmt.Sprintf("t%d", i), 10))
		}
		crowd(t, ts, 1)
	})
	_ = os.Remove(sock)
}
