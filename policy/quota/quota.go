package quota

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
)

// Name is the policy's name in configs and reports.
const Name = "quota"

// Unlimited is the default borrowing limit.
const Unlimited = -1

// The queueing strategies (Kueue's ClusterQueue queueingStrategy).
const (
	// BestEffortFIFO, Kueue's default: a workload that cannot be admitted
	// does not block the later ones of its queue that can.
	BestEffortFIFO = "BestEffortFIFO"
	// StrictFIFO: the oldest workload of the highest class blocks its
	// queue until it is admitted.
	StrictFIFO = "StrictFIFO"
)

// The preemption policies of a ClusterQueue (Kueue's PreemptionPolicy and
// BorrowWithinCohortPolicy values).
const (
	Never                     = "Never"
	LowerPriority             = "LowerPriority"
	Any                       = "Any"
	LowerOrNewerEqualPriority = "LowerOrNewerEqualPriority"
)

// Knobs are the policy's settings. Their defaults are Kueue's API
// defaults (docs/policies.md cites each to Kueue's source); the old
// quota, fair-sharing preemption with reclaimWithinCohort Any, is the
// variant quota-fair (FairKnobs).
type Knobs struct {
	// BorrowingLimit is the most GPUs a queue may hold above its nominal
	// quota; Unlimited (-1, the default) means the cohort's whole quota.
	BorrowingLimit int `json:"borrowing_limit" yaml:"borrowing_limit"`
	// QueueingStrategy is BestEffortFIFO (the default; "" reads as it) or
	// StrictFIFO.
	QueueingStrategy string `json:"queueing_strategy" yaml:"queueing_strategy"`
	// PreemptionStrategies are Kueue's fairSharing.preemptionStrategies:
	// the first is tried lease by lease, the second (if any) over the
	// leases the first set aside. nil is Kueue's default,
	// [LessThanOrEqualToFinalShare, LessThanInitialShare]; Kueue also
	// accepts either one alone (ValidPreemptionStrategies). With
	// FairSharing off they are ignored, as Kueue ignores its
	// fairSharing block when fairSharing.enable is false.
	PreemptionStrategies []string `json:"preemption_strategies,omitempty" yaml:"preemption_strategies"`
	// ReclaimWithinCohort is the ClusterQueue's
	// preemption.reclaimWithinCohort: Never (the default; "" reads as
	// it), LowerPriority or Any. Under Never a queue below its nominal
	// quota waits for the GPUs other queues borrowed to come back.
	ReclaimWithinCohort string `json:"reclaim_within_cohort" yaml:"reclaim_within_cohort"`
	// WithinClusterQueue is preemption.withinClusterQueue: only Never
	// (the default) is modelled.
	WithinClusterQueue string `json:"within_cluster_queue" yaml:"within_cluster_queue"`
	// BorrowWithinCohort is preemption.borrowWithinCohort.policy: only
	// Never (the default) is modelled.
	BorrowWithinCohort string `json:"borrow_within_cohort" yaml:"borrow_within_cohort"`
	// FairSharing is Kueue's Configuration fairSharing.enable (default
	// false): on, the queues' candidates go by fair-sharing share and a
	// preemption follows PreemptionStrategies; off, Kueue's classical
	// order (workloads that do not borrow first, then priority, then
	// FIFO).
	FairSharing bool `json:"fair_sharing" yaml:"fair_sharing"`
}

// DefaultKnobs are Kueue's API defaults: no borrowing limit,
// BestEffortFIFO, every preemption policy Never and fair sharing off.
func DefaultKnobs() Knobs {
	return Knobs{BorrowingLimit: Unlimited, QueueingStrategy: BestEffortFIFO,
		ReclaimWithinCohort: Never, WithinClusterQueue: Never, BorrowWithinCohort: Never}
}

// FairKnobs are the knobs of the variant quota-fair, the quota of
// before Kueue's defaults: fair sharing on, reclaimWithinCohort Any,
// both fair-sharing strategies.
func FairKnobs() Knobs {
	k := DefaultKnobs()
	FairPreset(&k)
	return k
}

// FairPreset sets the knobs quota-fair fixes: reclaim_within_cohort Any
// and fair_sharing true.
func FairPreset(k *Knobs) { k.ReclaimWithinCohort, k.FairSharing = Any, true }

// ValidPreemptionStrategies are the lists of fair-sharing strategies
// Kueue's configuration accepts (its validation of
// fairSharing.preemptionStrategies), the default first.
var ValidPreemptionStrategies = [][]string{
	{LessThanOrEqualToFinalShare, LessThanInitialShare},
	{LessThanOrEqualToFinalShare},
	{LessThanInitialShare},
}

// CheckPreemptionStrategies reports whether s is one of
// ValidPreemptionStrategies (nil is the default).
func CheckPreemptionStrategies(s []string) error {
	if s == nil {
		return nil
	}
	for _, v := range ValidPreemptionStrategies {
		if slices.Equal(s, v) {
			return nil
		}
	}
	return fmt.Errorf("quota: preemption_strategies must be [%s, %s], [%s] or [%s], got %v", LessThanOrEqualToFinalShare,
		LessThanInitialShare, LessThanOrEqualToFinalShare, LessThanInitialShare, s)
}

// CheckReclaimWithinCohort, CheckWithinClusterQueue and
// CheckBorrowWithinCohort check one preemption policy ("" reads as
// Never): a value Kueue does not accept, or one it accepts that the rule
// does not model, is an error naming the knob.
func CheckReclaimWithinCohort(v string) error {
	switch v {
	case "", Never, LowerPriority, Any:
		return nil
	}
	return fmt.Errorf("quota: reclaim_within_cohort must be %s, %s or %s, got %q", Never, LowerPriority, Any, v)
}

// CheckWithinClusterQueue: see CheckReclaimWithinCohort.
func CheckWithinClusterQueue(v string) error {
	switch v {
	case "", Never:
		return nil
	case LowerPriority, LowerOrNewerEqualPriority:
		return fmt.Errorf("quota: within_cluster_queue %s is not supported (preemption inside a ClusterQueue is not modelled): only %s", v, Never)
	}
	return fmt.Errorf("quota: within_cluster_queue must be %s, %s or %s, got %q", Never, LowerPriority, LowerOrNewerEqualPriority, v)
}

// CheckBorrowWithinCohort: see CheckReclaimWithinCohort.
func CheckBorrowWithinCohort(v string) error {
	switch v {
	case "", Never:
		return nil
	case LowerPriority:
		return fmt.Errorf("quota: borrow_within_cohort %s is not supported (preemption while borrowing is not modelled): only %s", v, Never)
	}
	return fmt.Errorf("quota: borrow_within_cohort must be %s or %s, got %q", Never, LowerPriority, v)
}

// Validate names the first bad knob.
func (kn Knobs) Validate() error {
	if kn.BorrowingLimit < Unlimited {
		return fmt.Errorf("quota: borrowing_limit must be ≥ 0 GPUs, or -1 for unlimited, got %d", kn.BorrowingLimit)
	}
	if err := CheckPreemptionStrategies(kn.PreemptionStrategies); err != nil {
		return err
	}
	for _, err := range []error{CheckReclaimWithinCohort(kn.ReclaimWithinCohort), CheckWithinClusterQueue(kn.WithinClusterQueue),
		CheckBorrowWithinCohort(kn.BorrowWithinCohort)} {
		if err != nil {
			return err
		}
	}
	if !kn.FairSharing && kn.reclaim() != Never {
		return fmt.Errorf("quota: reclaim_within_cohort %s with fair_sharing false (Kueue's classical preemption) is not supported: "+
			"set fair_sharing: true (the variant quota-fair) or reclaim_within_cohort: %s", kn.ReclaimWithinCohort, Never)
	}
	switch kn.QueueingStrategy {
	case "", BestEffortFIFO, StrictFIFO:
		return nil
	}
	return fmt.Errorf("quota: queueing_strategy must be %s or %s, got %q", BestEffortFIFO, StrictFIFO, kn.QueueingStrategy)
}

// reclaim is ReclaimWithinCohort, "" read as Never.
func (kn Knobs) reclaim() string {
	if kn.ReclaimWithinCohort == "" {
		return Never
	}
	return kn.ReclaimWithinCohort
}

