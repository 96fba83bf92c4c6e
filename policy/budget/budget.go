package budget

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
)

// Name is the policy's name in configs and reports.
const Name = "budget"

// Knobs are the policy's settings.
type Knobs struct {
	// Window is the sliding usage window W, in seconds.
	Window int `json:"window" yaml:"window"`
	// MinRuntime is the minimum runtime m per class (indexed by
	// policy.Class), in seconds.
	MinRuntime [4]int `json:"min_runtime" yaml:"min_runtime"`
	// Groups form the hierarchy (§6.11): campaigns named in a group share
	// its priority at the top level. A campaign in no group is a group of
	// its own; with no groups the policy is flat.
	Groups []Group `json:"groups" yaml:"groups"`
	// CalcPeriod is how often the priorities are recomputed from the
	// window, in seconds (ticks), as Slurm's PriorityCalcPeriod; 1 is
	// every tick.
	CalcPeriod int `json:"calc_period" yaml:"calc_period"`
}

// SlurmCalcPeriod is Slurm's PriorityCalcPeriod default, 5 minutes, as
// for fairshare: the period of the trace studies (policies.TraceKnobs).
const SlurmCalcPeriod = 300

// Group is one level-one node of the budget hierarchy.
type Group struct {
	Name    string   `json:"name" yaml:"name"`
	Members []string `json:"members" yaml:"members"`
}

// DefaultKnobs: W = 7 days; m = 0 except agent-burst, 300 s.
func DefaultKnobs() Knobs {
	return Knobs{Window: 7 * 24 * 3600, MinRuntime: [4]int{policy.AgentBurst: 300}, CalcPeriod: 1}
}

// Validate checks the knobs; the error names the knob.
func (k Knobs) Validate() error {
	if k.Window < 1 {
		return fmt.Errorf("budget: window must be at least 1 s, got %d", k.Window)
	}
	if k.CalcPeriod < 1 {
		return fmt.Errorf("budget: calc_period must be at least 1 s, got %d", k.CalcPeriod)
	}
	for c, m := range k.MinRuntime {
		if m < 0 {
			return fmt.Errorf("budget: min_runtime of %s must not be negative, got %d", policy.Class(c), m)
		}
	}
	var seen []string
	for i, g := range k.Groups {
		if g.Name == "" {
			return fmt.Errorf("budget: groups[%d]: name must not be empty", i)
		}
		for _, m := range g.Members {
			if slices.Contains(seen, m) {
				return fmt.Errorf("budget: groups[%d] (%s): campaign %q is in two groups", i, g.Name, m)
			}
			seen = append(seen, m)
		}
	}
	return nil
}

// segment is a run of ticks from start on with the same holding; cum is
// the GPU-seconds held before start.
type segment struct{ start, held, cum int }

// window is one campaign's holdings as change points with their running
// sums: holdings change rarely, so this is small where a per-tick ring of
// a 7-day window would be 600k entries, and the GPU-seconds of any span of
// ticks are exact integers whether the ticks were executed or skipped.
type window struct {
	segs []segment
}

// cum is the GPU-seconds held in ticks 1…t, for t no earlier than the
// first segment kept (any t when none was dropped).
func (w *window) cum(t int) int {
	i := sort.Search(len(w.segs), func(i int) bool { return w.segs[i].start > t }) - 1
	if i < 0 {
		return 0
	}
	s := w.segs[i]
	return s.cum + s.held*(t-s.start+1)
}

// sum is the GPU-seconds held in the W ticks ending at t.
func (w *window) sum(t, width int) int {
	if t < 1 {
		return 0
	}
	if n := len(w.segs); n == 0 || w.segs[n-1].held == 0 && w.segs[n-1].start <= t-width+1 {
		// Nothing held in the window: most campaigns of a long trace,
		// most of the time.
		return 0
	}
	return w.cum(t) - w.cum(max(t-width, 0))
}

