package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/internal/pollcrowd"
)

// TestLongPollFloodOperatorServed is issue 34 §1 against the real binary
// under ulimit -n 512 (a cap of 448 connections): one tenant re-sending
// 600 long polls on its one pending request, then 60 tenants re-sending 10
// each on their own pending requests. The operator is served 20/20
// administrator requests and 20/20 /metrics, each on a new connection,
// on its --admin-listen socket, and most of them on the main listener
// (which cannot tell its new connection from a tenant's before reading
// it); the tenants' polls are answered, never failed. Before, the polls
// held every slot: 0/20 administrator requests and /metrics refused.
func TestLongPollFloodOperatorServed(t *testing.T) {
	if testing.Short() {
		t.Skip("holds 600 long polls")
	}
	sock := filepath.Join(t.TempDir(), "admin.sock")
	p := startServeLimited(t, 512, cleanEnv(), "--admin-token-file", tokenFile(t), "--speed", "0.001",
		"--admin-listen", "unix:"+sock)
	require.Eventually(t, func() bool { return strings.Contains(p.stderr.String(), "connection limit lowered") },
		10*time.Second, 20*time.Millisecond, "%s", p.stderr)
	require.Equal(t, float64(448), metrics(t, p.url)["bursar_connections_limit"])

	ctx := context.Background()
	admin, err := client.New(p.url, testToken)
	require.NoError(t, err)
	fresh, viaSocket := pollcrowd.FreshClient(), pollcrowd.SocketClient(sock)
	newTenant := func(name string, pending int) pollcrowd.Tenant {
		// 16 GPUs each: the clock (a tick every 1,000 s) grants none
		// during the test, so every request stays pending.
		tn, err := pollcrowd.NewTenant(ctx, admin, client.CampaignSpec{Name: name, Budget: 1e6, Guaranteed: 8, Sustained: 8,
			BurstCeiling: 16, Bucket: 1000, Class: client.ClassAgentBurst}, pending, client.LeaseRequest{GPUs: 16, Duration: 100})
		require.NoError(t, err)
		return tn
	}
	served := func(t *testing.T, hc *http.Client, url, path string) int {
		n, failures := pollcrowd.Served(hc, url, path, testToken, 20)
		for _, f := range failures {
			t.Logf("%s: %s", path, f)
		}
		return n
	}
	crowd := func(t *testing.T, tenants []pollcrowd.Tenant, perRequest int) {
		tally, stop := pollcrowd.Start(p.url, tenants, perRequest)
		// A failed assertion below must not leave the crowd polling into
		// the next subtest (stop is idempotent).
		var once sync.Once
		stopOnce := func() { once.Do(stop) }
		defer stopOnce()
		time.Sleep(2 * time.Second) // let the crowd fill the cap
		assert.Equal(t, 20, served(t, viaSocket, "http://admin", "/v1/campaigns"), "administrator on its socket")
		assert.Equal(t, 20, served(t, viaSocket, "http://admin", "/metrics"), "/metrics on the socket")
		adminMain := served(t, fresh, p.url, "/v1/campaigns")
		metricsMain := served(t, fresh, p.url, "/metrics")
		t.Logf("main listener: administrator %d/20, /metrics %d/20", adminMain, metricsMain)
		assert.GreaterOrEqual(t, adminMain, 10, "administrator on the main listener: most, not none")
		assert.GreaterOrEqual(t, metricsMain, 10, "/metrics on the main listener: most, not none")
		// Read over the socket: the main listener may refuse a few
		// requests during the flood (asserted above), so a read there
		// would make this test fail by design, not by defect.
		m := metricsVia(t, viaSocket, "http://admin")
		stopOnce()
		t.Logf("polls answered: %s; waits open %v, reclaimed %v, refused %v", tally,
			m["bursar_waits_open"], m["bursar_connections_reclaimed_total"], m["bursar_connections_refused_total"])
		assert.Positive(t, tally.Early.Load(), "waits over the share are answered early")
		assert.Zero(t, tally.Other.Load(), "every poll is answered 200 (or 429 at the in-flight limit), none fails")
		assert.LessOrEqual(t, m["bursar_waits_open"], float64(224), "the waits hold at most half the cap")
	}
	alpha := newTenant("alpha", 1)
	t.Run("one tenant, 600 polls", func(t *testing.T) {
		crowd(t, []pollcrowd.Tenant{alpha}, 600)
	})
	t.Run("60 tenants, 10 polls each", func(t *testing.T) {
		var ts []pollcrowd.Tenant
		for i := range 60 {
			ts = append(ts, newTenant(fmt.Sprintf("t%02d", i), 10))
		}
		crowd(t, ts, 1)
	})
	// A campaign token is refused on the administrator's socket (and
	// served on the main listener).
	_, failures := pollcrowd.Served(viaSocket, "http://admin", "/v1/campaigns/alpha", alpha.Token, 1)
	assert.Equal(t, []string{"403 Forbidden"}, failures)
	n, _ := pollcrowd.Served(fresh, p.url, "/v1/campaigns/alpha", alpha.Token, 1)
	assert.Equal(t, 1, n)
}