// Rule is the cohort-quota rule.
type Rule struct {
	baseline.Base
	knobs  Knobs
	strict bool
	// first is the strategy tried lease by lease (LessThanOrEqualToFinalShare
	// or LessThanInitialShare); second whether LessThanInitialShare then
	// runs over the leases the first set aside.
	first  string
	second bool
	// fair: fair sharing on (Knobs.FairSharing); reclaim is
	// reclaimWithinCohort (Never, LowerPriority or Any).
	fair    bool
	reclaim string

	// The ClusterQueues, cut when a campaign registers: by campaign its
	// queue (-1: the filler, outside the cohort), by queue its nominal
	// quota and members; lendable is the cohort's lendable quota, the sum
	// of the nominal quotas (no lendingLimit: all of it).
	queueOf  []int
	nominal  []int
	members  [][]policy.CampaignID
	lendable int

	// The waiting workloads of each queue (heads.go), and the queues
	// with any, by least (activate): a round asks only those for a
	// candidate, where the full log cuts 158 queues and about ten have
	// workloads, and of those only the ones whose least is in reach.
	queues      []queue
	byLeast     [64][]int
	bucketAt    []int
	bucketsUsed uint64
	open        []int  // the queues a pass asks (openQueues)
	live        []bool // by request id: waiting, and not the filler's
	// The same queues by over (overOf, heads.go), so that a pass asks
	// only those whose share could let them preempt: byOver[b] holds the
	// queues whose over is filed in bucket b (overBucket), overAt[q] is
	// q's place there and overKey[q] the over it was filed with;
	// overUsed[b/64] has bit b%64 set while byOver[b] holds any. keptIdx[q] is
	// what q's members kept at the last refresh (what over reads), and
	// idxHeld the queues for which it is not 0; overStale says the
	// queues were cut since, and every active queue is filed again at the
	// next refresh.
	byOver    [overBuckets][]int
	overAt    []int
	overKey   []int
	overUsed  [overBuckets / 64]uint64
	keptIdx   []int
	idxHeld   []int
	overStale bool
	// overIndexed: the queues are kept by over too (BestEffortFIFO with
	// reclaimWithinCohort Any or LowerPriority, where preemption could
	// reach other queues' leases; openReaching).
	overIndexed bool
	// asked[q] == pass: openReaching put q in open this pass.
	asked []uint64
	pass  uint64
	// preemptors are the waiting workloads that noticed leases, with
	// their queues, until they leave: what inFlight reads of a request
	// with GPUs coming, without looking it up in the Core's pending list
	// (whose positions every grant shifts, so that each lookup rebuilt
	// them). Few at a time, and a fork copies them (where a table by
	// request id would be copied whole into every fair-start fork).
	preemptors []preemptor

	// Admission state, rebuilt each pass: by queue the GPUs its members
	// hold, the GPUs they hold that are not under notice (what the shares
	// read: a lease under notice is on its way out), its cursor into its
	// waiting list and whether it is done for this tick; the GPUs under
	// notice or reserved for each preemptor.
	usage, kept []int
	cursor      []int
	done        []bool
	bonus       []bonus
	bonusSum    int
	fillerKept  int
	// The queues whose members keep GPUs (ascending; a superset after a
	// preemption took some), of which those that borrow, and every GPU
	// preemption could touch, this round.
	holding   []int
	borrowing []int // by GPUs borrowed, most first
	// maxExcess is at least the most GPUs any queue has kept above its
	// nominal quota since the pass began (a notice only lowers what a
	// queue keeps): takable reads no queue for a request at least that
	// far above its own.
	maxExcess int
	keptSum   []int // keptSum[i]: what borrowing[:i] keep
	excess    []int // excess[i]: what borrowing[i] borrows
	touchMax  int
	borrowAt  uint64 // the Core's Changes when they were listed (borrowers)
	heads     []head
	order     []int    // sortHeads' order
	ranks     []uint64 // sortHeads' scratch

	// The leases preemption could take, by queue, each list in victim
	// order (baseline.VictimOrder), as lease indices: those not under
	// notice when the pass began, and those granted in it (a grant adds
	// the newest lease, found its place by binary search); fillerVict the
	// filler's. A queue's list is empty unless it is among holding. Built
	// once a pass, from the lease table in reverse (newest first, so that
	// an insertion sort has little to do), where each attempt gathered
	// and sorted them: a StrictFIFO replay of the full SDSC-SP2 log with
	// fair starts attempts 17.6 M preemptions, 98 % in vain.
	vict       [][]int
	fillerVict []int
	// widest[q] is at least the widest lease of vict[q] (takable).
	widest []int
	vkeys  []uint64 // victimSort's scratch

	// Preemption scratch.
	cands [][]int // by queue: candidate lease indices, victim order first
	withC []int   // the queues with candidates
	next  []int   // by queue: the next candidate
	// fillerCands: the filler's candidate lease indices, victim order.
	fillerCands []int
	// minFail[q] is the fewest GPUs a request of queue q failed to preempt
	// for this tick (0: none failed): a larger one fails too (more need,
	// a higher share with it), until a notice changes the shares.
	minFail   []int
	sim       []int // by queue: kept usage as victims are taken
	targets   []int
	decisions []Decision
	retry     [][]int

	// quiet: the last pass changed nothing (no grant, no notice, no
	// request filed or leaving), with the Core's Changes at quietAt;
	// stirred: a request was filed or left, or the queues were cut, since
	// the last pass began. A pass on what a pass that changed nothing
	// read decides the same, nothing, again: it is skipped. A lease that
	// ends makes the Core tick once more after the pass of its tick
	// (NextChange), and that pass, on the same state, was 43 % of a
	// StrictFIFO replay's passes with fair starts on the full SDSC-SP2 log.
	quiet, stirred bool
	quietAt        uint64
	// skipped counts the passes skipped so (tests).
	skipped int
	// walked counts what a pass read to find its candidates: one per
	// queue asked for one, per waiting workload its walk read, per block
	// bound it read to skip a block and per workload a block bound was
	// worked out from again (policy.Work.Walked, given to the Core as
	// the pass ends; zero between passes). Counted whether or not the
	// Core counts: it decides nothing.
	walked int

	// decide, if set, is told of every victim chosen (tests).
	decide func(Decision)
	// audit, if set, is called at every preemption attempt of queue p's
	// request once its candidates are gathered (tests: the oracle of the
	// victim lists).
	audit func(k *baseline.Core, p int)
	// takableAudit, if set, is told of every bound takable works out
	// for a request of queue p over GPUs above its quota (tests: the
	// oracle of maxExcess).
	takableAudit func(p, over, n int)
	// bound, if set, is told at every preemption attempt that got to
	// search whether takable turned it away (beyond) and whether it
	// succeeded; the search then runs anyway (tests: the bound's oracle).
	bound func(beyond, succeeded bool)
	// plain walks every queue from its start, searches at every
	// preemption attempt and runs every pass (tests: the oracle of the
	// skips in candidate, of the bound in preempt and of quiet).
	plain bool
	// unsettled gives every candidate its turn in the round's order and
	// asks every queue not done (tests: the oracle of doomed and of the
	// queues done unasked); settled counts those settle spared (tests).
	unsettled bool
	settled   int
	// revived counts the candidates doomed when their round found them
	// and not at their own turns, after a change before it (tests).
	revived int

	// deferred are the queues whose asks the pass has put off (Admit:
	// every workload they could offer would be doomed, queueDoomed), each
	// owed[q] asks, one per round since it was put off; caughtUp counts
	// the asks made up for (catchUp) and put off the asks put off (tests).
	// undeferred asks every queue at once (tests: the oracle of the asks
	// put off).
	deferred   []int
	owed       []int
	putOff     int
	caughtUp   int
	undeferred bool

	// unasked are the queues a round has not asked yet (BestEffortFIFO
	// with nothing coming: lazy), each with a bound below any candidate
	// it could offer (bound); roundFree is the free GPUs as the round
	// began, which its asks read. A round asks a queue only once no
	// candidate found yet could go before its bound (askBefore), or at
	// the round's first change (settleUnasked, or askUnasked just before
	// a notice): of a round of the 300k-job log's fair-start forks'
	// some forty candidates, about one takes a turn, and the others were
	// found only to be doomed by its grant. late holds the candidates
	// askUnasked found, for the round to take in. lazied counts the
	// rounds that asked so, asOfAsks and lateAsks the asks made up as of
	// a round's start (catchUp) and just before a notice (tests);
	// lazyFrom, if not 0, is the fewest queues a round asks so (tests:
	// lazyAsks otherwise).
	unasked   []unasked
	roundFree int
	late      []head
	lazied    int
	asOfAsks  int
	lateAsks  int
	lazyFrom  int
	// asOf[q]: deferred queue q's first owed ask is of the round that put
	// it off at its first grant (settleUnasked), made up (catchUp) as of
	// that round's start: its free GPUs and borrowers (asOfFree,
	// asOfExcess, asOfKeptSum, asOfTouchMax; all a candidate reads that
	// a grant to another queue, or a later round, changes).
	asOf         []bool
	asOfFree     int
	asOfExcess   []int
	asOfKeptSum  []int
	asOfTouchMax int
}

// unasked is a queue a round has not asked yet, and a bound below (in
// headCmp's order) any candidate it could offer.
type unasked struct {
	bound head
	queue int
}

// preemptor is a waiting workload that noticed leases, and its queue.
type preemptor struct {
	waiting
	queue int
}

