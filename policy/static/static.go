package static

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/easy"
)

// Name is the policy's name in configs and reports.
const Name = "static"

// The values of the lend knob.
const (
	// LendNone never lends an idle partition: the seed story's point.
	LendNone = "none"
	// LendScavenger lets other owners' jobs run preemptibly in idle GPUs,
	// as a condo cluster's scavenger partition does.
	LendScavenger = "scavenger"
)

// The values of the partitions knob.
const (
	// PartitionsShare sizes each partition by its share alone (revision
	// 2's rule, the variant static-share).
	PartitionsShare = "share"
	// PartitionsCondo gives each partition at least its owners' widest job
	// first, as a condo owner buys at least what its widest job needs (the
	// default).
	PartitionsCondo = "condo"
)

// DefaultOwners is how many groups own a partition by default.
const DefaultOwners = 8

// nonPreemptible is the class whose price a lease no one can preempt pays
// when it claims the opportunistic class (docs/studies.md §2): agent-burst,
// the class of an ordinary batch request, which nobody preempts under any
// baseline's default.
const nonPreemptible = policy.AgentBurst

// Knobs are the policy's settings.
type Knobs struct {
	// Owners is how many groups, those with the largest entitlements, own
	// a partition; every other group shares the general partition.
	Owners int `json:"owners" yaml:"owners"`
	// Lend is LendNone or LendScavenger.
	Lend string `json:"lend" yaml:"lend"`
	// Partitions is PartitionsCondo (the default) or PartitionsShare (""
	// reads as it).
	Partitions string `json:"partitions,omitempty" yaml:"partitions,omitempty"`
}

// DefaultKnobs are the spec's defaults: 8 owners, nothing lent, condo
// partitions.
func DefaultKnobs() Knobs {
	return Knobs{Owners: DefaultOwners, Lend: LendNone, Partitions: PartitionsCondo}
}

// ShareKnobs are the knobs of the variant static-share: the defaults with
// partitions share.
func ShareKnobs() Knobs {
	k := DefaultKnobs()
	k.Partitions = PartitionsShare
	return k
}

// Validate names the first bad knob.
func (kn Knobs) Validate() error {
	if kn.Owners < 0 {
		return fmt.Errorf("static: owners must be ≥ 0 groups, got %d", kn.Owners)
	}
	if kn.Lend != "" && kn.Lend != LendNone && kn.Lend != LendScavenger {
		return fmt.Errorf("static: lend must be %q or %q, got %q", LendNone, LendScavenger, kn.Lend)
	}
	if kn.Partitions != "" && kn.Partitions != PartitionsShare && kn.Partitions != PartitionsCondo {
		return fmt.Errorf("static: partitions must be %q or %q, got %q", PartitionsShare, PartitionsCondo, kn.Partitions)
	}
	return nil
}

