package fairshare

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
)

// Name is the policy's name in configs and reports.
const Name = "fairshare"

const week = 7 * 24 * 3600

// Knobs are the policy's settings (Slurm's names in the comments).
type Knobs struct {
	// HalfLife is PriorityDecayHalfLife, in seconds.
	HalfLife float64 `json:"half_life" yaml:"half_life"`
	// WFairshare is PriorityWeightFairshare.
	WFairshare float64 `json:"w_fairshare" yaml:"w_fairshare"`
	// WAge is PriorityWeightAge.
	WAge float64 `json:"w_age" yaml:"w_age"`
	// MaxAge is PriorityMaxAge, in seconds.
	MaxAge float64 `json:"max_age" yaml:"max_age"`
	// CalcPeriod is PriorityCalcPeriod, in seconds (ticks): usage is
	// charged and decayed, and priorities recomputed, once per period.
	// 1 is docs/studies.md §6.9's per-tick rule.
	CalcPeriod int `json:"calc_period" yaml:"calc_period"`
}

// SlurmCalcPeriod is Slurm's PriorityCalcPeriod default, 5 minutes: the
// period the trace studies run at (policies.TraceKnobs), where a two-year
// log makes a per-tick recalculation cost minutes per replay.
const SlurmCalcPeriod = 300

// DefaultKnobs are Slurm's defaults and docs/studies.md's: 7 days, 10000, 1000,
// 7 days, and docs/studies.md §6.9's calculation every tick (CalcPeriod 1), so
// that the agent scenario of `compare` keeps the spec's rule.
func DefaultKnobs() Knobs {
	return Knobs{HalfLife: week, WFairshare: 10000, WAge: 1000, MaxAge: week, CalcPeriod: 1}
}

// Rule is the multifactor fair-share rule.
type Rule struct {
	baseline.Base
	knobs Knobs
	// decay is one period's decay, 2^(−P/h).
	decay float64
	// usage is each campaign's decayed usage U as of the last period
	// boundary; charge the GPU-seconds it has held since, through tick
	// through; held its holding at the end of tick through (and in the
	// skipped ticks after it, where nothing changed).
	usage   []float64
	charge  []int64
	held    []int
	through int
	// holders are the campaigns whose held is not 0, which alone accrue
	// charges (holderAt: each one's place there, -1: none). heldRead is
	// whether EndTick has read every campaign's holding once; after
	// that it reads again only the campaigns the Core named since
	// (moved, baseline.HoldWatcher; movedIn: named already): on the
	// 300k-job log's 437 campaigns, reading them all after every tick
	// with a change was 17 % of the replay, and the charges of every
	// campaign at every period most of it.
	holders  []int
	holderAt []int
	heldRead bool
	moved    []int
	movedIn  []bool
	// live are the campaigns whose usage may not be +0 (liveIn: listed),
	// in the order they became so: preloaded with a history, or holding
	// at some EndTick (no charge without a holding). A period's decay
	// takes only these: every other campaign's usage is +0 in both
	// buffers (usage, prior), which its decay (+0·decay, no charge)
	// leaves as it is. On SDSC-SP2 a third of the campaigns' decays were
	// of users who had not yet run a job.
	live   []int
	liveIn []bool
	// sum is the sum of usage as total adds it (sumOK: it is), summed
	// when first read after the usage changed: a period's decay leaves it
	// unsummed, since most periods' totals are never read (see totalAt).
	sum   float64
	sumOK bool
	// decays counts the periods' decays (accrue), and prior is the usage
	// before the last one.
	decays uint64
	prior  []float64
	// calcAt is the first tick of the period the factors are computed
	// for (0: none yet); totalAt the decayed total then (totalOK: summed;
	// calcDecays is decays then), summed at its first read in the period
	// (periodTotal): on a 300k-job log 530k of the 1.18 million periods
	// read it (a factor, or the ceilings' generation), and summing every
	// campaign's usage at every period, one dependent addition after
	// another, was a large part of the decay's time. factor is each
	// campaign's F then, computed when first needed (factorAt[c] ==
	// calcAt): 2^x for every campaign at every period was most of a
	// replay.
	calcAt     int
	totalAt    float64
	totalOK    bool
	calcDecays uint64
	factor     []float64
	factorAt   []int
	easy       baseline.EASY
	// The queue in priority order as the last admission left it (ids),
	// valid for the period starting at sortedAt (0: none): every key is
	// fixed within a period (the factors and the ages are the period
	// start's), so the next admission of the period keeps the order of
	// the requests still waiting and merges in the ones filed since,
	// instead of sorting the whole queue (see order). key and submitted
	// are by request id; seen is the mark of the last admission that saw
	// the id waiting (0: none; ids are never reused).
	sorted, fresh, merged []int
	sortedAt              int
	key                   []float64
	submitted             []int
	seen                  []uint32
	mark                  uint32
	// plain sorts the whole queue at every admission (tests: the oracle
	// of order).
	plain bool
	// queue is the queue kept between passes on a trace's queue
	// (baseline.Keyed, AdmitEASYKeyed), keyed by QueueKey; epoch counts
	// the period starts (and the shares' changes) at which the keys were
	// computed again.
	queue baseline.Keyed
	epoch uint64
	// The ceilings' generation (KeyCeiling, CeilingGen): ceilGen counts
	// them (0: none yet); each holds through the period starting at
	// ceilEnd while the decayed total stays at most ceilTotal and the
	// shares stay those of ceilShares; ceilScale is decay^(ceilPeriods+2)
	// / ceilTotal (0: no bound on F but 1).
	ceilGen    uint64
	ceilEnd    int
	ceilTotal  float64
	ceilScale  float64
	ceilShares uint64
	// core is the Core the rule was registered on: Usage and Factor
	// charge the ticks its quiet ticks left to the rule (see accrue).
	core *baseline.Core
}

