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
	// policy.Class), in seconds: a lease younger than m is never
	// preempted; Never (−1): never preempted at all.
	MinRuntime [4]int `json:"min_runtime" yaml:"min_runtime"`
	// Groups form the hierarchy (§6.11): campaigns named in a group share
	// its priority at the top level. A campaign in no group is a group of
	// its own; with no groups the policy is flat.
	Groups []Group `json:"groups" yaml:"groups"`
	// CalcPeriod is how often the priorities are recomputed from the
	// window, in seconds (ticks), as Slurm's PriorityCalcPeriod; 1 is
	// every tick.
	CalcPeriod int `json:"calc_period" yaml:"calc_period"`
	// Restart is how a preempted trace job resumes (docs/studies.md §6.7):
	// from its last checkpoint (the default, every hour of run) or from
	// zero.
	Restart baseline.Restart `json:"restart" yaml:"restart"`
}

// Never is a minimum runtime that never runs out: the class is never
// preempted.
const Never = -1

// SlurmCalcPeriod is Slurm's PriorityCalcPeriod default, 5 minutes, as
// for fairshare: the period of the trace studies (policies.TraceKnobs).
const SlurmCalcPeriod = 300

// Group is one level-one node of the budget hierarchy.
type Group struct {
	Name    string   `json:"name" yaml:"name"`
	Members []string `json:"members" yaml:"members"`
}

// DefaultKnobs: W = 7 days; m: deadline and interactive never preempted,
// agent-burst 1 h, opportunistic 0 (preemptible at once); restart from
// an hourly checkpoint (docs/studies.md §2).
func DefaultKnobs() Knobs {
	return Knobs{
		Window:     7 * 24 * 3600,
		MinRuntime: [4]int{policy.Deadline: Never, policy.Interactive: Never, policy.AgentBurst: 3600, policy.Opportunistic: 0},
		CalcPeriod: 1,
		Restart:    baseline.Restart{Checkpoint: baseline.DefaultCheckpoint},
	}
}