// Rule is the ownership rule.
type Rule struct {
	baseline.Base
	knobs Knobs

	// The partitions, cut when a campaign registers: by campaign its
	// partition (-1: the filler, which owns none), by partition its size.
	partOf []int
	size   []int
	// scaled marks a cut under partitions condo whose minima exceeded the
	// pool and were scaled down (MinimaScaled).
	scaled bool

	// The books, rebuilt from the lease table before each use: by
	// partition, the GPUs its owners hold, the GPUs lent to scavengers, and
	// of those the GPUs under notice (returning).
	owner, lent, noticed []int
	// loans are the scavenger leases' GPUs by partition, in grant order;
	// scav[lease id] marks a scavenger lease.
	loans []loan
	scav  []bool

	// Admission scratch: by partition its queue (request ids, submit
	// order), the GPUs its owners may still take (lent GPUs counted as
	// theirs), its idle GPUs, and the GPUs its owners' admitted jobs wait
	// for; planned[request id] marks a job in its owners' schedule.
	queues    [][]queued
	ownerFree []int
	idle      []int
	waiting   []int
	planned   []int // by request id: the GPUs it waits for (0: not planned)
	plannedID []int
	others    []queued // jobs that may only scavenge, and the filler's
	pass      easy.Scheduler
	running   []easy.Running
	jobs      []easy.Job
	jobIDs    []queued
	jobAt     []int // backfillIndexed's: each of jobIDs' place in its queue
	alive     []bool
	victims   []int
	order     []int
	// scavenge's: where each job it walks stood in the pending list when
	// it gathered them, and where those it granted stood.
	scavAt, scavGranted []int
	// plainScavenge looks every job scavenge walks up by id; relooked
	// counts the jobs not where the grants left them (tests: the oracle
	// and the check of the positions).
	plainScavenge bool
	relooked      int
	// refused counts the jobs a backfill's search found and its test then
	// refused for the shadow time (tests: backfillIndexed searches with
	// the whole test).
	refused int

	// By partition its owners' queue (queues.go), kept as requests join
	// and leave the pending list; heads are the places a pass started or
	// planned from. stale: the partitions were cut again since, and the
	// queues are made again at the next pass; unordered: the pending list
	// may be out of submit order (an elastic request filed behind a job
	// submitted later, lastSubmitted the latest submit filed), and a pass
	// admits plain until it is back in order. plainAdmit admits plain
	// always (tests: the oracle of the queues).
	parts []partQueue
	heads []int
	// quiet[p]: partition p's last pass started, planned and noticed
	// nothing, or only started rigid jobs while every pending request was
	// rigid (quietAfter), and its queue has not changed since; leases[p]
	// are its owners' leases as of the end of that pass (count, ids and
	// GPUs summed), now ownersNow (books, and start for the pass's own
	// starts). With nothing else changed such a pass would decide the
	// same again (a later clock only makes a backfill harder), and is
	// skipped (lend none, no platform). acted counts the starts, plans
	// and notices of a pass, rigidStarts its starts of rigid jobs.
	quiet         []bool
	leases        []leaseSet
	ownersNow     []leaseSet
	acted         int
	rigidStarts   int
	stale         bool
	unordered     bool
	lastSubmitted int
	plainAdmit    bool
	// aging: the last Admit planned a job (one its schedule started that
	// the idle GPUs, or on nodes the up nodes, could not seat). A planned
	// job has not started, so the next pass takes its end as now + its
	// estimate, and it plans it again from now: the shadow time moves with
	// the clock, and the same pass a tick later may backfill what it
	// refused (NextEvent).
	aging bool
}

// leaseSet identifies a partition's owners' leases between two passes,
// where they can only end (a start is a pass's own).
type leaseSet struct{ n, ids, gpus int }

// loan is part of a scavenger lease: gpus of partition part's GPUs.
type loan struct{ lease, part, gpus int }

// queued is a waiting request as admission walks it.
type queued struct{ id, submitted int }

// New returns a static-partition allocator.
func New(cfg policy.Config, knobs Knobs) (*baseline.Core, error) {
	if err := knobs.Validate(); err != nil {
		return nil, err
	}
	return baseline.New(cfg, &Rule{knobs: knobs})
}

// Name is the policy's name.
func (*Rule) Name() string { return Name }

// AdmitsFiller marks that the filler is admitted here, as a scavenger.
func (*Rule) AdmitsFiller() {}

// Registered cuts the partitions again: every registration changes the
// shares (baseline.Registrar).
func (r *Rule) Registered(k *baseline.Core, _ policy.CampaignID) { r.cut(k) }