// New returns a fair-share allocator.
func New(cfg policy.Config, knobs Knobs) (*baseline.Core, error) {
	if err := knobs.Validate(); err != nil {
		return nil, err
	}
	return baseline.New(cfg, NewRule(knobs))
}

// Validate checks the knobs; the error names the knob.
func (k Knobs) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
		pos  bool
	}{{"half_life", k.HalfLife, true}, {"w_fairshare", k.WFairshare, false}, {"w_age", k.WAge, false}, {"max_age", k.MaxAge, true}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 || (f.pos && f.v == 0) {
			return fmt.Errorf("fairshare: %s must be a finite number > 0 (≥ 0 for weights), got %v", f.name, f.v)
		}
	}
	if k.CalcPeriod < 1 {
		return fmt.Errorf("fairshare: calc_period must be at least 1 s, got %d", k.CalcPeriod)
	}
	return nil
}

// NewRule returns the rule on its own, so that a test can read its
// factors. The knobs must be valid.
func NewRule(knobs Knobs) *Rule {
	return &Rule{knobs: knobs, decay: math.Exp2(-float64(knobs.CalcPeriod) / knobs.HalfLife)}
}

// Name is the policy's name.
func (*Rule) Name() string { return Name }

// Registered gives a new campaign the usage its history before the replay
// leaves at tick 0 (Preload; none without one). Its holding is 0 until
// the next EndTick, which is right: it can hold nothing before a tick
// admits.
func (r *Rule) Registered(k *baseline.Core, c policy.CampaignID) {
	r.core = k
	u := Preload(k.History(c), r.knobs.HalfLife)
	r.usage = append(r.usage, u)
	r.liveIn = append(r.liveIn, false)
	if u != 0 {
		r.markLive(int(c))
	}
	r.sumOK = false
	r.charge = append(r.charge, 0)
	r.held = append(r.held, 0)
	r.holderAt = append(r.holderAt, -1)
	r.movedIn = append(r.movedIn, false)
	r.factor = append(r.factor, 0)
	r.factorAt = append(r.factorAt, 0)
	r.calcAt = 0 // the shares changed
	r.sortedAt = 0
	clear(r.factorAt)
}