// bonus is what a preemptor has coming: GPUs reserved for it and GPUs of
// leases under notice for it; and, found once a pass (refresh), the
// workload and its queue (ok: it waited then). A candidate's walk reads
// them at every round, where it looked each one up among the preemptors.
type bonus struct {
	id, gpus int
	w        waiting
	queue    int
	ok       bool
}

// Decision is one victim of a fair-sharing preemption, as the rule saw
// it: the shares (GPUs above nominal ÷ lendable quota, weight 1) of the
// preemptor's queue with its request, and of the victim's queue before and
// after losing the lease; Strategy says which rule let it go.
type Decision struct {
	Preemptor, Victim         int
	PreemptorShare            float64
	VictimBefore, VictimAfter float64
	Strategy                  string
}

// The strategies a Decision names.
const (
	Reclaim                     = "reclaimWithinCohort"
	LessThanOrEqualToFinalShare = "LessThanOrEqualToFinalShare"
	LessThanInitialShare        = "LessThanInitialShare"
)

// New returns a cohort-quota allocator.
func New(cfg policy.Config, knobs Knobs) (*baseline.Core, error) {
	if err := knobs.Validate(); err != nil {
		return nil, err
	}
	strategies := knobs.PreemptionStrategies
	if strategies == nil {
		strategies = ValidPreemptionStrategies[0]
	}
	strict := knobs.QueueingStrategy == StrictFIFO
	return baseline.New(cfg, &Rule{knobs: knobs, strict: strict,
		first: strategies[0], second: len(strategies) > 1, fair: knobs.FairSharing, reclaim: knobs.reclaim(),
		overIndexed: !strict && knobs.reclaim() != Never})
}

// Name is the policy's name.
func (*Rule) Name() string { return Name }

// Registered cuts the queues again: every registration changes the shares
// (baseline.Registrar).
func (r *Rule) Registered(k *baseline.Core, _ policy.CampaignID) {
	r.stirred = true
	r.cut(k)
}

// cut computes one ClusterQueue per group with nominal quota = its
// entitlement × pool by the largest remainder (docs/studies.md §6.10,
// §6.15), so that the cohort is the whole pool.
func (r *Rule) cut(k *baseline.Core) {
	n := k.NumCampaigns()
	groups := k.Groups()
	shares := make([]float64, len(groups))
	r.members = r.members[:0]
	r.queueOf = slices.Grow(r.queueOf[:0], n)[:n]
	for c := range n {
		r.queueOf[c] = -1
	}
	for g := range groups {
		shares[g] = groups[g].Share
		r.members = append(r.members, groups[g].Members)
		for _, c := range groups[g].Members {
			r.queueOf[c] = g
		}
	}
	r.nominal = baseline.LargestRemainder(shares, k.Config().Pool)
	r.lendable = 0
	for _, q := range r.nominal {
		r.lendable += q
	}
	nq := len(groups)
	for len(r.queues) < nq {
		r.queues = append(r.queues, queue{})
	}
	r.usage, r.kept = baseline.Ints(r.usage, nq), baseline.Ints(r.kept, nq)
	r.cursor, r.done = baseline.Ints(r.cursor, nq), baseline.Flags(r.done, nq)
	r.sim, r.next = baseline.Ints(r.sim, nq), baseline.Ints(r.next, nq)
	r.minFail = baseline.Ints(r.minFail, nq)
	r.owed, r.deferred = baseline.Ints(r.owed, nq), r.deferred[:0]
	r.asOf = baseline.Flags(r.asOf, nq)
	r.open = r.open[:0] // the next pass has nothing to clear (Admit)
	r.keptIdx, r.overStale = baseline.Ints(r.keptIdx, nq), true
	r.widest = baseline.Ints(r.widest, nq)
	for len(r.cands) < nq {
		r.cands = append(r.cands, nil)
		r.retry = append(r.retry, nil)
		r.vict = append(r.vict, nil)
	}
}

// Queue is campaign c's ClusterQueue (-1: the filler's, none) and its
// nominal quota.
func (r *Rule) Queue(c policy.CampaignID) (q, nominal int) {
	q = r.queueOf[c]
	if q < 0 {
		return -1, 0
	}
	return q, r.nominal[q]
}

// Nominal are the queues' nominal quotas, in group order. Read only.
func (r *Rule) Nominal() []int { return r.nominal }

// limitOf is the most GPUs queue q may hold: its nominal quota plus the
// borrowing limit, within the pool.
func (r *Rule) limitOf(k *baseline.Core, q int) int {
	pool := k.Config().Pool
	if r.knobs.BorrowingLimit < 0 {
		return pool
	}
	return min(pool, r.nominal[q]+r.knobs.BorrowingLimit)
}

// Limit is campaign c's queue's nominal quota plus the borrowing limit;
// the pool for the filler.
func (r *Rule) Limit(k *baseline.Core, c policy.CampaignID) int {
	if q := r.queueOf[c]; q >= 0 {
		return r.limitOf(k, q)
	}
	return k.Config().Pool
}

// held is what queue q's members hold.
func (r *Rule) held(k *baseline.Core, q int) int {
	n := 0
	for _, c := range r.members[q] {
		n += k.Held(c, policy.AnyClass)
	}
	return n
}

// Room is the free GPUs within the campaign's queue's limit.
func (r *Rule) Room(k *baseline.Core, c policy.CampaignID) int {
	free := max(0, k.FreeGeneral())
	q := r.queueOf[c]
	if q < 0 {
		return free
	}
	return max(0, min(free, r.limitOf(k, q)-r.held(k, q)))
}

// share is queue q's fair-sharing share when its members keep kept GPUs:
// the GPUs above its nominal quota ÷ the cohort's lendable quota ÷ its
// weight (1); 0 within its quota (Kueue's dominant resource share with
// one resource, pkg/cache/scheduler/fair_sharing.go).
func (r *Rule) share(q, kept int) float64 {
	if r.lendable <= 0 {
		return 0
	}
	return float64(max(0, kept-r.nominal[q])) / float64(r.lendable)
}

// refresh rebuilds the admission state from the lease table and the
// pending list.
func (r *Rule) refresh(k *baseline.Core) {
	for _, q := range r.holding {
		r.vict[q], r.widest[q] = r.vict[q][:0], 0
	}
	clear(r.usage)
	clear(r.kept)
	r.holding = r.holding[:0]
	r.fillerKept = 0
	r.bonus, r.bonusSum = r.bonus[:0], 0
	leases := k.Leases()
	for j := range leases {
		l := &leases[j]
		q := r.queueOf[l.Campaign]
		if l.UnderNotice {
			if l.ReservedFor >= 0 {
				r.addBonus(l.ReservedFor, l.GPUs)
			}
		} else if q < 0 {
			r.fillerKept += l.GPUs
		} else {
			if r.kept[q] == 0 && l.GPUs > 0 {
				r.holding = append(r.holding, q) // sorted below
			}
			r.kept[q] += l.GPUs
		}
		if q >= 0 {
			r.usage[q] += l.GPUs
		}
	}
	// In queue order, as keep files them: sorted once here, where keep's
	// search and insertion for each lease's queue were a third of this.
	slices.Sort(r.holding)
	r.maxExcess = 0
	for _, q := range r.holding {
		r.maxExcess = max(r.maxExcess, r.kept[q]-r.nominal[q])
	}
	r.fillerVict = r.fillerVict[:0]
	for j := len(leases) - 1; j >= 0; j-- {
		if l := &leases[j]; !l.UnderNotice {
			if q := r.queueOf[l.Campaign]; q < 0 {
				r.fillerVict = append(r.fillerVict, j)
			} else {
				r.vict[q] = append(r.vict[q], j)
				r.widest[q] = max(r.widest[q], l.GPUs)
			}
		}
	}
	r.vkeys = victimSort(r.fillerVict, leases, r.vkeys)
	for _, q := range r.holding {
		r.vkeys = victimSort(r.vict[q], leases, r.vkeys)
	}
	r.indexKept(k)
	if k.Config().Pool-k.Leased()-k.FreeGeneral() > 0 { // some GPUs are reserved
		// Only a preemptor holds a reservation: the GPUs of the leases
		// noticed for it (Core.NoticeFor, which only preempt calls), kept
		// among the preemptors until it leaves. So the few preemptors are
		// looked up, not the Core's pending list read whole (thousands of
		// requests on a full log, at every pass).
		for x := range r.preemptors {
			f := &r.preemptors[x]
			if i := k.IndexSubmitted(f.id, f.submitted); i >= 0 {
				if g := k.Pend(i).Reserved; g > 0 {
					r.addBonus(f.id, g)
				}
			}
		}
	}
	for x := range r.bonus {
		b := &r.bonus[x]
		b.w, b.queue, b.ok = r.waitingOf(k, b.id)
	}
	// By queue (those not waiting last), then id: a queue's with GPUs
	// coming are then one run, found by binary search (inFlight).
	// Nothing else reads their order.
	slices.SortFunc(r.bonus, func(a, b bonus) int {
		switch {
		case a.ok != b.ok:
			if a.ok {
				return -1
			}
			return 1
		case a.ok && a.queue != b.queue:
			return cmp.Compare(a.queue, b.queue)
		}
		return cmp.Compare(a.id, b.id)
	})
}

