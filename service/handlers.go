package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/danielgtaylor/huma/v2"

	"github.com/bursar-hpc/bursar/api"
	"github.com/bursar-hpc/bursar/policy"
)

// Inputs. The path, query and body tags are the validation huma applies
// before a handler runs; the bodies are the client package's wire types.
// The campaign path parameter and the paging query parameters are spelled
// out in every input: huma reads parameters from exported fields only, and
// an embedded struct of an unexported type is not one.

type (
	emptyInput    struct{}
	campaignInput struct {
		Campaign string `path:"campaign" pattern:"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$" maxLength:"64" doc:"Campaign name."`
	}
	registerInput struct {
		Body api.CampaignSpec
	}
	requestInput struct {
		Campaign string `path:"campaign" pattern:"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$" maxLength:"64" doc:"Campaign name."`
		Body     api.LeaseRequest
	}
	requestStatusInput struct {
		Campaign string `path:"campaign" pattern:"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$" maxLength:"64" doc:"Campaign name."`
		Request  int    `path:"request" minimum:"1" maximum:"2147483647" doc:"The campaign's own request id (its n-th request is n)."`
	}
	releaseAllInput struct {
		Campaign string `path:"campaign" pattern:"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$" maxLength:"64" doc:"Campaign name."`
		Class    string `query:"class" enum:"deadline,interactive,agent-burst,opportunistic" doc:"Release only this class (leases and pending requests); absent: all."`
	}
	releaseLeaseInput struct {
		Campaign string `path:"campaign" pattern:"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$" maxLength:"64" doc:"Campaign name."`
		Lease    int    `path:"lease" minimum:"1" maximum:"2147483647" doc:"The campaign's own lease id (equal to its request id)."`
	}
	consumeInput struct {
		Campaign string `path:"campaign" pattern:"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$" maxLength:"64" doc:"Campaign name."`
		Body     api.ConsumeRequest
	}
	grantsInput struct {
		Campaign string `path:"campaign" pattern:"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$" maxLength:"64" doc:"Campaign name."`
		After    int64  `query:"after" default:"-1" minimum:"-1" doc:"Return grants with seq greater than this, oldest first; -1 (the default) returns the latest ones."`
		Limit    int    `query:"limit" default:"100" minimum:"1" maximum:"1000" doc:"Most grants to return."`
	}
	journalInput struct {
		Campaign string `query:"campaign" pattern:"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$" maxLength:"64" doc:"Only this campaign's records. A campaign token always reads its own records only."`
		After    int64  `query:"after" default:"-1" minimum:"-1" doc:"Return records with seq greater than this, oldest first; -1 (the default) returns the latest ones."`
		Limit    int    `query:"limit" default:"100" minimum:"1" maximum:"1000" doc:"Most records to return."`
	}
)

// Outputs.

type (
	healthOutput   struct{ Body api.Health }
	registerOutput struct {
		Location string `header:"Location"`
		Body     api.Registration
	}
	listOutput     struct{ Body api.CampaignList }
	campaignOutput struct{ Body api.CampaignOut }
	supplyOutput   struct{ Body api.Supply }
	requestOutput  struct {
		Location string `header:"Location"`
		Body     api.RequestAccepted
	}
	requestStatusOutput struct{ Body api.RequestStatus }
	leasesOutput        struct{ Body api.Leases }
	releaseOutput       struct{ Body api.ReleaseResult }
	consumeOutput       struct{ Body api.ConsumeResult }
	grantsOutput        struct{ Body api.Grants }
	journalOutput       struct{ Body api.Journal }
)