// Preload is the decayed usage at tick 0 of the holdings h before the
// replay (docs/studies.md §6.16), charged and decayed as §6.9 does every
// tick, U ← U·2^(−1/h) + held, through tick 0: a GPU held in tick t ≤ 0
// counts 2^(t/h) at tick 0. Each run of ticks a…b is a geometric sum,
// Σ_{t=a}^{b} 2^(t/h) = 2^(b/h)·(1 − 2^(−n/h)) / (1 − 2^(−1/h)) with
// n = b − a + 1, so that a month of history costs nothing per tick. The
// replay's own usage is charged per calculation period from tick 1 on;
// the two agree to the rate of decay per second.
func Preload(h []baseline.Usage, halfLife float64) float64 {
	u := 0.0
	step := math.Ln2 / halfLife
	for _, x := range h {
		a, b := x.Start, min(x.End-1, 0)
		if x.GPUs == 0 || a > b {
			continue
		}
		n := float64(b - a + 1)
		u += float64(x.GPUs) * math.Exp(float64(b)*step) * math.Expm1(-n*step) / math.Expm1(-step)
	}
	return u
}

// Usage is campaign c's decayed usage as of the last period boundary, in
// GPU-seconds.
func (r *Rule) Usage(c policy.CampaignID) float64 {
	r.catchUp()
	return r.usage[c]
}

// Factor is campaign c's fair-share factor F = 2^(−U/S), from the usage
// as of the last period boundary.
func (r *Rule) Factor(k *baseline.Core, c policy.CampaignID) float64 {
	r.catchUp()
	return r.factorOf(k, c, r.total())
}

// catchUp charges the holdings through the Core's current tick. The
// Core's quiet ticks (baseline.Core.Tick) call no EndTick: nothing was
// granted or released in them, so the holdings EndTick saw last were
// held through them, and accrue charges them at once, with the same
// integer charges and the same decays at the same boundaries as tick by
// tick.
func (r *Rule) catchUp() {
	if r.core != nil {
		r.accrue(r.core.Now())
	}
}

// total is the decayed usage of every campaign, the filler's included.
func (r *Rule) total() float64 {
	if !r.sumOK {
		total := 0.0
		for _, u := range r.usage {
			total += u
		}
		r.sum, r.sumOK = total, true
	}
	return r.sum
}

// periodTotal is the decayed total at the current period's start, the
// total of the usage then (totalAt), summed at its first read, as total
// sums it. The usage changes only at a period's decay and a
// registration, which starts the period's calculation again (recalc).
// Every read follows the period's recalc, before the decay at the
// period's end or just after it (the end of the period's last tick
// decays it, and Priority may be read then), so the usage then is the
// usage now or the usage before the last decay (prior).
func (r *Rule) periodTotal() float64 {
	if !r.totalOK {
		switch r.decays {
		case r.calcDecays:
			r.totalAt = r.total()
		case r.calcDecays + 1:
			r.totalAt = 0.0
			for _, u := range r.prior {
				r.totalAt += u
			}
		default:
			panic("fairshare: a period's total read two decays after its start")
		}
		r.totalOK = true
	}
	return r.totalAt
}

func (r *Rule) factorOf(k *baseline.Core, c policy.CampaignID, total float64) float64 {
	cp := k.Campaign(c)
	if cp.Filler || cp.Share <= 0 {
		return 0
	}
	u := 0.0
	if total > 0 {
		u = r.usage[c] / total
	}
	return math.Exp2(-u / cp.Share)
}

// periodStart is the first tick of the calculation period holding tick t:
// the periods are ticks 1…P, P+1…2P, ….
func (r *Rule) periodStart(t int) int {
	if t < 1 {
		return 1
	}
	return t - (t-1)%r.knobs.CalcPeriod
}

// Priority is the multifactor priority of a request of campaign c
// submitted at submitted, as the admission of the current tick sees it:
// the factors of the current period's start e, and the age at e (0 for a
// request submitted after e). With a period of 1 tick, e is now.
func (r *Rule) Priority(k *baseline.Core, c policy.CampaignID, submitted int) float64 {
	r.recalc(k)
	return r.priority(k, c, submitted)
}