// cut computes the partitions (docs/studies.md §2, §6.15): the Owners groups
// with the largest entitlements (ties: group order) each own one; every
// other group shares the general partition, whose share is theirs
// combined; the sizes are the largest-remainder split of the pool.
func (r *Rule) cut(k *baseline.Core) {
	oldPart, oldSize := slices.Clone(r.partOf), slices.Clone(r.size)
	defer func() {
		if !slices.Equal(oldSize, r.size) || !slices.Equal(oldPart, r.partOf[:len(oldPart)]) {
			r.stale = true // a campaign's partition, or one's size, moved
		}
	}()
	n := k.NumCampaigns()
	r.partOf = slices.Grow(r.partOf[:0], n)[:n]
	groups := k.Groups()
	rank := make([]int, len(groups))
	for g := range rank {
		rank[g] = g
	}
	slices.SortStableFunc(rank, func(a, b int) int { return cmp.Compare(groups[b].Share, groups[a].Share) })
	owners := min(r.knobs.Owners, len(groups))
	partOfGroup := make([]int, len(groups))
	var shares []float64
	var widest []int // by partition: its groups' widest job
	for p, g := range rank[:owners] {
		partOfGroup[g] = p
		shares = append(shares, groups[g].Share)
		widest = append(widest, groups[g].Widest)
	}
	if owners < len(groups) {
		general, wide := 0.0, 0
		for _, g := range rank[owners:] {
			partOfGroup[g] = owners
			general += groups[g].Share
			wide = max(wide, groups[g].Widest)
		}
		shares = append(shares, general)
		widest = append(widest, wide)
	}
	if r.knobs.Partitions == PartitionsCondo {
		r.size, r.scaled = CondoSizes(shares, widest, k.Config().Pool)
	} else {
		r.size = baseline.LargestRemainder(shares, k.Config().Pool)
	}
	for c := range n {
		r.partOf[c] = -1
	}
	for g := range groups {
		for _, c := range groups[g].Members {
			r.partOf[c] = partOfGroup[g]
		}
	}
	np := len(r.size)
	r.owner, r.lent, r.noticed = baseline.Ints(r.owner, np), baseline.Ints(r.lent, np), baseline.Ints(r.noticed, np)
	r.ownerFree, r.idle, r.waiting = baseline.Ints(r.ownerFree, np), baseline.Ints(r.idle, np), baseline.Ints(r.waiting, np)
	r.ownersNow = slices.Grow(r.ownersNow[:0], np)[:np]
	r.leases = slices.Grow(r.leases[:0], np)[:np]
	r.quiet = slices.Grow(r.quiet[:0], np)[:np]
	clear(r.quiet)
	for len(r.queues) < np {
		r.queues = append(r.queues, nil)
	}
	for len(r.parts) < np {
		r.parts = append(r.parts, partQueue{})
		r.parts[len(r.parts)-1].most = r.size[len(r.parts)-1]
		r.parts[len(r.parts)-1].build(k)
	}
}

// CondoSizes are the partitions of partitions condo (docs/policies.md,
// static): partition p's minimum is min(widest[p], pool), what its owners'
// widest job needs; the pool left over the minima is split by shares with
// the largest remainder (shares scaled to sum to 1; all 0: equal). If the
// minima exceed the pool they are scaled down in proportion instead, by
// the largest remainder again, in whole numbers (ties by the earlier
// partition, that is owner order), nothing is left to split, and scaled
// is true.
// The sizes sum to the pool whenever there is a partition.
func CondoSizes(shares []float64, widest []int, pool int) (sizes []int, scaled bool) {
	minima := make([]int, len(widest))
	need := 0
	for p, w := range widest {
		minima[p] = min(max(w, 0), pool)
		need += minima[p]
	}
	if need > pool {
		// In whole numbers, so that no rounding moves a GPU: minimum m's
		// exact part is m × pool ÷ need.
		sizes = make([]int, len(minima))
		order := make([]int, len(minima))
		left := pool
		for p, m := range minima {
			sizes[p] = m * pool / need
			left -= sizes[p]
			order[p] = p
		}
		slices.SortStableFunc(order, func(a, b int) int {
			return cmp.Compare(minima[b]*pool%need, minima[a]*pool%need)
		})
		for _, p := range order[:left] {
			sizes[p]++
		}
		return sizes, true
	}
	total := 0.0
	for _, s := range shares {
		total += s
	}
	frac := make([]float64, len(shares))
	for p, s := range shares {
		if total > 0 {
			frac[p] = s / total
		} else {
			frac[p] = 1 / float64(len(shares))
		}
	}
	sizes = baseline.LargestRemainder(frac, pool-need)
	for p := range sizes {
		sizes[p] += minima[p]
	}
	return sizes, false
}

// MinimaScaled reports whether the last cut was under partitions condo
// and its minima (the owners' widest jobs) exceeded the pool, so that
// they were scaled down and some owner's widest job is wider than its
// partition: the run is marked.
func (r *Rule) MinimaScaled() bool { return r.scaled }

