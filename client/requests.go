package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os/user"
	"strconv"
	"time"

	"github.com/bursar-hpc/bursar/api"
)

// Withdrawing a request and waiting on one (the service's withdraw.go and
// wait.go).

type (
	WithdrawResult = api.WithdrawResult
	RequestWait    = api.RequestWait
)

// MaxRequestWait is the longest wait one AwaitRequest call asks for.
const MaxRequestWait = api.MaxRequestWait

// WithdrawRequest takes pending request id back: it will not be granted.
// A request granted already answers an error matching ErrConflict (it is a
// lease now: release it with ReleaseLease, same id); one that expired or
// was withdrawn, ErrNotFound.
func (c *Client) WithdrawRequest(ctx context.Context, name string, id int) (*WithdrawResult, error) {
	var out WithdrawResult
	return &out, c.do(ctx, http.MethodDelete, campaignPath(name, "requests", strconv.Itoa(id)), nil, nil, &out)
}

// AwaitRequest asks where request id stands and, while it is pending,
// lets the service hold the answer for up to wait (capped at
// MaxRequestWait): it comes back as soon as the request is granted or gone
// (ErrNotFound), or still pending when the wait ran out. The client's HTTP
// timeout must exceed the wait (the default client's 30 s does).
func (c *Client) AwaitRequest(ctx context.Context, name string, id int, wait time.Duration) (*RequestWait, error) {
	wait = min(max(wait, 0), MaxRequestWait)
	var out RequestWait
	q := url.Values{"wait": {wait.String()}}
	return &out, c.do(ctx, http.MethodGet, campaignPath(name, "requests", strconv.Itoa(id), "wait"), q, nil, &out)
}

// endedEarlyPause is how long AwaitGrant pauses after a wait the service
// answered early to make room (api.RequestWait.EndedEarly).
const endedEarlyPause = time.Second

// AwaitGrant long-polls request id until it is granted, the request is gone
// (ErrRequestGone) or ctx ends. Unlike WaitGrant it learns of the grant as
// soon as the tick that made it is durable, with one request per
// MaxRequestWait while it waits.
func (c *Client) AwaitGrant(ctx context.Context, name string, id int) (*RequestWait, error) {
	for {
		w, err := c.AwaitRequest(ctx, name, id, MaxRequestWait)
		switch {
		case errors.Is(err, ErrNotFound):
			return nil, fmt.Errorf("request %d: %w", id, ErrRequestGone)
		case err != nil:
			return nil, err
		case w.State == StateGranted && w.Grant != nil:
			return w, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("waiting for request %d: %w", id, err)
		}
		if w.EndedEarly {
			// The service made room for another wait: pause before
			// asking again, as it asks.
			select {
			case <-time.After(endedEarlyPause):
			case <-ctx.Done():
				return nil, fmt.Errorf("waiting for request %d: %w", id, ctx.Err())
			}
		}
	}
}

// SlurmToken asks for the signed token that carries lease id of campaign
// name into Slurm (the job's --comment; docs/slurm.md), for this
// process's Unix user: the gate admits only that user's jobs on it.
func (c *Client) SlurmToken(ctx context.Context, name string, id int) (*SlurmToken, error) {
	u, err := user.Current()
	if err != nil {
		return nil, fmt.Errorf("slurm token: who runs this (the token names its Unix user): %w", err)
	}
	return c.SlurmTokenFor(ctx, name, id, u.Username)
}

// SlurmTokenFor is SlurmToken for the jobs of Unix user unixUser.
func (c *Client) SlurmTokenFor(ctx context.Context, name string, id int, unixUser string) (*SlurmToken, error) {
	var out SlurmToken
	return &out, c.do(ctx, http.MethodPost, campaignPath(name, "leases", strconv.Itoa(id), "slurm-token"), nil,
		SlurmTokenRequest{User: unixUser}, &out)
}