// hold records the holding from tick t on.
func (w *window) hold(t, held int) {
	n := len(w.segs)
	if n == 0 && held == 0 || n > 0 && w.segs[n-1].held == held {
		return
	}
	c := 0
	if n > 0 {
		c = w.cum(t - 1)
	}
	w.segs = append(w.segs, segment{start: t, held: held, cum: c})
}

// trim drops the segments that end before tick t.
func (w *window) trim(t int) {
	if len(w.segs) <= 65 {
		return // i ≤ 64 below
	}
	i := sort.Search(len(w.segs), func(i int) bool { return w.segs[i].start > t }) - 1
	if i > 64 && i > len(w.segs)/2 {
		w.segs = append(w.segs[:0], w.segs[i:]...)
	}
}

// Rule is the budget rule.
type Rule struct {
	baseline.Base
	knobs Knobs
	wins  []window
	// group is each campaign's group: an index into knobs.Groups, or, for
	// a campaign in none, a group of its own (len(knobs.Groups) + its id).
	group []int
	// wait is the queue, kept between admissions.
	wait baseline.Ranked
	easy baseline.EASY
	// calcAt is the first tick of the calculation period the priorities
	// were computed for (0: none yet): each campaign's group-level and
	// member-level priority, from the windows ending the tick before, and
	// the per-group sums they are made of.
	calcAt          int
	groupP, memberP []float64
	// rank is each campaign's rank by priority (0 the highest); byRank
	// the campaigns in rank order.
	rank, byRank []int
	// holding is the campaigns that held GPUs at the last tick recorded;
	// seen and touched EndTick's scratch.
	holding, touched []int
	seen             []bool
	gShare           []float64
	gUsage           []int
	usage            []int
	core             *baseline.Core
	eligible         func(head *baseline.Request, l *baseline.Lease) bool
}

// New returns a budget allocator.
func New(cfg policy.Config, knobs Knobs) (*baseline.Core, error) {
	if err := knobs.Validate(); err != nil {
		return nil, err
	}
	return baseline.New(cfg, NewRule(knobs))
}

// NewRule returns the rule on its own, so that a test can read it.
func NewRule(knobs Knobs) *Rule { return &Rule{knobs: knobs} }

// Name is the policy's name.
func (*Rule) Name() string { return Name }

// Registered starts a campaign with an empty window, in its group.
func (r *Rule) Registered(k *baseline.Core, c policy.CampaignID) {
	r.wins = append(r.wins, window{})
	g := len(r.knobs.Groups) + int(c)
	name := k.Envelope(c).Name
	for i, grp := range r.knobs.Groups {
		if slices.Contains(grp.Members, name) {
			g = i
		}
	}
	r.group = append(r.group, g)
	r.calcAt = 0 // the shares changed
}

// WindowUsage is campaign c's GPU-seconds in the last W ticks, through
// the current tick.
func (r *Rule) WindowUsage(c policy.CampaignID) int {
	return r.wins[c].sum(r.now(), r.knobs.Window)
}

// now is the last tick whose holdings are recorded.
func (r *Rule) now() int {
	if r.core == nil {
		return 0
	}
	return r.core.Now()
}

// Priority is c's share less its usage fraction over the window through
// the current tick, at the top level: its group's with groups (Σ of the
// members' shares less Σ of their usage fractions), its own without. It
// is what a calculation at the end of this tick gives.
func (r *Rule) Priority(k *baseline.Core, c policy.CampaignID) float64 {
	r.core = k
	r.priorities(k, k.Now())
	r.calcAt = 0
	return r.groupP[c]
}

// MemberPriority is c's priority inside its group: its share of the
// group's shares less its share of the group's window usage.
func (r *Rule) MemberPriority(k *baseline.Core, c policy.CampaignID) float64 {
	r.core = k
	r.priorities(k, k.Now())
	r.calcAt = 0
	return r.memberP[c]
}

