package policies_test

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/budget"
	"github.com/bursar-hpc/bursar/policy/fairshare"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/priority"
	"github.com/bursar-hpc/bursar/policy/quota"
	"github.com/bursar-hpc/bursar/policy/static"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// One property suite for every policy, the broker included: random casts
// of campaigns and random operation sequences, checked after every
// operation against the journal.

type opKind uint8

const (
	opRequest opKind = iota
	opReleaseAll
	opReleaseLease
	opConsume
	opTick
	opTicks
)

type op struct {
	kind     opKind
	c        int
	gpus     int
	duration int
	class    policy.Class
	io, inf  float64
	n        int
}

type scenario struct {
	cfg   policy.Config
	knobs policies.Knobs
	envs  []policy.Envelope
	ops   []op
}

var classes = []policy.Class{policy.AnyClass, policy.Deadline, policy.Interactive, policy.AgentBurst, policy.Opportunistic}

func drawScenario(t *rapid.T) scenario {
	pool := rapid.SampledFrom([]int{16, 64, 100, 512}).Draw(t, "pool")
	sc := scenario{cfg: policy.Config{
		Pool:              pool,
		Grace:             rapid.IntRange(0, 90).Draw(t, "grace"),
		IOCapacity:        rapid.SampledFrom([]float64{policy.Unmetered, 0, 10}).Draw(t, "io-capacity"),
		InferenceCapacity: rapid.SampledFrom([]float64{policy.Unmetered, 25, 5000}).Draw(t, "inference-capacity"),
	}, knobs: policies.DefaultKnobs()}
	fairshare.Slot.Edit(&sc.knobs).HalfLife = rapid.SampledFrom([]float64{5, 600, 604800}).Draw(t, "half-life")
	fairshare.Slot.Edit(&sc.knobs).CalcPeriod = rapid.SampledFrom([]int{1, 7, 300}).Draw(t, "fairshare-calc-period")
	budget.Slot.Edit(&sc.knobs).CalcPeriod = rapid.SampledFrom([]int{1, 7, 300}).Draw(t, "budget-calc-period")
	budget.Slot.Edit(&sc.knobs).Window = rapid.SampledFrom([]int{10, 600, 604800}).Draw(t, "window")
	for _, c := range []policy.Class{policy.Interactive, policy.AgentBurst, policy.Opportunistic} {
		budget.Slot.Edit(&sc.knobs).MinRuntime[c] = rapid.SampledFrom([]int{budget.Never, 0, 30, 300}).Draw(t, "min-runtime")
	}
	budget.Slot.Edit(&sc.knobs).Restart = baseline.Restart{Checkpoint: rapid.SampledFrom([]int{0, 1, 60, 3600}).Draw(t, "restart")}
	quota.Slot.Edit(&sc.knobs).BorrowingLimit = rapid.SampledFrom([]int{-1, 0, 16}).Draw(t, "borrowing-limit")
	quota.Slot.Edit(&sc.knobs).QueueingStrategy = rapid.SampledFrom([]string{quota.BestEffortFIFO, quota.StrictFIFO}).Draw(t, "queueing-strategy")
	quota.Slot.Edit(&sc.knobs).PreemptionStrategies = rapid.SampledFrom(quota.ValidPreemptionStrategies).Draw(t, "preemption-strategies")
	static.Slot.Edit(&sc.knobs).Owners = rapid.IntRange(0, 6).Draw(t, "owners")
	static.Slot.Edit(&sc.knobs).Lend = rapid.SampledFrom([]string{static.LendNone, static.LendScavenger}).Draw(t, "lend")
	n := rapid.IntRange(1, 5).Draw(t, "campaigns")
	left := pool
	for i := range n {
		name := fmt.Sprintf("c%d", i)
		g := rapid.IntRange(0, min(left, 32)).Draw(t, name+"-g")
		left -= g
		cls := rapid.SampledFrom([]policy.Class{policy.Interactive, policy.AgentBurst, policy.AgentBurst, policy.Opportunistic}).Draw(t, name+"-class")
		sc.envs = append(sc.envs, policy.Envelope{
			Name: name, Budget: rapid.SampledFrom([]float64{1e9, 0.5}).Draw(t, name+"-budget"),
			Guaranteed: g, Sustained: float64(rapid.IntRange(0, 64).Draw(t, name+"-R")),
			BurstCeiling: g + rapid.IntRange(0, 200).Draw(t, name+"-burst"),
			Bucket:       rapid.SampledFrom([]float64{0, 500, 1e6}).Draw(t, name+"-B"), Class: cls,
		})
		if rapid.Bool().Draw(t, name+"-inference") {
			sc.envs[i].Inference = &policy.Flow{Rate: 5, Bucket: 50, Ceiling: 20}
		}
	}
	kinds := []opKind{opRequest, opRequest, opRequest, opReleaseAll, opReleaseLease, opConsume, opTick, opTick, opTick, opTicks}
	for range rapid.IntRange(1, 120).Draw(t, "ops") {
		o := op{kind: rapid.SampledFrom(kinds).Draw(t, "op"), c: rapid.IntRange(0, n-1).Draw(t, "c")}
		switch o.kind {
		case opRequest:
			o.gpus = rapid.IntRange(1, pool+8).Draw(t, "gpus")
			o.duration = rapid.IntRange(0, 400).Draw(t, "duration")
			o.class = rapid.SampledFrom(classes).Draw(t, "class")
		case opReleaseAll:
			o.class = rapid.SampledFrom(classes).Draw(t, "class")
		case opReleaseLease:
			o.n = rapid.IntRange(0, 200).Draw(t, "lease")
		case opConsume:
			o.io = rapid.Float64Range(0, 20).Draw(t, "io")
			o.inf = rapid.Float64Range(0, 40).Draw(t, "inf")
		case opTicks:
			o.n = rapid.SampledFrom([]int{5, 30, 120, 950}).Draw(t, "ticks")
		}
		sc.ops = append(sc.ops, o)
	}
	if n >= 2 && rapid.Bool().Draw(t, "budget-group") {
		budget.Slot.Edit(&sc.knobs).Groups = []budget.Group{{Name: "g", Members: []string{sc.envs[0].Name, sc.envs[1].Name}}}
	}
	if rapid.Bool().Draw(t, "inflate") {
		priority.Slot.Edit(&sc.knobs).Inflate = []string{sc.envs[0].Name}
	}
	preempt := rapid.Bool().Draw(t, "priority-preempt")
	priority.Slot.Edit(&sc.knobs).Preempt = &preempt
	if rapid.Bool().Draw(t, "entitlements") {
		sc.knobs.Entitlements = drawEntitlements(t, sc.envs)
	}
	return sc
}

