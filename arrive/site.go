package arrive

import (
	"errors"
	"math"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/sitemeter"
	"github.com/bursar-hpc/bursar/trace"
)

// ErrMetered is what a metered agent's request returns when the broker's
// cap leaves it no headroom: the site's policy never saw it.
var ErrMetered = errors.New("refused by the Bursar meter before the site's policy")

// agents are the agents on a site that is replaying a log: the actor
// trace.Replay steps beside the log's users (trace.Actor), on the site's
// policy as it is. They register right after the log's campaigns; they
// step at their own ticks 1 … stay (policy ticks arrive+1 …) just before
// the policy's tick (the engine's order: agents, then the broker), and
// leave at the end of their stay; the replay skips no tick while they are
// on the machine, and skips the quiet ticks before they arrive and after
// they leave as a plain replay does. They reach the policy through their
// gate, which meters them in the metered mode. With no agents they only
// give the log's campaigns their budget (Envelope): the plain replay.
type agents struct {
	cast    []engine.Campaign
	seed    int64
	arrive  int // policy tick before the agents' first
	stay    int // agent ticks
	metered bool

	site  policy.Allocator // the site's policy, from Join
	pool  int
	crew  *engine.Crew
	first policy.CampaignID // the crew's first id (they are consecutive)
	meter []bucket
	// reserved is Σ of the agents' guarantees; bursar marks the Bursar
	// broker; stranded counts the trace jobs denied for the reserve.
	reserved int
	bursar   bool
	stranded int
	// got is what each agent got, in cast order.
	got []AgentResult
}

// bucket is a metered agent's GPU bucket as the broker keeps it (model.md
// §3, policy.TokenBucket): tokens = clamp(tokens + R − held, 0, B) every
// tick, full at registration.
type bucket struct {
	tokens float64
	env    policy.Envelope
}

var (
	_ trace.Actor     = (*agents)(nil)
	_ policy.Recorder = (*agents)(nil)
)

func newAgents(cast []engine.Campaign, seed int64, arrive, stay int, metered bool) *agents {
	return &agents{cast: cast, seed: seed, arrive: arrive, stay: stay, metered: metered}
}

// Envelope gives the log's campaigns a budget they cannot exhaust: a
// trace job's budget denial is an error of the replay, and with agents
// on the machine a trace campaign's work can be preempted and rerun (or
// priced higher under Bursar) past the budget trace.Workload gives it
// (pool × the trace's hours × 4 credits), which it never reached without
// agents. Credits order nothing for a trace job, so the change is
// invisible until a budget would run out (k = 0 still equals the plain
// replay, a test checks).
func (ag *agents) Envelope(env policy.Envelope) policy.Envelope {
	env.Budget = traceBudget
	return env
}

// traceBudget is the trace campaigns' budget on the site: out of reach.
const traceBudget = 1e15

// Join registers the crew on the site's policy, after the log's
// campaigns, through the agents' gate.
func (ag *agents) Join(a policy.Allocator) error {
	ag.site, ag.pool = a, a.Config().Pool
	switch a.(type) {
	case *policy.Broker, *sitemeter.Broker:
		ag.bursar = true
	}
	if len(ag.cast) == 0 {
		return nil
	}
	ag.first = policy.CampaignID(a.NumCampaigns())
	crew, err := engine.NewCrew(&gate{Allocator: a, ag: ag}, ag.cast, ag.pool, ag.seed)
	if err != nil {
		return err
	}
	ag.crew = crew
	for i := range ag.cast {
		env := ag.cast[i].Envelope(ag.pool)
		ag.got = append(ag.got, AgentResult{Name: ag.cast[i].Name, Kind: ag.cast[i].Agent})
		ag.reserved += env.Guaranteed
		if ag.metered {
			ag.meter = append(ag.meter, bucket{tokens: env.Bucket, env: env})
		}
	}
	return nil
}

// Denies a trace job under Bursar wider than the pool less the agents'
// guarantees: those are reserved for the agents whether they use them or
// not (model.md §5, grantable), so a trace campaign (g = 0) can never
// hold more, and such a job is denied as a request its campaign can never
// hold (docs/studies.md §6.1) instead of waiting forever. The baselines
// judge that themselves.
func (ag *agents) Denies(jb *trace.Job) bool {
	if ag.bursar && ag.reserved > 0 && jb.GPUs > ag.pool-ag.reserved {
		ag.stranded++
		return true
	}
	return false
}

// on is the agents' own tick at policy tick t, and whether they are on
// the machine then.
func (ag *agents) on(t int) (int, bool) {
	at := t - ag.arrive
	return at, ag.crew != nil && at >= 1 && at <= ag.stay
}

