package arrive

import (
	"errors"
	"math"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
)

// ErrMetered is what a metered agent's request returns when the broker's
// cap leaves it no headroom: the site's policy never saw it.
var ErrMetered = errors.New("refused by the Bursar meter before the site's policy")

// site is the site's policy with agents on it: trace.Replay drives it as
// it drives any policy, and it steps the agent crew inside each Tick
// before the policy's own tick (the engine's order: agents, then the
// broker). The agents register right after the trace's campaigns (at the
// replay's first filing or tick); they step at their own ticks 1 … stay
// (policy ticks arrive+1 …), and the quiet ticks before they arrive and
// after they leave are skipped like the replay's. With no agents the site
// is the policy: the plain replay.
type site struct {
	policy.Allocator
	rigid policy.RigidRequester
	skip  policy.EventSkipper // nil: the policy cannot skip

	cast   []engine.Campaign
	pool   int
	seed   int64
	arrive int // policy tick before the agents' first
	stay   int // agent ticks

	crew    *engine.Crew
	first   policy.CampaignID // the crew's first id (they are consecutive)
	err     error
	metered bool
	meter   []bucket
	// reserved is Σ of the agents' guarantees; bursar marks the Bursar
	// broker; stranded counts the trace jobs denied for the reserve.
	reserved int
	bursar   bool
	stranded int
	// agents is what each agent got, in cast order.
	agents []AgentResult
}

// agentRecorder counts the agents' grants and expiries from the policy's
// journal, and passes every event on to the
// replay's own recorder.
type agentRecorder struct {
	s    *site
	next policy.Recorder
}

func (r *agentRecorder) Record(e policy.Event) {
	if m := r.s.member(e.CampaignID); m >= 0 {
		a := &r.s.agents[m]
		switch e.Kind {
		case policy.EventGrant:
			a.Granted++
		case policy.EventRequestExpired:
			a.Expired++
		}
	}
	if r.next != nil {
		r.next.Record(e)
	}
}

// SetRecorder puts the agents' counter between the policy and rec.
func (s *site) SetRecorder(rec policy.Recorder) {
	s.Allocator.SetRecorder(&agentRecorder{s: s, next: rec})
}

// bucket is a metered agent's GPU bucket as the broker keeps it (model.md
// §3, policy.TokenBucket): tokens = clamp(tokens + R − held, 0, B) every
// tick, full at registration.
type bucket struct {
	tokens float64
	env    policy.Envelope
}

var (
	_ policy.RigidRequester    = (*site)(nil)
	_ policy.EventSkipper      = (*site)(nil)
	_ baseline.QueuedRequester = (*site)(nil)
)

func newSite(a policy.Allocator, cast []engine.Campaign, seed int64, arrive, stay int, metered bool) (*site, error) {
	rr, ok := a.(policy.RigidRequester)
	if !ok {
		return nil, errors.New("agents-arrive: the policy cannot file rigid requests")
	}
	sk, _ := a.(policy.EventSkipper)
	_, bursar := a.(*policy.Broker)
	return &site{Allocator: a, rigid: rr, skip: sk, cast: cast, pool: a.Config().Pool, seed: seed,
		arrive: arrive, stay: stay, metered: metered, bursar: bursar}, nil
}

// RequestRigid files a trace job. Under Bursar the agents' guarantees are
// reserved for them whether they use them or not (model.md §5,
// grantable), so a trace campaign (g = 0) can never hold more than the
// pool less the agents' guarantees: a larger job is denied as a request
// its campaign can never hold (docs/studies.md §6.1) instead of waiting
// forever. The baselines judge that themselves.
func (s *site) RequestRigid(c policy.CampaignID, gpus, estimate, run int, cls policy.Class, submitted int) (int, error) {
	s.register()
	if s.bursar && s.reserved > 0 && gpus > s.pool-s.reserved {
		s.stranded++
		return -1, policy.ErrExceedsLimit
	}
	return s.rigid.RequestRigid(c, gpus, estimate, run, cls, submitted)
}

// RequestRigidQueued is RequestRigid into the job's site queue, passed on
// to a policy that reads queues (priority's tiers, docs/studies.md §2).
func (s *site) RequestRigidQueued(c policy.CampaignID, gpus, estimate, run int, cls policy.Class, submitted int, queue string) (int, error) {
	qr, ok := s.rigid.(baseline.QueuedRequester)
	if !ok {
		return s.RequestRigid(c, gpus, estimate, run, cls, submitted)
	}
	s.register()
	if s.bursar && s.reserved > 0 && gpus > s.pool-s.reserved {
		s.stranded++
		return -1, policy.ErrExceedsLimit
	}
	return qr.RequestRigidQueued(c, gpus, estimate, run, cls, submitted, queue)
}