// drawEntitlements puts the campaigns that are not the filler into one to
// three groups with random shares summing to 1, each group's split
// equally among its members (docs/studies.md §1).
func drawEntitlements(t *rapid.T, envs []policy.Envelope) *baseline.Entitlements {
	ng := rapid.IntRange(1, 3).Draw(t, "groups")
	members := make([][]string, ng)
	for _, e := range envs {
		if e.Class != policy.Opportunistic {
			g := rapid.IntRange(0, ng-1).Draw(t, e.Name+"-group")
			members[g] = append(members[g], e.Name)
		}
	}
	var e baseline.Entitlements
	weights, sum := []float64{}, 0.0
	for g := range members {
		if len(members[g]) > 0 {
			w := float64(rapid.IntRange(1, 10).Draw(t, "group-weight"))
			weights, sum = append(weights, w), sum+w
			e.Groups = append(e.Groups, baseline.GroupShare{Name: fmt.Sprintf("g%d", g)})
		}
	}
	i := 0
	for g := range members {
		if len(members[g]) == 0 {
			continue
		}
		share := weights[i] / sum
		e.Groups[i].Share = share
		for _, m := range members[g] {
			e.Groups[i].Members = append(e.Groups[i].Members, baseline.MemberShare{Name: m, Share: share / float64(len(members[g]))})
		}
		i++
	}
	return &e
}

// ledger follows the journal: the leases alive, what was granted and
// noticed, so that every property is judged from the records alone.
type ledger struct {
	t     *rapid.T
	name  string
	pool  int
	grace int
	// borrowing is quota's borrowing limit (-1: unlimited).
	borrowing int
	// noPreempt: priority with its preempt knob off, which notices only
	// the filler's leases (docs/studies.md §2, §6.2).
	noPreempt bool
	fillers   map[string]bool
	seen      int
	alive     map[int]int // lease → GPUs
	granted   map[int]bool
	notice    map[int]int // lease → tick of its notice

	// For budget's contract (docs/studies.md §6.11): each lease's grant
	// tick, campaign and class, what each campaign holds and not under
	// notice, and the GPUs the current batch of notices (one admission's:
	// notices in a row at one tick) took from each.
	budget    *budget.Knobs
	grantedAt map[int]int
	campOf    map[int]policy.CampaignID
	held      map[policy.CampaignID]int
	batch     map[policy.CampaignID]int
	batchAt   int
}

