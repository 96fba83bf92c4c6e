package service

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/bursar-hpc/bursar/api"
	"github.com/bursar-hpc/bursar/policy"
)

// The long poll on a request (issue 23 §5). A client that polls once a
// second learns of a grant half a second late on average, and a gate in
// front of a scheduler pays that on every job; polling faster costs the
// service a request per client per period. Instead a client asks
// GET …/requests/{id}/wait?wait=20s and the answer comes as soon as the
// request leaves the pending state: grants are made by the tick, which
// wakes every waiter once it is durable (Tick), and a withdrawal wakes them
// too (withdraw.go).
//
// A waiter re-reads its request only when its campaign's state may have
// moved: a request leaves the pending state by a grant or an expiry (each
// journals a record for the campaign) or by a withdrawal or release (each
// lowers the campaign's pending count), so a tick that changed neither is
// answered from a comparison of two counters, not a scan of the pending
// list. When the wait runs out the request is read in full, so the answer
// is exact even in the one case the counters can miss (a release-all and
// as many new requests between two ticks).

// MaxRequestWait bounds one long poll (api.MaxRequestWait).
const MaxRequestWait = api.MaxRequestWait

type (
	requestWaitInput struct {
		Campaign string `path:"campaign" pattern:"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$" maxLength:"64" doc:"Campaign name."`
		Request  int    `path:"request" minimum:"1" maximum:"2147483647" doc:"The campaign's own request id (its n-th request is n)."`
		Wait     string `query:"wait" default:"0s" maxLength:"16" doc:"How long to wait while the request is pending: a duration such as 10s or 500ms, at most 20s; 0s answers at once."`
	}
	requestWaitOutput struct {
		// Connection is "close" on a wait answered to free its
		// connection for a newcomer at the connection cap (waiters.go).
		Connection string `header:"Connection"`
		Body       api.RequestWait
	}
)

// waitBoard wakes long polls. Its zero value is ready; a wake with nobody
// waiting costs a lock and a nil check (it runs every tick).
type waitBoard struct {
	mu   sync.Mutex
	ch   chan struct{} // closed by the next wake; nil while nobody waits
	down chan struct{} // closed when the server shuts down

	// The booked waits (waiters.go) and their limits.
	camps                   map[policy.CampaignID]*campWaits
	total                   int
	max, perCamp            int
	open, kicked, reclaimed atomic.Int64
}

// next is the channel the next wake closes.
func (w *waitBoard) next() (wake, down <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	if w.down == nil {
		w.down = make(chan struct{})
	}
	return w.ch, w.down
}

// wake answers every waiter's re-read.
func (w *waitBoard) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
}

// shutdown ends every wait (answered with the state as it stands), so that
// a graceful shutdown does not wait for the longest poll.
func (w *waitBoard) shutdown() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.down == nil {
		w.down = make(chan struct{})
	}
	select {
	case <-w.down:
	default:
		close(w.down)
	}
}

// waitKey is what a waiter compares across wakes (see the comment above).
type waitKey struct {
	records int64
	pending int
}

// requestState says where request req (the campaign's id, ids.go) of
// campaign id stands: State is
// pending or granted, or "" when it is neither (expired, withdrawn, not
// this campaign's, or its grant no longer retained). It reads what
// GET …/requests/{id} reads.
func (t *txn) requestState(id policy.CampaignID, cs *campState, req int) api.RequestStatus {
	st := api.RequestStatus{T: t.c.b.Now(), RequestID: req}
	g := cs.globalID(req) // the broker's id; 0, which none has, if none
	if g == 0 {
		return st
	}
	for _, r := range t.c.b.Pending() {
		if r.ID == g && r.Campaign == id {
			st.State = api.StatePending
			st.Pending = &api.PendingRequest{ID: req, GPUs: r.GPUs, Duration: r.Duration, Class: r.Class.String(), Submitted: r.Submitted}
			return st
		}
	}
	// Newest first: a recent request is found at once.
	for i := len(cs.grants.buf) - 1; i >= 0; i-- {
		if e := cs.grants.at(i); e.ev.Lease == g {
			gr := grantOf(cs, e)
			st.State, st.Grant = api.StateGranted, &gr
			return st
		}
	}
	return st
}

// parseWait reads the wait query parameter.
func parseWait(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, fieldError("query.wait", "want a duration such as 10s or 500ms", s)
	case d < 0 || d > MaxRequestWait:
		return 0, fieldError("query.wait", fmt.Sprintf("the wait must be between 0s and %v", MaxRequestWait), s)
	}
	return d, nil
}

func (s *Service) awaitRequest(ctx context.Context, in *requestWaitInput) (*requestWaitOutput, error) {
	d, err := parseWait(in.Wait)
	if err != nil {
		return nil, err
	}
	var timeout <-chan time.Time
	if d > 0 {
		tm := time.NewTimer(d)
		defer tm.Stop()
		timeout = tm.C
	}
	p := principalOf(ctx)
	var (
		booked  *waiter
		kicked  <-chan struct{}
		early   bool // answered by the board (waiters.go)
		pending int  // the campaign's pending requests at the last read
		out     requestWaitOutput
		key     waitKey
		read    bool // out holds a full read taken at key
	)
	for {
		wake, down := s.waits.next()
		err := s.withState(ctx, func(t *txn) error {
			id, cs, err := t.campaign(in.Campaign)
			if err != nil {
				return err
			}
			if !p.stillValid(cs) {
				return errTokenEnded()
			}
			pending = cs.pending
			k := waitKey{records: cs.journal.last, pending: cs.pending}
			if read && k == key {
				return nil // nothing that could move the request happened
			}
			key, read = k, true
			out.Body = t.requestWait(id, cs, in.Request, s.opts.Speed)
			return nil
		})
		if err != nil {
			return nil, err
		}
		if out.Body.State != api.StatePending || timeout == nil {
			break
		}
		if booked == nil && !p.admin {
			booked = s.waits.join(p.id, in.Request, pending)
			defer s.waits.leave(booked)
			ticketOf(ctx).release() // the board bounds it from now on
			kicked = booked.kicked
		}
		select {
		case <-wake:
			continue
		case <-kicked:
			early = true
		case <-timeout:
		case <-down:
		case <-ctx.Done():
		}
		// The final answer is a full read, whatever the counters say.
		read = false
		timeout = nil
	}
	if out.Body.State == "" {
		return nil, errRequestGone(in.Request, in.Campaign)
	}
	out.Body.EndedEarly = early && out.Body.State == api.StatePending
	if early && booked.close {
		out.Connection = "close"
	}
	return &out, nil
}

// requestWait is requestState with the lease as it stands.
func (t *txn) requestWait(id policy.CampaignID, cs *campState, req int, speed float64) api.RequestWait {
	st := t.requestState(id, cs, req)
	w := api.RequestWait{T: st.T, RequestID: st.RequestID, State: st.State, Pending: st.Pending, Grant: st.Grant, Speed: speed}
	if st.State == api.StateGranted {
		if l, ok := t.c.heldLease(id, cs, req); ok {
			cl := api.Lease{ID: req, GPUs: l.GPUs, Class: l.Class.String(), Submitted: l.Submitted,
				Granted: l.Granted, Expires: l.Expires, UnderNotice: l.UnderNotice}
			if l.UnderNotice {
				cl.PreemptAt = l.PreemptAt
			}
			w.Lease = &cl
		}
	}
	return w
}

func errRequestGone(req int, campaign string) error {
	return huma.Error404NotFound(fmt.Sprintf("request %d of campaign %s is not pending and no retained grant is for it (expired, withdrawn, or not this campaign's)", req, campaign))
}