func (r *Rule) priority(k *baseline.Core, c policy.CampaignID, submitted int) float64 {
	if r.factorAt[c] != r.calcAt {
		r.factor[c] = r.factorOf(k, c, r.periodTotal())
		r.factorAt[c] = r.calcAt
	}
	age := min(max(float64(r.calcAt-submitted)/r.knobs.MaxAge, 0), 1)
	return r.knobs.WFairshare*r.factor[c] + r.knobs.WAge*age
}

// recalc brings the usage up to the end of the tick before now and, at
// the first admission of a period, recomputes the factors. It is lazy, so
// that a replay that skips ticks computes the same numbers as one that
// does not: the same usage, charged and decayed at the same boundaries,
// read at the same period start.
func (r *Rule) recalc(k *baseline.Core) {
	r.accrue(k.Now() - 1)
	if e := r.periodStart(k.Now()); e != r.calcAt {
		r.totalOK, r.calcDecays = false, r.decays
		r.calcAt = e
		r.epoch++
	}
}

// PeriodUsage is every campaign's decayed usage as Priority reads it — as
// of the end of the tick before the current calculation period, charged
// and decayed as above — and that period's first tick. policy/slurm ranks
// its Fair Tree by it, so that both policies keep the same books. The
// slice is the rule's own: read it before the next tick.
func (r *Rule) PeriodUsage(k *baseline.Core) (usage []float64, period int) {
	r.recalc(k)
	return r.usage, r.calcAt
}

// accrue charges the holdings through tick t, applying every period
// boundary on the way: at the end of tick b with b a multiple of P,
// U ← U·2^(−P/h) + the GPU-seconds held in ticks b−P+1…b (an exact
// integer). With P = 1 this is §6.9's U ← U·2^(−1/h) + held every tick.
func (r *Rule) accrue(t int) {
	p := r.knobs.CalcPeriod
	for r.through < t {
		boundary := (r.through/p + 1) * p
		end := min(boundary, t)
		n := int64(end - r.through)
		for _, c := range r.holders {
			r.charge[c] += int64(r.held[c]) * n
		}
		r.through = end
		if end == boundary {
			// Every live campaign at every period (the others' usage
			// is +0 in both buffers and stays so, live), the decay in
			// a local. A campaign charged nothing (most of them) takes
			// U·decay, which adding its 0 leaves as it is (U ≥ +0:
			// never −0). The decayed usage goes to the other buffer:
			// the usage before it stays as prior (periodTotal).
			usage, charge, decay := r.usage, r.charge[:len(r.usage)], r.decay
			next := r.prior
			if len(next) != len(usage) {
				// A registration since the last decay: the other buffer
				// from this one, so that it holds the +0 of every
				// campaign not live.
				next = append(next[:0], usage...)
			}
			next = next[:len(usage)]
			if 3*len(r.live) >= 2*len(usage) {
				// Most are live: a walk of every campaign costs fewer
				// instructions than one through the list (9 a campaign
				// against 13 a live one), and leaves the others' +0.
				for c := range usage {
					u := usage[c] * decay
					if ch := charge[c]; ch != 0 {
						u += float64(ch)
						charge[c] = 0
					}
					next[c] = u
				}
			} else {
				for _, c := range r.live {
					u := usage[c] * decay
					if ch := charge[c]; ch != 0 {
						u += float64(ch)
						charge[c] = 0
					}
					next[c] = u
				}
			}
			r.usage, r.prior = next, usage
			r.sumOK = false
			r.decays++
		}
	}
}

// Admit orders the queue by priority and runs one EASY pass. On a
// trace's queue (baseline.Core.Indexable) the pass reads the queue kept
// between passes (baseline.Keyed), not the whole pending list.
func (r *Rule) Admit(k *baseline.Core) {
	r.recalc(k)
	if k.Indexable() {
		k.AdmitEASYKeyed(&r.easy, &r.queue, r, eligible)
		return
	}
	k.KeepOrder()
	r.queue.Forget()
	k.AdmitEASY(&r.easy, r.order(k), eligible)
}