// victimSort sorts lease indices into victim order (baseline.VictimOrder)
// by insertion: the lease table is in grant order, so that read from its
// end the leases are newest first and out of order only across classes
// and within a tick. Where they fit (a grant tick below 2³², an id below
// 2²⁴, a class a byte), the order's fields are packed once per lease into
// a key whose descending order is victim order (the higher class, the
// later grant, the larger id first), so that a comparison reads two
// numbers side by side instead of two leases; keys is the scratch for
// them, returned grown.
func victimSort(list []int, leases []baseline.Lease, keys []uint64) []uint64 {
	keys = keys[:0]
	for _, j := range list {
		l := &leases[j]
		if uint(l.Granted) >= 1<<32 || uint(l.ID) >= 1<<24 {
			keys = nil
			break
		}
		keys = append(keys, uint64(l.Class)<<56|uint64(l.Granted)<<24|uint64(l.ID))
	}
	if keys == nil {
		for i := 1; i < len(list); i++ {
			for x := i; x > 0 && baseline.VictimOrder(&leases[list[x]], &leases[list[x-1]]) < 0; x-- {
				list[x], list[x-1] = list[x-1], list[x]
			}
		}
		return keys
	}
	for i := 1; i < len(list); i++ {
		for x := i; x > 0 && keys[x] > keys[x-1]; x-- {
			list[x], list[x-1] = list[x-1], list[x]
			keys[x], keys[x-1] = keys[x-1], keys[x]
		}
	}
	return keys
}

// granted files the lease just granted, the table's last, among queue q's
// victims in victim order.
func (r *Rule) granted(leases []baseline.Lease, q int) {
	j := len(leases) - 1
	at, _ := slices.BinarySearchFunc(r.vict[q], j, func(e, t int) int { return baseline.VictimOrder(&leases[e], &leases[t]) })
	r.vict[q] = slices.Insert(r.vict[q], at, j)
	r.widest[q] = max(r.widest[q], leases[j].GPUs)
}

// keep adds gpus to what queue q's members keep, and q to the holding
// queues if it is not among them (it may be with none kept, after a
// preemption took them).
func (r *Rule) keep(q, gpus int) {
	if r.kept[q] == 0 && gpus > 0 {
		if at, found := slices.BinarySearch(r.holding, q); !found {
			r.holding = slices.Insert(r.holding, at, q)
		}
	}
	r.kept[q] += gpus
	r.maxExcess = max(r.maxExcess, r.kept[q]-r.nominal[q])
}

func (r *Rule) addBonus(id, gpus int) {
	r.bonusSum += gpus
	for x := range r.bonus {
		if r.bonus[x].id == id {
			r.bonus[x].gpus += gpus
			return
		}
	}
	r.bonus = append(r.bonus, bonus{id: id, gpus: gpus})
}

func (r *Rule) bonusOf(id int) int {
	for _, b := range r.bonus {
		if b.id == id {
			return b.gpus
		}
	}
	return 0
}

// Admit runs admission rounds (docs/studies.md §6.10). In each round every
// queue not done offers one candidate, its first waiting workload (by
// class, then submit time) not set aside this tick that could start, now
// or by preemption; the candidates go lowest fair-sharing share first
// (counting the request), then class, then submit time, then id. A
// candidate that fits starts; one that does not may preempt, and then
// waits for the GPUs with its queue done for the tick; one that can do
// neither is set aside (BestEffortFIFO: the queue's next workload is its
// next candidate) or blocks its queue (StrictFIFO). Rounds repeat until
// no queue has a candidate, as Kueue's scheduler runs cycle after cycle.
func (r *Rule) Admit(k *baseline.Core) {
	at := k.Changes()
	if r.quiet && !r.stirred && at == r.quietAt && !r.plain {
		r.skipped++
		return // as the last pass: nothing it reads has changed
	}
	r.stirred = false
	r.refresh(k)
	// A pass writes cursors, done marks and failures only of the queues
	// it asks (r.open, which no pass since has changed; a workload that
	// leaves keeps a zero cursor zero): theirs are cleared, where
	// clearing every queue's was 2 % of a replay of the 300k-job log
	// with fair starts, whose passes ask some fifty of 158 queues.
	for _, q := range r.open {
		r.cursor[q], r.done[q], r.minFail[q] = 0, false, 0
	}
	for _, q := range r.deferred {
		r.owed[q], r.asOf[q] = 0, false
	}
	r.deferred = r.deferred[:0]
	// settle: a queue whose failed preemption leaves it nothing narrower
	// is done unasked, and a doomed candidate is set aside at its turn
	// without looking its request up (the tests' hooks and plain see
	// every attempt).
	settle := !r.plain && !r.unsettled && r.bound == nil && r.audit == nil
	// lazy: the round asks a queue only when its candidate could go
	// before every one found (askBefore). With GPUs coming to some
	// workload (bonusSum), or under StrictFIFO, every queue is asked at
	// once; Undeferred asks every queue at once (the twin tests' oracle).
	lazy := settle && !r.strict && r.bonusSum == 0 && !r.undeferred
	for round := 0; ; round++ {
		heads := r.heads[:0]
		alive := 0 // the candidates not doomed when found (settle)
		if round == 0 || k.Changes() != r.borrowAt {
			r.borrowers()
			r.borrowAt = k.Changes()
		}
		if round == 0 {
			r.openQueues(k)
		}
		r.roundFree = max(0, k.FreeGeneral())
		for _, q := range r.open {
			if r.done[q] {
				continue
			}
			if r.owed[q] > 0 {
				r.owed[q]++ // put off still: nothing has changed
				r.putOff++
				continue
			}
			if settle && r.bonusSum == 0 && r.minFail[q] > 0 && r.minFail[q] <= r.queues[q].least {
				// A preemption for as few GPUs as any of its workloads
				// could start with failed this tick: candidate would look
				// below that width (hi < least), find none and turn the
				// queue away, after its setup (with fair starts, later
				// rounds turned 36 M of the 300k-job log's 78 M asks
				// away unwalked).
				r.walked++ // the search itself, as candidate counts it
				r.done[q] = true
				r.settled++
				continue
			}
			if settle && r.bonusSum == 0 && !r.undeferred && r.queueDoomed(k, q) {
				// Its candidate would be doomed, and so every one after
				// it until a change: its turns would touch only its own
				// queue. The ask is put off until a turn that could
				// change something (catchUp), which in most passes never
				// comes: the 300k-job log's fair-start forks' passes put
				// off some 15 M of their 34.5 M asks so, and make up
				// 0.2 M; its replay puts off 3.5 M of 8.0 M and makes up
				// 1.7 M.
				r.owed[q] = 1
				r.deferred = append(r.deferred, q)
				r.putOff++
				continue
			}
			if lazy {
				r.unasked = append(r.unasked, unasked{queue: q})
				continue
			}
			heads, alive = r.ask(k, q, heads, alive, settle)
		}
		if fewest := cmp.Or(r.lazyFrom, lazyAsks); len(r.unasked) < fewest {
			// Too few to order: asked at once.
			for _, u := range r.unasked {
				heads, alive = r.ask(k, u.queue, heads, alive, settle)
			}
			r.unasked = r.unasked[:0]
		} else {
			r.lazied++
			for x := range r.unasked {
				r.unasked[x].bound = r.boundOf(r.unasked[x].queue)
			}
		}
		r.heads = heads
		if len(heads) == 0 && len(r.unasked) == 0 {
			// quietAt is the count as the pass began, so a pass that
			// granted or noticed (each a change the count holds) can never
			// be taken for quiet by the next, whose count is then higher:
			// the test of the count here only says so again, and no test
			// fails without it (TestQuietPassesChangeNothing fails without
			// the one at the top).
			r.quiet, r.quietAt = !r.stirred && k.Changes() == at, at
			k.CountWalked(r.walked)
			r.walked = 0
			return
		}
		if settle && alive == 0 && len(r.unasked) == 0 {
			// Every candidate is doomed, and so at its turn: no turn
			// before it changes anything (a doomed candidate's touches
			// only its own queue). Their order is then nothing to the
			// round, and they are not sorted: a round of the 300k-job
			// log's fair-start forks offers some forty-five candidates,
			// in nearly half of them all doomed, and sorting them was a
			// tenth of that replay.
			for x := range heads {
				r.setAside(k, &heads[x])
			}
			continue
		}
		if settle {
			heads = r.turnsInOrder(k, heads)
			r.heads = heads
			continue
		}
		for _, x := range r.sortHeads(heads) {
			r.turn(k, &heads[x])
		}
	}
}

