package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
)

// observed is what one campaign's agent was told, i.e. what the service
// acknowledged.
type observed struct {
	name     string
	token    string
	accepted []int                // request ids answered 202
	grants   map[int]client.Grant // grants read, by lease
	released []int                // leases whose release was answered 200
	maxT     int                  // latest broker time in an answer
}

// TestCrashAndReplay kills `bursar serve` with SIGKILL in the middle of a
// loaded run, damages the tail of its journal file the way a torn write
// would, restarts it and checks that nothing acknowledged was lost: every
// accepted request is still pending or granted, every grant read is there
// unchanged, every release answered stays released, every journal record
// read is there unchanged, the clock did not go back, and request ids go
// on where they stopped.
func TestCrashAndReplay(t *testing.T) {
	ctx := context.Background()
	dir, tok := t.TempDir(), tokenFile(t)
	args := []string{"--data-dir", dir, "--admin-token-file", tok,
		"--journal-keep", "1000000", "--campaign-journal-keep", "100000", "--grant-keep", "100000",
		// Snapshots (with the journal truncated behind them) every few
		// hundred records, so that several happen under the load and the
		// kill may land in the middle of one.
		"--snapshot-every", "200",
		// The load writes as fast as the machine lets it; the write
		// rate limit (tested in service/tenant_test.go) would answer a
		// fast moment with 429, which is not what this test is about.
		"--write-rate", "-1"}
	p := startServe(t, cleanEnv(), append(args, "--speed", "100")...)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	admin, err := client.New(p.url, testToken, client.WithHTTPClient(hc))
	require.NoError(t, err)

	const campaigns = 8
	obs := make([]*observed, campaigns)
	for i := range obs {
		name := fmt.Sprintf("crash%d", i)
		reg, err := admin.Register(ctx, client.CampaignSpec{Name: name, Budget: 1e6, Guaranteed: 16, Sustained: 32, BurstCeiling: 96,
			Bucket: 20000, Class: client.ClassAgentBurst, Inference: &client.FlowSpec{Rate: 100, Bucket: 1000, Ceiling: 300}})
		require.NoError(t, err)
		obs[i] = &observed{name: name, token: reg.Token, grants: map[int]client.Grant{}}
	}

	var killed atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var unexpected sync.Once
	// fail records an error that happened before the kill: the load itself
	// must run clean.
	fail := func(o *observed, what string, err error) bool {
		if err == nil {
			return false
		}
		if !killed.Load() {
			unexpected.Do(func() { t.Errorf("%s %s before the kill: %v", o.name, what, err) })
		}
		return true
	}
	for i, o := range obs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := admin.WithToken(o.token)
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			var cursor int64
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				acc, err := c.Request(ctx, o.name, client.LeaseRequest{GPUs: 1 + rng.IntN(8), Duration: 50 + rng.IntN(100)})
				if fail(o, "request", err) {
					return
				}
				o.accepted = append(o.accepted, acc.RequestID)
				o.maxT = max(o.maxT, acc.T)
				switch n % 4 {
				case 1:
					gs, err := c.Grants(ctx, o.name, client.Page{After: cursor, Limit: 1000})
					if fail(o, "grants", err) {
						return
					}
					for _, g := range gs.Grants {
						o.grants[g.Lease] = g
					}
					cursor = gs.Next
					o.maxT = max(o.maxT, gs.T)
				case 2:
					cr, err := c.Consume(ctx, o.name, 0, 100)
					if fail(o, "consume", err) {
						return
					}
					o.maxT = max(o.maxT, cr.T)
				case 3:
					ls, err := c.Leases(ctx, o.name)
					if fail(o, "leases", err) {
						return
					}
					if len(ls.Leases) == 0 {
						continue
					}
					lease := ls.Leases[rng.IntN(len(ls.Leases))].ID
					rr, err := c.ReleaseLease(ctx, o.name, lease)
					if errors.Is(err, client.ErrNotFound) {
						continue // it expired in between
					}
					if fail(o, "release", err) {
						return
					}
					o.released = append(o.released, lease)
					o.maxT = max(o.maxT, rr.T)
				}
			}
		}()
	}
	// The administrator follows the journal meanwhile.
	seen := map[int64][]byte{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		var after int64
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			j, err := admin.Journal(ctx, "", client.Page{After: after, Limit: 1000})
			if err != nil {
				return
			}
			for _, r := range j.Records {
				seen[r.Seq] = r.Record
			}
			after = j.Next
		}
	}()

	time.Sleep(1500 * time.Millisecond)
	killed.Store(true)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	<-p.done
	close(stop)
	wg.Wait()

	var accepted, grants, released int
	for _, o := range obs {
		accepted += len(o.accepted)
		grants += len(o.grants)
		released += len(o.released)
	}
	t.Logf("acknowledged before the kill: %d requests, %d grants read, %d releases, %d journal records", accepted, grants, released, len(seen))
	require.Greater(t, accepted, 100, "the load ran")
	require.Greater(t, grants, 10)
	require.Greater(t, released, 2)
	require.Contains(t, p.stderr.String(), "snapshot written", "snapshots happened during the load")

	// A torn record at the tail, as a write cut short by the crash leaves.
	wal := filepath.Join(dir, "bursar.wal")
	f, err := os.OpenFile(wal, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`0badc0de {"op":"request","t":`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	// Restart with a clock that will not tick during the checks.
	p2 := startServe(t, cleanEnv(), append(args, "--speed", "0.001")...)
	// The log line is copied from the child's stderr by a goroutine of
	// exec's: it may arrive after the "serving on" line on stdout.
	assert.Eventually(t, func() bool { return strings.Contains(p2.stderr.String(), "damaged tail cut") }, 5*time.Second, 10*time.Millisecond,
		"%s", p2.stderr)
	admin2, err := client.New(p2.url, testToken)
	require.NoError(t, err)
	h, err := admin2.Health(ctx)
	require.NoError(t, err)

	maxID := 0
	for _, o := range obs {
		c := admin2.WithToken(o.token)
		ls, err := c.Leases(ctx, o.name)
		require.NoError(t, err, "%s: its token works after the crash", o.name)
		pending, active := map[int]bool{}, map[int]bool{}
		for _, r := range ls.Pending {
			pending[r.ID] = true
		}
		for _, l := range ls.Leases {
			active[l.ID] = true
		}
		after := map[int]client.Grant{}
		var cursor int64
		for {
			gs, err := c.Grants(ctx, o.name, client.Page{After: cursor, Limit: 1000})
			require.NoError(t, err)
			if len(gs.Grants) == 0 {
				break
			}
			for _, g := range gs.Grants {
				after[g.Lease] = g
			}
			cursor = gs.Next
		}
		for _, id := range o.accepted {
			_, granted := after[id]
			assert.True(t, pending[id] || granted, "%s: accepted request %d is lost", o.name, id)
			if o.name == obs[0].name {
				// Ids are per campaign (service/ids.go).
				maxID = max(maxID, id)
			}
		}
		for lease, g := range o.grants {
			assert.Equal(t, g, after[lease], "%s: grant of lease %d changed", o.name, lease)
		}
		for _, lease := range o.released {
			assert.False(t, active[lease], "%s: released lease %d is back", o.name, lease)
		}
		assert.LessOrEqual(t, o.maxT, h.T, "%s: the clock went back", o.name)
	}

	var cursor int64
	recovered := 0
	for {
		j, err := admin2.Journal(ctx, "", client.Page{After: cursor, Limit: 1000})
		require.NoError(t, err)
		if len(j.Records) == 0 {
			break
		}
		for _, r := range j.Records {
			if want, ok := seen[r.Seq]; ok {
				recovered++
				assert.True(t, bytes.Equal(want, r.Record), "journal record %d changed: %s → %s", r.Seq, want, r.Record)
			}
		}
		cursor = j.Next
	}
	assert.Equal(t, len(seen), recovered, "every journal record read before the crash is there")

	acc, err := admin2.WithToken(obs[0].token).Request(ctx, obs[0].name, client.LeaseRequest{GPUs: 1, Duration: 10})
	require.NoError(t, err)
	assert.Greater(t, acc.RequestID, maxID, "the campaign's request ids go on where they stopped")
}