// QueueKey is the priority of a request of campaign c submitted at
// submitted in the current period (baseline.QueueKeys): the queue's key,
// higher first, then submit time, then id.
//
// baseline.Keyed keeps each campaign's requests in submit order and
// merges the campaigns by their heads' keys, which is the queue's order
// exactly when, within one campaign, a request submitted earlier never
// has a lower priority. It holds to the bit (docs/studies.md §6.9, the
// rule; docs/traces.md "Work per job", why the queue is kept): both
// requests share W_fs·F (F is the campaign's as of the period's start),
// and the age term W_age·min(max((e − s)/MaxAge, 0), 1) is computed from
// e − s, an exact integer that falls as s grows, through a division by
// MaxAge > 0, a clamp and a product with W_age ≥ 0, each correctly
// rounded and so monotone: it never rises with s, nor does the sum (a
// rounded sum with a fixed term is monotone too). The knobs are finite
// (Validate), so no term is NaN. Ties in priority go by submit time, as
// the campaign's list is ordered.
func (r *Rule) QueueKey(k *baseline.Core, c policy.CampaignID, submitted int) float64 {
	return r.priority(k, c, submitted)
}

// KeyEpoch changes whenever QueueKey's values may (baseline.QueueKeys):
// at each period's start, and when the shares change (Registered).
func (r *Rule) KeyEpoch() uint64 { return r.epoch }

// A generation of ceilings lasts at most ceilPeriods periods, and while
// the decayed total grows by at most ceilGrowth: the longer and the
// wider, the fewer generations (each ceils every waiting campaign's head
// again) but the looser the ceilings (a pass keys the heads whose ceiling
// reaches the best key). Measured on 64 weeks of SDSC-SP2 (docs/traces.md,
// "Work per job").
const (
	ceilPeriods = 32
	ceilGrowth  = 0.01
)

// CeilingGen is the ceilings' generation (baseline.QueueKeys): a new one
// starts at the first pass of a period past the last one's end, or
// where the decayed total has grown past its bound, or the shares
// changed.
func (r *Rule) CeilingGen(k *baseline.Core) uint64 {
	if r.ceilGen == 0 || r.calcAt > r.ceilEnd || !(r.periodTotal() <= r.ceilTotal) || r.ceilShares != k.SharesEpoch() {
		r.ceilGen++
		r.ceilEnd = r.calcAt + ceilPeriods*r.knobs.CalcPeriod
		r.ceilTotal = r.periodTotal() * (1 + ceilGrowth)
		r.ceilShares = k.SharesEpoch()
		r.ceilScale = 0
		if d := math.Pow(r.decay, ceilPeriods+2); d >= 1e-3 && r.ceilTotal > 0 && !math.IsInf(r.ceilTotal, 0) {
			r.ceilScale = d / r.ceilTotal
		}
	}
	return r.ceilGen
}

// KeyCeiling is at least QueueKey(k, c, submitted) in this period and in
// every later one of the generation (baseline.QueueKeys), to the bit.
//
// The age term is at most the one at the generation's last period start,
// ceilEnd (the age never falls as the period start grows). The factor is
// F = 2^(−U/(T·S)) with U the campaign's usage and T the decayed total
// at a period's start. Between now and any later period start of the
// generation the usage is decayed at most ceilPeriods+2 times (a period
// boundary each, one more if a reader caught up on the last tick of a
// period) and never falls otherwise (U ← U·decay + charge, charge ≥ 0),
// while T stays at most ceilTotal: U/T is at least U·decay^(ceilPeriods+2)
// / ceilTotal, so F is at most 2^(−that/S). The margins (1 − 10⁻⁹ on the
// exponent, 1 + 10⁻¹² and 10⁻³⁰⁰ on the power) cover the roundings on the
// way, each a few parts in 10¹⁶ a step; a usage below 10⁻²⁵⁰ bounds F by
// 1 only (its decay could leave the normal range). A factor this period
// has already computed (with the shares it was computed with) is a
// ceiling too. The key is then the rule's own sum of the two terms, and
// each rounded step is monotone in them.
func (r *Rule) KeyCeiling(k *baseline.Core, c policy.CampaignID, submitted int) float64 {
	f := 0.0
	if cp := k.Campaign(c); !cp.Filler && cp.Share > 0 {
		y := 0.0
		if u := r.usage[c]; u >= 1e-250 {
			y = u * r.ceilScale / cp.Share * (1 - 1e-9)
		}
		f = math.Exp2(-y)*(1+1e-12) + 1e-300
	}
	if r.factorAt[c] == r.calcAt {
		f = max(f, r.factor[c])
	}
	age := min(max(float64(r.ceilEnd-submitted)/r.knobs.MaxAge, 0), 1)
	return r.knobs.WFairshare*f + r.knobs.WAge*age
}