// Register passes the trace's campaigns on with a budget they cannot
// exhaust: a trace job's budget denial is an error of the replay, and
// with agents on the machine a trace campaign's work can be preempted and
// rerun (or priced higher under Bursar) past the budget trace.Workload
// gives it (pool × the trace's hours × 4 credits), which it never reached
// without agents. Credits order nothing for a trace job, so the change is
// invisible until a budget would run out (k = 0 still equals the plain
// replay, a test checks).
func (s *site) Register(env policy.Envelope) (policy.CampaignID, error) {
	if s.crew == nil {
		env.Budget = traceBudget
	}
	return s.Allocator.Register(env)
}

// traceBudget is the trace campaigns' budget on the site: out of reach.
const traceBudget = 1e15

func (s *site) member(c policy.CampaignID) int {
	if s.crew == nil || c < s.first || int(c-s.first) >= len(s.cast) {
		return -1
	}
	return int(c - s.first)
}

// Request passes a request on; a metered agent's request must first pass
// the broker's rate cap (model.md §5 step 2, prepaid leases: cap =
// max(min(burst, trunc(R + tokens / max(duration, 1))), g)). The headroom
// is the cap less what the agent holds and has pending (outstanding), not
// only what it holds as in the broker's walk: the site's policy will not
// check the cap again when it admits the request, so the gate must count
// the GPUs already asked for. A request with no headroom is refused; a
// larger one is cut to the headroom.
func (s *site) Request(c policy.CampaignID, gpus, duration int, cls policy.Class) (int, error) {
	m := s.member(c)
	if m < 0 {
		return s.Allocator.Request(c, gpus, duration, cls)
	}
	a := &s.agents[m]
	a.Requests++
	if s.metered {
		b := &s.meter[m]
		afford := b.env.Sustained + b.tokens/float64(max(duration, 1))
		capGPUs := max(min(b.env.BurstCeiling, int(math.Trunc(afford))), b.env.Guaranteed)
		head := capGPUs - s.Allocator.Outstanding(c, policy.AnyClass)
		if head <= 0 {
			a.Refused++
			return -1, ErrMetered
		}
		gpus = min(gpus, head)
	}
	id, err := s.Allocator.Request(c, gpus, duration, cls)
	if err != nil {
		a.Denied++
	}
	return id, err
}

// Tokens is what an agent reads as its GPU bucket: the meter's when
// metered, else the policy's.
func (s *site) Tokens(c policy.CampaignID) float64 {
	if m := s.member(c); m >= 0 && s.metered {
		return s.meter[m].tokens
	}
	return s.Allocator.Tokens(c)
}

// register registers the crew once, after the trace's campaigns (the
// replay registers those first, then files and ticks).
func (s *site) register() {
	if s.crew != nil || len(s.cast) == 0 || s.err != nil {
		return
	}
	s.first = policy.CampaignID(s.Allocator.NumCampaigns())
	s.crew, s.err = engine.NewCrew(s, s.cast, s.pool, s.seed)
	if s.err != nil {
		return
	}
	for i := range s.cast {
		env := s.cast[i].Envelope(s.pool)
		s.agents = append(s.agents, AgentResult{Name: s.cast[i].Name, Kind: s.cast[i].Agent})
		s.reserved += env.Guaranteed
		if s.metered {
			s.meter = append(s.meter, bucket{tokens: env.Bucket, env: env})
		}
	}
}

func (s *site) Tick() {
	s.register()
	t := s.Allocator.Now() + 1
	at := t - s.arrive
	active := s.crew != nil && at >= 1 && at <= s.stay
	if active {
		s.crew.Step(at)
	}
	s.Allocator.Tick()
	if active {
		for i := range s.cast {
			s.agents[i].GPUSeconds += int64(s.Allocator.Held(s.first+policy.CampaignID(i), policy.AnyClass))
		}
	}
	if active && s.metered {
		for i := range s.meter {
			b := &s.meter[i]
			held := s.Allocator.Held(s.first+policy.CampaignID(i), policy.AnyClass)
			b.tokens = b.env.GPUBucket().Refill(b.tokens, float64(held))
		}
	}
	// The agents leave at the end of their stay: their leases are
	// released and their pending requests dropped, so that what they got
	// is what they held during the stay.
	if active && at == s.stay {
		for i := range s.cast {
			if err := s.Allocator.ReleaseAll(s.first+policy.CampaignID(i), policy.AnyClass); err != nil && s.err == nil {
				s.err = err
			}
		}
	}
}

// NextChange is the policy's, but never past the agents' arrival, and
// the next tick while they are on the machine (they act every tick).
func (s *site) NextChange() int {
	now := s.Allocator.Now()
	if s.skip == nil {
		return now + 1
	}
	nc := s.skip.NextChange()
	if len(s.cast) > 0 {
		if now+1 > s.arrive && now+1-s.arrive <= s.stay {
			return now + 1
		}
		if now < s.arrive {
			nc = min(nc, s.arrive+1)
		}
	}
	return nc
}

func (s *site) SkipTo(t int) { s.skip.SkipTo(t) }