// lazyAsks is the fewest queues a round asks lazily (askBefore): an
// order of fewer costs more than the asks it spares. A round of the full
// SDSC-SP2 log's passes asks two or three queues, one of the 300k-job
// log's fair-start forks some forty.
const lazyAsks = 8

// ask adds queue q's candidate, if any, to the round's heads, counting
// it in alive if it is not doomed (settle).
func (r *Rule) ask(k *baseline.Core, q int, heads []head, alive int, settle bool) ([]head, int) {
	heads = append(heads, head{})
	h := &heads[len(heads)-1]
	switch {
	case !r.candidate(k, q, h):
		heads = heads[:len(heads)-1]
	case settle:
		if h.doomed = r.doomed(k, h); !h.doomed {
			alive++
		}
	}
	return heads, alive
}

// turnsInOrder gives the round's candidates their turns in their order
// (headCmp) without sorting them. A doomed candidate's turn only sets it
// aside, touching only its own queue, and what doomed reads changes only
// with a change of the Core's (a grant or a notice), which only a turn
// of a candidate not doomed can make: so the first candidate not doomed
// (found by one pass over those left) takes its turn after those doomed
// that go before it are set aside, in any order, and the doomed that go
// after it wait; after a change every candidate left is looked at again
// (as at its own turn: nothing changes before it), and so on. When none
// is left that is not doomed, the rest are set aside. A round of the
// 300k-job log's fair-start forks offers some thirty candidates of which
// about one takes a turn, and sorting them was 6 % of that replay.
func (r *Rule) turnsInOrder(k *baseline.Core, heads []head) []head {
	rest := r.order[:0]
	for x := range heads {
		heads[x].dead = heads[x].doomed
		rest = append(rest, x)
	}
	seen := k.Changes()
	for {
		if c := k.Changes(); c != seen {
			// What the round found of each (doomed) held until now: a
			// grant or a notice may change what doomed reads (a grant may
			// raise what preemption could take, takable).
			seen = c
			for _, x := range rest {
				heads[x].dead = r.doomed(k, &heads[x])
			}
			if len(r.unasked) > 0 {
				heads, rest = r.settleUnasked(k, heads, rest)
			}
		}
		m := -1
		for _, x := range rest {
			if !heads[x].dead && (m < 0 || headCmp(heads[x], heads[m]) < 0) {
				m = x
			}
		}
		if len(r.unasked) > 0 {
			heads, rest, m = r.askBefore(k, heads, rest, m)
		}
		if m < 0 {
			break
		}
		w := 0
		for _, x := range rest {
			switch {
			case x == m:
			case heads[x].dead && headCmp(heads[x], heads[m]) < 0:
				r.setAside(k, &heads[x])
			default:
				rest[w] = x
				w++
			}
		}
		rest = rest[:w]
		if len(r.deferred) > 0 {
			heads, rest = r.catchUp(k, heads, rest, m)
		}
		if heads[m].doomed {
			r.revived++
		}
		r.turn(k, &heads[m])
		for _, h := range r.late {
			heads = append(heads, h)
			rest = append(rest, len(heads)-1)
		}
		r.late = r.late[:0]
	}
	for _, x := range rest {
		r.setAside(k, &heads[x])
	}
	r.order = rest
	return heads
}

// boundOf is a bound below (in headCmp's order) any candidate queue q
// could offer this round: its key with a workload as narrow as its
// least (the key grows with the width), and the order within the queue
// of the workload at its cursor (every candidate is at the cursor or
// after it; a workload that left keeps its place, and its fields).
// Where the cursor is past the end there is none, and the bound is the
// lowest, so that the queue is asked at once.
func (r *Rule) boundOf(q int) head {
	qu := &r.queues[q]
	c := r.cursor[q]
	if c >= len(qu.list) {
		return head{key: math.MinInt}
	}
	e := &qu.list[c]
	return head{key: r.keyOf(q, r.kept[q]+qu.least), class: e.class, submitted: e.submitted, id: e.id}
}

// askBefore asks the round's unasked queues whose candidates could go
// before heads[m] (m < 0: none found not doomed); the candidates found
// join the round's (rest), and m is the first of them not doomed if it
// goes before. Nothing has changed since the round began
// (settleUnasked asks or puts off every queue left at the first
// change), so an ask now finds what it would have found then. While no
// candidate is found not doomed, the queue of least bound is asked (a
// few times, then every queue left); once one is, one pass asks those
// whose bounds go before it, which it only lowers. The order of the
// asks is nothing to the round (each touches only its own queue), only
// to how many are made.
func (r *Rule) askBefore(k *baseline.Core, heads []head, rest []int, m int) ([]head, []int, int) {
	for tries := 0; m < 0 && len(r.unasked) > 0; {
		b := len(r.unasked) - 1 // after a few tries, any: all are asked
		if tries < 4 {
			tries++
			for x := range b {
				if before(&r.unasked[x].bound, &r.unasked[b].bound) {
					b = x
				}
			}
		}
		q := r.unasked[b].queue
		r.unasked[b] = r.unasked[len(r.unasked)-1]
		r.unasked = r.unasked[:len(r.unasked)-1]
		heads, rest, m = r.askLate(k, q, heads, rest, m)
	}
	w := 0
	for _, u := range r.unasked {
		if m < 0 || before(&u.bound, &heads[m]) {
			heads, rest, m = r.askLate(k, u.queue, heads, rest, m)
		} else {
			r.unasked[w] = u
			w++
		}
	}
	r.unasked = r.unasked[:w]
	return heads, rest, m
}

// askLate adds queue q's candidate, if any, to the round's (rest), and
// makes it m if it is not doomed and goes before heads[m].
func (r *Rule) askLate(k *baseline.Core, q int, heads []head, rest []int, m int) ([]head, []int, int) {
	var h head
	if !r.candidate(k, q, &h) {
		return heads, rest, m
	}
	h.doomed = r.doomed(k, &h)
	h.dead = h.doomed
	heads = append(heads, h)
	rest = append(rest, len(heads)-1)
	if !h.dead && (m < 0 || before(&h, &heads[m])) {
		m = len(heads) - 1
	}
	return heads, rest, m
}

// before reports whether x goes before y (headCmp).
func before(x, y *head) bool {
	switch {
	case x.key != y.key:
		return x.key < y.key
	case x.class != y.class:
		return x.class < y.class
	case x.submitted != y.submitted:
		return x.submitted < y.submitted
	}
	return x.id < y.id
}

// settleUnasked settles the round's unasked queues at its first change,
// a grant (a notice asks them first: askUnasked): each queue every
// candidate of which is doomed now (queueDoomed) is put off, its ask as
// of the round's start owed (asOf: catchUp makes it up so); every other
// is asked now as it would have been then, with the round's free GPUs,
// and its candidate joins the round's (rest). A grant changes nothing
// else a candidate of another queue reads (its cursor and failures, its
// kept GPUs and usage, the filler's, the round's borrowers). What the
// round found of such a candidate (doomed) is what it finds now.
func (r *Rule) settleUnasked(k *baseline.Core, heads []head, rest []int) ([]head, []int) {
	snap := false
	for _, u := range r.unasked {
		q := u.queue
		if r.queueDoomed(k, q) {
			if !snap {
				snap = true
				r.asOfFree, r.asOfTouchMax = r.roundFree, r.touchMax
				r.asOfExcess = append(r.asOfExcess[:0], r.excess...)
				r.asOfKeptSum = append(r.asOfKeptSum[:0], r.keptSum...)
			}
			r.owed[q], r.asOf[q] = 1, true
			r.deferred = append(r.deferred, q)
			r.putOff++
			continue
		}
		var h head
		if !r.candidateAt(k, q, r.roundFree, &h) {
			continue
		}
		h.doomed = r.doomed(k, &h)
		h.dead = h.doomed
		heads = append(heads, h)
		rest = append(rest, len(heads)-1)
	}
	r.unasked = r.unasked[:0]
	return heads, rest
}

// askUnasked asks the round's unasked queues just before a notice, the
// round's first change: as at the round's start, nothing has changed.
// The candidates found wait in late for the round (turnsInOrder) to
// take them in.
func (r *Rule) askUnasked(k *baseline.Core) {
	for _, u := range r.unasked {
		var h head
		r.lateAsks++
		if r.candidate(k, u.queue, &h) {
			h.doomed = r.doomed(k, &h)
			h.dead = h.doomed
			r.late = append(r.late, h)
		}
	}
	r.unasked = r.unasked[:0]
}

// asOfRound asks queue q as the round that put it off did at its start
// (asOf): with its free GPUs and borrowers.
func (r *Rule) asOfRound(k *baseline.Core, q int, h *head) bool {
	r.excess, r.asOfExcess = r.asOfExcess, r.excess
	r.keptSum, r.asOfKeptSum = r.asOfKeptSum, r.keptSum
	r.touchMax, r.asOfTouchMax = r.asOfTouchMax, r.touchMax
	ok := r.candidateAt(k, q, r.asOfFree, h)
	r.excess, r.asOfExcess = r.asOfExcess, r.excess
	r.keptSum, r.asOfKeptSum = r.asOfKeptSum, r.keptSum
	r.touchMax, r.asOfTouchMax = r.asOfTouchMax, r.touchMax
	return ok
}

