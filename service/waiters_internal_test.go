package service

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func kicked(x *waiter) bool {
	select {
	case <-x.kicked:
		return true
	default:
		return false
	}
}

// TestWaitBoardRules: the three rules of waiters.go, worked by hand. One
// wait per request (a newer one answers the older); at most min(pending,
// K) per campaign, the oldest answered; at most W in all, the oldest wait
// of the campaign holding the most answered, so that a campaign within
// its share never loses one to a campaign above it.
func TestWaitBoardRules(t *testing.T) {
	var w waitBoard
	w.setLimits(6, 3)
	a1 := w.join(0, 1, 5)
	a1b := w.join(0, 1, 5)
	assert.True(t, kicked(a1), "a newer wait on the same request answers the older")
	assert.False(t, kicked(a1b))
	assert.Equal(t, int64(1), w.open.Load())

	// Campaign 0 has 2 pending requests: at most 2 waits.
	a2 := w.join(0, 2, 2)
	a3 := w.join(0, 3, 2)
	assert.True(t, kicked(a1b), "min(pending=2, K=3): the oldest goes")
	assert.False(t, kicked(a2) || kicked(a3))
	// With 9 pending, K = 3 caps it.
	a4 := w.join(0, 4, 9)
	a5 := w.join(0, 5, 9)
	assert.True(t, kicked(a2), "K = 3: the oldest goes")
	assert.False(t, kicked(a3) || kicked(a4) || kicked(a5))

	// Campaign 1 joins: 3 + 3 = W.
	b := []*waiter{w.join(1, 1, 9), w.join(1, 2, 9), w.join(1, 3, 9)}
	assert.Equal(t, int64(6), w.open.Load())
	// Campaign 2 joins with the board full: the fullest campaign with the
	// lowest id (0) loses its oldest, not campaign 2.
	c1 := w.join(2, 1, 9)
	assert.True(t, kicked(a3))
	// Again: now campaign 1 holds the most.
	c2 := w.join(2, 2, 9)
	assert.True(t, kicked(b[0]))
	// Each holds 2 = W/3, its share: campaign 2's next wait costs its own
	// oldest (a tie with itself), never another campaign's within share.
	c3 := w.join(2, 3, 9)
	assert.True(t, kicked(c1))
	assert.False(t, kicked(a4) || kicked(a5) || kicked(b[1]) || kicked(b[2]) || kicked(c2) || kicked(c3))
	assert.Equal(t, int64(6), w.open.Load())

	// A wait that ends by itself leaves; leaving twice or after a kick is
	// harmless.
	w.leave(c3)
	w.leave(c3)
	w.leave(c1)
	assert.Equal(t, int64(5), w.open.Load())

	// Reclaim takes the fullest campaign's oldest and asks for its
	// connection to close.
	assert.True(t, w.reclaim())
	assert.True(t, kicked(a4) && a4.close)
	for _, x := range []*waiter{a5, b[1], b[2], c2} {
		w.leave(x)
	}
	assert.Equal(t, int64(0), w.open.Load())
	assert.Empty(t, w.camps)
	assert.False(t, w.reclaim(), "nothing booked")
}

// TestInflightLimits: campaign tokens together leave the administrator
// its reserve, and one campaign its quarter of the rest.
func TestInflightLimits(t *testing.T) {
	reserve, waits, total, perCamp := inflightLimits(448)
	assert.Equal(t, []int{28, 224, 196, 49}, []int{reserve, waits, total, perCamp})
	assert.Less(t, waits+total, 448, "waits and other campaign requests together stay below the cap")

	var f inflight
	f.total, f.perCamp = 3, 2
	p0, p1 := principal{id: 0}, principal{id: 1}
	t1, ok1 := f.enter(p0)
	_, ok2 := f.enter(p0)
	_, ok3 := f.enter(p0)
	assert.True(t, ok1 && ok2)
	assert.False(t, ok3, "one campaign: at most perCamp")
	_, ok4 := f.enter(p1)
	_, ok5 := f.enter(p1)
	assert.True(t, ok4)
	assert.False(t, ok5, "all campaigns: at most total")
	for range 10 {
		_, ok := f.enter(principal{admin: true})
		assert.True(t, ok, "the administrator is not limited")
	}
	t1.release()
	t1.release()
	_, ok6 := f.enter(p1)
	assert.True(t, ok6, "a release makes room, once")
	assert.Equal(t, int64(2), f.refused.Load())
}
