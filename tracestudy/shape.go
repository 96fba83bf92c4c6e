package tracestudy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/fifo"
	"github.com/bursar-hpc/bursar/policy/priority"
	"github.com/bursar-hpc/bursar/policy/slurm"
	"github.com/bursar-hpc/bursar/policy/static"
	"github.com/bursar-hpc/bursar/trace"
)

// The shape of a run's mapping and the degenerate runs it reveals
// (docs/studies.md §4.9): a baseline that the log's mapping leaves with
// nothing to act on (one priority tier, zero priority weights, one group
// holding nearly all the work) or that schedules every job as fifo does
// is no comparison, and a study says so instead of printing it as one.

// DominantGroup is the share of a window's work (GPU-seconds) at or above
// which one group makes every share-based policy degenerate.
const DominantGroup = 0.9

// TierJobs is how many of a window's jobs one priority tier holds.
type TierJobs struct {
	Tier string
	Jobs int
}

// Weight is one of a policy's priority weights.
type Weight struct {
	Name  string
	Value float64
}

// PartitionShape is one of static's partitions against its owners'
// widest job: a partition narrower than it can never run that job on
// its own GPUs.
type PartitionShape struct {
	Size, Widest, Groups int
}

// Shape is the part of a run's mapping that its policy reads: the tiers
// the window's jobs fall in (priority, slurm), the priority weights
// (slurm), static's partitions; and whether the replay scheduled every
// job exactly as fifo's did (same starts, ends and states). The groups
// and their shares are the window's (WindowShape), the same for every
// policy.
type Shape struct {
	Tiers      []TierJobs
	Weights    []Weight
	Partitions []PartitionShape
	// SameAsFifo is set on every policy but fifo.
	SameAsFifo bool
}

// GroupShape is one group of a window: its entitlement and its share of
// the window's work.
type GroupShape struct {
	Name        string
	Entitlement float64 // fraction of the pool
	Work        float64 // fraction of the window's GPU-seconds
}

// WindowShape is the shape of a window's mapping, whatever the policy:
// its groups, largest work first (at most MaxShapeGroups of them, Groups
// counting all), the priority tiers of its queues (trace.QueueTier) and
// of its jobs.
type WindowShape struct {
	Groups    int
	Largest   []GroupShape
	Queues    []trace.QueueTier
	Tiers     []TierJobs
	NoQueue   int // jobs that record no queue (SWF field 15 is −1)
	TotalWork int64
}

// MaxShapeGroups is how many of a window's groups its shape lists.
const MaxShapeGroups = 5

// ShapeOf is w's window shape.
func ShapeOf(w *trace.Workload) WindowShape {
	ws := WindowShape{Groups: len(w.Groups), Queues: w.QueueTiers}
	for g := range w.Groups {
		ws.TotalWork += w.Groups[g].GPUSeconds
	}
	order := make([]int, len(w.Groups))
	for g := range order {
		order[g] = g
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return int(sign(w.Groups[b].GPUSeconds - w.Groups[a].GPUSeconds))
	})
	for _, g := range order[:min(len(order), MaxShapeGroups)] {
		gs := GroupShape{Name: w.Groups[g].Name, Entitlement: w.Groups[g].Share}
		if ws.TotalWork > 0 {
			gs.Work = float64(w.Groups[g].GPUSeconds) / float64(ws.TotalWork)
		}
		ws.Largest = append(ws.Largest, gs)
	}
	ws.Tiers = jobTiers(w)
	for i := range w.Jobs {
		if w.Jobs[i].Queue < 0 {
			ws.NoQueue++
		}
	}
	return ws
}

