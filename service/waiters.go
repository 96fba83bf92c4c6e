package service

import (
	"container/list"
	"context"
	"sync"
	"sync/atomic"

	"github.com/bursar-hpc/bursar/policy"
)

// Long polls by request, not by connection (issue 34 §1). A long poll
// holds a connection for up to 20 s, and a connection with an
// authenticated request in flight is never shed (connlimit.go): 600 polls
// of one tenant under a 448-connection cap used to leave the operator no
// connection at all. So waits are booked by the request they wait on:
//
//   - one wait per request: a new wait on a request answers the older one
//     at once with the state as it stands (200, ended_early);
//   - a campaign holds at most min(its pending requests, K) waits; beyond
//     that its oldest wait is answered the same way;
//   - all waits together hold at most half the connection cap; beyond
//     that the oldest wait of the campaign holding the most waits is
//     answered, so that a campaign within its fair share (the half divided
//     by the campaigns waiting) never loses a wait to one above it.
//
// Nothing is dropped: an answered wait is a normal answer with the
// request's state, and the client asks again after a pause. The
// administrator's waits are not booked (its requests have their reserve,
// inflight below).

// DefaultMaxWaitsPerCampaign is K above: the most long polls one campaign
// holds open, however many requests it has pending.
const DefaultMaxWaitsPerCampaign = 64

// waiter is one booked long poll.
type waiter struct {
	camp   policy.CampaignID
	req    int
	el     *list.Element // in its campaign's list; nil once answered or gone
	kicked chan struct{} // closed when the board answers it early
	close  bool          // answered to free its connection (reclaim)
}

// campWaits are one campaign's waits, oldest first, and by request id.
type campWaits struct {
	order *list.List // of *waiter
	byReq map[int]*waiter
}

// book returns the waits of campaign c, made on first use; b.mu held.
func (w *waitBoard) book(c policy.CampaignID) *campWaits {
	if w.camps == nil {
		w.camps = map[policy.CampaignID]*campWaits{}
	}
	cw := w.camps[c]
	if cw == nil {
		cw = &campWaits{order: list.New(), byReq: map[int]*waiter{}}
		w.camps[c] = cw
	}
	return cw
}

// setLimits sets the most waits in all (W) and per campaign (K).
func (w *waitBoard) setLimits(total, perCampaign int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.max, w.perCamp = max(1, total), max(1, perCampaign)
}

// join books a wait of campaign c on its request req while the campaign
// has pending requests pending, answering the waits that must make room
// (see above). The caller must call leave when the wait ends.
func (w *waitBoard) join(c policy.CampaignID, req, pending int) *waiter {
	w.mu.Lock()
	defer w.mu.Unlock()
	cw := w.book(c)
	if old := cw.byReq[req]; old != nil {
		w.kickLocked(old)
	}
	for allow := max(1, min(pending, w.perCamp)); cw.order.Len() >= allow; {
		w.kickLocked(cw.order.Front().Value.(*waiter))
	}
	for w.total >= w.max && w.total > 0 {
		w.kickLocked(w.fullest(c).order.Front().Value.(*waiter))
	}
	cw = w.book(c) // the kicks may have emptied and dropped it
	x := &waiter{camp: c, req: req, kicked: make(chan struct{})}
	x.el = cw.order.PushBack(x)
	cw.byReq[req] = x
	w.total++
	w.open.Store(int64(w.total))
	return x
}

// fullest is the campaign holding the most waits: c itself on a tie with
// it, else the lowest id; b.mu held and at least one wait booked.
func (w *waitBoard) fullest(c policy.CampaignID) *campWaits {
	best, bestID, bestN := w.camps[c], c, 0
	if best != nil {
		bestN = best.order.Len()
	}
	for id, cw := range w.camps {
		n := cw.order.Len()
		if n > bestN || n == bestN && bestID != c && id < bestID {
			best, bestID, bestN = cw, id, n
		}
	}
	return best
}

// reclaim answers the oldest wait of the campaign holding the most, with
// its connection closed after the answer, to make room for a new
// connection at the cap (connLimiter.reclaim); false when none is booked.
func (w *waitBoard) reclaim() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.total == 0 {
		return false
	}
	x := w.fullest(-1).order.Front().Value.(*waiter)
	x.close = true
	w.kickLocked(x)
	w.reclaimed.Add(1)
	return true
}

