package service

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/bursar-hpc/bursar/api"
	"github.com/bursar-hpc/bursar/internal/slurmtoken"
)

// Slurm lease tokens (issue 23, docs/slurm.md). A lease is carried into
// Slurm as a token in the job's --comment; slurmctld's job_submit/lua
// plugin has `bursar slurm check` verify it and refuses a job without a
// valid, unexpired token for its size. The token is an HMAC-SHA256 over
// the lease's id, campaign, GPUs, wall-clock expiry, user and account, keyed with a secret
// the service and the plugin's host share (serve --slurm-key-file).
//
// The expiry is wall time, fixed when the token is issued from the
// lease's broker expiry and the tick rate: a service that is down later
// does not lengthen it (an outage stops the broker's clock, not the
// wall's).

// The token itself lives in internal/slurmtoken, which the small
// bursar-slurm-check binary shares; these are its names here.

// SlurmTokenPrefix starts every Slurm lease token (its version).
const SlurmTokenPrefix = slurmtoken.Prefix

// MinSlurmKeyBytes is the shortest key accepted for Slurm lease tokens.
const MinSlurmKeyBytes = slurmtoken.MinKeyBytes

// SlurmLease is what a Slurm lease token says.
type SlurmLease = slurmtoken.Lease

// SignSlurmToken returns the token for l under key.
func SignSlurmToken(key []byte, l SlurmLease) string { return slurmtoken.Sign(key, l) }

// Errors of VerifySlurmToken.
var (
	ErrSlurmTokenMalformed = slurmtoken.ErrMalformed
	ErrSlurmTokenForged    = slurmtoken.ErrForged
	ErrSlurmTokenExpired   = slurmtoken.ErrExpired
)

// VerifySlurmToken checks tok's form and signature under key and that it
// has not expired at now.
func VerifySlurmToken(key []byte, tok string, now time.Time) (SlurmLease, error) {
	return slurmtoken.Verify(key, tok, now)
}

// ParseSlurmToken reads what a token says without checking its signature
// (slurmtoken.Parse).
func ParseSlurmToken(tok string) (SlurmLease, error) { return slurmtoken.Parse(tok) }

// SlurmWCKey is the WcKey the gate gives a job on lease l, as Slurm keeps
// it (slurmtoken.WCKey).
func SlurmWCKey(l SlurmLease) string { return slurmtoken.WCKey(l) }

type (
	slurmTokenInput struct {
		Campaign string `path:"campaign" pattern:"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$" maxLength:"64" doc:"Campaign name."`
		Lease    int    `path:"lease" minimum:"1" maximum:"2147483647" doc:"The campaign's own lease id (equal to its request id)."`
		Body     api.SlurmTokenRequest
	}
	slurmTokenOutput struct{ Body api.SlurmToken }
)

func (s *Service) registerSlurmOperations() {
	operation(s, roleCampaign, huma.Operation{OperationID: "slurm-token", Method: http.MethodPost,
		Path: "/v1/campaigns/{campaign}/leases/{lease}/slurm-token", Summary: "Issue a Slurm lease token", Tags: []string{"leases"},
		Description: "Signs a token that carries the lease into Slurm (the job's --comment), for the job_submit plugin to check " +
			"(docs/slurm.md); it admits only the named Unix user's jobs, under the campaign's account. Its expiry is wall time: the lease's broker expiry (or the end of its preemption notice) at the tick rate, " +
			"from the wall time of the broker's last tick. 404 when the campaign holds no such lease; 409 when the service has no Slurm key or its clock is driven by hand.",
		Errors: []int{http.StatusNotFound, http.StatusConflict}}, s.slurmToken)
}

