package service_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
)

// TestWallClockInJournal: journal records carry the wall-clock time (UTC,
// ms) of the operation that made them, in the journal file and in the
// API, and keep it across a restart; a record written without one (an
// older journal) replays as before.
func TestWallClockInJournal(t *testing.T) {
	ctx := context.Background()
	opts := serviceOptionsWithDir(t)
	before := time.Now().UnixMilli()
	e := newEnv(t, opts)
	c := e.register(t, spec("a"))
	_, err := c.Request(ctx, "a", client.LeaseRequest{GPUs: 2, Duration: 100})
	require.NoError(t, err)
	require.NoError(t, e.svc.Tick())
	after := time.Now().UnixMilli()

	for _, l := range strings.Split(strings.TrimSpace(readWAL(t, opts.DataDir)), "\n") {
		var o struct {
			Op   string `json:"op"`
			Wall int64  `json:"wall"`
		}
		require.NoError(t, json.Unmarshal([]byte(l[9:]), &o))
		if o.Op != "open" {
			assert.True(t, before <= o.Wall && o.Wall <= after, "%s: wall %d not in [%d, %d]", o.Op, o.Wall, before, after)
		}
	}
	j, err := e.admin.Journal(ctx, "", client.Page{After: -1, Limit: 100})
	require.NoError(t, err)
	require.NotEmpty(t, j.Records)
	walls := map[int64]int64{}
	for _, r := range j.Records {
		assert.True(t, before <= r.Wall && r.Wall <= after, "record %d: wall %d", r.Seq, r.Wall)
		walls[r.Seq] = r.Wall
	}
	require.NoError(t, e.svc.Close())
	e2 := newEnv(t, opts)
	j2, err := e2.admin.Journal(ctx, "", client.Page{After: -1, Limit: 100})
	require.NoError(t, err)
	require.Len(t, j2.Records, len(j.Records))
	for _, r := range j2.Records {
		assert.Equal(t, walls[r.Seq], r.Wall, "record %d keeps its wall time across a restart", r.Seq)
	}
}