func sign(x int64) int64 {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

// jobTiers counts w's jobs by the tier priority gives them (a job filed in
// no site queue takes its class's tier), in tier order, the empty tiers
// left out.
func jobTiers(w *trace.Workload) []TierJobs {
	var n [priority.Tiers]int
	// A job's tier is its queue's and class's: found once for each pair
	// (a log has a handful), not once a job (Workload.SiteQueue names the
	// queue anew each time: 8 % of `trace --policy fifo` on a 300k-job
	// log).
	type queueClass struct {
		queue int
		class policy.Class
	}
	// The first few pairs in a list read in order, the rest in a map:
	// hashing each job's pair was 3 % of the process on a 300k-job log.
	type pairTier struct {
		qc   queueClass
		tier int
	}
	var few []pairTier
	var many map[queueClass]int
	for i := range w.Jobs {
		j := &w.Jobs[i]
		qc := queueClass{j.Queue, j.Class}
		t, ok := 0, false
		for _, p := range few {
			if p.qc == qc {
				t, ok = p.tier, true
				break
			}
		}
		if !ok && many != nil {
			t, ok = many[qc]
		}
		if !ok {
			t = int(priority.TierOfClass(j.Class))
			if q := w.SiteQueue(j); q != "" {
				t = int(priority.TierOfQueue(q))
			}
			if len(few) < 16 {
				few = append(few, pairTier{qc, t})
			} else {
				if many == nil {
					many = map[queueClass]int{}
				}
				many[qc] = t
			}
		}
		n[t]++
	}
	var ts []TierJobs
	for t, c := range n {
		if c > 0 {
			ts = append(ts, TierJobs{Tier: priority.Tier(t).String(), Jobs: c})
		}
	}
	return ts
}

// rankedByQueue reports whether a policy orders jobs by their queue's
// tier (and so can be left with one tier).
func rankedByQueue(name string) bool { return name == priority.Name || name == slurm.Name }

// readsShares reports whether a policy reads the groups' entitlements:
// every policy but fifo and priority.
func readsShares(name string) bool { return name != fifo.Name && name != priority.Name }

// runShape is the shape of the run of s on w that replay recorded, a its
// allocator (nil for fifo's exact replay) and same whether its records
// equal fifo's.
func runShape(w *trace.Workload, s Spec, a policy.Allocator, same bool) Shape {
	sh := Shape{SameAsFifo: same}
	if rankedByQueue(s.Policy) {
		sh.Tiers = jobTiers(w)
	}
	if s.Policy == slurm.Name {
		k := slurm.Slot.Get(s.Knobs)
		if k == (slurm.Knobs{}) {
			k = slurm.DefaultKnobs()
		}
		sh.Weights = []Weight{{"age", k.WAge}, {"fairshare", k.WFairshare}, {"job_size", k.WJobSize}, {"partition", k.WPartition}, {"qos", k.WQOS}}
	}
	if core, ok := a.(*baseline.Core); ok {
		if r, ok := core.Rule().(*static.Rule); ok {
			sh.Partitions = partitionShapes(w, core, r)
		}
	}
	return sh
}

// partitionShapes are static's partitions as cut for w's campaigns, each
// against the widest job of its owners in the window.
func partitionShapes(w *trace.Workload, core *baseline.Core, r *static.Rule) []PartitionShape {
	ps := make([]PartitionShape, len(r.Sizes()))
	for p, size := range r.Sizes() {
		ps[p].Size = size
	}
	n := core.NumCampaigns()
	for g := range w.Groups {
		seen := -1
		for _, c := range w.Groups[g].Members {
			if c >= n {
				continue
			}
			if p, _ := r.Partition(policy.CampaignID(c)); p >= 0 && p != seen {
				ps[p].Groups++
				seen = p
			}
		}
	}
	for i := range w.Jobs {
		if c := w.Jobs[i].Campaign; c < n {
			if p, _ := r.Partition(policy.CampaignID(c)); p >= 0 {
				ps[p].Widest = max(ps[p].Widest, w.Jobs[i].GPUs)
			}
		}
	}
	return ps
}

// sameRecords reports whether two replays of one workload scheduled every
// job alike: the same starts, aborted runs, end and state.
func sameRecords(a, b []trace.JobRecord) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.State != y.State || x.End != y.End || !slices.Equal(x.Starts, y.Starts) || !slices.Equal(x.Aborted(), y.Aborted()) {
			return false
		}
	}
	return true
}