// queueDoomed reports whether every candidate queue q could offer now
// would be doomed (see doomed), with no GPUs coming to any workload
// (bonusSum 0). So it is when its least is at least 2 (every workload
// it holds is then a rigid job at least that wide: an elastic request's
// least is 1), wider than the free GPUs, its limit the pool, and least
// − free > takable(q, least): w − takable(q, w) does not fall as w
// grows (takable does not grow: q's over grows with w), so a workload
// of any width w ≥ least needs more than takable(q, w) beyond the free
// GPUs. (Its room is no matter: candidate offers only workloads within
// it.)
func (r *Rule) queueDoomed(k *baseline.Core, q int) bool {
	least := r.queues[q].least
	free := max(0, k.FreeGeneral())
	if least < 2 || least <= free || r.limitOf(k, q) < k.Config().Pool {
		return false
	}
	return least-free > r.takable(q, least)
}

// catchUp makes the asks the pass put off (deferred) just before
// heads[cur]'s turn, the first since they were put off that may change
// something (a candidate not doomed): until it, nothing any ask or turn
// reads has changed but the queues' own cursors and failures, so each
// deferred queue is asked now as it would have been in each round since
// it was put off (the same reads, the same answers). The candidates of
// the rounds before this one were doomed at their turns (nothing had
// changed), and so are those of this round that go before heads[cur]
// (set aside now); the rest join the round's candidates left (rest), to
// be looked at again after heads[cur]'s turn as the others are. It
// returns heads and rest with them.
func (r *Rule) catchUp(k *baseline.Core, heads []head, rest []int, cur int) ([]head, []int) {
	c := heads[cur]
	for _, q := range r.deferred {
		owed, asOf := r.owed[q], r.asOf[q]
		r.owed[q], r.asOf[q] = 0, false
		for round := 1; round <= owed && !r.done[q]; round++ {
			r.caughtUp++
			if r.minFail[q] > 0 && r.minFail[q] <= r.queues[q].least {
				r.walked++
				r.done[q] = true
				r.settled++
				break
			}
			var h head
			ok := false
			if round == 1 && asOf {
				r.asOfAsks++
				ok = r.asOfRound(k, q, &h)
			} else {
				ok = r.candidate(k, q, &h)
			}
			if !ok {
				break
			}
			if h.doomed = r.doomed(k, &h); !h.doomed {
				panic(fmt.Sprintf("quota: queue %d, put off as doomed, offers request %d, which is not", q, h.id))
			}
			if round < owed || headCmp(h, c) < 0 {
				r.setAside(k, &h)
				continue
			}
			h.dead = true
			heads = append(heads, h)
			rest = append(rest, len(heads)-1)
		}
	}
	r.deferred = r.deferred[:0]
	return heads, rest
}

// turn is candidate h's turn: it starts if it fits, else may preempt,
// else is set aside (BestEffortFIFO) or blocks its queue (StrictFIFO).
func (r *Rule) turn(k *baseline.Core, h *head) {
	i := k.IndexSubmitted(h.id, h.submitted)
	req := k.Pend(i)
	reserved := req.Reserved
	if k.TryStart(i, r.roomBeyondReservation(k, h.queue, reserved)) {
		leases := k.Leases()
		g := leases[len(leases)-1].GPUs
		r.usage[h.queue] += g
		r.keep(h.queue, g)
		r.granted(leases, h.queue)
		return
	}
	switch {
	case r.preempt(k, i, h.queue):
		r.done[h.queue] = true // it waits for the GPUs it freed
	case r.strict:
		r.done[h.queue] = true
	default:
		r.cursor[h.queue]++ // set aside for this tick
	}
}

// setAside is doomed candidate h's turn: its turn would read its request
// twice (Want, in TryStart and in preempt), start nothing and preempt
// nothing: only its own queue hears of it.
func (r *Rule) setAside(k *baseline.Core, h *head) {
	k.CountWalked(2)
	r.failed(h.queue, h.want)
	if r.strict {
		r.done[h.queue] = true
	} else {
		r.cursor[h.queue]++
	}
	r.settled++
}

// borrowers lists the holding queues that borrow, by GPUs borrowed
// (excess), most first, ties in queue order, with the prefix sums of
// what they keep (keptSum) and touchMax. What it reads (kept, the
// filler's) changes only with a grant or a notice, each a change of the
// Core's (Changes): Admit lists them again only in a round after one.
// They are few (some seven on the 300k-job log), and a stable sort by
// insertion with the excess at hand costs a fraction of a sort through a
// comparison function, which was 7 % of that log's replay.
func (r *Rule) borrowers() {
	r.borrowing, r.excess, r.touchMax = r.borrowing[:0], r.excess[:0], r.fillerKept
	for _, q := range r.holding {
		ex := r.kept[q] - r.nominal[q]
		if ex <= 0 {
			continue
		}
		if r.reclaim != Never {
			r.touchMax += r.kept[q]
		}
		r.borrowing, r.excess = append(r.borrowing, q), append(r.excess, ex)
		x := len(r.excess) - 1
		for ; x > 0 && r.excess[x-1] < ex; x-- {
			r.borrowing[x], r.excess[x] = r.borrowing[x-1], r.excess[x-1]
		}
		r.borrowing[x], r.excess[x] = q, ex
	}
	r.keptSum = append(r.keptSum[:0], 0)
	for _, v := range r.borrowing {
		r.keptSum = append(r.keptSum, r.keptSum[len(r.keptSum)-1]+r.kept[v])
	}
}

// sortHeads is the round's candidates' order, as indices into heads:
// lowest share (with the request) first, then class, then submit time,
// then id (headCmp). Where they fit in 64 bits (the key's bits, the
// class's, the submit time's and an index's; the key and submit time
// are never negative), the fields are packed high to low above the
// candidate's index, the numbers sorted as numbers and the few runs of
// equal fields (the same share, class and submit second) sorted by id.
// The field widths are the round's own: on 93,056 processors the keys
// pass 2¹⁵ GPUs, and the submit times of a long log 2²⁶ seconds. A
// round of the 300k-job log's fair-start forks holds some fifty
// candidates, and sorting them as structs through a comparison function
// was a sixth of that replay. Plain sorts by headCmp.
func (r *Rule) sortHeads(heads []head) []int {
	var keys, classes, subs uint
	for x := range heads {
		h := &heads[x]
		keys, classes, subs = keys|uint(h.key), classes|uint(h.class), subs|uint(h.submitted)
	}
	kb, cb, sb, ib := bits.Len(keys), bits.Len(classes), bits.Len(subs), bits.Len(uint(len(heads)-1))
	order := r.order[:0]
	if r.plain || int(keys) < 0 || int(subs) < 0 || kb+cb+sb+ib > 64 {
		slices.SortFunc(heads, headCmp)
		for x := range heads {
			order = append(order, x)
		}
		r.order = order
		return order
	}
	ranks := r.ranks[:0]
	for x := range heads {
		h := &heads[x]
		ranks = append(ranks, (uint64(h.key)<<(cb+sb)|uint64(h.class)<<sb|uint64(h.submitted))<<ib|uint64(x))
	}
	slices.Sort(ranks)
	mask := uint64(1)<<ib - 1
	for x := 0; x < len(ranks); {
		// ranks[x:y]: the same fields; ids differ, and break the tie.
		y := x + 1
		for y < len(ranks) && ranks[y]>>ib == ranks[x]>>ib {
			y++
		}
		for z := x + 1; z < y; z++ {
			for w := z; w > x && heads[ranks[w]&mask].id < heads[ranks[w-1]&mask].id; w-- {
				ranks[w], ranks[w-1] = ranks[w-1], ranks[w]
			}
		}
		x = y
	}
	for _, v := range ranks {
		order = append(order, int(v&mask))
	}
	r.ranks, r.order = ranks, order
	return order
}

// doomed reports whether candidate h, at its turn, would start nothing
// and preempt nothing (TryStart and preempt both false, preempt's
// failure noted by failed) without a preemption search. So it is when h
// is a rigid job with nothing coming (no bonus, and so no reservation,
// which only a preemptor holds), its queue's limit the pool (Want is
// then its width and journals nothing), wider than the free GPUs, and
// needing more than takable. Most candidates on a large machine are (a
// round of the 300k-job log's fair-start forks offers some fifty, of
// which a few start), and each one's look-up in the Core's pending list,
// TryStart and preempt's setup were a sixth of that replay.
func (r *Rule) doomed(k *baseline.Core, h *head) bool {
	if !h.rigid || r.bonusSum > 0 && r.bonusOf(h.id) > 0 {
		return false
	}
	limit := r.limitOf(k, h.queue)
	if limit < k.Config().Pool {
		return false
	}
	free := max(0, k.FreeGeneral())
	if h.want <= free || r.usage[h.queue]+h.want > limit {
		// It may start; or preempt turns it away before its bound,
		// which candidate's room rules out for its own heads.
		return false
	}
	return h.want-free > r.takable(h.queue, h.want)
}

