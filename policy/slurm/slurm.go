package slurm

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/fairshare"
)

// Name is the policy's name in configs and reports.
const Name = "slurm"

// Slurm 22.05's defaults, each read in the slurm-22-05-9-1 tag of
// github.com/SchedMD/slurm.
const (
	// DefaultSchedInterval is SchedulerParameters sched_interval: the
	// main scheduler's full-queue run every 60 s
	// (src/slurmctld/job_scheduler.c, _schedule: sched_interval = 60).
	DefaultSchedInterval = 60
	// DefaultQueueDepth is SchedulerParameters default_queue_depth: the
	// jobs an event-triggered main run tests (job_scheduler.c, _schedule:
	// def_job_limit = 100).
	DefaultQueueDepth = 100
	// DefaultBfInterval is bf_interval, 30 s
	// (src/plugins/sched/backfill/backfill.c, BACKFILL_INTERVAL).
	DefaultBfInterval = 30
	// DefaultBfResolution is bf_resolution, 60 s (backfill.c,
	// BACKFILL_RESOLUTION).
	DefaultBfResolution = 60
	// DefaultBfWindow is bf_window, 1440 minutes: 86,400 s (backfill.c,
	// BACKFILL_WINDOW = 24 * 60 * 60; the option is read in minutes).
	DefaultBfWindow = 24 * 60 * 60
	// DefaultBfMaxJobTest is bf_max_job_test, 500 (backfill.c,
	// DEF_BF_MAX_JOB_TEST).
	DefaultBfMaxJobTest = 500
	// DefaultDecayHalfLife and DefaultMaxAge are PriorityDecayHalfLife and
	// PriorityMaxAge, 7 days (src/common/read_config.h,
	// DEFAULT_PRIORITY_DECAY = 604800, which read_config.c's
	// _validate_and_set_defaults uses for both).
	DefaultDecayHalfLife = 7 * 24 * 3600
	DefaultMaxAge        = 7 * 24 * 3600
	// DefaultCalcPeriod is PriorityCalcPeriod, 5 minutes (read_config.h,
	// DEFAULT_PRIORITY_CALC_PERIOD = 300).
	DefaultCalcPeriod = 300
)

// Knobs are the policy's settings, by Slurm's names (slurm.conf's
// SchedulerParameters and Priority* keys), times in seconds.
type Knobs struct {
	SchedInterval     int `json:"sched_interval" yaml:"sched_interval"`
	DefaultQueueDepth int `json:"default_queue_depth" yaml:"default_queue_depth"`
	BfInterval        int `json:"bf_interval" yaml:"bf_interval"`
	BfResolution      int `json:"bf_resolution" yaml:"bf_resolution"`
	// BfWindow is in seconds here (Slurm reads minutes).
	BfWindow     int `json:"bf_window" yaml:"bf_window"`
	BfMaxJobTest int `json:"bf_max_job_test" yaml:"bf_max_job_test"`

	// The PriorityWeight* of priority/multifactor: Slurm's default for
	// each is 0 (read_config.c, _validate_and_set_defaults), and with
	// every weight 0 the queue is in submit order.
	WAge       float64 `json:"w_age" yaml:"w_age"`
	WFairshare float64 `json:"w_fairshare" yaml:"w_fairshare"`
	WJobSize   float64 `json:"w_job_size" yaml:"w_job_size"`
	WPartition float64 `json:"w_partition" yaml:"w_partition"`
	WQOS       float64 `json:"w_qos" yaml:"w_qos"`

	MaxAge     float64 `json:"max_age" yaml:"max_age"`
	HalfLife   float64 `json:"half_life" yaml:"half_life"`
	CalcPeriod int     `json:"calc_period" yaml:"calc_period"`
	// NoFairTree is PriorityFlags=NO_FAIR_TREE: classic fair share,
	// F = 2^(−U/S), in place of Fair Tree's rank (Slurm's default since
	// 19.05).
	NoFairTree bool `json:"no_fair_tree" yaml:"no_fair_tree"`
}