// checkBudgetNotice checks a notice of a lease that is not the filler's
// against budget's contract (docs/studies.md §2, §6.11): the lease is at
// least its class's m old (never, for a class m protects for ever), and,
// without the Groups knob, q_V > 1 and q_P < 1 before the batch of
// notices it belongs to, at the level where the paths of the head's
// campaign P and the victim's V split: the entitlements' groups when P
// and V are in different groups (q = the group's GPUs ÷ (Σ of its
// registered members' entitlements × pool)), the campaigns inside one
// group. The head is the request the lease's GPUs are reserved for.
func (l *ledger) checkBudgetNotice(k *baseline.Core, e policy.Event) {
	m := l.budget.MinRuntime[e.Class]
	if age := e.T - l.grantedAt[e.Lease]; m < 0 || age < m {
		l.t.Fatalf("budget: lease %d (%s) preempted %d s after its grant, m = %d", e.Lease, e.Class, age, m)
	}
	if len(l.budget.Groups) > 0 {
		return
	}
	head := l.headOf(k, e.Lease)
	p, v := k.Campaign(head.Campaign), k.Campaign(e.CampaignID)
	members := []policy.CampaignID{e.CampaignID}
	heads := []policy.CampaignID{head.Campaign}
	level := "campaign"
	if p.Group != v.Group {
		members, heads, level = k.Groups()[v.Group].Members, k.Groups()[p.Group].Members, "group"
	}
	heldV, shareV := l.before(k, members)
	heldP, shareP := l.before(k, heads)
	pool := float64(l.pool)
	if float64(heldV) <= shareV*pool {
		l.t.Fatalf("budget: lease %d of %s preempted while its %s held %d GPUs, its entitlement %v × %d", e.Lease, e.Campaign, level, heldV, shareV, l.pool)
	}
	if float64(heldP) >= shareP*pool {
		l.t.Fatalf("budget: lease %d of %s preempted for %s, whose %s held %d GPUs, its entitlement %v × %d", e.Lease, e.Campaign, p.Env.Name, level, heldP, shareP, l.pool)
	}
}

// before is what the campaigns cs held, not under notice, before the
// current batch of notices, and the sum of their entitlements.
func (l *ledger) before(k *baseline.Core, cs []policy.CampaignID) (held int, share float64) {
	for _, c := range cs {
		held += l.held[c] + l.batch[c]
		share += k.Campaign(c).Share
	}
	return held, share
}

// headOf is the waiting request that the noticed lease's GPUs are
// reserved for: the blocked head whose search noticed it. The lease is
// still alive when its notice is checked (it ends a grace of at least
// one tick later).
func (l *ledger) headOf(k *baseline.Core, lease int) baseline.Request {
	for _, ls := range k.Leases() {
		if ls.ID != lease {
			continue
		}
		for _, r := range k.Pending() {
			if r.ID == ls.ReservedFor {
				return r
			}
		}
		l.t.Fatalf("budget: lease %d is reserved for request %d, which is not waiting", lease, ls.ReservedFor)
	}
	l.t.Fatalf("budget: noticed lease %d is not alive", lease)
	return baseline.Request{}
}

