package budget

import (
	"cmp"
	"fmt"
	"slices"

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
}

// Group is one level-one node of the budget hierarchy.
type Group struct {
	Name    string   `json:"name" yaml:"name"`
	Members []string `json:"members" yaml:"members"`
}

// DefaultKnobs: W = 7 days; m = 0 except agent-burst, 300 s.
func DefaultKnobs() Knobs {
	return Knobs{Window: 7 * 24 * 3600, MinRuntime: [4]int{policy.AgentBurst: 300}}
}

// Validate checks the knobs; the error names the knob.
func (k Knobs) Validate() error {
	if k.Window < 1 {
		return fmt.Errorf("budget: window must be at least 1 s, got %d", k.Window)
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

// segment is a run of ticks from start on with the same holding.
type segment struct{ start, held int }

// window is one campaign's holdings over the last W ticks, as change
// points, with their running sum: holdings change rarely, so this is
// small where a per-tick ring of a 7-day window would be 600k entries.
type window struct {
	segs []segment
	head int
	sum  int
}

// Rule is the budget rule.
type Rule struct {
	baseline.Base
	knobs Knobs
	wins  []window
	// group is each campaign's group: an index into knobs.Groups, or, for
	// a campaign in none, a group of its own (len(knobs.Groups) + its id).
	group []int
	queue baseline.Queue
	easy  baseline.EASY
	// Per pass: each campaign's group-level and member-level priority,
	// and the per-group sums they are made of.
	groupP, memberP []float64
	gShare          []float64
	gUsage          []int
	core            *baseline.Core
	eligible        func(head *baseline.Request, l *baseline.Lease) bool
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
}

// WindowUsage is campaign c's GPU-seconds in the last W ticks.
func (r *Rule) WindowUsage(c policy.CampaignID) int { return r.wins[c].sum }

// Priority is c's share less its usage fraction over the window, at the
// top level: its group's with groups (Σ of the members' shares less Σ of
// their usage fractions), its own without.
func (r *Rule) Priority(k *baseline.Core, c policy.CampaignID) float64 {
	r.priorities(k)
	return r.groupP[c]
}

// MemberPriority is c's priority inside its group: its share of the
// group's shares less its share of the group's window usage.
func (r *Rule) MemberPriority(k *baseline.Core, c policy.CampaignID) float64 {
	r.priorities(k)
	return r.memberP[c]
}

// priorities computes both levels for every campaign; the filler has 0 at
// both and counts in no total (§6.11).
func (r *Rule) priorities(k *baseline.Core) {
	n := k.NumCampaigns()
	ng := len(r.knobs.Groups) + n
	r.gShare = r.gShare[:0]
	r.gUsage = baseline.Ints(r.gUsage, ng)
	for range ng {
		r.gShare = append(r.gShare, 0)
	}
	total := 0
	for c := range n {
		cp := k.Campaign(policy.CampaignID(c))
		if cp.Filler {
			continue
		}
		total += r.wins[c].sum
		r.gShare[r.group[c]] += cp.Share
		r.gUsage[r.group[c]] += r.wins[c].sum
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
		r.memberP = append(r.memberP, share-ratio(r.wins[c].sum, r.gUsage[g]))
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
	r.priorities(k)
	for _, id := range r.queue.Build(k, nil) {
		req := k.Pend(k.Index(id))
		req.Key = r.groupP[req.Campaign]
	}
	ids := r.queue.Build(k, func(a, b *baseline.Request) int {
		if c := cmp.Compare(r.groupP[b.Campaign], r.groupP[a.Campaign]); c != 0 {
			return c
		}
		if c := cmp.Compare(r.memberP[b.Campaign], r.memberP[a.Campaign]); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Submitted, b.Submitted); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
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
	r.core = k
	k.AdmitEASY(&r.easy, ids, r.eligible)
}

// Protected: a lease younger than its class's minimum runtime.
func (r *Rule) Protected(k *baseline.Core, l *baseline.Lease) bool {
	return k.Now()-l.Granted < r.knobs.MinRuntime[l.Class]
}

// EndTick slides every campaign's window by one tick.
func (r *Rule) EndTick(k *baseline.Core) {
	now := k.Now()
	out := now - r.knobs.Window // the tick leaving the window
	for c := range r.wins {
		w := &r.wins[c]
		held := k.Held(policy.CampaignID(c), policy.AnyClass)
		if n := len(w.segs); n == 0 || w.segs[n-1].held != held {
			w.segs = append(w.segs, segment{start: now, held: held})
		}
		w.sum += held
		if out < 1 {
			continue
		}
		for w.head+1 < len(w.segs) && w.segs[w.head+1].start <= out {
			w.head++
		}
		if w.segs[w.head].start <= out {
			w.sum -= w.segs[w.head].held
		}
		if w.head > 64 && w.head > len(w.segs)/2 {
			w.segs = append(w.segs[:0], w.segs[w.head:]...)
			w.head = 0
		}
	}
}