func (s *Service) registerOperations() {
	const (
		tagCampaigns = "campaigns"
		tagLeases    = "leases"
		tagService   = "service"
	)
	operation(s, rolePublic, huma.Operation{OperationID: "health", Method: http.MethodGet, Path: "/healthz",
		Summary: "Liveness", Tags: []string{tagService},
		Description: "Answers 200 while the service takes requests, 503 after a journal file failure."}, s.health)
	operation(s, roleAdmin, huma.Operation{OperationID: "register-campaign", Method: http.MethodPost, Path: "/v1/campaigns",
		Summary: "Register a campaign (administrator)", Tags: []string{tagCampaigns}, DefaultStatus: http.StatusCreated,
		Description: "Admits a campaign with its envelope. The answer carries the campaign's token; it is shown this once and only its hash is kept. " +
			"409 when the name is taken or the guarantees would exceed the pool.",
		Errors: []int{http.StatusConflict}}, s.register)
	operation(s, roleAdmin, huma.Operation{OperationID: "list-campaigns", Method: http.MethodGet, Path: "/v1/campaigns",
		Summary: "List campaigns (administrator)", Tags: []string{tagCampaigns}}, s.list)
	operation(s, roleCampaign, huma.Operation{OperationID: "get-campaign", Method: http.MethodGet, Path: "/v1/campaigns/{campaign}",
		Summary: "A campaign's envelope and standing", Tags: []string{tagCampaigns}, Errors: []int{http.StatusNotFound}}, s.campaign)
	operation(s, roleCampaign, huma.Operation{OperationID: "get-supply", Method: http.MethodGet, Path: "/v1/campaigns/{campaign}/supply",
		Summary: "What the campaign can see before it asks", Tags: []string{tagCampaigns},
		Description: "Free and reclaimable GPUs, congestion price, the campaign's tokens and credits, and per flow dimension its bucket and the facility capacity left this second.",
		Errors:      []int{http.StatusNotFound}}, s.supply)
	operation(s, roleCampaign, huma.Operation{OperationID: "request-lease", Method: http.MethodPost, Path: "/v1/campaigns/{campaign}/requests",
		Summary: "Request GPUs", Tags: []string{tagLeases}, DefaultStatus: http.StatusAccepted,
		Description: "Queues a request for admission at the next tick and answers 202 with its id; poll the request (or the grants) for the grant. " +
			"402 when the campaign has no credits left and the class is not opportunistic (the request id is used up all the same). " +
			"429 when the campaign already has the most pending requests the service queues.",
		Errors: []int{http.StatusNotFound, http.StatusPaymentRequired, http.StatusTooManyRequests}}, s.request)
	operation(s, roleCampaign, huma.Operation{OperationID: "get-request", Method: http.MethodGet, Path: "/v1/campaigns/{campaign}/requests/{request}",
		Summary: "Where a request stands", Tags: []string{tagLeases},
		Description: "pending, or granted with its grant. 404 when it is neither: expired, withdrawn by a release, or its grant is older than the retained grants.",
		Errors:      []int{http.StatusNotFound}}, s.requestStatus)
	s.registerRequestOperations() // withdraw and wait: withdraw.go, wait.go
	operation(s, roleCampaign, huma.Operation{OperationID: "list-leases", Method: http.MethodGet, Path: "/v1/campaigns/{campaign}/leases",
		Summary: "The campaign's leases and pending requests", Tags: []string{tagLeases}, Errors: []int{http.StatusNotFound}}, s.leases)
	operation(s, roleCampaign, huma.Operation{OperationID: "release-all", Method: http.MethodDelete, Path: "/v1/campaigns/{campaign}/leases",
		Summary: "Release every lease (optionally of one class)", Tags: []string{tagLeases},
		Description: "Releases the campaign's leases in lease order and drops its pending requests, all or those of the given class.",
		Errors:      []int{http.StatusNotFound}}, s.releaseAll)
	operation(s, roleCampaign, huma.Operation{OperationID: "release-lease", Method: http.MethodDelete, Path: "/v1/campaigns/{campaign}/leases/{lease}",
		Summary: "Release one lease", Tags: []string{tagLeases}, Errors: []int{http.StatusNotFound}}, s.releaseLease)
	operation(s, roleCampaign, huma.Operation{OperationID: "consume", Method: http.MethodPost, Path: "/v1/campaigns/{campaign}/consume",
		Summary: "Meter io and inference", Tags: []string{tagLeases},
		Description: "Throttle at the source: says how much of the wanted filesystem bandwidth and inference the campaign may use in the current broker second. Allowed inference is charged to its credits. " +
			"429 beyond the calls per broker second the service takes from one campaign (meter once a second, summing what you want).",
		Errors: []int{http.StatusNotFound, http.StatusTooManyRequests}}, s.consume)
	operation(s, roleCampaign, huma.Operation{OperationID: "list-grants", Method: http.MethodGet, Path: "/v1/campaigns/{campaign}/grants",
		Summary: "The campaign's grants", Tags: []string{tagLeases}, Errors: []int{http.StatusNotFound}}, s.grants)
	operation(s, roleAny, huma.Operation{OperationID: "journal", Method: http.MethodGet, Path: "/v1/journal",
		Summary: "Journal tail", Tags: []string{tagService},
		Description: "The broker's decision journal. The administrator reads every record (or one campaign's); a campaign token reads its own records only.",
		Errors:      []int{http.StatusNotFound}}, s.journal)
	s.registerTokenOperations()
	s.registerSlurmOperations()
}

