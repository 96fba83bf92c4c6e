package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/bursar-hpc/bursar/client"
)

// Run plays the demo campaign's loop against the service admin reaches
// (with the administrator's token), registering campaign name and
// narrating each step on out. It returns how many checks passed and the
// first deviation from what the broker's rules promise.
func Run(ctx context.Context, out io.Writer, admin *client.Client, name string) (checks int, err error) {
	ag := &agent{out: out, admin: admin, name: name, poll: 100 * time.Millisecond}
	err = ag.negotiate(ctx)
	return ag.checks, err
}

// The demo campaign's envelope. The numbers are chosen so that every step
// has a predictable outcome under the broker's rules, at any --speed: 16
// GPUs are guaranteed, so the first request is granted from free GPUs (and
// its 10-hour lease cannot expire during the demo); the budget outlasts
// tens of thousands of broker seconds of that lease; the guarantee does not
// exceed the sustained rate (g ≤ R, as every envelope should: a guarantee
// above R could not be held for long without draining the bucket); the
// bucket (600 GPU-seconds at R = 16) cannot prepay a 3600 s lease above R,
// so the second request meets a rate cap of max(trunc(16 + tokens/3600),
// 16) = 16 GPUs, exactly what the campaign already holds; the flow ceilings
// are far below what step 4 asks for.
var demoEnvelope = client.CampaignSpec{
	Budget: 1000, Guaranteed: 16, Sustained: 16, BurstCeiling: 32, Bucket: 600, Class: client.ClassAgentBurst,
	IO:        &client.FlowSpec{Rate: 2, Bucket: 20, Ceiling: 4},
	Inference: &client.FlowSpec{Rate: 500, Bucket: 5000, Ceiling: 1000},
}

// agent is the demo campaign's agent.
type agent struct {
	out    io.Writer
	admin  *client.Client
	camp   *client.Client
	name   string
	token  string
	poll   time.Duration
	step   int
	checks int
}

func (a *agent) say(format string, args ...any) {
	fmt.Fprintf(a.out, "  "+format+"\n", args...)
}

func (a *agent) title(s string) {
	a.step++
	fmt.Fprintf(a.out, "[%d] %s\n", a.step, s)
}

// expect records one check; a failed one is the demo's error.
func (a *agent) expect(ok bool, format string, args ...any) error {
	a.checks++
	if !ok {
		return fmt.Errorf("step %d: "+format, append([]any{a.step}, args...)...)
	}
	return nil
}

// until polls f until it reports done.
func (a *agent) until(ctx context.Context, what string, f func() (bool, error)) error {
	for {
		done, err := f()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("step %d: waiting for %s: %w", a.step, what, ctx.Err())
		case <-time.After(a.poll):
		}
	}
}

func redact(tok string) string {
	if i := strings.LastIndexByte(tok, '_'); i > 0 {
		return tok[:i+1] + "…"
	}
	return "…"
}