// UnorderedPending lets the Core keep a trace's pending list in no order
// (baseline.UnorderedPending): the kept queue orders it, and a grant in
// the middle of a long queue moves one request, not the queue behind it.
// A pass that reads the list's order puts it back in order first
// (KeepOrder).
func (*Rule) UnorderedPending() {}

// Filed keeps the queue (baseline.Watcher).
func (r *Rule) Filed(k *baseline.Core, q *baseline.Request) {
	if !k.Campaign(q.Campaign).Filler {
		r.queue.File(k, q)
	}
}

// Left keeps the queue (baseline.Watcher).
func (r *Rule) Left(k *baseline.Core, q baseline.Request) {
	if !k.Campaign(q.Campaign).Filler {
		r.queue.Leave(k, &q)
	}
}

// before is the queue's order: priority descending, then submit time,
// then id (a total order: ids are unique).
func before(ka float64, sa, ida int, kb float64, sb, idb int) int {
	if c := cmp.Compare(kb, ka); c != 0 {
		return c
	}
	if c := cmp.Compare(sa, sb); c != 0 {
		return c
	}
	return cmp.Compare(ida, idb)
}

// order writes each waiting request's priority into its Key and returns
// their ids (the filler's left out) in the queue's order. The order is
// total, so it does not depend on how it is reached: within the period of
// the last admission, the requests still waiting keep their order and the
// ones filed since are sorted and merged in.
func (r *Rule) order(k *baseline.Core) []int {
	pend := k.Pending()
	if r.mark++; r.mark == 0 { // wrapped: forget every mark
		clear(r.seen)
		r.mark = 1
		r.sortedAt = 0
	}
	keep := !r.plain && r.sortedAt == r.calcAt && r.calcAt != 0
	fresh := r.fresh[:0]
	for i := range pend {
		req := &pend[i]
		if k.Campaign(req.Campaign).Filler {
			continue
		}
		req.Key = r.priority(k, req.Campaign, req.Submitted)
		id := req.ID
		if id >= len(r.seen) {
			n := 2*id + 64
			r.seen = append(r.seen, make([]uint32, n-len(r.seen))...)
			r.key = append(r.key, make([]float64, n-len(r.key))...)
			r.submitted = append(r.submitted, make([]int, n-len(r.submitted))...)
		}
		if !keep || r.seen[id] == 0 {
			fresh = append(fresh, id)
		}
		r.seen[id] = r.mark
		r.key[id], r.submitted[id] = req.Key, req.Submitted
	}
	cmpID := func(a, b int) int { return before(r.key[a], r.submitted[a], a, r.key[b], r.submitted[b], b) }
	slices.SortFunc(fresh, cmpID)
	merged := r.merged[:0]
	if keep {
		// The previous order, less the requests that left it, merged with
		// the new ones.
		j := 0
		for _, id := range r.sorted {
			if r.seen[id] != r.mark {
				continue
			}
			for j < len(fresh) && cmpID(fresh[j], id) < 0 {
				merged = append(merged, fresh[j])
				j++
			}
			merged = append(merged, id)
		}
		merged = append(merged, fresh[j:]...)
	} else {
		merged = append(merged, fresh...)
	}
	r.sorted, r.merged, r.fresh = merged, r.sorted, fresh
	r.sortedAt = r.calcAt
	return merged
}

