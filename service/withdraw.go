package service

import (
	"context"
	"fmt"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/bursar-hpc/bursar/api"
	"github.com/bursar-hpc/bursar/policy"
)

// Withdrawing a pending request. An agent that stops waiting (an
// interrupted `bursar lease`, a --wait that ran out) must be able to take
// its request back: otherwise the broker grants it later and the GPUs are
// held by nobody until the lease expires (issue 22 §5).
//
// A request that was granted already is a lease, and a DELETE of the
// request answers 409 naming the lease rather than releasing it: the
// lease's holder may be running on it, and releasing is an explicit
// DELETE of /leases/{id} (the lease id equals the request id). The wrapper
// does exactly that when the race goes the grant's way.

// opWithdraw is the journal operation; its lease field carries the request
// id (a request's lease, once granted, has the same id).
const opWithdraw = "withdraw"

type (
	withdrawInput struct {
		Campaign string `path:"campaign" pattern:"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$" maxLength:"64" doc:"Campaign name."`
		Request  int    `path:"request" minimum:"1" maximum:"2147483647" doc:"The campaign's own request id (its n-th request is n)."`
	}
	withdrawOutput struct{ Body api.WithdrawResult }
)

// registerRequestOperations registers the withdrawal and the long poll
// (wait.go) beside the request operations of handlers.go.
func (s *Service) registerRequestOperations() {
	const tagLeases = "leases"
	operation(s, roleCampaign, huma.Operation{OperationID: "withdraw-request", Method: http.MethodDelete,
		Path: "/v1/campaigns/{campaign}/requests/{request}", Summary: "Withdraw a pending request", Tags: []string{tagLeases},
		Description: "Takes a pending request back: it will not be granted, and its GPUs stop counting as demand at once. " +
			"409 when it was granted already (release the lease instead: its id is the request id); " +
			"404 when it is neither pending nor granted (expired, withdrawn, or not this campaign's).",
		Errors: []int{http.StatusNotFound, http.StatusConflict}}, s.withdraw)
	operation(s, roleCampaign, huma.Operation{OperationID: "wait-request", Method: http.MethodGet,
		Path: "/v1/campaigns/{campaign}/requests/{request}/wait", Summary: "Wait for a request's outcome (long poll)", Tags: []string{tagLeases},
		Description: "Answers as soon as the request is granted or gone, or when the wait runs out (still pending), " +
			fmt.Sprintf("at most %v. A granted answer carries the lease as it stands and the service's tick rate, ", MaxRequestWait) +
			"from which a lease wrapper keeps its own wall-clock deadline. 404 when the request is neither pending nor granted " +
			"(expired, withdrawn, or its grant is older than the retained grants).",
		Errors: []int{http.StatusNotFound}}, s.awaitRequest)
}

func (s *Service) withdraw(ctx context.Context, in *withdrawInput) (*withdrawOutput, error) {
	var out withdrawOutput
	err := s.withState(ctx, func(t *txn) error {
		id, cs, err := t.campaign(in.Campaign)
		if err != nil {
			return err
		}
		st := t.requestState(id, cs, in.Request)
		switch {
		case st.State == api.StateGranted:
			return huma.Error409Conflict(fmt.Sprintf("request %d of campaign %s was granted at t=%d: it is lease %d now; release the lease (DELETE /v1/campaigns/%s/leases/%d)",
				in.Request, cs.name, st.Grant.T, st.Grant.Lease, cs.name, st.Grant.Lease))
		case st.State != api.StatePending:
			return errRequestGone(in.Request, cs.name)
		}
		if _, err := t.apply(&op{Op: opWithdraw, C: int(id), Lease: cs.globalID(in.Request)}); err != nil {
			return err
		}
		out.Body = api.WithdrawResult{T: t.c.b.Now(), RequestID: in.Request, GPUs: st.Pending.GPUs, Class: st.Pending.Class}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.waits.wake() // a long poll on it answers 404 now, not at the next tick
	return &out, nil
}

// applyWithdraw is core.apply's withdraw operation.
func (c *core) applyWithdraw(cid policy.CampaignID, cs *campState, o *op) (result, bool, error) {
	r, ok, err := c.b.Withdraw(cid, o.Lease)
	switch {
	case err != nil:
		return result{}, false, err
	case !ok:
		return result{}, false, fmt.Errorf("%w: campaign %d has no pending request %d", errReplay, cid, o.Lease)
	}
	cs.pending--
	return result{droppedRequests: 1, droppedGPUs: r.GPUs}, true, nil
}
