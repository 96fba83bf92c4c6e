package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/service"
)

const (
	loadCampaigns = 50
	loadRequests  = 200
)

// TestLoad runs 50 campaigns concurrently, each filing 200 requests (with
// supply reads and io/inference metering in between), against a durable
// service served the way `bursar serve` serves it. Every call must
// succeed, every request must be granted, and the grants the campaigns see
// must agree with the broker journal, before and after a restart from the
// journal file.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	ctx := context.Background()
	dir := t.TempDir()
	opts := service.Options{Speed: 500, DataDir: dir, JournalKeep: 100000, CampaignJournalKeep: 10000, GrantKeep: loadRequests}
	e, stop := serveEnv(t, opts)

	camps := make([]*client.Client, loadCampaigns)
	for i := range camps {
		s := client.CampaignSpec{Name: fmt.Sprintf("load%02d", i), Budget: 1e6, Guaranteed: 8, Sustained: 64, BurstCeiling: 64,
			Bucket: 1e6, Class: client.ClassAgentBurst, Inference: &client.FlowSpec{Rate: 100, Bucket: 1000, Ceiling: 200}}
		camps[i] = e.register(t, s)
	}

	start := time.Now()
	var calls, failures atomic.Int64
	var firstErr sync.Once
	accepted := make([][]int, loadCampaigns)
	var wg sync.WaitGroup
	for i, c := range camps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("load%02d", i)
			fail := func(err error) {
				failures.Add(1)
				firstErr.Do(func() { t.Errorf("campaign %s: %v", name, err) })
			}
			for r := range loadRequests {
				acc, err := c.Request(ctx, name, client.LeaseRequest{GPUs: 1 + r%4, Duration: 2})
				calls.Add(1)
				if err != nil {
					fail(err)
					continue
				}
				accepted[i] = append(accepted[i], acc.RequestID)
				if r%10 == 0 {
					_, err := c.Supply(ctx, name)
					calls.Add(1)
					if err != nil {
						fail(err)
					}
					_, err = c.Consume(ctx, name, 1, 50)
					calls.Add(1)
					if err != nil {
						fail(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	require.Zero(t, failures.Load(), "failed calls")
	t.Logf("%d calls from %d campaigns in %v (%.0f calls/s)", calls.Load(), loadCampaigns, elapsed.Round(time.Millisecond),
		float64(calls.Load())/elapsed.Seconds())

	// Wait for admission to grant what is still pending.
	deadline := time.Now().Add(30 * time.Second)
	for {
		l, err := e.admin.Campaigns(ctx)
		require.NoError(t, err)
		pending := 0
		for _, c := range l.Campaigns {
			pending += c.PendingRequests
		}
		if pending == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "%d requests still pending", pending)
		time.Sleep(20 * time.Millisecond)
	}

	// What the campaigns see: every accepted request granted once.
	var seenGrants, seenGPUs int64
	perCampaign := map[string]int64{}
	for i, c := range camps {
		name := fmt.Sprintf("load%02d", i)
		gs, err := c.Grants(ctx, name, client.Page{After: 0, Limit: 1000})
		require.NoError(t, err)
		assert.Equal(t, int64(loadRequests), gs.TotalGrants, name)
		var leases []int
		var gpus int64
		for _, g := range gs.Grants {
			leases = append(leases, g.Lease)
			gpus += int64(g.GPUs)
		}
		assert.Equal(t, gs.TotalGPUs, gpus, name)
		slices.Sort(leases)
		assert.Equal(t, accepted[i], leases, "%s: the grants are for exactly the accepted requests", name)
		seenGrants += gs.TotalGrants
		seenGPUs += gs.TotalGPUs
		perCampaign[name] = gs.TotalGPUs
	}
	assert.Equal(t, int64(loadCampaigns*loadRequests), seenGrants)

	// What the journal says.
	grants, gpus, expired, byCampaign := journalGrants(t, e.admin)
	assert.Equal(t, seenGrants, grants, "grant records in the journal")
	assert.Equal(t, seenGPUs, gpus, "GPUs over the grant records in the journal")
	assert.Zero(t, expired, "expired requests")
	assert.Equal(t, perCampaign, byCampaign)

	// And after a restart from the journal file.
	stop()
	opts.Speed = 0
	e2, _ := serveEnv(t, opts)
	grants2, gpus2, _, byCampaign2 := journalGrants(t, e2.admin)
	assert.Equal(t, grants, grants2)
	assert.Equal(t, gpus, gpus2)
	assert.Equal(t, byCampaign, byCampaign2)
	l, err := e2.admin.Campaigns(ctx)
	require.NoError(t, err)
	for _, c := range l.Campaigns {
		assert.Equal(t, loadRequests, c.Grants, c.Name)
		assert.Equal(t, perCampaign[c.Name], int64(c.GrantedGPUs), c.Name)
	}
}

// journalGrants pages through the administrator's journal and sums the
// grant records.
func journalGrants(t *testing.T, admin *client.Client) (grants, gpus, expired int64, byCampaign map[string]int64) {
	t.Helper()
	byCampaign = map[string]int64{}
	after := int64(0)
	for {
		j, err := admin.Journal(context.Background(), "", client.Page{After: after, Limit: 1000})
		require.NoError(t, err)
		require.False(t, j.Truncated)
		if len(j.Records) == 0 {
			return
		}
		for _, r := range j.Records {
			var rec struct {
				Event    string `json:"event"`
				Campaign string `json:"campaign"`
				GPUs     int64  `json:"gpus"`
			}
			require.NoError(t, json.Unmarshal(r.Record, &rec))
			switch rec.Event {
			case "grant":
				grants++
				gpus += rec.GPUs
				byCampaign[rec.Campaign] += rec.GPUs
			case "request-expired":
				expired++
			}
		}
		after = j.Next
	}
}