// periodStart is the first tick of the calculation period holding tick
// t: the periods are ticks 1…P, P+1…2P, ….
func (r *Rule) periodStart(t int) int {
	if t < 1 {
		return 1
	}
	return t - (t-1)%r.knobs.CalcPeriod
}

// recalc recomputes the priorities at the first admission of a period,
// from the windows ending the tick before the period's start; with a
// period of 1 tick, every tick from the windows ending the tick before.
// It is lazy and reads exact integer windows, so that a replay that skips
// ticks computes the same numbers as one that does not.
func (r *Rule) recalc(k *baseline.Core) bool {
	if e := r.periodStart(k.Now()); e != r.calcAt {
		r.priorities(k, e-1)
		r.calcAt = e
		return true
	}
	return false
}

// ranks ranks the campaigns that wait by priority, group level then
// member level, highest first; equal priorities share a rank. Only they
// are ranked (the others' ranks are stale): ranking every campaign at
// every admission cost more than the rest of it.
func (r *Rule) ranks() {
	r.rank = baseline.Ints(r.rank, len(r.groupP))
	r.byRank = r.wait.Waiting(r.byRank[:0])
	r.rankSorted()
}

// rankSorted sorts byRank by priority and gives each campaign in it its
// rank: one more than the campaign before it, or the same when tied.
func (r *Rule) rankSorted() {
	slices.SortFunc(r.byRank, r.higher)
	for i, c := range r.byRank {
		switch {
		case i == 0:
			r.rank[c] = 0
		case r.higher(r.byRank[i-1], c) != 0:
			r.rank[c] = r.rank[r.byRank[i-1]] + 1
		default:
			r.rank[c] = r.rank[r.byRank[i-1]]
		}
	}
}

// sameOrder reports whether the priorities order the campaigns ranked
// last (byRank) as their ranks do — each tied with the one before it or
// below it as before — so that the ranks stand.
func (r *Rule) sameOrder() bool {
	for i := 1; i < len(r.byRank); i++ {
		a, b := r.byRank[i-1], r.byRank[i]
		c := r.higher(a, b)
		if r.rank[a] == r.rank[b] && c != 0 || r.rank[a] != r.rank[b] && c >= 0 {
			return false
		}
	}
	return true
}

// higher orders campaigns a and b by priority, highest first.
func (r *Rule) higher(a, b int) int {
	if c := cmp.Compare(r.groupP[b], r.groupP[a]); c != 0 {
		return c
	}
	return cmp.Compare(r.memberP[b], r.memberP[a])
}

// priorities computes both levels for every campaign from the windows
// ending at tick t; the filler has 0 at both and counts in no total
// (§6.11).
func (r *Rule) priorities(k *baseline.Core, t int) {
	n := k.NumCampaigns()
	ng := len(r.knobs.Groups) + n
	r.gShare = r.gShare[:0]
	r.gUsage = baseline.Ints(r.gUsage, ng)
	r.usage = baseline.Ints(r.usage, n)
	for range ng {
		r.gShare = append(r.gShare, 0)
	}
	total := 0
	for c := range n {
		cp := k.Campaign(policy.CampaignID(c))
		if cp.Filler {
			continue
		}
		u := r.wins[c].sum(t, r.knobs.Window)
		r.usage[c] = u
		total += u
		r.gShare[r.group[c]] += cp.Share
		r.gUsage[r.group[c]] += u
	}
	r.groupP, r.memberP = r.groupP[:0], r.memberP[:0]
	for c := range n {
		cp := k.Campaign(policy.CampaignID(c))
		if cp.Filler {
			r.groupP, r.memberP = append(r.groupP, 0), append(r.memberP, 0)
			continue
		}
		g := r.group[c]
		r.groupP = append(r.groupP, r.gShare[g]-ratio(r.gUsage[g], total))
		if g >= len(r.knobs.Groups) {
			// A group of its own: the member level has nothing to order.
			r.memberP = append(r.memberP, 0)
			continue
		}
		share := 0.0
		if r.gShare[g] > 0 {
			share = cp.Share / r.gShare[g]
		}
		r.memberP = append(r.memberP, share-ratio(r.usage[c], r.gUsage[g]))
	}
}