// eligible: only opportunistic leases are preemptible, and only for a head
// that is not opportunistic itself.
func eligible(head *baseline.Request, l *baseline.Lease) bool {
	return head.Class != policy.Opportunistic && l.Class == policy.Opportunistic
}

// EndTick charges the ticks since the last one it saw with the holdings
// of then (the Core skipped them: nothing changed), and this tick with
// this tick's holdings.
func (r *Rule) EndTick(k *baseline.Core) {
	now := k.Now()
	r.accrue(now - 1)
	if !r.heldRead {
		r.moved = r.moved[:0]
		for c := range r.held {
			r.moved = append(r.moved, c)
			r.movedIn[c] = true
		}
		r.heldRead = true
	}
	for _, c := range r.moved {
		r.movedIn[c] = false
		r.hold(c, k.Held(policy.CampaignID(c), policy.AnyClass))
	}
	r.moved = r.moved[:0]
	r.accrue(now)
}

// HoldChanged notes a campaign whose holding the next EndTick reads
// (baseline.HoldWatcher).
func (r *Rule) HoldChanged(_ *baseline.Core, c policy.CampaignID) {
	if int(c) < len(r.movedIn) && !r.movedIn[c] {
		r.movedIn[c] = true
		r.moved = append(r.moved, int(c))
	}
}

// hold sets campaign c's holding to h, keeping holders: the order of
// holders does not matter, each charge being an exact integer of its own.
func (r *Rule) hold(c, h int) {
	r.held[c] = h
	if h != 0 && !r.liveIn[c] {
		r.markLive(c)
	}
	switch at := r.holderAt[c]; {
	case h != 0 && at < 0:
		r.holderAt[c] = len(r.holders)
		r.holders = append(r.holders, c)
	case h == 0 && at >= 0:
		last := r.holders[len(r.holders)-1]
		r.holders[at], r.holderAt[last] = last, at
		r.holders = r.holders[:len(r.holders)-1]
		r.holderAt[c] = -1
	}
}

// Live lists the campaigns whose usage (Usage, PeriodUsage) may not be
// +0: every other campaign's is +0. The list only grows, each campaign
// once; it is the rule's own, read only.
func (r *Rule) Live() []int { return r.live }

// markLive lists campaign c among those whose usage may not be +0
// (live).
func (r *Rule) markLive(c int) {
	r.liveIn[c] = true
	r.live = append(r.live, c)
}

// NextEvent is the next period's start, when the priorities change
// (baseline.Paced); none while no request waits, since priorities order
// only the queue and are computed lazily at the next admission.
func (r *Rule) NextEvent(k *baseline.Core) int {
	if !r.queue.Waiting() {
		return math.MaxInt
	}
	if k.Now() < 1 {
		return 1
	}
	return r.periodStart(k.Now()) + r.knobs.CalcPeriod
}

// CloneRule is a copy of the rule for a copy of its Core
// (baseline.RuleCloner): every table copied, bound to the copy.
func (r *Rule) CloneRule(from, to *baseline.Core) baseline.Rule {
	c := *r
	c.usage, c.prior = slices.Clone(r.usage), slices.Clone(r.prior)
	c.charge, c.held = slices.Clone(r.charge), slices.Clone(r.held)
	c.holders, c.holderAt = slices.Clone(r.holders), slices.Clone(r.holderAt)
	c.moved, c.movedIn = slices.Clone(r.moved), slices.Clone(r.movedIn)
	c.live, c.liveIn = slices.Clone(r.live), slices.Clone(r.liveIn)
	c.factor, c.factorAt = slices.Clone(r.factor), slices.Clone(r.factorAt)
	c.easy = r.easy.Clone()
	c.sorted, c.fresh, c.merged = slices.Clone(r.sorted), slices.Clone(r.fresh), slices.Clone(r.merged)
	c.key, c.submitted, c.seen = slices.Clone(r.key), slices.Clone(r.submitted), slices.Clone(r.seen)
	c.queue = r.queue.Clone()
	to.CountMoved(c.queue.Entries())
	if r.core == from {
		c.core = to
	}
	return &c
}
