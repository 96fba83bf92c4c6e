package trace

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A log whose queues are numbered, not named: its queues are ranked by
// their longest recorded time (requested or run, over the whole log, the
// window or not), shorter first, equal times sharing a tier. Queue 1's
// longest time is job 7's 20,000 s requested, outside the window; queues
// 2 and 4 tie at 14,400 s; queue 3 has 86,400 s. Three distinct times:
// ranks 0, 1, 2 take rankedTiers[⌊4·r ÷ 3⌋] = express, high, normal:
// queue 2 and 4 (14,400 s) express, queue 1 (20,000 s) high, queue 3
// normal. A job in no queue (−1) is filed in none.
const numberedLog = `; MaxProcs: 8
1 10 -1 100 1 -1 -1 1 3600 -1 1 1 1 -1 1 -1 -1 -1
2 20 -1 100 1 -1 -1 1 14400 -1 1 1 1 -1 2 -1 -1 -1
3 30 -1 90000 1 -1 -1 1 86400 -1 1 1 1 -1 3 -1 -1 -1
4 40 -1 100 1 -1 -1 1 14400 -1 1 1 1 -1 4 -1 -1 -1
5 50 -1 100 1 -1 -1 1 600 -1 1 1 1 -1 -1 -1 -1 -1
6 60 -1 100 1 -1 -1 1 600 -1 1 1 1 -1 3 -1 -1 -1
7 5000 -1 100 1 -1 -1 1 20000 -1 1 1 1 -1 1 -1 -1 -1
`

func TestNumberedQueuesRankedByMaxRunTime(t *testing.T) {
	w, err := read(t, numberedLog, Options{Until: 1000})
	require.NoError(t, err)
	require.Len(t, w.Jobs, 6)
	want := []QueueTier{
		{Queue: 1, MaxTime: 20000, Tier: "high", By: TierByRunTime},
		{Queue: 2, MaxTime: 14400, Tier: "express", By: TierByRunTime},
		// Job 3 ran 90,000 s against 86,400 requested: the longer counts.
		{Queue: 3, MaxTime: 90000, Tier: "normal", By: TierByRunTime},
		{Queue: 4, MaxTime: 14400, Tier: "express", By: TierByRunTime},
	}
	assert.Equal(t, want, w.QueueTiers)
	var filed []string
	for i := range w.Jobs {
		filed = append(filed, w.SiteQueue(&w.Jobs[i]))
	}
	assert.Equal(t, []string{"high", "express", "normal", "express", "", "normal"}, filed)
}

// A lone queue (or queues that all recorded the same longest time) is
// normal: there is nothing to rank.
func TestOneNumberedQueueIsNormal(t *testing.T) {
	w, err := read(t, `; MaxProcs: 8
1 10 -1 100 1 -1 -1 1 3600 -1 1 1 1 -1 5 -1 -1 -1
2 20 -1 100 1 -1 -1 1 600 -1 1 1 1 -1 5 -1 -1 -1
`, Options{})
	require.NoError(t, err)
	assert.Equal(t, []QueueTier{{Queue: 5, MaxTime: 3600, Tier: "normal", By: TierByRunTime}}, w.QueueTiers)
}

// Where the header names queues after tiers they keep their names' tiers
// and are filed by name, as before; a queue with another name is normal
// and keeps its name. A config's tiers win over both, by name or by
// number, and a tier that is none is an error naming the queue.
func TestNamedQueuesAndOverrides(t *testing.T) {
	log := `; MaxProcs: 8
; Queue: 0 interactive
; Queue: 1 Low
; Queue: 2 batch
1 10 -1 100 1 -1 -1 1 60 -1 1 1 1 -1 0 -1 -1 -1
2 20 -1 100 1 -1 -1 1 3600 -1 1 1 1 -1 1 -1 -1 -1
3 30 -1 100 1 -1 -1 1 600 -1 1 1 1 -1 2 -1 -1 -1
4 40 -1 100 1 -1 -1 1 600 -1 1 1 1 -1 7 -1 -1 -1
`
	w, err := read(t, log, Options{})
	require.NoError(t, err)
	assert.Equal(t, []QueueTier{
		{Queue: 0, Name: "interactive", MaxTime: 100, Tier: "interactive", By: TierByName},
		{Queue: 1, Name: "Low", MaxTime: 3600, Tier: "low", By: TierByName},
		{Queue: 2, Name: "batch", MaxTime: 600, Tier: "normal", By: TierByDefault},
		{Queue: 7, MaxTime: 600, Tier: "normal", By: TierByDefault},
	}, w.QueueTiers)
	var filed []string
	for i := range w.Jobs {
		filed = append(filed, w.SiteQueue(&w.Jobs[i]))
	}
	assert.Equal(t, []string{"interactive", "Low", "batch", ""}, filed)

	w, err = read(t, log, Options{Tiers: map[string]string{"batch": "High", "7": "standby"}})
	require.NoError(t, err)
	assert.Equal(t, QueueTier{Queue: 2, Name: "batch", MaxTime: 600, Tier: "high", By: TierByConfig}, w.QueueTiers[2])
	assert.Equal(t, "standby", w.SiteQueue(&w.Jobs[3]))

	_, err = read(t, log, Options{Tiers: map[string]string{"batch": "urgent"}})
	assert.ErrorContains(t, err, `queue "batch": tier "urgent"`)
}
