package budget

import (
	"cmp"
	"fmt"

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
	queue baseline.Queue
	easy  baseline.EASY
	// eligible is made once (it reads core), so that a pass allocates
	// nothing.
	core     *baseline.Core
	eligible func(head *baseline.Request, l *baseline.Lease) bool
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

// Registered starts a campaign with an empty window.
func (r *Rule) Registered(_ *baseline.Core, _ policy.CampaignID) { r.wins = append(r.wins, window{}) }

// WindowUsage is campaign c's GPU-seconds in the last W ticks.
func (r *Rule) WindowUsage(c policy.CampaignID) int { return r.wins[c].sum }

// Priority is c's share less its usage fraction over the window.
func (r *Rule) Priority(k *baseline.Core, c policy.CampaignID) float64 {
	cp := k.Campaign(c)
	if cp.Filler {
		return 0
	}
	total := 0
	for j := range r.wins {
		if !k.Campaign(policy.CampaignID(j)).Filler {
			total += r.wins[j].sum
		}
	}
	frac := 0.0
	if total > 0 {
		frac = float64(r.wins[c].sum) / float64(total)
	}
	return cp.Share - frac
}

// Admit orders the queue by priority and runs one EASY pass.
func (r *Rule) Admit(k *baseline.Core) {
	for _, id := range r.queue.Build(k, nil) {
		req := k.Pend(k.Index(id))
		req.Key = r.Priority(k, req.Campaign)
	}
	ids := r.queue.Build(k, func(a, b *baseline.Request) int {
		if c := cmp.Compare(b.Key, a.Key); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Submitted, b.Submitted); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	if r.eligible == nil {
		r.eligible = func(head *baseline.Request, l *baseline.Lease) bool {
			// A head below its share, a victim above its own.
			return head.Key > 0 && r.Priority(r.core, l.Campaign) < 0
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