// MarkMinimaScaled is the mark of a run whose condo minima were scaled
// down (MinimaScaled).
const MarkMinimaScaled = "minima scaled"

// Marks marks the run if its minima were scaled (baseline.Marked).
func (r *Rule) Marks() []string {
	if r.scaled {
		return []string{MarkMinimaScaled}
	}
	return nil
}

// Partition is campaign c's partition (-1: the filler's, none) and its
// size in GPUs.
func (r *Rule) Partition(c policy.CampaignID) (part, size int) {
	p := r.partOf[c]
	if p < 0 {
		return -1, 0
	}
	return p, r.size[p]
}

// Sizes are the partitions' sizes, owners by entitlement first, the
// general partition (if any) last. Read only.
func (r *Rule) Sizes() []int { return r.size }

// Limit is the pool: a campaign's elastic request is cut to its
// partition by admission, and only a rigid job is denied for its width
// (RigidLimit).
func (*Rule) Limit(k *baseline.Core, _ policy.CampaignID) int { return k.Config().Pool }

// RigidLimit is the widest rigid job campaign c may run: its partition
// under lend none; the pool under lend scavenger, where a job wider than
// its partition runs only as a scavenger (docs/studies.md §6.1).
func (r *Rule) RigidLimit(k *baseline.Core, c policy.CampaignID) int {
	if r.knobs.Lend == LendScavenger {
		return k.Config().Pool
	}
	_, size := r.Partition(c)
	return size
}

// Room is what campaign c could be granted now without preempting anyone
// (docs/studies.md §6.5): its partition's idle GPUs; for the filler, the
// idle GPUs of every partition under lend scavenger, none under lend none.
func (r *Rule) Room(k *baseline.Core, c policy.CampaignID) int {
	r.books(k)
	p := r.partOf[c]
	if p < 0 {
		if r.knobs.Lend != LendScavenger {
			return 0
		}
		total := 0
		for q := range r.size {
			total += r.size[q] - r.owner[q] - r.lent[q]
		}
		return max(0, min(total, k.FreeGeneral()))
	}
	return max(0, min(r.size[p]-r.owner[p]-r.lent[p], k.FreeGeneral()))
}

// books rebuilds each partition's books from the lease table: a lease
// that is not a scavenger's is its owner's, on its campaign's partition;
// a scavenger lease is on the books of the partitions it borrowed from,
// and loans of leases that have ended are forgotten.
func (r *Rule) books(k *baseline.Core) {
	clear(r.owner)
	clear(r.lent)
	clear(r.noticed)
	clear(r.ownersNow)
	leases := k.Leases()
	for j := range leases {
		l := &leases[j]
		if l.ID < len(r.scav) && r.scav[l.ID] {
			for len(r.alive) <= l.ID {
				r.alive = append(r.alive, false)
			}
			r.alive[l.ID] = true
			continue
		}
		if p := r.partOf[l.Campaign]; p >= 0 {
			r.owner[p] += l.GPUs
			o := &r.ownersNow[p]
			o.n, o.ids, o.gpus = o.n+1, o.ids+l.ID, o.gpus+l.GPUs
		}
	}
	w := 0
	for _, ln := range r.loans {
		if ln.lease >= len(r.alive) || !r.alive[ln.lease] {
			r.scav[ln.lease] = false
			continue
		}
		r.loans[w] = ln
		w++
		r.lent[ln.part] += ln.gpus
	}
	r.loans = r.loans[:w]
	for j := range leases {
		l := &leases[j]
		if l.ID < len(r.alive) && r.alive[l.ID] {
			r.alive[l.ID] = false
			if l.UnderNotice {
				for _, ln := range r.loans {
					if ln.lease == l.ID {
						r.noticed[ln.part] += ln.gpus
					}
				}
			}
		}
	}
}