// negotiate plays the whole loop.
func (a *agent) negotiate(ctx context.Context) error {
	h, err := a.admin.Health(ctx)
	if err != nil {
		return fmt.Errorf("server %s: %w", a.admin.BaseURL(), err)
	}
	fmt.Fprintf(a.out, "server %s is up at broker time %d (durable: %v)\n", a.admin.BaseURL(), h.T, h.Durable)

	a.title("register the campaign through the administrator")
	spec := demoEnvelope
	spec.Name = a.name
	reg, err := a.admin.Register(ctx, spec)
	if err != nil {
		return err
	}
	a.token = reg.Token
	a.camp = a.admin.WithToken(reg.Token)
	a.say("campaign %s is id %d; its token (%s) is shown once and kept by the agent", reg.Name, reg.ID, redact(reg.Token))
	a.say("envelope: guaranteed %d GPUs, R %g, burst %d, bucket %g GPU-s, budget %g credits, io ceiling %g GB/s, inference ceiling %g tok/s",
		spec.Guaranteed, spec.Sustained, spec.BurstCeiling, spec.Bucket, spec.Budget, spec.IO.Ceiling, spec.Inference.Ceiling)
	if err := a.expect(reg.Name == a.name && strings.HasPrefix(reg.Token, "bursar_c") && sameSpec(reg.Envelope, spec),
		"registration answered %+v", reg); err != nil {
		return err
	}

	a.title("read the supply")
	sup, err := a.camp.Supply(ctx, a.name)
	if err != nil {
		return err
	}
	a.say("free %d GPUs, reclaimable %d, congestion multiplier %g, expected path %s", sup.Free, sup.Reclaimable, sup.Multiplier, sup.ExpectedPath)
	a.say("own bucket %g/%g GPU-s, credits %g", sup.Tokens, sup.Bucket, sup.Credits)
	if err := a.expect(sup.Tokens == spec.Bucket && sup.Credits == spec.Budget && sup.Held == 0,
		"a fresh campaign has a full bucket, its whole budget and nothing held; got tokens %g, credits %g, held %d", sup.Tokens, sup.Credits, sup.Held); err != nil {
		return err
	}

	a.title("request 16 GPUs for 10 hours and wait for the grant")
	reqA, err := a.camp.Request(ctx, a.name, client.LeaseRequest{GPUs: 16, Duration: 36000})
	if err != nil {
		return err
	}
	a.say("request %d accepted at t=%d (%s), pending until the next admission pass", reqA.RequestID, reqA.T, reqA.Class)
	if err := a.expect(reqA.State == client.StatePending && reqA.Class == client.ClassAgentBurst, "request answered %+v", reqA); err != nil {
		return err
	}
	g, err := a.camp.WaitGrant(ctx, a.name, reqA.RequestID, a.poll)
	if err != nil {
		return err
	}
	a.say("granted: lease %d, %d GPUs at t=%d after %d s (%s path)", g.Lease, g.GPUs, g.T, g.Latency, g.Path)
	if err := a.expect(g.Lease == reqA.RequestID && g.GPUs == 16, "grant %+v for request %d", g, reqA.RequestID); err != nil {
		return err
	}

	a.title("meter io and inference: first within the envelope, then beyond it")
	cr, err := a.camp.Consume(ctx, a.name, 2, 500)
	if err != nil {
		return err
	}
	a.say("asked io 2 GB, inference 500 tok: allowed %g and %g; credits now %.6g", cr.IO.Allowed, cr.Inference.Allowed, cr.Credits)
	if err := a.expect(cr.IO.Allowed <= 2 && cr.Inference.Allowed <= 500, "allowed more than asked: %+v", cr); err != nil {
		return err
	}
	cr, err = a.camp.Consume(ctx, a.name, 100, 50000)
	if err != nil {
		return err
	}
	a.say("asked io 100 GB, inference 50000 tok: allowed %g and %g, throttled %v and %v",
		cr.IO.Allowed, cr.Inference.Allowed, cr.IO.Throttled, cr.Inference.Throttled)
	if err := a.expect(cr.IO.Throttled && cr.Inference.Throttled && cr.IO.Allowed <= spec.IO.Ceiling && cr.Inference.Allowed <= spec.Inference.Ceiling,
		"asking far beyond the ceilings must be throttled to them: %+v", cr); err != nil {
		return err
	}
	if err := a.expect(cr.Credits < spec.Budget, "inference must be charged: credits %g of %g", cr.Credits, spec.Budget); err != nil {
		return err
	}

	a.title("ask for 16 more GPUs for 3600 s, more than the bucket can prepay")
	reqB, err := a.camp.Request(ctx, a.name, client.LeaseRequest{GPUs: 16, Duration: 3600})
	if err != nil {
		return err
	}
	a.say("request %d accepted at t=%d", reqB.RequestID, reqB.T)
	var throttle map[string]any
	if err := a.until(ctx, "the throttle record", func() (bool, error) {
		j, err := a.camp.Journal(ctx, "", client.Page{After: 0, Limit: 1000})
		if err != nil {
			return false, err
		}
		for _, r := range j.Records {
			if rec := decode(r.Record); rec["event"] == "throttle" && num(rec["t"]) >= float64(reqB.T) {
				throttle = rec
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		return err
	}
	a.say("journal: %v", throttle)
	st, err := a.camp.RequestStatus(ctx, a.name, reqB.RequestID)
	if err != nil {
		return err
	}
	if err := a.expect(num(throttle["cap"]) == 16 && st.State == client.StatePending,
		"admission must hold request %d at a rate cap of 16 GPUs: record %v, request %s", reqB.RequestID, throttle, st.State); err != nil {
		return err
	}
	a.say("admission holds request %d: its rate cap is 16 GPUs, all of them held already", reqB.RequestID)
	ls, err := a.camp.Leases(ctx, a.name)
	if err != nil {
		return err
	}
	a.say("leases %v, pending %v, held %d, outstanding %d", ids(ls.Leases), pendingIDs(ls.Pending), ls.Held, ls.Outstanding)
	if err := a.expect(len(ls.Leases) == 1 && ls.Leases[0].ID == g.Lease && ls.Held == 16 && ls.Outstanding == 32,
		"want lease %d held and request %d pending, got %+v", g.Lease, reqB.RequestID, ls); err != nil {
		return err
	}

	a.title("release: the first lease, then everything")
	rr, err := a.camp.ReleaseLease(ctx, a.name, g.Lease)
	if err != nil {
		return err
	}
	a.say("released lease %d: %d GPUs", g.Lease, rr.ReleasedGPUs)
	if err := a.expect(rr.ReleasedLeases == 1 && rr.ReleasedGPUs == 16, "release answered %+v", rr); err != nil {
		return err
	}
	rr, err = a.camp.ReleaseAll(ctx, a.name, "")
	if err != nil {
		return err
	}
	// Request B may have been granted at a tick between the two releases
	// (it fits once lease A is gone); either way nothing may be left.
	a.say("released everything: %d leases (%d GPUs), %d pending requests dropped", rr.ReleasedLeases, rr.ReleasedGPUs, rr.DroppedRequests)
	if err := a.expect(rr.ReleasedLeases+rr.DroppedRequests == 1, "request %d must be released or dropped: %+v", reqB.RequestID, rr); err != nil {
		return err
	}
	ls, err = a.camp.Leases(ctx, a.name)
	if err != nil {
		return err
	}
	if err := a.expect(len(ls.Leases) == 0 && len(ls.Pending) == 0 && ls.Held == 0 && ls.Outstanding == 0, "after release: %+v", ls); err != nil {
		return err
	}

	a.title("read the grants and the journal")
	gs, err := a.camp.Grants(ctx, a.name, client.Tail)
	if err != nil {
		return err
	}
	for _, g := range gs.Grants {
		a.say("grant %d: lease %d, %d GPUs at t=%d, %s", g.Seq, g.Lease, g.GPUs, g.T, g.Path)
	}
	if err := a.expect(gs.TotalGrants >= 1 && gs.Grants[0].Lease == g.Lease, "grants %+v", gs); err != nil {
		return err
	}
	j, err := a.camp.Journal(ctx, "", client.Page{After: 0, Limit: 1000})
	if err != nil {
		return err
	}
	kinds := map[string]int{}
	for _, r := range j.Records {
		kinds[fmt.Sprint(decode(r.Record)["event"])]++
	}
	a.say("own journal: %d records %v", len(j.Records), kinds)
	for _, k := range []string{"register", "grant", "throttle", "throttle-io", "throttle-inference", "release"} {
		if err := a.expect(kinds[k] > 0, "the journal has no %s record: %v", k, kinds); err != nil {
			return err
		}
	}
	return nil
}

// sameSpec compares envelopes by value (the flows are pointers).
func sameSpec(a, b client.CampaignSpec) bool {
	eq := func(x, y *client.FlowSpec) bool { return x == nil && y == nil || x != nil && y != nil && *x == *y }
	fa, fb := eq(a.IO, b.IO), eq(a.Inference, b.Inference)
	a.IO, a.Inference, b.IO, b.Inference = nil, nil, nil, nil
	return fa && fb && a == b
}

// decode reads one journal record.
func decode(raw json.RawMessage) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}

// num reads a JSON number of a decoded record (NaN when absent).
func num(v any) float64 {
	if f, ok := v.(float64); ok {
		return f
	}
	return math.NaN()
}

func ids(ls []client.Lease) []int {
	out := []int{}
	for _, l := range ls {
		out = append(out, l.ID)
	}
	return out
}

func pendingIDs(ps []client.PendingRequest) []int {
	out := []int{}
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}