// fieldError is a 422 naming one field.
func fieldError(loc, msg string, v any) error {
	return huma.Error422UnprocessableEntity("validation failed", &huma.ErrorDetail{Location: loc, Message: msg, Value: v})
}

// campaign resolves a campaign name. Only the administrator can reach an
// unknown name: a campaign token on another name was refused already.
func (t *txn) campaign(name string) (policy.CampaignID, *campState, error) {
	id, ok := t.c.byName[name]
	if !ok {
		return -1, nil, huma.Error404NotFound(fmt.Sprintf("no campaign %q", name))
	}
	return id, t.c.camps[id], nil
}

func specOf(env policy.Envelope) api.CampaignSpec {
	flow := func(f *policy.Flow) *api.FlowSpec {
		if f == nil {
			return nil
		}
		return &api.FlowSpec{Rate: f.Rate, Bucket: f.Bucket, Ceiling: f.Ceiling}
	}
	return api.CampaignSpec{Name: env.Name, Budget: env.Budget, Guaranteed: env.Guaranteed, Sustained: env.Sustained,
		BurstCeiling: env.BurstCeiling, Bucket: env.Bucket, Class: env.Class.String(), IO: flow(env.IO), Inference: flow(env.Inference)}
}

func (c *core) campaignView(id policy.CampaignID) api.Campaign {
	cs := c.camps[id]
	return api.Campaign{
		ID: int(id), Name: cs.name, Envelope: specOf(c.b.Envelope(id)),
		Held: c.b.Held(id, policy.AnyClass), Outstanding: c.b.Outstanding(id, policy.AnyClass), PendingRequests: cs.pending,
		Credits: c.b.Credits(id), Spent: c.b.Spent(id),
		Grants: int(cs.grants.last), GrantedGPUs: int(cs.grantedGPUs),
	}
}

// grantOf renders a grant of campaign cs, with the campaign's lease id.
func grantOf(cs *campState, e *entry) api.Grant {
	ev := &e.ev
	return api.Grant{Seq: e.seq, T: ev.T, Lease: cs.localID(ev.Lease), GPUs: ev.GPUs, Class: ev.Class.String(),
		Latency: ev.Latency, Path: ev.Path.String(),
		Rule: api.GrantRule{ClassRank: ev.Class.Rank(), FairDeficit: ev.FairDeficit, Tokens: ev.RuleTokens}}
}

func (s *Service) health(ctx context.Context, _ *emptyInput) (*healthOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil {
		return nil, errUnavailable("the service has failed: " + s.failed.Error())
	}
	return &healthOutput{api.Health{Status: "ok", T: int(s.durableT.Load()), Durable: s.wal != nil}}, nil
}