// Admit runs each partition's FCFS + EASY for its owners, issues the
// reclaims their schedule needs, and then (lend scavenger) starts
// scavengers in what is left idle.
func (r *Rule) Admit(k *baseline.Core) {
	r.books(k)
	np := len(r.size)
	if !r.plainAdmit && (r.stale || r.unordered) {
		r.reindex(k)
	}
	indexed := !r.plainAdmit && !r.unordered
	skip := indexed && r.knobs.Lend == LendNone && k.Seatable() == math.MaxInt
	if !skip {
		for p := range np {
			r.scratch(p)
		}
	}
	if indexed {
		// Resliced to np, so that the test of each partition reads them
		// without a bounds check: at every pass of a fork.
		quiet, leases, ownersNow := r.quiet[:np], r.leases[:np], r.ownersNow[:np]
		for p := range np {
			if skip {
				if quiet[p] && leases[p] == ownersNow[p] {
					continue
				}
				// Only the partition passed: where quiet ones are passed
				// by, nothing in the pass reads another's (no scavenger),
				// and a fork's pass, after a lease of one partition
				// ended, set up all of them.
				r.scratch(p)
			}
			acted, started := r.acted, r.rigidStarts
			r.admitIndexed(k, p)
			r.quiet[p] = r.acted == acted || r.quietAfter(k, r.acted-acted, r.rigidStarts-started)
			r.leases[p] = r.ownersNow[p]
		}
	} else {
		r.admitPlain(k)
	}
	if r.knobs.Lend == LendScavenger {
		r.scavenge(k)
	}
	r.aging = len(r.plannedID) > 0
	for _, id := range r.plannedID {
		r.planned[id] = 0
	}
	r.plannedID = r.plannedID[:0]
}

// scratch sets partition p's admission scratch from the books, for a
// pass.
func (r *Rule) scratch(p int) {
	r.queues[p] = r.queues[p][:0]
	r.ownerFree[p] = r.size[p] - r.owner[p]
	r.idle[p] = r.ownerFree[p] - r.lent[p]
	r.waiting[p] = 0
}

// quietAfter reports whether a pass that acted acted times, started of
// them rigid jobs it started, would decide nothing if run again with its
// partition's queue and owners' leases as it left them, at the same tick
// or later: true when it only started rigid jobs and every pending
// request is rigid. After every grant the Core runs the next tick (the
// lease set changed), and that pass, which decided nothing, was half of
// the passes of a static replay's forks, each a search of its partition's
// queue thousands long (docs/traces.md, "Work per job").
//
// Why it decides nothing (lend none, no platform, the only case in which
// Admit skips a quiet partition): the heads started while they fit and
// stopped at a rigid head wider than the GPUs its owners had free; those
// only fell since, so it stops there again. The backfill made its
// reservation for that head from the running leases and the free GPUs
// F: the shadow time s is the first estimated end by which F and the
// GPUs ended reach the head's need, and the extra GPUs x what it leaves
// over. The pass then started, in queue order, the jobs B that fit the
// GPUs still free, each ending by s or fitting the extra GPUs left
// (which it took). Run again, each job of B is a running lease ending at
// its start plus its estimate: those ending by s (the first kind) are
// back by s, and before s the GPUs free were short of the need already,
// so the shadow time is s again, and the extra GPUs x less those taken
// (the second kind, which end after s). Every job the pass refused was
// wider than the GPUs free at its turn, which only fell since, or ran
// past s and was wider than the extra GPUs left at its turn, which only
// fell too, and a later clock only makes it run further past s. A rigid
// job asks for the same GPUs at every pass; an elastic request is cut
// to what its partition has free, which falls as the pass starts jobs,
// so a request refused for its width could fit a pass later: hence
// every pending request rigid. A plan or a notice moves the schedule's
// books (waiting, aging) and is not a start: such a pass is never quiet.
// TestQueuesAdmitAsThePendingList checks it against twins that pass
// every partition at every tick.
func (r *Rule) quietAfter(k *baseline.Core, acted, started int) bool {
	return acted == started && k.RigidOnly()
}

