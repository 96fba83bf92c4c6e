package policy

// Work counts what an allocator did to its pending list, in units that
// do not depend on the machine, its load or the Go release: the same
// calls give the same counts. The scaling test of issue 32
// (tracestudy's TestWorkPerJobScales) bounds their growth per job from
// short to long logs, where a timing on a shared machine could not, and
// docs/traces.md publishes them (§ "Work per job").
//
// Kept only while counting is on (WorkCounter.CountWork), so that a run
// that does not ask pays one predictable test at each counting site and
// no store.
type Work struct {
	// Passes are the admission passes: ticks that tried the pending
	// requests (a quiet tick does not, nor does a skip).
	Passes int64 `json:"passes"`
	// Pending is Σ over the passes of the pending list's length, and
	// Runs Σ over them of its runs: maximal stretches of one campaign
	// and class, which share their sort keys (docs/traces.md).
	Pending int64 `json:"pending"`
	Runs    int64 `json:"runs"`
	// Walked are the pending requests admission looked at: tried one by
	// one (the broker's admitOne, a baseline's Want), or read by a rule
	// walking the whole list to order it (baseline.Queue.Build), or by a
	// kept queue (baseline.Waiting: each request its backfill reads, and
	// each lookup by binary search as one).
	Walked int64 `json:"walked"`
	// RunsRead are the runs whose keys an order check or a sort read
	// (the broker orders its list run by run): a skip over quiet ticks
	// reads them at every step where the order hangs on the tokens. A
	// run passed by on its summary instead of its requests (admission,
	// NextChange, sitemeter's scavenge step) counts one run read. A
	// baseline's kept queue counts here the widths its backfill reads
	// (baseline.Waiting).
	RunsRead int64 `json:"runs_read"`
	// Moved are the pending requests written elsewhere in the list or
	// into a buffer: by sorts, crossings and skips that reorder it, by
	// compaction after grants and expiries, by a removal's shift, and
	// by a copy's (a fair start's fork) clone of the list.
	Moved int64 `json:"moved"`
	// ForkTicks are the ticks a fair start's forks executed (Tick, not
	// skipped), counted by the replay that took them (trace.Replay).
	ForkTicks int64 `json:"fork_ticks"`
}

// Add adds o's counts to w.
func (w *Work) Add(o Work) {
	w.Passes += o.Passes
	w.Pending += o.Pending
	w.Runs += o.Runs
	w.Walked += o.Walked
	w.RunsRead += o.RunsRead
	w.Moved += o.Moved
	w.ForkTicks += o.ForkTicks
}

// Sub is w less o, count by count: the work done since o was read.
func (w Work) Sub(o Work) Work {
	return Work{Passes: w.Passes - o.Passes, Pending: w.Pending - o.Pending, Runs: w.Runs - o.Runs,
		Walked: w.Walked - o.Walked, RunsRead: w.RunsRead - o.RunsRead, Moved: w.Moved - o.Moved, ForkTicks: w.ForkTicks - o.ForkTicks}
}

// Total is the work the scaling test bounds: requests walked, runs
// read, elements moved and the forks' ticks, each a step whose cost does
// not grow with the log.
func (w Work) Total() int64 { return w.Walked + w.RunsRead + w.Moved + w.ForkTicks }

// WorkCounter is an optional Allocator hook: an allocator that counts
// its Work (the broker and the baselines' Core). CountWork turns
// counting on or off (off at New; the counts kept so far stay); Work is
// what was counted. A copy (Clone) counts as the original does, from the
// original's counts.
type WorkCounter interface {
	CountWork(on bool)
	Work() Work
}

// CountWork turns the broker's work counting on or off (WorkCounter).
func (b *Broker) CountWork(on bool) { b.counting = on }

// Work is what the broker counted (WorkCounter).
func (b *Broker) Work() Work { return b.work }

// AddWork adds o to the counts while counting is on: what a wrapper of
// the broker reads of its pending list on its own (sitemeter's scavenge
// step after each admission) is work of the replay as much as the
// broker's.
func (b *Broker) AddWork(o Work) {
	if b.counting {
		b.work.Add(o)
	}
}

// countPass counts an admission pass over the pending list: its length
// and its runs.
func (b *Broker) countPass() {
	b.work.Passes++
	b.work.Pending += int64(b.pendingLen())
	b.work.Runs += int64(len(b.runs))
}

// CountRuns is the number of maximal stretches of list whose elements
// share their campaign and class (of).
func CountRuns[E any](list []E, of func(*E) (CampaignID, Class)) int {
	n := 0
	var pc CampaignID
	var pk Class
	for i := range list {
		c, k := of(&list[i])
		if i == 0 || c != pc || k != pk {
			n++
		}
		pc, pk = c, k
	}
	return n
}