// Act steps the crew at policy tick t, before the policy's tick.
func (ag *agents) Act(t int) {
	if at, on := ag.on(t); on {
		ag.crew.Step(at)
	}
}

// Acted counts what the agents held at tick t and refills the meter's
// buckets. The agents leave at the end of their stay: their leases are
// released and their pending requests dropped, so that what they got is
// what they held during the stay.
func (ag *agents) Acted(t int) error {
	at, on := ag.on(t)
	if !on {
		return nil
	}
	for i := range ag.cast {
		ag.got[i].GPUSeconds += int64(ag.site.Held(ag.first+policy.CampaignID(i), policy.AnyClass))
	}
	if ag.metered {
		for i := range ag.meter {
			b := &ag.meter[i]
			held := ag.site.Held(ag.first+policy.CampaignID(i), policy.AnyClass)
			b.tokens = b.env.GPUBucket().Refill(b.tokens, float64(held))
		}
	}
	if at != ag.stay {
		return nil
	}
	var err error
	for i := range ag.cast {
		if e := ag.site.ReleaseAll(ag.first+policy.CampaignID(i), policy.AnyClass); e != nil && err == nil {
			err = e
		}
	}
	return err
}

// NextAct: every tick while the agents are on the machine (they act
// every tick), their first tick before they arrive, none after they leave.
func (ag *agents) NextAct(now int) int {
	if len(ag.cast) > 0 {
		if now+1 > ag.arrive && now+1-ag.arrive <= ag.stay {
			return now + 1
		}
		if now < ag.arrive {
			return ag.arrive + 1
		}
	}
	return math.MaxInt
}

// Record counts the agents' grants and expiries from the policy's
// journal (the replay's recorder).
func (ag *agents) Record(e policy.Event) {
	if m := ag.member(e.CampaignID); m >= 0 {
		a := &ag.got[m]
		switch e.Kind {
		case policy.EventGrant:
			a.Granted++
		case policy.EventRequestExpired:
			a.Expired++
		}
	}
}

func (ag *agents) member(c policy.CampaignID) int {
	if ag.crew == nil || c < ag.first || int(c-ag.first) >= len(ag.cast) {
		return -1
	}
	return int(c - ag.first)
}

// gate is the site's policy as the agents reach it: a metered agent's
// request passes the meter first, and it reads the meter's bucket as its
// own. Only the crew calls it; the replay drives the policy itself.
type gate struct {
	policy.Allocator
	ag *agents
}

// Register registers an agent's campaign with the trace campaigns'
// budget, out of reach: the crew has always registered through the site
// so (the committed results were made so), and under Bursar an agent's
// spending is then never cut short by its budget.
func (g *gate) Register(env policy.Envelope) (policy.CampaignID, error) {
	env.Budget = traceBudget
	return g.Allocator.Register(env)
}

// Request passes a request on; a metered agent's request must first pass
// the broker's rate cap (model.md §5 step 2, prepaid leases: cap =
// max(min(burst, trunc(R + tokens / max(duration, 1))), g)). The headroom
// is the cap less what the agent holds and has pending (outstanding), not
// only what it holds as in the broker's walk: the site's policy will not
// check the cap again when it admits the request, so the gate must count
// the GPUs already asked for. A request with no headroom is refused; a
// larger one is cut to the headroom.
func (g *gate) Request(c policy.CampaignID, gpus, duration int, cls policy.Class) (int, error) {
	m := g.ag.member(c)
	if m < 0 {
		return g.Allocator.Request(c, gpus, duration, cls)
	}
	a := &g.ag.got[m]
	a.Requests++
	if g.ag.metered {
		b := &g.ag.meter[m]
		afford := b.env.Sustained + b.tokens/float64(max(duration, 1))
		capGPUs := max(min(b.env.BurstCeiling, int(math.Trunc(afford))), b.env.Guaranteed)
		head := capGPUs - g.Allocator.Outstanding(c, policy.AnyClass)
		if head <= 0 {
			a.Refused++
			return -1, ErrMetered
		}
		gpus = min(gpus, head)
	}
	id, err := g.Allocator.Request(c, gpus, duration, cls)
	if err != nil {
		a.Denied++
	}
	return id, err
}

// Tokens is what an agent reads as its GPU bucket: the meter's when
// metered, else the policy's.
func (g *gate) Tokens(c policy.CampaignID) float64 {
	if m := g.ag.member(c); m >= 0 && g.ag.metered {
		return g.ag.meter[m].tokens
	}
	return g.Allocator.Tokens(c)
}