func ratio(part, whole int) float64 {
	if whole <= 0 {
		return 0
	}
	return float64(part) / float64(whole)
}

// Admit orders the queue level by level — group priority, then member
// priority inside the group (Slurm's Fair Tree walks the tree the same
// way) — then submit time and id, and runs one EASY pass.
func (r *Rule) Admit(k *baseline.Core) {
	r.core = k
	// The ranks change only with the priorities or the campaigns waiting;
	// the queue is kept between admissions (baseline.Ranked). A request's
	// key, its group's priority, is written as it is granted, where the
	// grant record reads it.
	recalc := r.recalc(k)
	if grew := r.wait.Sync(k); grew || recalc && !r.sameOrder() {
		r.ranks()
	}
	if r.easy.Key == nil {
		r.easy.Key = func(req *baseline.Request) { req.Key = r.groupP[req.Campaign] }
	}
	if r.eligible == nil {
		r.eligible = func(head *baseline.Request, l *baseline.Lease) bool {
			// "Above its share" is judged where the two paths split: the
			// groups' priorities if they differ, the members' inside one.
			p, v := r.groupP, r.groupP
			if r.group[head.Campaign] == r.group[l.Campaign] {
				p, v = r.memberP, r.memberP
			}
			return p[head.Campaign] > 0 && v[l.Campaign] < 0
		}
	}
	// Its Limit is the pool (baseline.Base's), as AdmitEASYRanked needs.
	k.AdmitEASYRanked(&r.easy, &r.wait, r.rank, r.byRank, r.eligible)
}

// Protected: a lease younger than its class's minimum runtime.
func (r *Rule) Protected(k *baseline.Core, l *baseline.Lease) bool {
	return k.Now()-l.Granted < r.knobs.MinRuntime[l.Class]
}

// EndTick records the tick's holdings (the ticks the Core skipped held
// what the tick before them held) and drops what no window will read
// again.
func (r *Rule) EndTick(k *baseline.Core) {
	r.core = k
	r.wait.Mark(k) // after the filler's admission
	now := k.Now()
	lo := r.periodStart(now) - 1 - r.knobs.Window
	// Only a campaign that held GPUs at the last recorded tick or holds a
	// lease now can change its holding: every other held nothing and
	// holds nothing (its hold would record nothing), and its segments can
	// wait for their trim.
	r.seen = baseline.Flags(r.seen, len(r.wins))
	r.touched = r.touched[:0]
	for _, c := range r.holding {
		r.seen[c] = true
		r.touched = append(r.touched, c)
	}
	for _, l := range k.Leases() {
		if c := int(l.Campaign); !r.seen[c] {
			r.seen[c] = true
			r.touched = append(r.touched, c)
		}
	}
	r.holding = r.holding[:0]
	for _, c := range r.touched {
		held := k.Held(policy.CampaignID(c), policy.AnyClass)
		w := &r.wins[c]
		w.hold(now, held)
		w.trim(lo)
		if held != 0 {
			r.holding = append(r.holding, c)
		}
	}
}

// NextEvent is the first tick at which the admission may decide
// differently (baseline.Paced): the next period's start, when the
// priorities change — none while no request waits, since they order only
// the queue and are computed lazily — or the first tick at which a lease
// outlives its minimum runtime and may be preempted.
func (r *Rule) NextEvent(k *baseline.Core) int {
	now := k.Now()
	next := math.MaxInt
	for _, l := range k.Leases() {
		if end := l.Granted + r.knobs.MinRuntime[l.Class]; end > now {
			next = min(next, end)
		}
	}
	for _, q := range k.Pending() {
		if !k.Campaign(q.Campaign).Filler {
			if now < 1 {
				return 1
			}
			return min(next, r.periodStart(now)+r.knobs.CalcPeriod)
		}
	}
	return next
}