// admitPlain is each partition's admission over its queue taken from the
// whole pending list: the oracle of the queues the rule keeps, and the
// pass while the list is out of submit order.
func (r *Rule) admitPlain(k *baseline.Core) {
	np := len(r.size)
	r.others = r.others[:0]
	pend := k.Pending()
	for i := range pend {
		q := &pend[i]
		p := r.partOf[q.Campaign]
		switch {
		case p < 0:
			r.others = append(r.others, queued{q.ID, q.Submitted})
		case q.Rigid && q.GPUs > r.size[p]:
			r.others = append(r.others, queued{q.ID, q.Submitted}) // only a scavenger
		default:
			r.queues[p] = append(r.queues[p], queued{q.ID, q.Submitted})
		}
	}
	for p := range np {
		inOrder(k, r.queues[p], nil)
		r.admitPartition(k, p)
	}
}

// admitPartition is FCFS + EASY (docs/studies.md §2.1) over partition p's
// queue in its owners' view, where the GPUs lent to scavengers are free:
// heads start while they fit, then one EASY pass. A job the schedule
// starts that the idle GPUs cannot hold now waits for its partition's
// scavengers, which are noticed, newest first, so that the owners' jobs
// never wait more than the grace for GPUs lent out (§6.19).
func (r *Rule) admitPartition(k *baseline.Core, p int) {
	q := r.queues[p]
	h := 0
	for ; h < len(q); h++ {
		if stop, _ := r.headStep(k, p, k.IndexSubmitted(q[h].id, q[h].submitted)); stop {
			break
		}
	}
	if h < len(q) && r.ownerFree[p] > 0 {
		r.backfill(k, p, q, h)
	}
	r.reclaim(k, p)
}

// headStep takes pending request i, the next head of partition p's queue
// in its owners' view: stop when it does not fit the GPUs the owners have
// free (the heads end there); held when it stays queued as a head (a
// rigid job scheduled, an elastic request planned), not started.
func (r *Rule) headStep(k *baseline.Core, p, i int) (stop, held bool) {
	req := k.Pend(i)
	if req.Rigid {
		if req.GPUs > r.ownerFree[p] {
			return true, false
		}
		r.schedule(k, p, i, req.GPUs)
		return false, true
	}
	want := min(req.GPUs, r.ownerFree[p])
	if want < 1 {
		return true, false
	}
	// An elastic request is cut to what the partition has free, by the
	// broker's partial-grant rule (docs/studies.md §6.1).
	if x := min(want, r.idle[p]-r.waiting[p], k.Seatable()); x >= min(want, policy.PartialGrantMin) {
		cls := req.Class
		r.start(k, p, i, x)
		if x < want && cls != policy.Opportunistic {
			// The rest of a partial grant is reclaimed for the
			// partition, as the broker preempts for it (model.md §5).
			r.ownerFree[p] -= want - x
			r.waiting[p] += want - x
		}
		return false, false
	}
	r.plan(p, req.ID, want)
	return false, true
}

// schedule starts rigid job i of partition p now if its idle GPUs hold
// it, else plans it to start once the scavengers have left. The jobs
// planned before it have the first claim on the idle GPUs, so that a later
// job never takes what an earlier one waits for.
func (r *Rule) schedule(k *baseline.Core, p, i, gpus int) {
	if gpus <= r.idle[p]-r.waiting[p] && k.Seats(gpus) {
		r.start(k, p, i, gpus)
		return
	}
	r.plan(p, k.Pend(i).ID, gpus)
}

// start grants n GPUs of partition p to owner request i, and notes its
// lease in the owners' leases now (ownersNow, as books would find it).
func (r *Rule) start(k *baseline.Core, p, i, n int) {
	r.acted++
	req := k.Pend(i)
	if req.Rigid {
		r.rigidStarts++
	}
	o := &r.ownersNow[p]
	o.n, o.ids, o.gpus = o.n+1, o.ids+req.ID, o.gpus+n
	if req.Class == policy.Opportunistic {
		k.Reprice(i, nonPreemptible) // no one preempts an owner's lease
	}
	k.Grant(i, n)
	r.ownerFree[p] -= n
	r.idle[p] -= n
	r.owner[p] += n
}