func (s *Service) register(ctx context.Context, in *registerInput) (*registerOutput, error) {
	spec := in.Body
	if spec.BurstCeiling < spec.Guaranteed {
		return nil, fieldError("body.burst_ceiling", fmt.Sprintf("burst_ceiling (%d) must not be below guaranteed (%d)", spec.BurstCeiling, spec.Guaranteed), spec.BurstCeiling)
	}
	cls, err := policy.ParseClass(spec.Class)
	if err != nil {
		return nil, fieldError("body.class", err.Error(), spec.Class)
	}
	flow := func(f *api.FlowSpec) *policy.Flow {
		if f == nil {
			return nil
		}
		return &policy.Flow{Rate: f.Rate, Bucket: f.Bucket, Ceiling: f.Ceiling}
	}
	env := policy.Envelope{Name: spec.Name, Budget: spec.Budget, Guaranteed: spec.Guaranteed, Sustained: spec.Sustained,
		BurstCeiling: spec.BurstCeiling, Bucket: spec.Bucket, Class: cls, IO: flow(spec.IO), Inference: flow(spec.Inference)}
	var out registerOutput
	err = s.withState(ctx, func(t *txn) error {
		if _, dup := t.c.byName[env.Name]; dup {
			return huma.Error409Conflict(fmt.Sprintf("a campaign named %q is registered already", env.Name))
		}
		id := policy.CampaignID(t.c.b.NumCampaigns())
		tok, err := newCampaignToken(id)
		if err != nil {
			return err
		}
		res, err := t.apply(&op{Op: opRegister, Env: &env, TokenHash: hexHash(hashToken(tok))})
		switch {
		case errors.Is(err, policy.ErrOverbooked):
			return huma.Error409Conflict(err.Error())
		case errors.Is(err, policy.ErrInvalidEnvelope):
			return huma.Error422UnprocessableEntity(err.Error())
		case err != nil:
			return err
		case res.id != int(id):
			return fmt.Errorf("registered as campaign %d, expected %d", res.id, id)
		}
		out = registerOutput{Location: "/v1/campaigns/" + env.Name,
			Body: api.Registration{ID: res.id, Name: env.Name, Token: tok, T: t.c.b.Now(), Envelope: specOf(env)}}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.log.Info("campaign registered", "campaign", env.Name, "id", out.Body.ID, "guaranteed", env.Guaranteed)
	return &out, nil
}

func (s *Service) list(ctx context.Context, _ *emptyInput) (*listOutput, error) {
	var out listOutput
	err := s.withState(ctx, func(t *txn) error {
		b := t.c.b
		out.Body = api.CampaignList{T: b.Now(), Pool: b.Config().Pool, Free: b.Free(), Campaigns: make([]api.Campaign, 0, b.NumCampaigns())}
		for i := range b.NumCampaigns() {
			out.Body.Campaigns = append(out.Body.Campaigns, t.c.campaignView(policy.CampaignID(i)))
		}
		return nil
	})
	return &out, err
}

func (s *Service) campaign(ctx context.Context, in *campaignInput) (*campaignOutput, error) {
	var out campaignOutput
	err := s.withState(ctx, func(t *txn) error {
		id, _, err := t.campaign(in.Campaign)
		if err != nil {
			return err
		}
		out.Body = api.CampaignOut{T: t.c.b.Now(), Campaign: t.c.campaignView(id)}
		return nil
	})
	return &out, err
}

func (s *Service) supply(ctx context.Context, in *campaignInput) (*supplyOutput, error) {
	var out supplyOutput
	err := s.withState(ctx, func(t *txn) error {
		id, _, err := t.campaign(in.Campaign)
		if err != nil {
			return err
		}
		b := t.c.b
		sp := b.Supply(id)
		fs := func(f policy.FlowSupply) api.FlowSupply {
			return api.FlowSupply{Tokens: f.Tokens, Bucket: f.Bucket, Rate: f.Rate, Ceiling: f.Ceiling, FacilityLeft: f.FacilityLeft}
		}
		out.Body = api.Supply{T: b.Now(), Free: sp.Free, Reclaimable: sp.Reclaimable,
			CongestionIndex: sp.CongestionIndex, Multiplier: sp.Multiplier,
			Tokens: sp.Tokens, Bucket: sp.Bucket, Sustained: sp.Sustained, Credits: sp.Credits,
			ExpectedPath: sp.ExpectedPath.String(),
			Held:         b.Held(id, policy.AnyClass), Outstanding: b.Outstanding(id, policy.AnyClass),
			IO: fs(sp.IO), Inference: fs(sp.Inference)}
		return nil
	})
	return &out, err
}

func (s *Service) request(ctx context.Context, in *requestInput) (*requestOutput, error) {
	r := in.Body
	var out requestOutput
	err := s.withState(ctx, func(t *txn) error {
		id, cs, err := t.campaign(in.Campaign)
		if err != nil {
			return err
		}
		b := t.c.b
		if pool := b.Config().Pool; r.GPUs > pool {
			return fieldError("body.gpus", fmt.Sprintf("gpus must be at most the pool (%d)", pool), r.GPUs)
		}
		if cs.pending >= s.opts.MaxPending {
			return huma.Error429TooManyRequests(fmt.Sprintf("campaign %s has %d pending requests, the most the service queues per campaign; wait for grants or release some", cs.name, cs.pending))
		}
		if held := t.c.leaseCount(id); held+cs.pending >= s.opts.MaxLeases {
			return huma.Error429TooManyRequests(fmt.Sprintf("campaign %s holds %d leases and has %d pending requests, the most the service keeps per campaign (%d, serve --max-leases); release leases or withdraw requests first",
				cs.name, held, cs.pending, s.opts.MaxLeases))
		}
		res, err := t.apply(&op{Op: opRequest, C: int(id), GPUs: r.GPUs, Duration: r.Duration, Class: r.Class})
		// The campaign sees its own count of requests, never the
		// broker's id (ids.go).
		local := cs.localID(res.id)
		if errors.Is(err, policy.ErrBudgetExhausted) {
			return huma.NewError(http.StatusPaymentRequired, fmt.Sprintf(
				"campaign %s has no credits left (%.4g): only opportunistic requests are accepted; request %d was denied", cs.name, b.Credits(id), local))
		}
		if err != nil {
			return huma.Error422UnprocessableEntity(err.Error())
		}
		cls := r.Class
		if cls == "" {
			cls = b.Envelope(id).Class.String()
		}
		if err := t.admitLocked(); err != nil {
			return err
		}
		state := api.StatePending
		if s.opts.AdmitOnRequest {
			state = t.requestState(id, cs, local).State
		}
		out = requestOutput{Location: "/v1/campaigns/" + cs.name + "/requests/" + strconv.Itoa(local),
			Body: api.RequestAccepted{RequestID: local, State: state, T: b.Now(), GPUs: r.GPUs, Duration: r.Duration, Class: cls}}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.wakeAfterAdmit()
	return &out, nil
}

func (s *Service) requestStatus(ctx context.Context, in *requestStatusInput) (*requestStatusOutput, error) {
	var out requestStatusOutput
	err := s.withState(ctx, func(t *txn) error {
		id, cs, err := t.campaign(in.Campaign)
		if err != nil {
			return err
		}
		out.Body = t.requestState(id, cs, in.Request)
		if out.Body.State == "" {
			return errRequestGone(in.Request, cs.name)
		}
		return nil
	})
	return &out, err
}

func (s *Service) leases(ctx context.Context, in *campaignInput) (*leasesOutput, error) {
	var out leasesOutput
	err := s.withState(ctx, func(t *txn) error {
		id, cs, err := t.campaign(in.Campaign)
		if err != nil {
			return err
		}
		b := t.c.b
		out.Body = api.Leases{T: b.Now(), Held: b.Held(id, policy.AnyClass), Outstanding: b.Outstanding(id, policy.AnyClass),
			Leases: []api.Lease{}, Pending: []api.PendingRequest{}}
		for _, l := range b.Leases() {
			if l.Campaign == id {
				cl := api.Lease{ID: cs.localID(l.ID), GPUs: l.GPUs, Class: l.Class.String(), Submitted: l.Submitted,
					Granted: l.Granted, Expires: l.Expires, UnderNotice: l.UnderNotice}
				if l.UnderNotice {
					cl.PreemptAt = l.PreemptAt
				}
				out.Body.Leases = append(out.Body.Leases, cl)
			}
		}
		for _, r := range b.Pending() {
			if r.Campaign == id {
				out.Body.Pending = append(out.Body.Pending, api.PendingRequest{ID: cs.localID(r.ID), GPUs: r.GPUs, Duration: r.Duration,
					Class: r.Class.String(), Submitted: r.Submitted})
			}
		}
		return nil
	})
	return &out, err
}

func (s *Service) releaseAll(ctx context.Context, in *releaseAllInput) (*releaseOutput, error) {
	var out releaseOutput
	var spent []SlurmLease
	err := s.withState(ctx, func(t *txn) error {
		id, cs, err := t.campaign(in.Campaign)
		if err != nil {
			return err
		}
		// A lease whose Slurm job runs is held until nothing of it
		// does, the others are released at once (slurmhold.go).
		var freed bool
		out.Body, spent, freed, err = t.releaseAllWhileSlurmRuns(id, cs, in.Class)
		if err != nil {
			return err
		}
		if freed {
			if err := t.admitLocked(); err != nil {
				return err
			}
		}
		out.Body.T = t.c.b.Now()
		return nil
	})
	s.markSlurmReleased(spent)
	s.wakeAfterAdmit()
	return &out, err
}

func (s *Service) releaseLease(ctx context.Context, in *releaseLeaseInput) (*releaseOutput, error) {
	var out releaseOutput
	var spent []SlurmLease
	err := s.withState(ctx, func(t *txn) error {
		id, cs, err := t.campaign(in.Campaign)
		if err != nil {
			return err
		}
		l, held := t.c.heldLease(id, cs, in.Lease)
		if !held {
			return huma.Error404NotFound(fmt.Sprintf("campaign %s holds no lease %d", cs.name, in.Lease))
		}
		res, slurm, err := t.releaseWhileSlurmRuns(id, cs, l, in.Lease)
		if err != nil {
			return err
		}
		spent = t.s.releasedSlurmTokens(cs.name, in.Lease, l.GPUs)
		if slurm {
			// Its Slurm job still runs: the broker counts its GPUs
			// until nothing of it does (slurmhold.go).
			out.Body = api.ReleaseResult{T: t.c.b.Now(), ReleasedLeases: res.releasedLeases, ReleasedGPUs: max(0, res.releasedGPUs), HeldGPUs: l.GPUs}
			return nil
		}
		res, err = t.apply(&op{Op: opReleaseLease, C: int(id), Lease: l.ID})
		if err != nil {
			return err
		}
		if err := t.admitLocked(); err != nil {
			return err
		}
		out.Body = api.ReleaseResult{T: t.c.b.Now(), ReleasedLeases: res.releasedLeases, ReleasedGPUs: res.releasedGPUs}
		return nil
	})
	s.markSlurmReleased(spent)
	s.wakeAfterAdmit()
	return &out, err
}

// flowSlack matches the broker's: a flow grant this close to the desire is
// whole.
const flowSlack = 1e-9

func (s *Service) consume(ctx context.Context, in *consumeInput) (*consumeOutput, error) {
	var out consumeOutput
	err := s.withState(ctx, func(t *txn) error {
		id, cs, err := t.campaign(in.Campaign)
		if err != nil {
			return err
		}
		if now := t.c.b.Now(); cs.consumeT != now {
			cs.consumeT, cs.consumeN = now, 0
		}
		if cs.consumeN >= s.opts.MaxConsumePerTick {
			return huma.Error429TooManyRequests(fmt.Sprintf("campaign %s has metered %d times in broker second %d, the most the service takes; "+
				"sum what you want over the second and meter once", cs.name, cs.consumeN, cs.consumeT))
		}
		cs.consumeN++
		res, err := t.apply(&op{Op: opConsume, C: int(id), IO: in.Body.IO, Inf: in.Body.Inference})
		if err != nil {
			return huma.Error422UnprocessableEntity(err.Error())
		}
		b := t.c.b
		fg := func(desired, allowed float64, d policy.Dimension) api.FlowGrant {
			return api.FlowGrant{Desired: desired, Allowed: allowed, Throttled: allowed < desired-flowSlack, Tokens: b.FlowTokens(id, d)}
		}
		out.Body = api.ConsumeResult{T: b.Now(),
			IO:        fg(in.Body.IO, res.allowedIO, policy.IO),
			Inference: fg(in.Body.Inference, res.allowedInference, policy.Inference),
			Credits:   b.Credits(id)}
		return nil
	})
	return &out, err
}

func (s *Service) grants(ctx context.Context, in *grantsInput) (*grantsOutput, error) {
	var out grantsOutput
	err := s.withState(ctx, func(t *txn) error {
		_, cs, err := t.campaign(in.Campaign)
		if err != nil {
			return err
		}
		page, next, _ := cs.grants.page(in.After, in.Limit)
		out.Body = api.Grants{T: t.c.b.Now(), TotalGrants: cs.grants.last, TotalGPUs: cs.grantedGPUs,
			Oldest: cs.grants.oldest(), Next: next, Grants: make([]api.Grant, 0, len(page))}
		for _, e := range page {
			out.Body.Grants = append(out.Body.Grants, grantOf(cs, e))
		}
		return nil
	})
	return &out, err
}

func (s *Service) journal(ctx context.Context, in *journalInput) (*journalOutput, error) {
	p := principalOf(ctx)
	if !p.admin && in.Campaign != "" && in.Campaign != p.name {
		return nil, huma.Error403Forbidden("a campaign token reads its own journal records only")
	}
	var out journalOutput
	err := s.withState(ctx, func(t *txn) error {
		// The whole journal (the administrator's) carries the broker's
		// ids; a campaign's scope carries the campaign's own (ids.go).
		r, scope, ids := &t.c.journal, "all", (*campState)(nil)
		name := in.Campaign
		if !p.admin {
			name = p.name
		}
		if name != "" {
			_, cs, err := t.campaign(name)
			if err != nil {
				return err
			}
			r, scope, ids = &cs.journal, name, cs
		}
		page, next, truncated := r.page(in.After, in.Limit)
		out.Body = api.Journal{T: t.c.b.Now(), Scope: scope, Oldest: r.oldest(), Next: next, Truncated: truncated,
			Records: make([]api.JournalRecord, 0, len(page))}
		var buf []byte
		for _, e := range page {
			ev := e.ev
			if ids != nil && ev.Lease != 0 {
				ev.Lease = ids.localID(ev.Lease)
			}
			if e.job != "" {
				buf = appendSlurmJobRecord(buf[:0], ev, e.job)
			} else {
				buf = ev.AppendJSON(buf[:0])
			}
			out.Body.Records = append(out.Body.Records, api.JournalRecord{Seq: e.seq, Wall: e.wall, Record: json.RawMessage(append([]byte(nil), buf...))})
		}
		return nil
	})
	return &out, err
}