// Validate checks the knobs; the error names the knob.
func (k Knobs) Validate() error {
	if k.Window < 1 {
		return fmt.Errorf("budget: window must be at least 1 s, got %d", k.Window)
	}
	if k.CalcPeriod < 1 {
		return fmt.Errorf("budget: calc_period must be at least 1 s, got %d", k.CalcPeriod)
	}
	if k.Restart.Checkpoint < 0 {
		return fmt.Errorf("budget: restart: the checkpoint interval must be ≥ 1 s (or 0 for zero), got %d", k.Restart.Checkpoint)
	}
	for c, m := range k.MinRuntime {
		if m < Never {
			return fmt.Errorf("budget: min_runtime of %s must be ≥ 0 seconds, or %d for never, got %d", policy.Class(c), Never, m)
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
// the GPU-seconds held before start (since the first segment).
type segment struct{ start, held, cum int }

// window is one campaign's holdings as change points with their running
// sums: holdings change rarely, so this is small where a per-tick ring of
// a 7-day window would be 600k entries, and the GPU-seconds of any span of
// ticks are exact integers whether the ticks were executed or skipped.
// Preloaded usage (docs/studies.md §6.16) is segments at ticks ≤ 0.
type window struct {
	segs []segment
	// end and start are the segments that held the last ticks sum read
	// (the window's last, and the one before its first): the priorities
	// read each live campaign's window once per calculation period, each
	// time a little later, so that the segments are found a few places on
	// from these rather than by binary searches (a tenth of budget's CPU
	// profile on the full SDSC-SP2 log).
	end, start int
}

// seek is the index of the last segment starting at or before tick t
// (-1: none), looked for from segment *hint on (a binary search when t
// is before it, or more than a few segments after it); *hint becomes it.
func (w *window) seek(t int, hint *int) int {
	s := w.segs
	i := *hint
	if i >= len(s) || s[i].start > t {
		i = sort.Search(len(s), func(j int) bool { return s[j].start > t }) - 1
	} else {
		for steps := 0; i+1 < len(s) && s[i+1].start <= t; steps++ {
			if steps == 4 {
				from := i
				i = from + sort.Search(len(s)-from, func(j int) bool { return s[from+j].start > t }) - 1
				break
			}
			i++
		}
	}
	*hint = max(i, 0)
	return i
}

// cum is the GPU-seconds held in the ticks up to t, for t no earlier than
// the first segment kept (any t when none was dropped), its segment
// looked for from *hint on (seek).
func (w *window) cum(t int, hint *int) int {
	i := w.seek(t, hint)
	if i < 0 {
		return 0
	}
	s := w.segs[i]
	return s.cum + s.held*(t-s.start+1)
}

// sum is the GPU-seconds held in the W ticks ending at t.
func (w *window) sum(t, width int) int {
	if n := len(w.segs); n == 0 || w.segs[n-1].held == 0 && w.segs[n-1].start <= t-width+1 {
		// Nothing held in the window: most campaigns of a long trace,
		// most of the time.
		return 0
	}
	return w.cum(t, &w.end) - w.cum(t-width, &w.start)
}

// quietFrom is the first tick t from which the W ticks ending at t hold
// nothing (sum is 0): never while the last holding is not 0.
func (w *window) quietFrom(width int) int {
	n := len(w.segs)
	switch {
	case n == 0:
		return math.MinInt
	case w.segs[n-1].held != 0:
		return math.MaxInt
	}
	return w.segs[n-1].start + width - 1
}

// hold records the holding from tick t on.
func (w *window) hold(t, held int) {
	n := len(w.segs)
	if n == 0 && held == 0 || n > 0 && w.segs[n-1].held == held {
		return
	}
	c := 0
	if n > 0 {
		c = w.cum(t-1, &w.end)
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
		w.dropTo(i)
	}
}

// cloneFrom is a copy of the window without the segments that end
// before tick t, however few: a fork does not copy what it will never
// read (87 % of the segments budget's forks copied over SDSC-SP2's first
// 64 weeks were quiet campaigns', which EndTick no longer trims: it
// touches only the campaigns that hold GPUs).
func (w *window) cloneFrom(t int) window {
	c := *w
	i := max(sort.Search(len(w.segs), func(i int) bool { return w.segs[i].start > t })-1, 0)
	c.segs = slices.Clone(w.segs[i:])
	if w.segs == nil {
		c.segs = nil
	}
	c.end, c.start = max(w.end-i, 0), max(w.start-i, 0)
	return c
}

// dropTo drops the segments before segment i.
func (w *window) dropTo(i int) {
	w.segs = append(w.segs[:0], w.segs[i:]...)
	w.end, w.start = max(w.end-i, 0), max(w.start-i, 0)
}

// preload turns a campaign's usage before the replay (its history,
// baseline.Usage: GPUs in the ticks Start … End − 1, those ≤ 0 only) into
// its window's first segments: the holding at every change point, ending
// with 0 by tick 1.
func (w *window) preload(h []baseline.Usage) {
	type step struct{ t, d int }
	var steps []step
	for _, u := range h {
		if e := min(u.End, 1); u.Start < e && u.GPUs > 0 {
			steps = append(steps, step{u.Start, u.GPUs}, step{e, -u.GPUs})
		}
	}
	slices.SortFunc(steps, func(a, b step) int { return cmp.Compare(a.t, b.t) })
	w.segs = w.segs[:0]
	held := 0
	for i, st := range steps {
		held += st.d
		if i+1 < len(steps) && steps[i+1].t == st.t {
			continue // one change point per tick
		}
		w.hold(st.t, held)
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
	// member-level usage ratio (window usage ÷ its entitled share of the
	// window's GPU-seconds; lower goes first), from the windows ending
	// the tick before, and the per-group sums they are made of.
	calcAt int
	// gP is each group's usage ratio and memberP each campaign's, and
	// usage each campaign's window usage, as of the last calculation
	// (calcGen counts them; calcT is the tick its windows end at, whole
	// the pool's GPU-seconds of a window): groupPrio reads a campaign's
	// group level, memberPrio its member level. Only what is read is
	// computed, at its first read in the calculation (gGen and cGen are
	// the calculation each group's and campaign's entries are of): the
	// ranks read the campaigns waiting and their groups, not every
	// campaign whose window is not quiet (on a 300k-job log, 437
	// campaigns, a calculation every 5 minutes over 11 years, computing
	// those was half of a replay). A ratio is a window's exact sum
	// whenever it is read, so reading it later in the period gives what
	// computing it at the calculation gave; what could change it, the
	// shares, computes every entry first (freeze).
	gP, memberP []float64
	usage       []int
	gGen, cGen  []uint64
	calcGen     uint64
	calcT       int
	whole       float64
	// calcOpen is whether the entries of calculation calcGen may still be
	// read (a registration ends it: the next admission calculates).
	calcOpen bool
	// byGroup is the campaigns by group, those of group g
	// byGroup[gStart[g]:gStart[g+1]], for group as it was for groupedN
	// campaigns (pos is each campaign's place in it): a group's usage is
	// its members'. The first active[g] of a group's are those whose
	// windows may hold usage at a calculation from floorT on; the others'
	// windows are quiet by floorT (no calculation reads an earlier tick:
	// floorT is the tick before the period's start), so that a group's
	// usage passes over its members that used GPUs in the last W ticks,
	// not all that ever did (groups of up to 43 campaigns on a 300k-job
	// log). A campaign moves in as EndTick records it holding GPUs, and
	// out as a group's usage finds its window quiet by floorT.
	byGroup, gStart, pos, active []int
	groupedN, floorT             int
	// eagerCalc computes every entry at the calculation, as the rule did
	// before it computed them as read (a test's oracle).
	eagerCalc bool
	// rank is each campaign's rank by priority (0 the highest); byRank
	// the campaigns in rank order.
	rank, byRank []int
	rankKeys     []rankKey // rankSorted's scratch
	// moved is the campaigns whose holding the Core changed since the
	// last EndTick (baseline.HoldWatcher; movedIn: named already).
	moved   []int
	movedIn []bool
	// gShare is each group's entitlement (Σ of its members' shares, in
	// campaign order), share each campaign's (0 for the filler) and filler
	// which campaign is the filler, worked out again only when the Core's
	// shares change (sharesAt: its SharesEpoch + 1; 0 none yet): the
	// priorities read them every calculation and the victim search at
	// every search, and summing them each time was a fifth of a replay.
	gShare   []float64
	share    []float64
	filler   []bool
	sharesAt uint64
	// quiet is each campaign's window's quietFrom, kept as it changes: a
	// group's usage passes over its members whose windows are quiet (most
	// of them, most of the time) reading one dense list.
	quiet []int
	// lines is each campaign's window usage as a line (usageAt), and
	// gLines each group's, the sum of its members' (computeGroup).
	lines, gLines []line
	// heldAt is the Core's Changes + 1 when EndTick last recorded the
	// holdings (0: never).
	heldAt   uint64
	core     *baseline.Core
	eligible func(head *baseline.Request, l *baseline.Lease) bool
	// The preemption contract's state for one victim search (Search):
	// each campaign's and group's GPUs held and not under notice, the
	// GPUs the search has taken from each so far, the head's campaign
	// and size.
	held, gHeld, taken, gTaken []int
	// dirty and gDirty are the campaigns and groups whose entries in
	// those four may be non-zero: the next search clears only them, not
	// tables as long as every campaign of the log (clearing them whole at
	// each search was 9 % of a replay of the full SDSC-SP2 log with fair
	// starts).
	dirty, gDirty []int
	headCamp      policy.CampaignID
	headGPUs      int
	pool          float64 // the pool, as a float (Eligible)
	victimKey     baseline.VictimKey
	search        func(head *baseline.Request) bool
	// searchAt is the tick of the last victim search, and sensitive
	// whether its outcome may depend on the victim order: a final-share
	// test was made with GPUs already taken from the victim's node. The
	// order (fewest GPU-seconds lost) moves with time, so such a search
	// that failed is tried again at the next tick (NextEvent).
	searchAt  int
	sensitive bool
	// A search that noticed nothing and in which Eligible accepted no
	// lease (accepted is false) would do the same in any victim order:
	// the final-share test only gets harder as GPUs are taken, and none
	// were. So it would again, and not be sensitive, while nothing it
	// reads changes, and is skipped (Search): the head (searchHead), the
	// Core's leases, requests and shares (baseline.Core.Changes,
	// searchChanges as of the search's start), and which leases are
	// protected, which changes with time only when a lease outlives its
	// minimum runtime (protectedUntil, the first tick that happens at).
	// Of budget's victim searches on SDSC-SP2's first 64 weeks 99.3 %
	// noticed nothing. everySearch turns the skip off (a test's oracle).
	searched, accepted bool
	searchHead         int
	searchChanges      uint64
	protectedUntil     int
	everySearch        bool
	cands              []int                 // orderChange's scratch
	sorter             baseline.VictimSorter // and its sort's
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

// Restart is the restart knob (baseline.Restarter).
func (r *Rule) Restart() baseline.Restart { return r.knobs.Restart }

// Registered starts a campaign's window with its usage before the
// replay (baseline.Core.History, docs/studies.md §6.16; empty without
// one), in its group.
func (r *Rule) Registered(k *baseline.Core, c policy.CampaignID) {
	var w window
	w.preload(k.History(c))
	r.wins = append(r.wins, w)
	r.lines = append(r.lines, line{until: math.MinInt})
	r.movedIn = append(r.movedIn, false)
	r.quiet = append(r.quiet, w.quietFrom(r.knobs.Window))
	r.group = append(r.group, 0)
	// Registering may regroup every campaign (the Core's groups grow, or
	// its shares change): place them all again.
	for d := range r.group {
		r.group[d] = r.groupOf(k, policy.CampaignID(d))
	}
	r.calcAt = 0 // the shares changed
	r.calcOpen = false
}

// groupOf is campaign c's group: with the Groups knob, the knob's group
// naming it (an index into the knob), else a group of its own
// (len(Groups) + c); without it, the Core's group from the entitlements
// (baseline.Core.SetEntitlements, docs/studies.md §1: on a trace the
// (user, group) associations of each SWF group), offset past the
// campaigns' own groups so that the two never share an index.
func (r *Rule) groupOf(k *baseline.Core, c policy.CampaignID) int {
	own := len(r.knobs.Groups) + int(c)
	if len(r.knobs.Groups) == 0 {
		if g := k.Campaign(c).Group; g >= 0 {
			return k.NumCampaigns() + g
		}
		return own
	}
	name := k.Envelope(c).Name
	for i, grp := range r.knobs.Groups {
		if slices.Contains(grp.Members, name) {
			return i
		}
	}
	return own
}

// numGroups bounds the group indices groupOf gives.
func (r *Rule) numGroups(k *baseline.Core) int {
	return len(r.knobs.Groups) + k.NumCampaigns() + len(k.Groups())
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

// Priority is c's usage ratio over the window through the current tick,
// at the top level (lower goes first): its group's with groups (Σ of the
// members' window usage ÷ (Σ of their entitlements × pool × W)), its own
// without. It is what a calculation at the end of this tick gives.
func (r *Rule) Priority(k *baseline.Core, c policy.CampaignID) float64 {
	r.core = k
	r.priorities(k, k.Now())
	r.calcAt = 0
	return r.groupPrio(int(c))
}

// MemberPriority is c's usage ratio inside its group: its window usage
// ÷ (its entitlement × pool × W).
func (r *Rule) MemberPriority(k *baseline.Core, c policy.CampaignID) float64 {
	r.core = k
	r.priorities(k, k.Now())
	r.calcAt = 0
	return r.memberPrio(int(c))
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
	r.rank = baseline.Ints(r.rank, len(r.cGen))
	r.byRank = r.wait.Waiting(r.byRank[:0])
	r.rankSorted()
}

// rankSorted sorts byRank by priority and gives each campaign in it its
// rank: one more than the campaign before it, or the same when tied.
//
// The order (higher) is the group level's usage ratio, lowest first, then
// the member level's. The sort reads each campaign's group level once,
// beside it (rankKeys): the same comparisons of the same list give the
// same permutation. Reading it at every comparison was most of a
// ranking, and a ranking follows most arrivals on a 300k-job log.
func (r *Rule) rankSorted() {
	keys := r.rankKeys[:0]
	for _, c := range r.byRank {
		keys = append(keys, rankKey{group: r.groupPrio(c), c: c})
	}
	higher := func(a, b rankKey) int {
		if c := cmp.Compare(a.group, b.group); c != 0 {
			return c
		}
		return cmp.Compare(r.memberPrio(a.c), r.memberPrio(b.c))
	}
	slices.SortFunc(keys, higher)
	for i, k := range keys {
		c := k.c
		r.byRank[i] = c
		switch {
		case i == 0:
			r.rank[c] = 0
		case higher(keys[i-1], k) != 0:
			r.rank[c] = r.rank[keys[i-1].c] + 1
		default:
			r.rank[c] = r.rank[keys[i-1].c]
		}
	}
	r.rankKeys = keys
}

// rankKey is a campaign and its group's usage ratio (rankSorted).
type rankKey struct {
	group float64
	c     int
}

// sameOrder reports whether the priorities order the campaigns ranked
// last (byRank) as their ranks do — each tied with the one before it or
// below it as before — so that the ranks stand.
//
// The order is the ranking's (rankSorted): highest priority, the lowest
// usage ratio, first, the group's, then the member's. Each campaign's
// group level is read once, carried from one pair to the next, not
// twice (a ranking is checked at each calculation period a request
// waits through, 1.23 million on a 300k-job log).
func (r *Rule) sameOrder() bool {
	if len(r.byRank) == 0 {
		return true
	}
	ga := r.groupPrio(r.byRank[0])
	for i := 1; i < len(r.byRank); i++ {
		a, b := r.byRank[i-1], r.byRank[i]
		gb := r.groupPrio(b)
		c := cmp.Compare(ga, gb)
		if c == 0 {
			c = cmp.Compare(r.memberPrio(a), r.memberPrio(b))
		}
		if r.rank[a] == r.rank[b] && c != 0 || r.rank[a] != r.rank[b] && c >= 0 {
			return false
		}
		ga = gb
	}
	return true
}

// priorities starts a calculation of both levels' usage ratios for
// every campaign from the windows ending at tick t: usage ÷ (entitlement
// × pool × W), the fraction of its entitled GPU-seconds of the window it
// used (+Inf for a campaign with no entitlement that used any, so that
// it goes last). The filler has 0 at both (§6.11: its usage counts
// nowhere; it is not in the queue). Each is computed as it is first read
// (groupPrio, memberPrio).
func (r *Rule) priorities(k *baseline.Core, t int) {
	r.calcOpen = false // new shares need not keep the last calculation's
	r.shares(k)
	n, ng := k.NumCampaigns(), r.numGroups(k)
	if r.groupedN != len(r.group) || len(r.gStart) != ng+1 {
		r.groupMembers(ng)
	}
	if len(r.cGen) != n || len(r.gGen) != ng {
		r.cGen, r.gGen = growGens(r.cGen, n), growGens(r.gGen, ng)
		r.gLines = noLines(r.gLines, ng)
		r.usage = baseline.Ints(r.usage, n)
		r.memberP = slices.Grow(r.memberP[:0], n)[:n]
		r.gP = slices.Grow(r.gP[:0], ng)[:ng]
	}
	r.calcGen++
	r.calcT, r.calcOpen = t, true
	r.floorT = r.periodStart(k.Now()) - 1
	r.whole = float64(k.Config().Pool) * float64(r.knobs.Window)
	if r.eagerCalc {
		for c := range n {
			r.computeMember(c)
			// From the window itself, not its line.
			u := r.wins[c].sum(t, r.knobs.Window)
			if r.filler[c] {
				u = 0
			}
			r.usage[c], r.memberP[c] = u, usageRatio(u, r.share[c]*r.whole)
		}
		for c := range n {
			if g := r.group[c]; !r.filler[c] {
				// Over every member, active or not.
				u := 0
				for _, m := range r.byGroup[r.gStart[g]:r.gStart[g+1]] {
					u += r.usage[m]
				}
				r.gGen[g], r.gP[g] = r.calcGen, usageRatio(u, r.gShare[g]*r.whole)
			}
		}
	}
}

// noLines is lines with n entries, each on no tick.
func noLines(lines []line, n int) []line {
	lines = slices.Grow(lines[:0], n)[:n]
	for i := range lines {
		lines[i] = line{until: math.MinInt}
	}
	return lines
}

// growGens is gens with n entries, each of no calculation (0).
func growGens(gens []uint64, n int) []uint64 {
	gens = slices.Grow(gens[:0], n)[:n]
	clear(gens)
	return gens
}

// groupMembers sorts the campaigns by group into byGroup (a counting
// sort: ids ascending inside each group) for ng groups, each active.
func (r *Rule) groupMembers(ng int) {
	r.groupedN = len(r.group)
	r.gStart = baseline.Ints(r.gStart, ng+1)
	for _, g := range r.group {
		r.gStart[g+1]++
	}
	for g := range ng {
		r.gStart[g+1] += r.gStart[g]
	}
	r.byGroup = baseline.Ints(r.byGroup, len(r.group))
	r.gLines = noLines(r.gLines, ng)
	r.pos = baseline.Ints(r.pos, len(r.group))
	r.active = baseline.Ints(r.active, ng)
	for c, g := range r.group {
		p := r.gStart[g] + r.active[g]
		r.byGroup[p], r.pos[c] = c, p
		r.active[g]++
	}
}

// member computes campaign c's window usage and member-level ratio for
// the calculation, unless done.
func (r *Rule) member(c int) {
	if r.cGen[c] != r.calcGen {
		r.computeMember(c)
	}
}

// computeMember computes campaign c's window usage and member-level ratio
// for the calculation.
func (r *Rule) computeMember(c int) {
	r.cGen[c] = r.calcGen
	u := 0
	if !r.filler[c] && r.calcT < r.quiet[c] {
		u = r.usageAt(c, r.calcT)
	}
	// In a group of its own the member's ratio is the group's: the
	// member level orders nothing more.
	r.usage[c], r.memberP[c] = u, usageRatio(u, r.share[c]*r.whole)
}

// line is a campaign's window usage u at tick t, which grows by slope a
// tick until tick until: the holding at the window's end and at its
// start are those at t until one of them reaches a change point.
type line struct{ t, u, slope, until int }

// usageAt is campaign c's window usage at tick t: from its line when t
// is on it, else from its window (a new line). A calculation reads the
// same campaigns 300 ticks on, mostly on the same line: reading one dense
// entry rather than the window's two segments and its neighbours
// halved what the calculations cost on a 300k-job log.
func (r *Rule) usageAt(c, t int) int {
	if l := &r.lines[c]; t >= l.t && t < l.until {
		return l.u + l.slope*(t-l.t)
	}
	w, width := &r.wins[c], r.knobs.Window
	i, j := w.seek(t, &w.end), w.seek(t-width, &w.start)
	l := line{t: t, until: math.MaxInt}
	if i >= 0 {
		s := w.segs[i]
		l.u, l.slope = s.cum+s.held*(t-s.start+1), s.held
	}
	if i+1 < len(w.segs) {
		l.until = w.segs[i+1].start
	}
	if j >= 0 {
		s := w.segs[j]
		l.u -= s.cum + s.held*(t-width-s.start+1)
		l.slope -= s.held
	}
	if j+1 < len(w.segs) {
		l.until = min(l.until, w.segs[j+1].start+width)
	}
	r.lines[c] = l
	return l.u
}

// memberPrio is campaign c's member-level usage ratio at the last
// calculation (0 for the filler).
func (r *Rule) memberPrio(c int) float64 {
	r.member(c)
	return r.memberP[c]
}

// freeze computes every entry of the calculation still open not computed
// yet, before the shares it would be computed from change.
func (r *Rule) freeze() {
	if !r.calcOpen {
		return
	}
	for c := range r.cGen {
		r.member(c)
		r.groupPrio(c)
	}
}

// groupPrio is campaign c's group-level usage ratio at the last
// calculation (0 for the filler).
func (r *Rule) groupPrio(c int) float64 {
	if r.filler[c] {
		return 0
	}
	g := r.group[c]
	if r.gGen[g] != r.calcGen {
		r.computeGroup(g)
	}
	return r.gP[g]
}

// computeGroup computes group g's usage ratio for the calculation, from
// its members' window usage.
//
// The group's usage is kept as a line too, the sum of its members' lines
// (each member's usage at calcT, and its slope, until the first tick at
// which one of them ends; a quiet member's or the filler's is 0 until a
// change point of its window, at which EndTick ends the group's line as
// it ends the member's): the waiting campaigns' groups are read at every
// calculation to see whether the ranks stand (sameOrder), and summing
// their active members each time was a sixth of a replay on a 300k-job
// log.
func (r *Rule) computeGroup(g int) {
	r.gGen[g] = r.calcGen
	t := r.calcT
	if l := &r.gLines[g]; t >= l.t && t < l.until {
		r.gP[g] = usageRatio(l.u+l.slope*(t-l.t), r.gShare[g]*r.whole)
		return
	}
	gl := line{t: t, until: math.MaxInt}
	for i := r.gStart[g]; i < r.gStart[g]+r.active[g]; {
		m := r.byGroup[i]
		if r.quiet[m] <= r.floorT {
			r.swapActive(i, r.gStart[g]+r.active[g]-1)
			r.active[g]--
			continue
		}
		r.member(m)
		gl.u += r.usage[m]
		if !r.filler[m] && t < r.quiet[m] {
			// Its usage is its line's at t: usageAt puts the line on t
			// (computed earlier in the calculation, the member may
			// have been quiet then, with a line of another tick).
			r.usageAt(m, t)
			ml := &r.lines[m]
			gl.slope += ml.slope
			gl.until = min(gl.until, ml.until)
		}
		i++
	}
	r.gLines[g] = gl
	r.gP[g] = usageRatio(gl.u, r.gShare[g]*r.whole)
}

// activate puts campaign c, whose window just took usage, among its
// group's active members.
func (r *Rule) activate(c int) {
	if r.groupedN != len(r.group) {
		return // regrouped: the next calculation groups every campaign, active
	}
	g := r.group[c]
	if last := r.gStart[g] + r.active[g]; r.pos[c] >= last {
		r.swapActive(r.pos[c], last)
		r.active[g]++
	}
}

// swapActive swaps the members at places i and j of byGroup.
func (r *Rule) swapActive(i, j int) {
	a, b := r.byGroup[i], r.byGroup[j]
	r.byGroup[i], r.byGroup[j] = b, a
	r.pos[a], r.pos[b] = j, i
}

// usageRatio is used ÷ entitled, +Inf for a positive use of nothing and
// 0 for no use.
func usageRatio(used int, entitled float64) float64 {
	switch {
	case used == 0:
		return 0
	case entitled <= 0:
		return math.Inf(1)
	}
	return float64(used) / entitled
}

// Admit orders the queue level by level — group priority, then member
// priority inside the group (Slurm's Fair Tree walks the tree the same
// way) — then submit time and id, and runs one EASY pass in which only
// the blocked head, the request holding the reservation, may preempt.
func (r *Rule) Admit(k *baseline.Core) {
	r.core = k
	// The ranks change only with the priorities or the campaigns waiting;
	// the queue is kept between admissions (baseline.Ranked). A request's
	// key, its group's usage ratio, is written as it is granted, where
	// the grant record reads it.
	recalc := r.recalc(k)
	if grew := r.wait.Sync(k); grew || recalc && !r.sameOrder() {
		r.ranks()
	}
	r.Hooks(k, &r.easy)
	// Its Limit is the pool (baseline.Base's), as AdmitEASYRanked needs.
	k.AdmitEASYRanked(&r.easy, &r.wait, r.rank, r.byRank, r.eligible)
}

// UnorderedPending marks that the rule reads the Core's pending list only
// request by request (baseline.UnorderedPending) while it holds only
// trace jobs: its kept queue orders them itself (by rank, submit time
// and id), and a full build sorts by all three, so that the Core takes a
// granted job out by moving its last one into the place rather than
// shifting a list thousands long (moved per job grew 3.6× from 8 to 64
// weeks of SDSC-SP2).
func (*Rule) UnorderedPending() {}

// Hooks sets an EASY pass's key (unless set), victim order and victim
// search to the rule's, on core k; Eligibility is the eligibility to pass
// with it. The rule's own admission uses them, and so can a test's
// oracle of it.
func (r *Rule) Hooks(k *baseline.Core, e *baseline.EASY) {
	r.core = k
	if r.eligible == nil {
		r.eligible = func(_ *baseline.Request, l *baseline.Lease) bool { return r.Eligible(l) }
		r.victimKey = func(l *baseline.Lease) int { return r.core.LostIfNoticed(l) }
		r.search = r.Search
	}
	if e.Key == nil {
		e.Key = func(req *baseline.Request) { req.Key = r.groupPrio(int(req.Campaign)) }
	}
	e.VictimKey, e.Search = r.victimKey, r.search
}

// Eligibility is the preemption contract's eligibility (Eligible) for
// an EASY pass set up by Hooks.
func (r *Rule) Eligibility() func(head *baseline.Request, l *baseline.Lease) bool {
	return r.eligible
}

// Protected: a lease younger than its class's minimum runtime, or of a
// class that is never preempted.
func (r *Rule) Protected(k *baseline.Core, l *baseline.Lease) bool {
	m := r.knobs.MinRuntime[l.Class]
	return m < 0 || k.Now()-l.Granted < m
}

// VictimOrder is the order the blocked head takes victims in (§6.6):
// lowest class first, then the fewest GPU-seconds lost if noticed now
// (baseline.Core.LostIfNoticed: under checkpoint restart a lease just
// past its checkpoint loses little), then newest first.
func (r *Rule) VictimOrder(a, b *baseline.Lease) int {
	return baseline.KeyedVictimOrder(a, b, r.core.LostIfNoticed(a), r.core.LostIfNoticed(b))
}

// Search starts a victim search for head (baseline.EASY.Search): what
// each campaign and group holds now, leases under notice left out (they
// are as good as gone), and nothing taken yet. It reports false, and
// starts none, when the last search is known to stand (see searched):
// on a platform, where a victim set must also seat the head, never.
func (r *Rule) Search(head *baseline.Request) bool {
	k := r.core
	if r.searched && !r.everySearch && !r.accepted && head.ID == r.searchHead && k.Changes() == r.searchChanges &&
		k.Now() < r.protectedUntil && k.Placer() == nil {
		r.searchAt = k.Now() // and not sensitive, as the search would be
		return false
	}
	r.searched, r.accepted, r.searchHead, r.searchChanges = true, false, head.ID, k.Changes()
	r.protectedUntil = math.MaxInt
	n := k.NumCampaigns()
	ng := r.numGroups(k)
	if len(r.held) != n || len(r.gHeld) != ng {
		r.held, r.taken = baseline.Ints(r.held, n), baseline.Ints(r.taken, n)
		r.gHeld, r.gTaken = baseline.Ints(r.gHeld, ng), baseline.Ints(r.gTaken, ng)
	} else {
		for _, c := range r.dirty {
			r.held[c], r.taken[c] = 0, 0
		}
		for _, g := range r.gDirty {
			r.gHeld[g], r.gTaken[g] = 0, 0
		}
	}
	r.dirty, r.gDirty = r.dirty[:0], r.gDirty[:0]
	for _, l := range k.Leases() {
		if m := r.knobs.MinRuntime[l.Class]; m > 0 && l.Granted+m > k.Now() {
			r.protectedUntil = min(r.protectedUntil, l.Granted+m)
		}
		if !l.UnderNotice && !k.IsFiller(&l) {
			c, g := int(l.Campaign), r.group[l.Campaign]
			if r.held[c] == 0 {
				r.dirty = append(r.dirty, c)
			}
			if r.gHeld[g] == 0 {
				r.gDirty = append(r.gDirty, g)
			}
			r.held[c] += l.GPUs
			r.gHeld[g] += l.GPUs
		}
	}
	r.shares(k)
	r.headCamp, r.headGPUs = head.Campaign, head.GPUs
	r.pool = float64(k.Config().Pool)
	r.searchAt, r.sensitive = k.Now(), false
	if !r.everySearch && !r.mayTake(k) {
		return false // as the search would end: nothing accepted, not sensitive
	}
	return true
}

// mayTake reports whether the search just started could take any lease:
// a candidate of the filler's (always a victim), or one Eligible accepts
// with nothing taken yet. Without one, Eligible rejects every candidate
// in any order and takes nothing (a rejection changes nothing, and only
// a lease taken makes a later test sensitive), so the search would notice
// nothing and leave the rule's state as this leaves it; it is not made,
// and its candidates are neither sorted nor keyed. The candidates are
// baseline.Core.Preempt's: not under notice, not the head's campaign's,
// not protected. On a 300k-job log 817k of budget's 878k victim searches
// accepted no lease, and sorting their candidates by loss was a tenth of
// a replay.
func (r *Rule) mayTake(k *baseline.Core) bool {
	ls := k.Leases()
	for j := range ls {
		l := &ls[j]
		if l.UnderNotice || l.Campaign == r.headCamp || r.Protected(k, l) {
			continue
		}
		if k.IsFiller(l) {
			return true
		}
		if _, ok, _ := r.test(l); ok {
			return true
		}
	}
	return false
}

// shares fills gShare with each group's entitlement (Σ of its members'),
// share and filler, unless the Core's shares are unchanged since: Search
// reads gShare whether or not the priorities were computed since the
// last registration.
func (r *Rule) shares(k *baseline.Core) {
	if r.sharesAt == k.SharesEpoch()+1 && len(r.share) == k.NumCampaigns() {
		return
	}
	r.freeze()
	r.sharesAt = k.SharesEpoch() + 1
	n := k.NumCampaigns()
	r.gShare = slices.Grow(r.gShare[:0], r.numGroups(k))[:r.numGroups(k)]
	clear(r.gShare)
	r.share = slices.Grow(r.share[:0], n)[:n]
	r.filler = baseline.Flags(r.filler, n)
	for c := range n {
		cp := k.Campaign(policy.CampaignID(c))
		r.share[c], r.filler[c] = cp.Share, cp.Filler
		if cp.Filler {
			r.share[c] = 0
			continue
		}
		r.gShare[r.group[c]] += cp.Share
	}
}

// Eligible is the contract's test for the search's head P (of size n)
// and lease l of campaign V (not the filler's, not protected), at the
// level where P's and V's paths split — the groups', or the members'
// inside one group — with q = held ÷ (entitlement × pool):
//
//   - q_V > 1 and q_P < 1 (V above its entitlement, P below);
//   - after the preemption q_P, counting n, is at most q_V, counting what
//     V has lost to this search with l (Kueue's
//     LessThanOrEqualToFinalShare), i.e. (held_P + n) × e_V ≤ (held_V −
//     taken_V − l) × e_P.
//
// A lease it accepts is counted as taken.
func (r *Rule) Eligible(l *baseline.Lease) bool {
	above, ok, taken := r.test(l)
	if !above {
		return false
	}
	if taken > 0 {
		r.sensitive = true
	}
	if !ok {
		return false
	}
	v := int(l.Campaign)
	gv := r.group[v]
	if r.held[v] == 0 && r.taken[v] == 0 {
		r.dirty = append(r.dirty, v) // not a lease Search saw
	}
	if r.gHeld[gv] == 0 && r.gTaken[gv] == 0 {
		r.gDirty = append(r.gDirty, gv)
	}
	r.taken[v] += l.GPUs
	r.gTaken[gv] += l.GPUs
	r.accepted = true
	return true
}

// test is Eligible's two tests of lease l, without their effects: above
// is the first (V above its entitlement, P below, at the level where
// their paths split), ok both, and taken what the search has taken from
// V's node at that level so far.
func (r *Rule) test(l *baseline.Lease) (above, ok bool, taken int) {
	p, v := int(r.headCamp), int(l.Campaign)
	gp, gv := r.group[p], r.group[v]
	var hp, hv int
	var ep, ev float64
	if gp == gv {
		hp, hv, taken = r.held[p], r.held[v], r.taken[v]
		ep, ev = r.core.Campaign(policy.CampaignID(p)).Share, r.core.Campaign(policy.CampaignID(v)).Share
	} else {
		hp, hv, taken = r.gHeld[gp], r.gHeld[gv], r.gTaken[gv]
		ep, ev = r.gShare[gp], r.gShare[gv]
	}
	if !(float64(hv) > ev*r.pool && float64(hp) < ep*r.pool) {
		return false, false, taken
	}
	after := hv - taken - l.GPUs
	return true, !(float64(hp+r.headGPUs)*ev > float64(after)*ep), taken
}

// orderChange is the first tick after now at which the victim order of
// the candidates of the last search (the leases of other campaigns than
// the head's, not under notice, not protected) may change: a lease's
// lost GPU-seconds jump (baseline.Core.LostBreak), or two leases next to
// each other in the order cross. Between those ticks every lease's loss
// is a line, and lines reorder only by neighbours crossing; the tick
// returned may be early (rounded down), never late.
func (r *Rule) orderChange(k *baseline.Core) int {
	now := k.Now()
	next := math.MaxInt
	ls := k.Leases()
	r.cands = r.cands[:0]
	for i := range ls {
		if l := &ls[i]; !l.UnderNotice && l.Campaign != r.headCamp && !r.Protected(k, l) {
			r.cands = append(r.cands, i)
			next = min(next, k.LostBreak(l))
		}
	}
	r.sorter.Sort(ls, r.cands, k.LostIfNoticed)
	var sa, ca int
	for x, j := range r.cands {
		b := &ls[j]
		sb, cb := k.LostLine(b)
		if x > 0 && ls[r.cands[x-1]].Class == b.Class && sa != sb { // parallel lines keep their order
			// sa·t + ca = sb·t + cb at t = (cb − ca) / (sa − sb).
			t := math.Floor(float64(cb-ca) / float64(sa-sb))
			if t >= float64(now) && t < float64(next) {
				next = max(int(t), now+1)
			}
		}
		sa, ca = sb, cb
	}
	return next
}

// EndTick records the tick's holdings (the ticks the Core skipped held
// what the tick before them held) and drops what no window will read
// again.
func (r *Rule) EndTick(k *baseline.Core) {
	r.core = k
	r.wait.Mark(k) // after the filler's admission
	// A campaign's holding changes only with a grant or an end, each a
	// change of the Core's: with none since the last EndTick every hold
	// would record nothing (most ticks of a replay on a 300k-job log are
	// calculations' with a lease set as it was, hundreds of leases).
	if r.heldAt == k.Changes()+1 {
		return
	}
	r.heldAt = k.Changes() + 1
	now := k.Now()
	lo := r.periodStart(now) - 1 - r.knobs.Window
	// Only a campaign the Core named since the last EndTick
	// (baseline.HoldWatcher) can hold other than it held at the last
	// recorded tick: every other's hold would record nothing, its window
	// stays as quiet as it was, and a campaign holding GPUs stays among
	// its group's active members (its window is never quiet). Walking
	// every campaign holding GPUs and every lease instead was 7 % of a
	// replay on a 300k-job log.
	for _, c := range r.moved {
		r.movedIn[c] = false
		held := k.Held(policy.CampaignID(c), policy.AnyClass)
		w := &r.wins[c]
		n := len(w.segs)
		if w.hold(now, held); len(w.segs) != n {
			// A change point at now: the line ends there, and so
			// does its group's (regrouped: every group's has).
			r.lines[c].until = min(r.lines[c].until, now)
			if g := r.group[c]; g < len(r.gLines) {
				r.gLines[g].until = min(r.gLines[g].until, now)
			}
			w.trim(lo)
			r.quiet[c] = w.quietFrom(r.knobs.Window)
		}
		if held != 0 {
			r.activate(c)
		}
	}
	r.moved = r.moved[:0]
}

// HoldChanged notes a campaign whose holding the next EndTick records
// (baseline.HoldWatcher).
func (r *Rule) HoldChanged(_ *baseline.Core, c policy.CampaignID) {
	if int(c) < len(r.movedIn) && !r.movedIn[c] {
		r.movedIn[c] = true
		r.moved = append(r.moved, int(c))
	}
}

// NextEvent is the first tick at which the admission may decide
// differently (baseline.Paced): the next period's start, when the
// priorities change — none while no request waits, since they order only
// the queue and are computed lazily — or the first tick at which a lease
// outlives its minimum runtime and may be preempted. The contract's
// other inputs (what each campaign holds) change only with a grant, an
// end or a notice, which are the Core's events. The victim order (the
// GPU-seconds each lease would lose) moves with time: a failed search
// whose outcome it may have decided (sensitive) is tried every tick.
func (r *Rule) NextEvent(k *baseline.Core) int {
	now := k.Now()
	next := math.MaxInt
	if r.sensitive && r.searchAt == now {
		next = r.orderChange(k)
	}
	for _, l := range k.Leases() {
		if m := r.knobs.MinRuntime[l.Class]; m >= 0 {
			if end := l.Granted + m; end > now {
				next = min(next, end)
			}
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

// CloneRule is a copy of the rule for a copy of its Core
// (baseline.RuleCloner): every table copied, the queue synced to the
// copy, the cached closures left to be made again. The knobs are shared:
// nothing changes them after New. A table added to Rule must be copied
// here: trace's TestCloneSharesNothingMutable fails until it is.
func (r *Rule) CloneRule(from, to *baseline.Core) baseline.Rule {
	c := *r
	c.lines, c.gLines = slices.Clone(r.lines), slices.Clone(r.gLines)
	c.wins = make([]window, len(r.wins))
	// No window is read before lo again (as EndTick's trim).
	lo := r.periodStart(from.Now()) - 1 - r.knobs.Window
	for i := range r.wins {
		c.wins[i] = r.wins[i].cloneFrom(lo)
	}
	if r.wins == nil {
		c.wins = nil
	}
	c.group = slices.Clone(r.group)
	c.wait = r.wait.Clone(from, to)
	c.easy = r.easy.Clone()
	c.gP, c.memberP, c.usage = slices.Clone(r.gP), slices.Clone(r.memberP), slices.Clone(r.usage)
	c.gGen, c.cGen = slices.Clone(r.gGen), slices.Clone(r.cGen)
	c.byGroup, c.gStart = slices.Clone(r.byGroup), slices.Clone(r.gStart)
	c.pos, c.active = slices.Clone(r.pos), slices.Clone(r.active)
	c.rank, c.byRank, c.rankKeys = slices.Clone(r.rank), slices.Clone(r.byRank), slices.Clone(r.rankKeys)
	c.moved, c.movedIn = slices.Clone(r.moved), slices.Clone(r.movedIn)
	c.gShare = slices.Clone(r.gShare)
	c.share, c.filler, c.quiet = slices.Clone(r.share), slices.Clone(r.filler), slices.Clone(r.quiet)
	if r.core == from {
		c.core = to
	}
	c.eligible, c.victimKey, c.search = nil, nil, nil
	c.held, c.gHeld = slices.Clone(r.held), slices.Clone(r.gHeld)
	c.taken, c.gTaken = slices.Clone(r.taken), slices.Clone(r.gTaken)
	c.dirty, c.gDirty = slices.Clone(r.dirty), slices.Clone(r.gDirty)
	c.cands, c.sorter = slices.Clone(r.cands), r.sorter.Clone()
	return &c
}