func (l *ledger) check(a policy.Allocator, j *bt.Journal) {
	k, _ := a.(*baseline.Core)
	for _, e := range j.Events[l.seen:] {
		if e.Kind != policy.EventPreemptNotice || e.T != l.batchAt {
			clear(l.batch)
			l.batchAt = e.T
		}
		if l.budget != nil && k != nil {
			switch e.Kind {
			case policy.EventGrant:
				l.grantedAt[e.Lease], l.campOf[e.Lease] = e.T, e.CampaignID
				l.held[e.CampaignID] += e.GPUs
			case policy.EventRelease:
				if _, noticed := l.notice[e.Lease]; !noticed {
					l.held[e.CampaignID] -= e.GPUs
				}
			case policy.EventPreemptNotice:
				if !k.Campaign(e.CampaignID).Filler {
					l.checkBudgetNotice(k, e)
				}
				l.held[e.CampaignID] -= e.GPUs
				l.batch[e.CampaignID] += e.GPUs
			}
		}
		switch e.Kind {
		case policy.EventGrant:
			if l.granted[e.Lease] {
				l.t.Fatalf("%s: lease %d granted twice (t=%d)", l.name, e.Lease, e.T)
			}
			if e.GPUs < 1 {
				l.t.Fatalf("%s: grant of %d GPUs", l.name, e.GPUs)
			}
			l.granted[e.Lease] = true
			l.alive[e.Lease] = e.GPUs
		case policy.EventPreemptNotice:
			if _, ok := l.alive[e.Lease]; !ok {
				l.t.Fatalf("%s: notice for lease %d that is not alive (t=%d)", l.name, e.Lease, e.T)
			}
			if l.noPreempt && !l.fillers[e.Campaign] {
				l.t.Fatalf("%s: preempt off, yet lease %d of %s noticed (t=%d)", l.name, e.Lease, e.Campaign, e.T)
			}
			if _, again := l.notice[e.Lease]; again {
				l.t.Fatalf("%s: lease %d noticed twice", l.name, e.Lease)
			}
			l.notice[e.Lease] = e.T
		case policy.EventRelease:
			if _, ok := l.alive[e.Lease]; !ok {
				l.t.Fatalf("%s: release of lease %d that is not alive (t=%d)", l.name, e.Lease, e.T)
			}
			delete(l.alive, e.Lease)
			if e.Reason == policy.ReasonPreempted {
				at, ok := l.notice[e.Lease]
				if !ok {
					l.t.Fatalf("%s: lease %d preempted without a notice (t=%d)", l.name, e.Lease, e.T)
				}
				if e.T-at != max(l.grace, 1) {
					l.t.Fatalf("%s: lease %d noticed at %d, preempted at %d, grace %d", l.name, e.Lease, at, e.T, l.grace)
				}
			}
		}
	}
	l.seen = len(j.Events)
	sum := 0
	for _, g := range l.alive {
		sum += g
	}
	if sum > l.pool {
		l.t.Fatalf("%s: %d GPUs leased on a pool of %d (t=%d)", l.name, sum, l.pool, a.Now())
	}
	held := 0
	for c := range a.NumCampaigns() {
		held += a.Held(policy.CampaignID(c), policy.AnyClass)
	}
	if held != sum {
		l.t.Fatalf("%s: Held sums to %d, the journal's leases to %d", l.name, held, sum)
	}
	if a.Free() < 0 || a.Free() > l.pool-sum {
		l.t.Fatalf("%s: Free %d with %d of %d leased", l.name, a.Free(), sum, l.pool)
	}
	// A baseline's campaign never holds more than its limit (partition,
	// quota plus borrowing), and a quota cohort never more than its quotas.
	if k, ok := a.(*baseline.Core); ok {
		l.checkShares(k)
		for c := range k.NumCampaigns() {
			id := policy.CampaignID(c)
			if h, lim := k.Held(id, policy.AnyClass), k.Rule().Limit(k, id); h > lim {
				l.t.Fatalf("%s: %s holds %d, its limit is %d", l.name, k.Envelope(id).Name, h, lim)
			}
		}
		// quota: the nominal quotas cover the pool (docs/studies.md §6.15),
		// and no queue holds more than its nominal quota plus the
		// borrowing limit.
		if r, ok := k.Rule().(*quota.Rule); ok {
			sum, held := 0, make([]int, len(r.Nominal()))
			for _, n := range r.Nominal() {
				sum += n
			}
			if len(r.Nominal()) > 0 && sum != l.pool {
				l.t.Fatalf("quota: nominal quotas %v sum to %d on a pool of %d", r.Nominal(), sum, l.pool)
			}
			for c := range k.NumCampaigns() {
				if q, _ := r.Queue(policy.CampaignID(c)); q >= 0 {
					held[q] += k.Held(policy.CampaignID(c), policy.AnyClass)
				}
			}
			for q, h := range held {
				if lim := r.Nominal()[q] + l.borrowing; l.borrowing >= 0 && h > lim {
					l.t.Fatalf("quota: queue %d holds %d, nominal %d + borrowing limit %d", q, h, r.Nominal()[q], l.borrowing)
				}
			}
		}
		// static: the partitions cover the pool, and each partition's
		// owners and scavengers together hold no more than it.
		if r, ok := k.Rule().(*static.Rule); ok {
			sum := 0
			owner, lent := r.Books(k)
			for p, s := range r.Sizes() {
				sum += s
				if owner[p]+lent[p] > s {
					l.t.Fatalf("static: partition %d of %d GPUs: owners hold %d, %d lent", p, s, owner[p], lent[p])
				}
			}
			if len(r.Sizes()) > 0 && sum != l.pool {
				l.t.Fatalf("static: partitions %v sum to %d on a pool of %d", r.Sizes(), sum, l.pool)
			}
		}
	}
}

