package trace

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/bursar-hpc/bursar/policy/priority"
	"github.com/bursar-hpc/bursar/swf"
)

// How a queue's priority tier was found (QueueTier.By; docs/traces.md,
// "Priority tiers").
const (
	// TierByName: the header names the queue after a tier.
	TierByName = "name"
	// TierByDefault: the log names some queue after a tier but not this
	// one; it is normal, as a job in no queue is.
	TierByDefault = "default"
	// TierByRunTime: no queue of the log carries a tier's name, so the
	// queues are ranked by the longest time a job of theirs recorded,
	// shorter first.
	TierByRunTime = "max run time"
	// TierByConfig: the mapping's `tiers` set it.
	TierByConfig = "config"
)

// QueueTier is one queue of a log and the priority tier its jobs take.
type QueueTier struct {
	Queue int    // SWF queue number (field 15)
	Name  string // the header's name, "" where it names none
	// MaxTime is the longest time a replayable job of the queue recorded
	// over the whole log: requested (field 9) or run (field 4), whichever
	// is longer (swf.Job.Estimate).
	MaxTime int64
	Tier    string // the tier's name (priority.Tier)
	By      string // TierByName, TierByDefault, TierByRunTime or TierByConfig
}

// IsTierName reports whether name is a priority tier's, as a config
// writes it (case and surrounding space ignored).
func IsTierName(name string) bool {
	name = strings.TrimSpace(name)
	for t := range priority.Tiers {
		if strings.EqualFold(name, t.String()) {
			return true
		}
	}
	return false
}

func tierNames() []string {
	var ns []string
	for t := range priority.Tiers {
		ns = append(ns, t.String())
	}
	return ns
}

// rankedTiers are the tiers the max-run-time rule hands out, shortest
// queue first: interactive and standby stay for queues a log or a config
// names so.
var rankedTiers = []priority.Tier{priority.TierExpress, priority.TierHigh, priority.TierNormal, priority.TierLow}

// AssignTiers gives each queue of maxTime (queue number → its longest
// recorded time over the whole log) its priority tier (docs/traces.md,
// "Priority tiers"), in queue order. A queue the header names after a
// tier takes that tier. Where the log names at least one queue so, any
// other queue is normal (SDSC-SP2's No_Class). Where it names none — a
// log whose queues are numbered — the queues are ranked by their longest
// recorded time, shorter first (a site gives its short queues the higher
// priority), equal times sharing a rank, and rank r of m distinct times
// takes rankedTiers[⌊4r ÷ m⌋]; a lone time is normal. overrides (queue
// name, or number in decimal where the header names none → tier name)
// win over both. A site's queue limits are configured before any job
// runs, so the whole log's longest time, their nearest record, reads no
// job's future demand.
func AssignTiers(h *swf.Header, maxTime map[int]int64, overrides map[string]string) []QueueTier {
	qs := make([]QueueTier, 0, len(maxTime))
	named := false
	for _, q := range slices.Sorted(maps.Keys(maxTime)) {
		qt := QueueTier{Queue: q, MaxTime: maxTime[q]}
		if h != nil {
			qt.Name = strings.TrimSpace(h.QueueName(q))
		}
		if IsTierName(qt.Name) {
			qt.Tier, qt.By = priority.TierOfQueue(qt.Name).String(), TierByName
			named = true
		}
		qs = append(qs, qt)
	}
	if named {
		for i := range qs {
			if qs[i].By == "" {
				qs[i].Tier, qs[i].By = priority.TierNormal.String(), TierByDefault
			}
		}
	} else {
		var times []int64
		for i := range qs {
			times = append(times, qs[i].MaxTime)
		}
		slices.Sort(times)
		times = slices.Compact(times)
		for i := range qs {
			t := priority.TierNormal
			if len(times) > 1 {
				r, _ := slices.BinarySearch(times, qs[i].MaxTime)
				t = rankedTiers[r*len(rankedTiers)/len(times)]
			}
			qs[i].Tier, qs[i].By = t.String(), TierByRunTime
		}
	}
	for i := range qs {
		key := qs[i].Name
		if key == "" {
			key = fmt.Sprint(qs[i].Queue)
		}
		if t, ok := overrides[key]; ok {
			qs[i].Tier, qs[i].By = priority.TierOfQueue(t).String(), TierByConfig
		}
	}
	return qs
}
