package api

import "time"

// WithdrawResult answers DELETE /v1/campaigns/{campaign}/requests/{request}:
// the pending request that was withdrawn.
type WithdrawResult struct {
	T         int    `json:"t" doc:"Broker time of the withdrawal."`
	RequestID int    `json:"request_id" doc:"The campaign's own request id."`
	GPUs      int    `json:"gpus" doc:"The GPUs the request asked for; they no longer count as demand."`
	Class     string `json:"class"`
}

// StateWithdrawn is never an answer's state: a withdrawn request is gone
// (404), like an expired one. It names the outcome in messages.
const StateWithdrawn = "withdrawn"

// RequestWait answers the long-poll GET
// /v1/campaigns/{campaign}/requests/{request}/wait: where the request
// stands once it left the pending state or the wait ran out, with what a
// lease wrapper needs to keep its own deadline.
type RequestWait struct {
	T         int             `json:"t"`
	RequestID int             `json:"request_id" doc:"The campaign's own request id."`
	State     string          `json:"state" enum:"pending,granted"`
	Pending   *PendingRequest `json:"pending,omitempty"`
	Grant     *Grant          `json:"grant,omitempty"`
	// Lease is the lease as it stands at T: absent while pending and once
	// the lease has ended (expired, released or reclaimed).
	Lease *Lease `json:"lease,omitempty" doc:"The granted lease as it stands at t; absent while pending and once it has ended."`
	// Speed is the service's nominal tick rate: a lease with e broker
	// seconds left ends no sooner than e/Speed wall-clock seconds from now
	// (later when the clock falls behind under load). 0 when the clock is
	// driven by hand (an embedded service), which gives no wall-clock
	// bound.
	Speed float64 `json:"speed" doc:"Broker seconds per wall-clock second (nominal); 0 when the clock is driven by hand."`
	// EndedEarly says the wait was answered before its time to make room:
	// a newer wait on the same request, or the campaign's share of the
	// service's long polls (docs/service.md, "Long polls"). A client
	// should pause (about a second) before it asks again.
	EndedEarly bool `json:"ended_early,omitempty" doc:"The wait was answered before its time to make room for a newer wait on the same request or within the campaign's share of long polls; pause about a second before asking again."`
}

// MaxRequestWait bounds one long poll (the wait query parameter): below
// the server's 30 s write timeout, so that an answer is never cut off, and
// below a client's usual 30 s timeout.
const MaxRequestWait = 20 * time.Second