// Degenerate is one reason a policy's runs are no comparison, with the
// windows it holds in.
type Degenerate struct {
	Label   string // the spec's label
	Reason  string // ReasonOneTier, ReasonZeroWeights, ReasonOneGroup, ReasonSameAsFifo
	Windows []int  // window indices, ascending
	Detail  string // why, in words
}

// The reasons a run is degenerate.
const (
	ReasonOneTier     = "one tier"
	ReasonZeroWeights = "zero weights"
	ReasonOneGroup    = "one group"
	ReasonSameAsFifo  = "identical to fifo"
)

// FindDegenerate lists every degenerate shape of the study's runs, spec
// by spec in order, each reason once with the windows it holds in.
func FindDegenerate(st *Study, rs []Result) []Degenerate {
	return findDegenerate(st, rs, windowShapes(st))
}

// windowShapes is ShapeOf each of the study's windows.
func windowShapes(st *Study) []WindowShape {
	shapes := make([]WindowShape, len(st.Windows))
	for k := range shapes {
		shapes[k] = ShapeOf(st.Loads[k])
	}
	return shapes
}

// findDegenerate is FindDegenerate with the windows' shapes given: a
// study's outputs read them five times, and each ShapeOf reads every job
// (1.4 % of trace --policy fifo on a 300k-job log each time).
func findDegenerate(st *Study, rs []Result, shapes []WindowShape) []Degenerate {
	nw := len(st.Windows)
	var out []Degenerate
	for si, sp := range st.Specs {
		byReason := map[string]*Degenerate{}
		var order []string
		note := func(reason string, k int, detail string) {
			d, ok := byReason[reason]
			if !ok {
				d = &Degenerate{Label: sp.Label(), Reason: reason, Detail: detail}
				byReason[reason] = d
				order = append(order, reason)
			}
			d.Windows = append(d.Windows, st.Windows[k].Index)
		}
		for k := range nw {
			r := &rs[si*nw+k]
			ws := &shapes[k]
			if rankedByQueue(sp.Policy) && len(r.Shape.Tiers) <= 1 {
				note(ReasonOneTier, k, oneTierWhy(*ws))
			}
			if len(r.Shape.Weights) > 0 && allZero(r.Shape.Weights) {
				note(ReasonZeroWeights, k, "every priority weight is 0: the queue is in submit order")
			}
			if readsShares(sp.Policy) && len(ws.Largest) > 0 && ws.Largest[0].Work >= DominantGroup {
				g := ws.Largest[0]
				note(ReasonOneGroup, k, fmt.Sprintf("%s holds %.1f %% of the work (≥ %.0f %%): shares have nothing to divide", g.Name, 100*g.Work, 100*DominantGroup))
			}
			if r.Shape.SameAsFifo {
				note(ReasonSameAsFifo, k, "every job started and ended as under fifo")
			}
		}
		for _, reason := range order {
			out = append(out, *byReason[reason])
		}
	}
	return out
}

// oneTierWhy says why a window's jobs fall in one tier.
func oneTierWhy(ws WindowShape) string {
	tier := "no"
	if len(ws.Tiers) == 1 {
		tier = ws.Tiers[0].Tier
	}
	switch {
	case len(ws.Queues) == 0:
		return fmt.Sprintf("every job is %s: no job records a queue (SWF field 15 is -1)", tier)
	case len(ws.Queues) == 1:
		return fmt.Sprintf("every job is %s: the log records one queue", tier)
	}
	var by []string
	for _, q := range ws.Queues {
		by = append(by, fmt.Sprintf("%d→%s (%s)", q.Queue, q.Tier, q.By))
	}
	return fmt.Sprintf("every job is %s: the window's jobs use one tier of the log's queues %s; set tiers in the config", tier, strings.Join(by, ", "))
}

func allZero(ws []Weight) bool {
	for _, w := range ws {
		if w.Value != 0 {
			return false
		}
	}
	return true
}

// Flagged is the set of labels FindDegenerate names.
func Flagged(ds []Degenerate) map[string]bool {
	m := map[string]bool{}
	for _, d := range ds {
		m[d.Label] = true
	}
	return m
}