// plan puts request id in partition p's schedule, waiting for gpus GPUs.
func (r *Rule) plan(p, id, gpus int) {
	r.acted++
	r.ownerFree[p] -= gpus
	r.waiting[p] += gpus
	for len(r.planned) <= id {
		r.planned = append(r.planned, 0)
	}
	r.planned[id] = gpus
	r.plannedID = append(r.plannedID, id)
}

// backfill is the EASY pass over partition p's queue from its blocked
// head on, with the owners' leases (and the jobs planned this tick, as
// started now) as the running ones.
func (r *Rule) backfill(k *baseline.Core, p int, q []queued, h int) {
	now := k.Now()
	r.runningOf(k, p)
	for _, e := range q[:h] {
		if e.id < len(r.planned) && r.planned[e.id] > 0 {
			req := k.Pend(k.IndexSubmitted(e.id, e.submitted))
			r.running = append(r.running, easy.Running{GPUs: r.planned[e.id], EstEnd: int64(now + req.Duration)})
		}
	}
	r.jobs, r.jobIDs = r.jobs[:0], r.jobIDs[:0]
	for _, e := range q[h:] {
		req := k.Pend(k.IndexSubmitted(e.id, e.submitted))
		gpus := req.GPUs
		if !req.Rigid {
			gpus = min(gpus, r.ownerFree[p])
		}
		r.jobs = append(r.jobs, easy.Job{GPUs: gpus, Estimate: int64(req.Duration)})
		r.jobIDs = append(r.jobIDs, e)
	}
	for _, j := range r.pass.Pass(int64(now), r.ownerFree[p], r.running, r.jobs) {
		e := r.jobIDs[j]
		r.schedule(k, p, k.IndexSubmitted(e.id, e.submitted), r.jobs[j].GPUs)
	}
}

// runningOf sets running to partition p's owners' leases.
func (r *Rule) runningOf(k *baseline.Core, p int) {
	r.running = r.running[:0]
	leases := k.Leases()
	for j := range leases {
		l := &leases[j]
		if r.partOf[l.Campaign] == p && (l.ID >= len(r.scav) || !r.scav[l.ID]) {
			r.running = append(r.running, easy.Running{GPUs: l.GPUs, EstEnd: int64(l.Estimated())})
		}
	}
}

// reclaim notices the scavenger leases on partition p's books that its
// owners' planned jobs need: the GPUs they wait for less those idle and
// those already returning, newest lease first, as a minimal set
// (docs/studies.md §6.6, §6.19).
func (r *Rule) reclaim(k *baseline.Core, p int) {
	need := r.waiting[p] - max(0, r.idle[p]) - r.noticed[p]
	if need <= 0 {
		return
	}
	leases := k.Leases()
	r.victims = r.victims[:0]
	got := 0
	for x := len(r.loans) - 1; x >= 0 && got < need; x-- {
		ln := r.loans[x]
		if ln.part != p || r.underNotice(leases, ln.lease) {
			continue
		}
		r.victims = append(r.victims, x)
		got += ln.gpus
	}
	if got < need {
		return // cannot happen: the owners plan within their partition
	}
	for v := len(r.victims) - 2; v >= 0; v-- {
		if g := r.loans[r.victims[v]].gpus; got-g >= need {
			got -= g
			r.victims = slices.Delete(r.victims, v, v+1)
		}
	}
	for _, x := range r.victims {
		id := r.loans[x].lease
		for j := range leases {
			if leases[j].ID == id {
				k.Notice(j, -1)
				r.acted++
				break
			}
		}
		for _, ln := range r.loans {
			if ln.lease == id {
				r.noticed[ln.part] += ln.gpus
			}
		}
	}
}

func (r *Rule) underNotice(leases []baseline.Lease, id int) bool {
	for j := range leases {
		if leases[j].ID == id {
			return leases[j].UnderNotice
		}
	}
	return false
}