// openQueues are the queues the pass's first round asks for a candidate,
// in r.open: those with waiting workloads whose least is within the free
// GPUs, those preemption could touch and those on their way (the bound
// by which candidate turns a queue away unasked). The buckets whose
// leasts are all within it are taken whole, the one that straddles it
// read queue by queue (counted; those it holds within reach are read by
// candidate, as asked), and those beyond not read. Every other queue
// would be turned away, and is done for the pass; the later rounds ask
// again only the queues in r.open not done. Plain asks every queue with
// waiting workloads, and so does StrictFIFO while GPUs are on their way
// (a preemptor in flight goes first, whatever its queue's least). The
// order of the asks is nothing to the pass: each touches only its own
// queue, and the candidates are then sorted in a total order. Under
// BestEffortFIFO (not plain) openReaching asks fewer, by a bound that
// follows each queue's share.
func (r *Rule) openQueues(k *baseline.Core) {
	if !r.plain && !r.strict {
		r.openReaching(k)
		return
	}
	open := r.open[:0]
	all := r.plain || r.strict && r.bonusSum > 0
	reach := max(0, k.FreeGeneral()) + r.touchMax + r.bonusSum
	top := bucketOf(reach)
	r.walked++ // bucketsUsed
	for m := r.bucketsUsed; m != 0; m &= m - 1 {
		b := bits.TrailingZeros64(m)
		if !all && b > top {
			break
		}
		if all || b < top {
			open = append(open, r.byLeast[b]...)
			continue
		}
		for _, q := range r.byLeast[b] {
			if r.queues[q].least <= reach {
				open = append(open, q)
			} else {
				r.walked++ // read, and turned away
			}
		}
	}
	r.open = open
}

// openReaching is openQueues under BestEffortFIFO: the queues the pass's
// first round asks are those that candidate would not turn away unread.
// A queue none of whose workloads has GPUs on their way to it is turned
// away when its least is beyond its reach, that is (the room aside)
// when least > free + touchable(q, least), the filler's GPUs and those
// of the borrowers whose excess is at least the queue's over; and with
// GPUs on their way to other queues' workloads its walk passes over
// every workload wider than the free GPUs and its reach (candidate's
// beyond), none narrower than least, as surely. So it asks the queues
// whose least is within the free GPUs and the filler's (by least), those
// whose over is at most the largest borrower's excess (by over: their
// reach may take in borrowers' GPUs) and those with GPUs on their way
// (bonus); every other queue would be turned away, its least past free
// + touchable = free + the filler's. minFail is clear in the first
// round, so the reach is bounded by the room alone. The buckets within
// the bounds are taken whole, the one that straddles each read queue by
// queue (counted), as is a queue asked already.
func (r *Rule) openReaching(k *baseline.Core) {
	r.pass++
	for len(r.asked) < len(r.queues) {
		r.asked = append(r.asked, 0)
	}
	open := r.open[:0]
	ask := func(q int) {
		r.asked[q] = r.pass
		open = append(open, q)
	}
	reach := max(0, k.FreeGeneral()) + r.fillerKept
	top := bucketOf(reach)
	r.walked++ // bucketsUsed
	for m := r.bucketsUsed; m != 0; m &= m - 1 {
		b := bits.TrailingZeros64(m)
		if b > top {
			break
		}
		for _, q := range r.byLeast[b] {
			if b < top || r.queues[q].least <= reach {
				ask(q)
			} else {
				r.walked++ // read, and turned away
			}
		}
	}
	if r.overIndexed && len(r.excess) > 0 {
		most := r.excess[0] // the borrowers by excess, most first
		top := overBucket(most)
		for w := 0; w <= top/64; w++ {
			r.walked++ // overUsed[w]
			for m := r.overUsed[w]; m != 0; m &= m - 1 {
				b := w*64 + bits.TrailingZeros64(m)
				if b > top {
					break
				}
				for _, q := range r.byOver[b] {
					if r.asked[q] != r.pass && (b < top || r.overKey[q] <= most) {
						ask(q)
					} else {
						r.walked++ // read, and asked already or turned away
					}
				}
			}
		}
	}
	r.walked += len(r.bonus)
	for x := range r.bonus {
		if b := &r.bonus[x]; b.ok && r.live[b.id] && r.asked[b.queue] != r.pass {
			ask(b.queue)
		}
	}
	r.open = open
}

// head is a queue's candidate in a round; key is its queue's share with
// the request, as the GPUs above the nominal quota (keyOf).
type head struct {
	queue, id, submitted int
	key                  int
	want                 int // the GPUs the key counts
	class                policy.Class
	rigid                bool
	// doomed: doomed when the round found it (settle), as it stays
	// until a grant or a notice; dead: doomed as of the last change
	// (turnsInOrder).
	doomed, dead bool
}

// keyOf is what orders queue q's candidates by share when its members
// would keep kept GPUs: share(q, kept) times the lendable quota, the GPUs
// above the nominal quota, an integer where the share is a fraction with
// one divisor for every queue (0 for all when there is none to lend, as
// share is).
//
// With fair sharing off the key is Kueue's classical order's first field
// instead: 1 if the queue would borrow (hold more than its nominal quota)
// with the request, else 0, so that workloads that do not borrow go first,
// then by class (priority), then submit time (FIFO): makeClassicalIterator
// in kubernetes-sigs/kueue v0.19.2 pkg/scheduler/scheduler.go, lines
// 1094–1142 (fields 2–4; field 1, a second pass of a workload holding
// quota, and the preemptor-first feature gate have no counterpart here).
func (r *Rule) keyOf(q, kept int) int {
	if r.lendable <= 0 {
		return 0
	}
	if !r.fair {
		if kept > r.nominal[q] {
			return 1
		}
		return 0
	}
	return max(0, kept-r.nominal[q])
}

// headCmp orders the candidates: lowest share (with the request) first,
// then class, then submit time, then id.
func headCmp(x, y head) int {
	switch {
	case x.key != y.key:
		return cmp.Compare(x.key, y.key)
	case x.class != y.class:
		return cmp.Compare(x.class, y.class)
	case x.submitted != y.submitted:
		return cmp.Compare(x.submitted, y.submitted)
	}
	return cmp.Compare(x.id, y.id)
}

// roomBeyondReservation is what TryStart may add to a request's
// reservation: the free GPUs, within its queue's limit.
func (r *Rule) roomBeyondReservation(k *baseline.Core, q, reserved int) int {
	return min(max(0, k.FreeGeneral())+reserved, r.limitOf(k, q)-r.usage[q]) - reserved
}