// kickLocked answers x early; b.mu held.
func (w *waitBoard) kickLocked(x *waiter) {
	w.dropLocked(x)
	close(x.kicked)
	w.kicked.Add(1)
}

// dropLocked takes x off the books; b.mu held.
func (w *waitBoard) dropLocked(x *waiter) {
	if x.el == nil {
		return
	}
	cw := w.camps[x.camp]
	cw.order.Remove(x.el)
	x.el = nil
	if cw.byReq[x.req] == x {
		delete(cw.byReq, x.req)
	}
	if cw.order.Len() == 0 {
		delete(w.camps, x.camp)
	}
	w.total--
	w.open.Store(int64(w.total))
}

// leave takes a wait that ended by itself off the books.
func (w *waitBoard) leave(x *waiter) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dropLocked(x)
}

// inflight counts the requests in flight per token once they have
// authenticated, so that campaign tokens together leave some of the
// connection cap to the administrator's: a connection with an
// authenticated request in flight is never shed, and before this nothing
// bounded how many of them one tenant held. A campaign may have at most
// perCamp requests in flight besides its booked waits, all campaigns
// together at most total; beyond that a request is answered 429 with
// Retry-After at once, before its body is read. With the waits' half of
// the cap (waitBoard) that keeps at least reserve connections for the
// administrator (inflightLimits).
type inflight struct {
	mu      sync.Mutex
	byCamp  map[policy.CampaignID]int
	camps   int // all campaign tokens' requests in flight
	admin   atomic.Int64
	perCamp int
	total   int
	refused atomic.Int64
}

// inflightLimits derives the limits from the connection cap: a
// sixteenth (at least 2) kept for the administrator, half for long polls,
// the rest for the campaigns' other requests, a quarter of it (at least 2)
// for any one campaign.
func inflightLimits(conns int) (reserve, waits, total, perCamp int) {
	reserve = max(2, conns/16)
	waits = max(1, conns/2)
	total = max(1, conns-reserve-waits)
	return reserve, waits, total, max(2, total/4)
}

// setLimits applies the limits for a connection cap to the in-flight
// count and the wait board.
func (s *Service) setLimits(conns int) {
	_, waits, total, perCamp := inflightLimits(conns)
	s.inflight.mu.Lock()
	s.inflight.total, s.inflight.perCamp = total, perCamp
	s.inflight.mu.Unlock()
	s.waits.setLimits(waits, min(s.opts.MaxWaitsPerCampaign, waits))
}

// ticket is one counted request; release is idempotent.
type ticket struct {
	f    *inflight
	p    principal
	done atomic.Bool
}

// enter counts a request of p, or reports false when p's campaign or the
// campaigns together are at their limit.
func (f *inflight) enter(p principal) (*ticket, bool) {
	if p.admin {
		f.admin.Add(1)
		return &ticket{f: f, p: p}, true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byCamp == nil {
		f.byCamp = map[policy.CampaignID]int{}
	}
	if f.byCamp[p.id] >= f.perCamp || f.camps >= f.total {
		f.refused.Add(1)
		return nil, false
	}
	f.byCamp[p.id]++
	f.camps++
	return &ticket{f: f, p: p}, true
}

// release ends the count of t's request (a long poll calls it early, once
// booked on the wait board, which bounds it from then on).
func (t *ticket) release() {
	if t == nil || !t.done.CompareAndSwap(false, true) {
		return
	}
	if t.p.admin {
		t.f.admin.Add(-1)
		return
	}
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	if t.f.byCamp[t.p.id]--; t.f.byCamp[t.p.id] <= 0 {
		delete(t.f.byCamp, t.p.id)
	}
	t.f.camps--
}

// campaignsInFlight is the campaign tokens' requests in flight (metrics).
func (f *inflight) campaignsInFlight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.camps
}

type ticketKey struct{}

func ticketOf(ctx context.Context) *ticket {
	t, _ := ctx.Value(ticketKey{}).(*ticket)
	return t
}