// checkShares: the entitlements as every rule reads them
// (docs/studies.md §1): the groups' shares sum to 1 whenever a campaign
// other than the filler is registered; every such campaign is a member
// of its group, and a group's members' shares sum to at most its share
// (to it when all are registered); the filler is in no group.
func (l *ledger) checkShares(k *baseline.Core) {
	total, any := 0.0, false
	for _, g := range k.Groups() {
		total += g.Share
		sum := 0.0
		for _, c := range g.Members {
			sum += k.Campaign(c).Share
		}
		if sum > g.Share+1e-9 {
			l.t.Fatalf("%s: group %s's members hold %v of its %v", l.name, g.Name, sum, g.Share)
		}
	}
	for c := range k.NumCampaigns() {
		cp := k.Campaign(policy.CampaignID(c))
		if cp.Filler {
			if cp.Group != -1 || cp.Share != 0 {
				l.t.Fatalf("%s: the filler has group %d, share %v", l.name, cp.Group, cp.Share)
			}
			continue
		}
		any = true
		if !slices.Contains(k.Groups()[cp.Group].Members, policy.CampaignID(c)) {
			l.t.Fatalf("%s: %s is not a member of its group %s", l.name, cp.Env.Name, k.Groups()[cp.Group].Name)
		}
	}
	if any && math.Abs(total-1) > 1e-9 {
		l.t.Fatalf("%s: the groups' shares sum to %v", l.name, total)
	}
}

// run plays a scenario on a fresh policy and returns its journal.
func run(t *rapid.T, name string, sc scenario, check bool) []byte {
	a, err := policies.New(name, sc.cfg, sc.knobs)
	require.NoError(t, err)
	j := &bt.Journal{}
	a.SetRecorder(j)
	var ids []policy.CampaignID
	for _, e := range sc.envs {
		id, err := a.Register(e)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	l := &ledger{t: t, name: name, pool: sc.cfg.Pool, grace: sc.cfg.Grace, borrowing: quota.Slot.Get(sc.knobs).BorrowingLimit,
		alive: map[int]int{}, granted: map[int]bool{}, notice: map[int]int{},
		noPreempt: name == priority.Name && !priority.Slot.Get(sc.knobs).Preempts(), fillers: map[string]bool{}}
	for _, e := range sc.envs {
		l.fillers[e.Name] = e.Class == policy.Opportunistic
	}
	if name == budget.Name {
		b := budget.Slot.Get(sc.knobs)
		l.budget = &b
		l.grantedAt, l.campOf = map[int]int{}, map[int]policy.CampaignID{}
		l.held, l.batch = map[policy.CampaignID]int{}, map[policy.CampaignID]int{}
	}
	var leases []int
	for _, o := range sc.ops {
		c := ids[o.c]
		switch o.kind {
		case opRequest:
			if id, err := a.Request(c, o.gpus, o.duration, o.class); err == nil {
				leases = append(leases, id)
			}
		case opReleaseAll:
			require.NoError(t, a.ReleaseAll(c, o.class))
		case opReleaseLease:
			if len(leases) > 0 {
				_ = a.ReleaseLease(c, leases[o.n%len(leases)])
			}
		case opConsume:
			aio, ainf, err := a.Consume(c, o.io, o.inf)
			require.NoError(t, err)
			if aio > o.io+1e-9 || ainf > o.inf+1e-9 || aio < 0 || ainf < 0 {
				t.Fatalf("%s: consume allowed %v, %v of %v, %v", name, aio, ainf, o.io, o.inf)
			}
		case opTick:
			a.Tick()
		case opTicks:
			for range o.n {
				a.Tick()
				if check {
					l.check(a, j)
				}
			}
		}
		if check {
			l.check(a, j)
		}
	}
	return j.Bytes
}

func TestPropertiesEveryPolicy(t *testing.T) {
	for _, name := range policies.Default.Known() { // the optional ones too
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				sc := drawScenario(t)
				first := run(t, name, sc, true)
				// Journal replay: the same operations give the same bytes.
				if again := run(t, name, sc, false); !bytes.Equal(first, again) {
					t.Fatalf("%s: the same operations gave a different journal", name)
				}
			})
		})
	}
}

func TestUnknownPolicy(t *testing.T) {
	_, err := policies.New("lottery", policy.DefaultConfig(8), policies.DefaultKnobs())
	require.ErrorContains(t, err, `unknown policy "lottery"`)
	require.ErrorContains(t, err, "fairshare")
}