// preempt is Kueue's fair-sharing preemption for pending request i of
// queue p (pkg/scheduler/preemption: fairPreemptions). It reports whether
// the request now waits for GPUs on their way to it (noticed now or
// before).
//
// The filler's leases go first, newest first, whatever the shares
// (docs/studies.md §6.2). Then the candidates are the leases not under
// notice of the other queues that borrow (hold more than their nominal
// quota; Kueue's reclaimWithinCohort: Any takes from borrowing queues
// only, withinClusterQueue: Never spares the preemptor's own), each
// queue's in victim order (lowest class, then newest). The queue to take
// from is always the one with the highest share, re-chosen after each
// victim (ties: the queue whose next candidate comes first in victim
// order). If the preemptor's queue stays within its nominal quota with the
// request, every such candidate may go (reclaim). Otherwise the first
// strategy, LessThanOrEqualToFinalShare, takes a lease when the
// preemptor's share with the request is at most the victim queue's share
// without the lease, and sets aside the others; if the request still does
// not fit, the second, LessThanInitialShare, takes from each queue in turn
// its first set-aside lease when the preemptor's share is below the
// queue's share before it. Only if the victims then cover the need are
// they noticed, after dropping, from the last but one back, every victim
// the rest can do without (the minimal set, fillBackWorkloads).
func (r *Rule) preempt(k *baseline.Core, i, p int) bool {
	req := k.Pend(i)
	want := k.Want(i)
	if want == 0 {
		return false
	}
	if r.usage[p]+want > r.limitOf(k, p) {
		return false // over the borrowing limit: only releases will do
	}
	need := want - max(0, k.FreeGeneral()) - req.Reserved - r.bonusOf(req.ID)
	if need <= 0 {
		return true
	}
	// Most attempts fail (98 % of a StrictFIFO replay's with fair starts
	// on the full SDSC-SP2 log) and most of those fail by far: a bound on
	// what the strategies could take turns them away before the search.
	beyond := !r.plain && need > r.takable(p, want)
	if beyond && r.bound == nil {
		r.failed(p, want)
		return false
	}
	leases := k.Leases()
	// Candidates by queue, in victim order; the filler's first. Those the
	// pass noticed so far are no longer candidates.
	filler := r.fillerCands[:0]
	for _, j := range r.fillerVict {
		if !leases[j].UnderNotice {
			filler = append(filler, j)
		}
	}
	r.fillerCands = filler
	for _, q := range r.withC {
		r.cands[q] = r.cands[q][:0]
		r.retry[q] = r.retry[q][:0]
	}
	r.withC = r.withC[:0]
	for _, q := range r.holding { // ascending
		if q == p || r.kept[q] <= r.nominal[q] || r.reclaim == Never {
			continue // reclaimWithinCohort Never: no other queue's lease is a candidate
		}
		c := r.cands[q][:0]
		for _, j := range r.vict[q] {
			// LowerPriority: only a lease of a lower class (a higher
			// number) than the preemptor's.
			if !leases[j].UnderNotice && (r.reclaim != LowerPriority || leases[j].Class > req.Class) {
				c = append(c, j)
			}
		}
		if r.cands[q] = c; len(c) > 0 {
			r.withC = append(r.withC, q)
			r.next[q] = 0
			r.sim[q] = r.kept[q]
		}
	}
	if r.audit != nil {
		r.audit(k, p)
	}
	targets, got := r.targets[:0], 0
	decisions := r.decisions[:0] // one per target; Victim -1: the filler's
	for _, j := range filler {
		if got >= need {
			break
		}
		targets = append(targets, j)
		decisions = append(decisions, Decision{Victim: -1})
		got += leases[j].GPUs
	}
	pNew := r.share(p, r.kept[p]+want)
	within := r.kept[p]+want <= r.nominal[p]
	take := func(q, j int, strategy string) {
		g := leases[j].GPUs
		decisions = append(decisions, Decision{Preemptor: p, Victim: q, PreemptorShare: pNew,
			VictimBefore: r.share(q, r.sim[q]), VictimAfter: r.share(q, r.sim[q]-g), Strategy: strategy})
		targets = append(targets, j)
		got += g
		r.sim[q] -= g
	}
	// The first strategy (or reclaim), queue by highest share.
	for got < need {
		q := r.highest(leases)
		if q < 0 {
			break
		}
		if within {
			take(q, r.cands[q][r.next[q]], Reclaim)
			r.next[q]++
			continue
		}
		for r.next[q] < len(r.cands[q]) {
			j := r.cands[q][r.next[q]]
			r.next[q]++
			pass := pNew <= r.share(q, r.sim[q]-leases[j].GPUs) // S2-a
			if r.first == LessThanInitialShare {
				pass = pNew < r.share(q, r.sim[q]) // S2-b, lease by lease
			}
			if pass {
				take(q, j, r.first)
				break // the shares changed: choose the queue again
			}
			r.retry[q] = append(r.retry[q], j)
		}
	}
	// The second strategy, over the leases the first set aside.
	if got < need && !within && r.second {
		for _, q := range r.withC {
			r.next[q] = 0
		}
		for got < need {
			q := r.highestRetry(leases)
			if q < 0 {
				break
			}
			j := r.retry[q][0]
			if pNew < r.share(q, r.sim[q]) {
				take(q, j, LessThanInitialShare)
			}
			r.next[q] = len(r.retry[q]) // once per queue (runSecondFsStrategy)
		}
	}
	r.targets, r.decisions = targets, decisions
	if r.bound != nil {
		r.bound(beyond, got >= need)
	}
	if got < need {
		r.failed(p, want)
		return false // only if the request then fits (docs/studies.md §6.6)
	}
	if len(r.unasked) > 0 {
		r.askUnasked(k) // before the notices change what they read
	}
	clear(r.minFail) // the shares change
	for v := len(targets) - 2; v >= 0; v-- {
		if g := leases[targets[v]].GPUs; got-g >= need {
			got -= g
			targets = slices.Delete(targets, v, v+1)
			decisions = slices.Delete(decisions, v, v+1)
		}
	}
	if r.decide != nil {
		for _, d := range decisions {
			if d.Victim >= 0 {
				r.decide(d)
			}
		}
	}
	if !slices.ContainsFunc(r.preemptors, func(f preemptor) bool { return f.id == req.ID }) {
		r.preemptors = append(r.preemptors, preemptor{waiting{class: req.Class, submitted: req.Submitted, id: req.ID, gpus: req.GPUs, rigid: req.Rigid}, p})
	}
	for _, j := range targets {
		if q := r.queueOf[leases[j].Campaign]; q >= 0 {
			r.kept[q] -= leases[j].GPUs
		} else {
			r.fillerKept -= leases[j].GPUs
		}
		k.NoticeFor(j, i)
	}
	return true
}

// failed notes that a request of queue p for want GPUs failed to preempt
// this tick.
func (r *Rule) failed(p, want int) {
	if r.minFail[p] == 0 || want < r.minFail[p] {
		r.minFail[p] = want
	}
}

// takable bounds from above the GPUs preempt could take for a request of
// queue p for want GPUs; the pool where the request keeps its queue
// within its nominal quota (reclaim may take any borrower's lease). Else
// the queue would be over = kept + want − nominal GPUs above its quota,
// and a share compares as the GPUs above the quota do (one divisor). The
// filler's leases may all go. Of another queue q, excess = kept −
// nominal above its quota: LessThanOrEqualToFinalShare takes a lease only
// if q stays at least over above after it, so at most excess − over in
// all; LessThanInitialShare takes one only while q is more than over
// above, so lease by lease at most excess − over − 1 plus the last
// lease's width, and as the second strategy one lease, after the first
// took at most excess − over − 1. So at most excess − over − 1 + q's
// widest lease (≥ excess − over, a lease holding a GPU at least), and
// nothing if excess ≤ over (TestTakableBoundsThePreemption; one GPU less
// and it fails).
//
// Under reclaimWithinCohort Never only the filler's leases may go; under
// LowerPriority the bound of Any holds, a subset of its candidates.
func (r *Rule) takable(p, want int) int {
	if r.reclaim == Never {
		return r.fillerKept
	}
	over := r.kept[p] + want - r.nominal[p]
	if over <= 0 || r.lendable <= 0 {
		return math.MaxInt
	}
	n := r.fillerKept
	if over < r.maxExcess {
		// Else no queue keeps more than over above its quota, and none
		// counts: so it is at 85 % of the calls of a replay of the
		// 300k-job log's first 50,000 jobs with fair starts (68 % on
		// SDSC-SP2), and the walk of the holding queues in each was 5 %
		// of it.
		for _, q := range r.holding {
			if ex := r.kept[q] - r.nominal[q]; q != p && ex > over {
				n += min(r.kept[q], ex-over-1+r.widest[q])
			}
		}
	}
	if r.takableAudit != nil {
		r.takableAudit(p, over, n)
	}
	return n
}

// highest is the queue with candidates left and the highest share of
// what it keeps as victims are taken; ties go to the queue whose next
// candidate comes first in victim order. -1: none. A queue that no longer
// borrows is no candidate (Kueue prunes it).
func (r *Rule) highest(leases []baseline.Lease) int {
	best := -1
	for _, q := range r.withC {
		if r.next[q] >= len(r.cands[q]) || r.sim[q] <= r.nominal[q] {
			continue
		}
		if best < 0 {
			best = q
			continue
		}
		if c := r.shareCmp(q, best); c > 0 ||
			c == 0 && baseline.VictimOrder(&leases[r.cands[q][r.next[q]]], &leases[r.cands[best][r.next[best]]]) < 0 {
			best = q
		}
	}
	return best
}

// highestRetry is highest over the leases the first strategy set aside,
// each queue visited once.
func (r *Rule) highestRetry(leases []baseline.Lease) int {
	best := -1
	for _, q := range r.withC {
		if r.next[q] >= len(r.retry[q]) || r.sim[q] <= r.nominal[q] {
			continue
		}
		if best < 0 {
			best = q
			continue
		}
		if c := r.shareCmp(q, best); c > 0 ||
			c == 0 && baseline.VictimOrder(&leases[r.retry[q][0]], &leases[r.retry[best][0]]) < 0 {
			best = q
		}
	}
	return best
}

// shareCmp compares the shares of queues q and b as victims are taken
// (share of sim), both borrowing (sim above the nominal quota), by the
// GPUs each keeps above its quota: the shares are those numbers over one
// divisor, the lendable quota, and a correctly rounded division by a
// positive number keeps the order of integers below 2⁵² strictly (two
// apart by at least 1 ÷ lendable, more than half an ulp of either
// quotient). highest and highestRetry compared the two divisions at every
// queue of every victim chosen.
func (r *Rule) shareCmp(q, b int) int {
	if r.lendable <= 0 {
		return 0 // every share 0
	}
	return cmp.Compare(r.sim[q]-r.nominal[q], r.sim[b]-r.nominal[b])
}