// scavenge starts, in submit order, the waiting jobs that fit in the GPUs
// the owners leave idle, as scavengers (docs/studies.md §6.19): never with a
// reservation, first fit. A job borrows other partitions' idle GPUs,
// most idle first (ties: partition order); a job wider than its own
// partition may also borrow its own partition's, last. The filler's
// requests come last, elastic by the broker's partial-grant rule.
func (r *Rule) scavenge(k *baseline.Core) {
	total := 0
	for p := range r.size {
		r.idle[p] = max(0, r.idle[p]-max(0, r.waiting[p]-r.noticed[p]))
		total += r.idle[p]
	}
	if total == 0 {
		return
	}
	// Every waiting job not in its owners' schedule, in submit order; the
	// filler's after; and where each stands in the pending list.
	jobs, at := r.jobIDs[:0], r.scavAt[:0]
	pend := k.Pending()
	for i := range pend {
		q := &pend[i]
		if p := r.partOf[q.Campaign]; p >= 0 && q.Rigid && !(q.ID < len(r.planned) && r.planned[q.ID] > 0) {
			jobs, at = append(jobs, queued{q.ID, q.Submitted}), append(at, i)
		}
	}
	for i := range pend {
		if q := &pend[i]; r.partOf[q.Campaign] < 0 {
			jobs, at = append(jobs, queued{q.ID, q.Submitted}), append(at, i)
		}
	}
	inOrder(k, jobs, at) // no filler's request: the Core would keep the order
	r.jobIDs, r.scavAt = jobs, at
	// A grant takes its request out of the list and moves the ones behind
	// it up one place (Core.Grant), so a job's place now is where it stood
	// less the grants before it: looked up by id (IndexSubmitted, a binary
	// search of a list thousands long on a full log, where the cached
	// positions are stale after a grant) at every pass, the walk was most
	// of a static scavenger replay with fair starts.
	granted := r.scavGranted[:0]
	defer func() { r.scavGranted = granted }()
	for x, e := range jobs {
		if total == 0 {
			return
		}
		i := at[x]
		for _, g := range granted {
			if g < at[x] {
				i--
			}
		}
		switch {
		case r.plainScavenge || !k.Ordered():
			// A grant moves the list's last job into its place: every
			// job's place is noted (baseline.UnorderedPending).
			i = k.IndexSubmitted(e.id, e.submitted)
		case i >= len(k.Pending()) || k.Pend(i).ID != e.id:
			r.relooked++
			i = k.IndexSubmitted(e.id, e.submitted) // not where the grants left it
		}
		req := k.Pend(i)
		own := r.partOf[req.Campaign]
		avail := total
		if own >= 0 && req.GPUs <= r.size[own] {
			avail -= r.idle[own]
		}
		n := req.GPUs
		if req.Rigid {
			if n > avail || !k.Seats(n) {
				continue
			}
		} else {
			n = min(n, avail, k.Seatable())
			if n < min(req.GPUs, policy.PartialGrantMin) || n < 1 {
				continue
			}
		}
		r.borrow(k, i, own, n)
		granted = append(granted, at[x])
		total -= n
	}
}

// borrow grants n GPUs to request i of partition own as a scavenger
// lease, drawn from the idle partitions (see scavenge).
func (r *Rule) borrow(k *baseline.Core, i, own, n int) {
	id := k.Pend(i).ID
	wide := own >= 0 && k.Pend(i).GPUs > r.size[own]
	r.order = r.order[:0]
	for p := range r.size {
		if p != own && r.idle[p] > 0 {
			r.order = append(r.order, p)
		}
	}
	slices.SortStableFunc(r.order, func(a, b int) int { return cmp.Compare(r.idle[b], r.idle[a]) })
	if wide && r.idle[own] > 0 {
		r.order = append(r.order, own)
	}
	left := n
	for _, p := range r.order {
		g := min(left, r.idle[p])
		r.idle[p] -= g
		r.lent[p] += g
		r.loans = append(r.loans, loan{lease: id, part: p, gpus: g})
		left -= g
		if left == 0 {
			break
		}
	}
	for len(r.scav) <= id {
		r.scav = append(r.scav, false)
	}
	r.scav[id] = true
	k.Grant(i, n)
}

// Books are each partition's books now: the GPUs its owners hold and the
// GPUs lent to scavengers (copies).
func (r *Rule) Books(k *baseline.Core) (owner, lent []int) {
	r.books(k)
	return slices.Clone(r.owner), slices.Clone(r.lent)
}