func (s *Service) slurmToken(ctx context.Context, in *slurmTokenInput) (*slurmTokenOutput, error) {
	if len(s.opts.SlurmKey) == 0 {
		return nil, huma.Error409Conflict("this service has no Slurm key (serve --slurm-key-file)")
	}
	if s.opts.Speed <= 0 {
		return nil, huma.Error409Conflict("this service's clock is driven by hand: a lease has no wall-clock expiry to sign")
	}
	var out slurmTokenOutput
	err := s.withState(ctx, func(t *txn) error {
		id, cs, err := t.campaign(in.Campaign)
		if err != nil {
			return err
		}
		now := t.c.b.Now()
		// The token carries the campaign's own lease id (ids.go), which
		// with the campaign's name names the lease.
		l, ok := t.c.heldLease(id, cs, in.Lease)
		if !ok {
			return huma.Error404NotFound(fmt.Sprintf("campaign %s holds no lease %d", cs.name, in.Lease))
		}
		if _, over := cs.slurmOver[l.ID]; over {
			return huma.Error409Conflict(fmt.Sprintf("lease %d of campaign %s is over; it is held only until its Slurm jobs have ended", in.Lease, cs.name))
		}
		end := l.Expires
		if l.UnderNotice && l.PreemptAt < end {
			end = l.PreemptAt
		}
		// From the wall time of the tick that reached now, not from the
		// moment of issue: the broker ends the lease at tick `end`, which
		// comes (end − now)/speed after that tick, however late in the
		// second the lease was granted (admission on request grants
		// between ticks) or the token asked for.
		wall := time.UnixMilli(t.s.tickWall).Add(time.Duration(float64(end-now) / s.opts.Speed * float64(time.Second)))
		// The token names its user and account (issue 35: a token
		// worked for any Unix user, and alice ran on bob's lease). The
		// user is the caller's word: whoever holds the campaign's
		// credential may spend its leases, and names whose jobs may.
		sl := SlurmLease{Lease: in.Lease, Campaign: cs.name, GPUs: l.GPUs, Expires: wall.Unix(), User: in.Body.User,
			Account: SlurmAccount(cs.name)}
		t.s.issuedSlurmToken(sl)
		out.Body = api.SlurmToken{Token: SignSlurmToken(s.opts.SlurmKey, sl), User: sl.User, Lease: in.Lease, GPUs: l.GPUs,
			Account: sl.Account, ExpiresUnix: sl.Expires, T: now}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// SlurmAccount is the Slurm account a campaign's jobs run under: its name
// in lower case (Slurm folds account names to lower case).
func SlurmAccount(campaign string) string { return slurmtoken.Account(campaign) }

// SlurmLeaseHeld says whether campaign holds lease now and whether the
// lease is under preemption notice: what `bursar serve --slurm-enforce`
// asks about each job on a token (an error when the service cannot answer,
// e.g. after a journal failure; the token's own expiry still applies).
func (s *Service) SlurmLeaseHeld(ctx context.Context, campaign string, lease int) (held, underNotice bool, err error) {
	err = s.withState(ctx, func(t *txn) error {
		id, cs, err := t.campaign(campaign)
		if err != nil {
			return nil // no such campaign: it holds nothing
		}
		// lease is the campaign's own id, as in the token (ids.go).
		// A lease its user released is over for the enforcer (its job
		// gets the notice, then the kill), though the broker holds it
		// until nothing of it runs (slurmhold.go).
		l, ok := t.c.heldLease(id, cs, lease)
		held, underNotice = ok && !cs.slurmOver[l.ID], ok && l.UnderNotice
		return nil
	})
	return held, underNotice, err
}

// slurmLeaseName names a lease as a token does: its campaign and the
// campaign's own lease id.
type slurmLeaseName struct {
	campaign string
	lease    int
}

// issuedSlurmToken notes the expiry of a token issued for l (the caller
// holds the state lock), when released leases are recorded.
func (s *Service) issuedSlurmToken(l SlurmLease) {
	if s.opts.SlurmOnceDir == "" {
		return
	}
	if s.slurmIssued == nil {
		s.slurmIssued = map[slurmLeaseName][]int64{}
	}
	k := slurmLeaseName{l.Campaign, l.Lease}
	for _, e := range s.slurmIssued[k] {
		if e == l.Expires {
			return
		}
	}
	s.slurmIssued[k] = append(s.slurmIssued[k], l.Expires)
}

// releasedSlurmTokens takes the tokens issued for a lease that is being
// released (the caller holds the state lock): each is then recorded as
// spent (markSlurmReleased), outside the lock.
func (s *Service) releasedSlurmTokens(campaign string, lease, gpus int) []SlurmLease {
	k := slurmLeaseName{campaign, lease}
	var ls []SlurmLease
	for _, e := range s.slurmIssued[k] {
		ls = append(ls, SlurmLease{Lease: lease, Campaign: campaign, GPUs: gpus, Expires: e})
	}
	delete(s.slurmIssued, k)
	return ls
}

// markSlurmReleased records released leases' tokens as spent in the gate's
// ONCE_DIR (slurmtoken.MarkReleased): the gate then refuses a job on them
// as it refuses a second job on a token, with one file operation per
// check. A failure is logged: the enforcer still ends a job it finds on a
// released lease.
func (s *Service) markSlurmReleased(ls []SlurmLease) {
	for _, l := range ls {
		if err := slurmtoken.MarkReleased(s.opts.SlurmOnceDir, l); err != nil {
			s.log.Warn("slurm: cannot record a released lease's token as spent", "campaign", l.Campaign, "lease", l.Lease, "err", err)
		}
	}
}