// DefaultKnobs are Slurm 22.05's defaults, every priority weight 0
// included: the scheduler as shipped, whose queue is in submit order, so
// that beside fifo (FCFS + EASY) it differs by its backfill alone
// (docs/policies.md gives the reasons).
func DefaultKnobs() Knobs {
	return Knobs{
		SchedInterval: DefaultSchedInterval, DefaultQueueDepth: DefaultQueueDepth,
		BfInterval: DefaultBfInterval, BfResolution: DefaultBfResolution,
		BfWindow: DefaultBfWindow, BfMaxJobTest: DefaultBfMaxJobTest,
		MaxAge: DefaultMaxAge, HalfLife: DefaultDecayHalfLife, CalcPeriod: DefaultCalcPeriod,
	}
}

// Validate checks the knobs; the error names the knob.
func (k Knobs) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"sched_interval", k.SchedInterval}, {"default_queue_depth", k.DefaultQueueDepth},
		{"bf_interval", k.BfInterval}, {"bf_resolution", k.BfResolution}, {"bf_window", k.BfWindow},
		{"bf_max_job_test", k.BfMaxJobTest}, {"calc_period", k.CalcPeriod}} {
		if f.v < 1 {
			return fmt.Errorf("slurm: %s must be at least 1, got %d", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
		pos  bool
	}{{"w_age", k.WAge, false}, {"w_fairshare", k.WFairshare, false}, {"w_job_size", k.WJobSize, false},
		{"w_partition", k.WPartition, false}, {"w_qos", k.WQOS, false},
		{"max_age", k.MaxAge, true}, {"half_life", k.HalfLife, true}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 || (f.pos && f.v == 0) {
			return fmt.Errorf("slurm: %s must be a finite number ≥ 0 (> 0 for times), got %v", f.name, f.v)
		}
	}
	return nil
}

// Rule is Slurm's main scheduler and backfill pass over multifactor
// priorities.
type Rule struct {
	baseline.Base
	knobs Knobs
	queue baseline.Queue
	// usage keeps the decayed usage books (fairshare's accounting, the
	// same charges and decays; nil while the fair-share weight is 0).
	usage *fairshare.Rule
	prio  priorities
	bf    backfill

	// The queue in order as the last admission left it, for the
	// priorities of generation sortedGen, and every id up to seenID
	// placed in it (see order); keys by request id. filed are the jobs
	// filed since (Filed) and left whether any job left the queue since
	// (Left), so that an admission of the same generation reads neither
	// the pending list nor the Core's index of it: the kept queue and the
	// jobs' waiting marks (jobKey.waiting) say what it holds.
	sorted, fresh, merged []int
	sortedGen             int
	seenID                int
	filed                 []int
	left                  bool
	// zero: every priority weight is 0 (zeroWeights, fixed with the
	// knobs), and the queue is the pending list's.
	zero bool
	// least is the fewest GPUs any waiting job could start with, while
	// leastOK (leastWaiting).
	least   int
	leastOK bool
	// flex counts the agents' requests waiting (not rigid, the filler's
	// aside), kept with least so that stuck need not walk the list.
	flex int
	// keys[i] is job keyBase+i's (see key): from the first job waiting
	// at the last generation on, so that a fair start's fork copies the
	// keys of the queue, not of every job the log filed.
	keys    []jobKey
	keyBase int

	// What the last backfill pass saw (k.Changes() after it, the priority
	// period), so that a pass nothing could change is skipped (see
	// backfillDue).
	bfChanges uint64
	bfPeriod  int
	bfRan     bool
	// mainDue: the main scheduler owes a full-queue run at the next
	// sched_interval tick (an event run stopped at default_queue_depth);
	// mainChanges is k.Changes() after its last run, so that an admission
	// with nothing changed since is no event.
	mainDue     bool
	mainPeriod  int
	mainChanges uint64
	mainRan     bool
	// fillers are the filler's campaigns (stuck).
	fillers []policy.CampaignID
	// always runs the backfill at every bf_interval tick, changed or not,
	// and both runs whenever due, stuck or not (tests: the oracle of the
	// skips); unstuck only the latter (the oracle of stuck alone); plain
	// reads the pending list where the rule keeps what it would read
	// (stuck's test, the jobs a pass tests) and has the blocked job look
	// for victims with no filler holding any (the oracle of the kept
	// figures and of that skip).
	always, unstuck, plain bool
}

// New returns a Slurm allocator.
func New(cfg policy.Config, knobs Knobs) (*baseline.Core, error) {
	if err := knobs.Validate(); err != nil {
		return nil, err
	}
	return baseline.New(cfg, NewRule(knobs))
}

// NewRule returns the rule on its own. The knobs must be valid.
func NewRule(knobs Knobs) *Rule {
	r := &Rule{knobs: knobs}
	r.zero = r.zeroWeights()
	if knobs.WFairshare > 0 {
		r.usage = fairshare.NewRule(fairshare.Knobs{HalfLife: knobs.HalfLife, MaxAge: knobs.MaxAge, CalcPeriod: knobs.CalcPeriod})
	}
	return r
}

// Name is the policy's name.
func (*Rule) Name() string { return Name }

// Registered sizes the usage books (a history before the replay preloaded,
// as fairshare's, docs/studies.md §6.16).
func (r *Rule) Registered(k *baseline.Core, c policy.CampaignID) {
	if r.usage != nil {
		r.usage.Registered(k, c)
	}
	r.prio.stale = true
	if k.Campaign(c).Filler {
		r.fillers = append(r.fillers, c)
	}
}

// HoldChanged passes the Core's note of a campaign whose holding changed
// to the usage books (baseline.HoldWatcher): they read again only the
// campaigns named since their last EndTick, and the Core tells its rule,
// this one, not the books inside it.
func (r *Rule) HoldChanged(k *baseline.Core, c policy.CampaignID) {
	if r.usage != nil {
		r.usage.HoldChanged(k, c)
	}
}

// Filed marks job r waiting and notes it for the next order
// (baseline.Watcher). The filler's requests are not the queue's, and
// with every weight 0 the queue is the pending list's (order).
func (r *Rule) Filed(k *baseline.Core, q *baseline.Request) {
	if r.zero || k.Campaign(q.Campaign).Filler {
		return
	}
	key := r.key(q.ID)
	key.waiting, key.want = true, r.leastWant(q)
	r.filed = append(r.filed, q.ID)
	r.least = min(r.least, key.want)
	if !q.Rigid {
		r.flex++
	}
}

// Left marks job q no longer waiting (baseline.Watcher): granted, or
// gone. A job whose key was dropped (dropKeys) was no longer waiting.
func (r *Rule) Left(k *baseline.Core, q baseline.Request) {
	if r.zero || k.Campaign(q.Campaign).Filler {
		return
	}
	if x := q.ID - r.keyBase; x >= 0 && x < len(r.keys) {
		r.keys[x].waiting = false
	}
	r.left = true
	if !q.Rigid {
		r.flex--
	}
	if r.leastWant(&q) <= r.least {
		r.leastOK = false // it may have been the least
	}
}

// waiting reports whether job id (not the filler's) is in the pending
// list: filed and not yet left (Filed, Left). It stands for
// k.Index(id) >= 0, which for a job that left rebuilds the Core's
// index of the whole list.
func (r *Rule) waiting(id int) bool {
	x := id - r.keyBase
	return x >= 0 && x < len(r.keys) && r.keys[x].waiting
}

// live reports whether job id of the queue order returned is still in
// the pending list: by its mark where the rule keeps them, by the Core's
// index with every weight 0 (the queue is then the pending list's).
func (r *Rule) live(k *baseline.Core, id int) bool {
	if r.zero {
		return k.Index(id) >= 0
	}
	return r.waiting(id)
}

// wantOf is the fewest GPUs waiting job id could start with (leastWant):
// kept since it was filed where the rule keeps marks, not looked up in
// the Core's index, which a grant earlier in the list leaves stale (a
// rebuild of it from the whole list at the next look-up).
func (r *Rule) wantOf(k *baseline.Core, id int) int {
	if r.zero {
		return r.leastWant(k.Pend(k.Index(id)))
	}
	return r.keys[id-r.keyBase].want
}

// tested appends to jobs the first limit jobs of the queue ids still
// waiting (the main scheduler's starts are gone), the jobs a backfill
// pass tests, and to wants each one's fewest GPUs (wantOf). Where the
// rule keeps marks it reads them in place: through live and wantOf, a
// call each per job, these two walks of the queue cost a backfill pass
// more than its tests on the 300k-job log (43 jobs a pass, 32 tested).
func (r *Rule) tested(k *baseline.Core, ids []int, limit int, jobs, wants []int) ([]int, []int) {
	if r.zero || r.plain {
		for _, id := range ids {
			if len(jobs) == limit {
				break
			}
			if r.live(k, id) {
				jobs = append(jobs, id)
				wants = append(wants, r.wantOf(k, id))
			}
		}
		return jobs, wants
	}
	keys, base := r.keys, r.keyBase
	for _, id := range ids {
		if len(jobs) == limit {
			break
		}
		// waiting's test and wantOf's read, in place.
		if x := id - base; uint(x) < uint(len(keys)) && keys[x].waiting {
			jobs = append(jobs, id)
			wants = append(wants, keys[x].want)
		}
	}
	return jobs, wants
}

// EndTick charges the tick's holdings to the usage books.
func (r *Rule) EndTick(k *baseline.Core) {
	if r.usage != nil {
		r.usage.EndTick(k)
	}
}

// dynamic reports whether priorities move with time: an age or a usage
// weight. Job size, partition and QOS factors are fixed per job.
func (r *Rule) dynamic() bool { return r.knobs.WAge > 0 || r.knobs.WFairshare > 0 }

// period is the first tick of the calculation period holding now (ticks
// 1…P, P+1…2P, …, as fairshare's), or 0 when priorities never move.
func (r *Rule) period(now int) int {
	if !r.dynamic() {
		return 0
	}
	p := r.knobs.CalcPeriod
	if now < 1 {
		return 1
	}
	return now - (now-1)%p
}

// Admit runs the main scheduler on an event (anything changed since its
// last run: a job filed or ended, a notice; the Core also admits at ticks
// where nothing did, and there Slurm runs nothing) and at every
// sched_interval tick, and the backfill pass at every bf_interval tick,
// both over the queue in priority order.
func (r *Rule) Admit(k *baseline.Core) {
	now := k.Now()
	full := now%r.knobs.SchedInterval == 0
	event := !r.mainRan || k.Changes() != r.mainChanges
	bf := now%r.knobs.BfInterval == 0 && r.backfillDue(k)
	if !full && !event && !bf {
		return
	}
	if !r.always && !r.unstuck && r.stuck(k) {
		// Neither run could start or notice anything, whatever the
		// order: leave the order, and the priorities it would compute,
		// to the next admission that can (stuck holds until a change,
		// which is an event), and keep the books both runs keep.
		if full || event {
			r.mainDue, r.mainPeriod = false, r.period(now)
			r.mainChanges, r.mainRan = k.Changes(), true
		}
		if bf {
			r.bfChanges, r.bfPeriod, r.bfRan = k.Changes(), r.period(now), true
			r.bf.reserved, r.bf.passAt = r.bf.reserved[:0], now
		}
		return
	}
	ids := r.order(k)
	if full || event {
		r.mainScheduler(k, ids, full)
		// Its own starts are not events: the jobs past
		// default_queue_depth wait for the next full run (mainDue).
		r.mainChanges, r.mainRan = k.Changes(), true
	}
	if bf {
		// The changes as the pass found them: a pass that starts a job
		// changes the queue it tests (bf_max_job_test reaches one job
		// further), so the next pass is due.
		r.bfChanges, r.bfPeriod, r.bfRan = k.Changes(), r.period(now), true
		r.bf.pass(k, r.knobs, ids, r)
	}
}

// stuck reports whether no main run nor backfill pass could do anything
// now, in any order of the queue: every job waiting (the filler's aside)
// is rigid and wider than the GPUs free plus those reserved for it, so
// that the main scheduler's first job does not start (TryStart: want ≤
// room + Reserved) and no backfill test starts one (want ≤ the GPUs
// free), and no lease of the filler, the only victims the main
// scheduler's blocked job may notice (Preempt with no eligible), is
// held (noticed or not: the test is the filler's holding). Then the main run stops at its first job, owing
// nothing (mainDue), and the pass ends before its first test, reserving
// nothing that outlives it; which job is first does not matter, so the
// order need not be computed. On the full SDSC-SP2 log with the example
// site's weights most calculation periods begin so (the machine full of
// jobs that do not fit), and each was a Fair Tree ranking of every
// association and every waiting job's priority.
func (r *Rule) stuck(k *baseline.Core) bool {
	room := max(0, k.FreeGeneral())
	if !r.zero && !r.plain && r.flex == 0 && k.Config().Pool-k.Leased() == k.FreeGeneral() {
		// Every job waiting is rigid, and none has GPUs reserved (the
		// Core's sum of them is 0): the test is the narrowest job's
		// width against room, kept between the jobs filed and gone
		// (leastWaiting; none waiting gives math.MaxInt, stuck as the
		// walk). The walk read the whole list at every admission, 114
		// million requests over the 300k-job log.
		if r.leastWaiting(k) <= room {
			return false
		}
		return !r.fillerHolds(k)
	}
	for i, pend := 0, k.Pending(); i < len(pend); i++ {
		q := &pend[i]
		if k.Campaign(q.Campaign).Filler {
			continue
		}
		if !q.Rigid || q.GPUs <= room+q.Reserved {
			return false
		}
	}
	return !r.fillerHolds(k) // a lease of it, noticed or not
}

// fillerHolds reports whether a campaign of the filler holds a lease,
// noticed or not.
func (r *Rule) fillerHolds(k *baseline.Core) bool {
	for _, c := range r.fillers {
		if k.Held(c, policy.AnyClass) > 0 {
			return true
		}
	}
	return false
}

// order writes every waiting job's priority into its Key and returns the
// queue in Slurm's order (job_scheduler.c, sort_job_queue2: partition
// PriorityTier, then priority, both descending, then submit time, then job
// id; one partition here, so the tier ties). With every weight 0 every
// priority is 0 and the order is the pending list's, submit time then id.
//
// Priorities are fixed between recalculations, and the order is total, so
// within one the queue keeps the order of the jobs still waiting and the
// ones filed since (ids above any seen) are sorted and merged in: linear
// in the queue, where sorting it at every event cost most of a replay.
// Within a generation it reads neither the pending list nor the Core's
// index of it: the jobs filed since are noted as they are filed, and the
// kept queue drops the jobs marked gone (Filed, Left), which the index
// found by rebuilding itself from the whole list at each one (a twentieth
// of a replay); with nothing filed or gone the kept queue is the queue.
func (r *Rule) order(k *baseline.Core) []int {
	if r.zero {
		return r.queue.Build(k, nil)
	}
	gen := r.prio.update(k, r)
	newGen := gen != r.sortedGen
	if !newGen && len(r.filed) == 0 && !r.left {
		// Nothing filed or gone since, the same priorities: the
		// same queue.
		return r.sorted
	}
	r.left = false
	fresh := r.fresh[:0]
	top := r.seenID
	if newGen {
		// Every waiting job gets its priority of the generation.
		pend := k.Pending()
		r.sortedGen, r.seenID, top = gen, 0, 0
		r.dropKeys(k, pend)
		for i := range pend {
			q := &pend[i]
			if k.Campaign(q.Campaign).Filler {
				continue
			}
			q.Key = r.prio.of(k, r, q)
			fresh = append(fresh, q.ID)
			key := r.key(q.ID)
			key.prio, key.submitted = q.Key, q.Submitted
			top = max(top, q.ID)
		}
	} else {
		// The jobs filed since the last order (ids above any it saw:
		// ids only grow) that still wait.
		for _, id := range r.filed {
			if !r.waiting(id) {
				continue
			}
			q := k.Pend(k.Index(id))
			q.Key = r.prio.of(k, r, q)
			fresh = append(fresh, id)
			key := &r.keys[id-r.keyBase]
			key.prio, key.submitted = q.Key, q.Submitted
			top = max(top, id)
		}
	}
	r.filed = r.filed[:0]
	r.seenID = top
	before := func(a, b int) int {
		// The keys by pointer: copying two of them at each comparison
		// was a third of the comparisons' instructions.
		ka, kb := &r.keys[a-r.keyBase], &r.keys[b-r.keyBase]
		if c := cmp.Compare(kb.prio, ka.prio); c != 0 {
			return c
		}
		if c := cmp.Compare(ka.submitted, kb.submitted); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	}
	if newGen {
		// Every waiting job is fresh, its priority new, but the order
		// moves little from one period to the next: the jobs the last
		// generation ordered go first in its order, then the others, and
		// an insertion sort puts them in order from there (a fresh sort
		// past a few moves a job). The order is total: the same queue.
		warm := r.merged[:0]
		for _, id := range r.sorted {
			if r.waiting(id) {
				warm = append(warm, id)
				r.keys[id-r.keyBase].gen = gen
			}
		}
		for _, id := range fresh {
			if r.keys[id-r.keyBase].gen != gen {
				warm = append(warm, id)
			}
		}
		r.merged, fresh = fresh, warm
		sortFrom(fresh, before)
		r.sorted = r.sorted[:0]
	} else {
		slices.SortFunc(fresh, before)
	}
	merged, j := r.merged[:0], 0
	for _, id := range r.sorted {
		if !r.waiting(id) {
			continue // started, or gone
		}
		for j < len(fresh) && before(fresh[j], id) < 0 {
			merged = append(merged, fresh[j])
			j++
		}
		merged = append(merged, id)
	}
	merged = append(merged, fresh[j:]...)
	r.sorted, r.merged, r.fresh = merged, r.sorted, fresh
	return merged
}

// jobKey is what the order compares of a waiting job.
type jobKey struct {
	prio      float64
	submitted int
	// gen: the job was placed in the queue of priority generation gen
	// from the last one's order (order).
	gen int
	// waiting: the job is in the pending list (Filed, Left); want, the
	// fewest GPUs it could start with (leastWant, fixed while it waits).
	waiting bool
	want    int
}

// key is job id's key, the table grown to hold it.
func (r *Rule) key(id int) *jobKey {
	if len(r.keys) == 0 {
		r.keyBase = id
	}
	if id < r.keyBase {
		r.keys = slices.Insert(r.keys, 0, make([]jobKey, r.keyBase-id)...)
		r.keyBase = id
	}
	for len(r.keys) <= id-r.keyBase {
		r.keys = append(r.keys, jobKey{})
	}
	return &r.keys[id-r.keyBase]
}

// dropKeys drops the keys of the jobs before the first one waiting (at a
// new generation, when every waiting job's key is written again), once
// they are at least half the table.
func (r *Rule) dropKeys(k *baseline.Core, pend []baseline.Request) {
	lo := math.MaxInt
	for i := range pend {
		if q := &pend[i]; !k.Campaign(q.Campaign).Filler {
			lo = min(lo, q.ID)
		}
	}
	if lo == math.MaxInt {
		return // nobody waits: the keys stay for the next job
	}
	if n := lo - r.keyBase; n > 0 && 2*n >= len(r.keys) {
		r.keys = r.keys[:copy(r.keys, r.keys[min(n, len(r.keys)):])]
		r.keyBase += n
	}
}

// sortFrom sorts ids, nearly in order already, by insertion in before's
// order, which is total; past a few moves an id it sorts them afresh.
func sortFrom(ids []int, before func(a, b int) int) {
	budget := 4*len(ids) + 16
	for i := 1; i < len(ids); i++ {
		x, j := ids[i], i
		for j > 0 && before(x, ids[j-1]) < 0 {
			ids[j] = ids[j-1]
			j--
		}
		ids[j] = x
		if budget -= i - j; budget < 0 {
			slices.SortFunc(ids, before)
			return
		}
	}
}

func (r *Rule) zeroWeights() bool {
	w := r.knobs
	return w.WAge == 0 && w.WFairshare == 0 && w.WJobSize == 0 && w.WPartition == 0 && w.WQOS == 0
}

// mainScheduler is Slurm's _schedule (job_scheduler.c) on one partition:
// jobs strictly in priority order, each started if it fits now; the first
// that does not blocks the partition, and every job after it waits (it may
// still preempt the filler, as every baseline's blocked head does,
// docs/studies.md §6.2). An event-triggered run tests at most
// default_queue_depth jobs; the run at a sched_interval tick tests the
// whole queue.
func (r *Rule) mainScheduler(k *baseline.Core, ids []int, full bool) {
	depth := len(ids)
	if !full {
		depth = min(depth, r.knobs.DefaultQueueDepth)
	}
	r.mainDue = false
	r.mainPeriod = r.period(k.Now())
	tested := 0
	for _, id := range ids {
		i := k.Index(id)
		if i < 0 {
			continue
		}
		if tested == depth {
			r.mainDue = true // the rest at the next full run
			return
		}
		tested++
		if k.Want(i) == 0 {
			continue // a campaign at its limit does not hold the partition
		}
		room := r.Room(k, k.Pend(i).Campaign)
		if k.TryStart(i, room) {
			continue
		}
		if r.plain || r.fillerHolds(k) {
			// With no eligible test the filler's leases are the only
			// victims (Core.Preempt): with none held the search finds
			// none and notices nothing, and it sorted every lease first
			// (4 % of a replay of the 300k-job log).
			k.Preempt(i, k.Missing(i, room), nil, nil)
		}
		return
	}
}

// backfillDue reports whether a backfill pass could start anything that
// the last one did not: something changed since the last pass began (a
// job filed, started — by that pass too — or ended, a notice), or the
// priorities were recalculated. A pass over an
// unchanged queue and pool starts nothing: each job it tests either did
// not fit in the GPUs free now, which have not grown, or would have
// overlapped a reservation whose start is a running lease's estimated end
// (which has not come, or the lease would have ended: a change) or
// another reservation's end, and the same jobs get the same reservations
// (a reservation's place depends on the running leases' ends, the free
// GPUs and the order, not on the clock); the window only grows, so later
// passes reserve more, never less. TestSkippedPassesChangeNothing replays
// random logs both ways.
func (r *Rule) backfillDue(k *baseline.Core) bool {
	return r.always || !r.bfRan || k.Changes() != r.bfChanges || r.period(k.Now()) != r.bfPeriod
}

// NextEvent is the next tick at which Admit may decide differently with
// nothing else changing (baseline.Paced): the next bf_interval tick if
// a pass is due and a waiting job could fit in the GPUs free now; the
// next sched_interval tick if the main scheduler owes a full run; and
// where priorities move, the first sched_interval and bf_interval ticks
// whose calculation period is not the one the last run saw.
func (r *Rule) NextEvent(k *baseline.Core) int {
	now := k.Now()
	least := r.leastWaiting(k)
	if least == math.MaxInt {
		return math.MaxInt // nobody waits
	}
	next := math.MaxInt
	fits := least <= k.FreeGeneral()
	if r.always || r.backfillDue(k) && fits {
		next = nextMultiple(now, r.knobs.BfInterval)
	}
	if r.mainDue {
		next = min(next, nextMultiple(now, r.knobs.SchedInterval))
	}
	if r.dynamic() {
		// The priorities move at each period's start: the first
		// sched_interval tick and bf_interval tick whose period is not the
		// one their last run saw.
		p := r.period(now) + r.knobs.CalcPeriod
		s := nextMultiple(now, r.knobs.SchedInterval)
		if r.period(s) == r.mainPeriod {
			s = nextMultiple(p-1, r.knobs.SchedInterval)
		}
		next = min(next, s)
		if fits {
			b := nextMultiple(now, r.knobs.BfInterval)
			if r.period(b) == r.bfPeriod {
				b = nextMultiple(p-1, r.knobs.BfInterval)
			}
			next = min(next, b)
		}
	}
	return next
}

// leastWaiting is the fewest GPUs any waiting job (the filler's aside)
// could start with, math.MaxInt with none. Where the rule hears of every
// job filed and gone (not with every weight 0) it keeps the figure
// between them, and reads the pending list again only when a job of
// that least want has left: NextEvent asked it at every skip, each time
// a walk of the whole list.
func (r *Rule) leastWaiting(k *baseline.Core) int {
	if !r.zero && r.leastOK {
		return r.least
	}
	least := math.MaxInt
	for i, pend := 0, k.Pending(); i < len(pend); i++ {
		if q := &pend[i]; !k.Campaign(q.Campaign).Filler {
			least = min(least, r.leastWant(q))
		}
	}
	r.least, r.leastOK = least, !r.zero
	return least
}

// leastWant is the fewest GPUs request q could start with: a rigid job's
// size; 1 for an agent's request, whose want follows its campaign's
// holding.
func (r *Rule) leastWant(q *baseline.Request) int {
	if q.Rigid {
		return q.GPUs
	}
	return 1
}

// nextMultiple is the first multiple of p after t.
func nextMultiple(t, p int) int { return (t/p + 1) * p }
