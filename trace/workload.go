package trace

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/swf"
)

// DefaultBucketHours is the default depth of a trace campaign's GPU bucket,
// in hours of its sustained rate (docs/studies.md §3).
const DefaultBucketHours = 24

// Options are the knobs of §3; the zero value is the spec's default.
type Options struct {
	// ByGroup makes each SWF group one campaign instead of each user.
	ByGroup bool
	// EqualShares gives every campaign the same share instead of its
	// fraction of the trace's GPU-seconds.
	EqualShares bool
	// Pool is the number of GPUs; 0 means the header's MaxProcs (or, where
	// the header has none, MaxNodes).
	Pool int
	// From and Until select the jobs submitted in [From, Until), in seconds
	// after the log's start (SWF field 2); Until 0 means no end.
	From, Until int64
	// BucketHours is B ÷ R of the Bursar envelope; 0 means 24.
	BucketHours float64
	// Classes overrides the class of a queue, by the queue's name in the
	// header (or its number written in decimal where the header names none).
	Classes map[string]policy.Class
}

// Job is one rigid request: GPUs for Run seconds, whole or nothing.
type Job struct {
	Number   int64 // SWF job number
	Submit   int64 // seconds after the log's start
	Run      int64 // real run time, seconds (> 0)
	Estimate int64 // requested time, raised to Run where missing or smaller (§2.1)
	GPUs     int   // requested processors, allocated where requested is −1
	Campaign int   // index into Workload.Campaigns
	Class    policy.Class
	Queue    int // SWF queue number (−1 unknown)
	// User and Group are the SWF user and group ids (fields 12, 13), and
	// LogWait the wait the log itself recorded (field 3, −1 unknown):
	// what the per-job records and docs/studies.md §4.5 report.
	User, Group int
	LogWait     int64
}

// Campaign is one user (or group) of the trace.
type Campaign struct {
	Name string // "user 13", "group 12"
	ID   int    // SWF user (or group) id
	// Group is the index into Workload.Groups of the campaign's group: for a
	// user, the group of most of its GPU-seconds (ties: the lower id); for a
	// group campaign, its own group.
	Group      int
	Share      float64 // sums to 1 over the campaigns
	GPUSeconds int64   // Σ GPUs × Run over its jobs
	Jobs       int
}

// Group is one SWF group: the upper level of the hierarchy.
type Group struct {
	ID      int
	Members []int   // campaign indices, ascending
	Share   float64 // Σ of its members' shares
}

// Workload is a trace as the policies see it.
type Workload struct {
	Name        string // the file name
	Header      *swf.Header
	Pool        int
	BucketHours float64
	Jobs        []Job // by submit time, then job number
	Campaigns   []Campaign
	Groups      []Group
	Skipped     swf.Skips
	Records     int // records read in the window, kept or skipped
}

// maxTime bounds submit times and estimates (about 35,000 years), so that
// no sum of times in a replay can overflow.
const maxTime = 1 << 40

// traceClasses are the classes a trace job may have (§3).
var traceClasses = [3]policy.Class{policy.Interactive, policy.AgentBurst, policy.Opportunistic}

// ClassOfQueue is the service class of a queue named name (§3):
// interactive and express queues are interactive, standby is
// opportunistic, every other queue (and an unnamed one) is burst.
func ClassOfQueue(name string) policy.Class {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "interactive", "express":
		return policy.Interactive
	case "standby":
		return policy.Opportunistic
	}
	return policy.AgentBurst
}

// Load reads the log at path (plain or gzip) into a workload.
func Load(path string, opt Options) (*Workload, error) {
	r, c, err := swf.Open(path)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return Read(r, opt)
}

// Read builds the workload from a log being read.
func Read(r *swf.Reader, opt Options) (*Workload, error) {
	h := r.Header()
	pool := opt.Pool
	if pool < 0 {
		return nil, fmt.Errorf("%s: pool %d: must be positive", r.Name(), pool)
	}
	if pool == 0 {
		pool = h.MaxProcs
		if pool <= 0 {
			pool = h.MaxNodes
		}
		if pool <= 0 {
			return nil, fmt.Errorf("%s: the header gives neither MaxProcs nor MaxNodes: set the pool", r.Name())
		}
	}
	bh := opt.BucketHours
	if bh == 0 {
		bh = DefaultBucketHours
	}
	if !(bh > 0) || math.IsInf(bh, 0) {
		return nil, fmt.Errorf("%s: bucket hours %v: must be a positive number", r.Name(), bh)
	}
	// In name order, so that the error names the same queue every time.
	for _, q := range slices.Sorted(maps.Keys(opt.Classes)) {
		if c := opt.Classes[q]; !slices.Contains(traceClasses[:], c) {
			return nil, fmt.Errorf("%s: queue %q: class %v: a trace job is interactive, agent-burst or opportunistic", r.Name(), q, c)
		}
	}
	if opt.Until != 0 && opt.Until <= opt.From {
		return nil, fmt.Errorf("%s: window [%d, %d): empty", r.Name(), opt.From, opt.Until)
	}
	queueClass := func(q int) policy.Class {
		name := h.QueueName(q)
		key := name
		if key == "" {
			key = fmt.Sprint(q)
		}
		if c, ok := opt.Classes[key]; ok {
			return c
		}
		return ClassOfQueue(name)
	}
	w := &Workload{Name: r.Name(), Header: h, Pool: pool, BucketHours: bh}
	type row struct {
		job Job
		own owner
	}
	// MaxRecords is a capacity hint only, bounded so that a lying header
	// cannot make us allocate much.
	rows := make([]row, 0, min(max(h.MaxRecords, 0), 1<<20))
	sorted := true
	for {
		j, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if j.Submit < opt.From || (opt.Until != 0 && j.Submit >= opt.Until) {
			continue
		}
		w.Records++
		if why := swf.Check(&j, pool); why != swf.Keep {
			w.Skipped.Add(why)
			continue
		}
		if j.Submit > maxTime || j.Estimate() > maxTime {
			return nil, fmt.Errorf("%s:%d: job %d: submit time %d or estimate %d beyond %d s: not a real log", r.Name(), r.Line(), j.Number, j.Submit, j.Estimate(), int64(maxTime))
		}
		if n := len(rows); n > 0 {
			p := &rows[n-1].job
			sorted = sorted && (p.Submit < j.Submit || (p.Submit == j.Submit && p.Number < j.Number))
		}
		rows = append(rows, row{
			job: Job{
				Number: j.Number, Submit: j.Submit, Run: j.Run, Estimate: j.Estimate(),
				GPUs: j.Procs(), Class: queueClass(j.Queue), Queue: j.Queue,
				User: j.User, Group: j.Group, LogWait: j.Wait,
			},
			own: owner{j.User, j.Group},
		})
	}
	// Submit order, ties by job number (§2.1). PWA logs are in that order
	// already; others are sorted, stably so that equal keys keep file order.
	if !sorted {
		slices.SortStableFunc(rows, func(a, b row) int {
			if a.job.Submit != b.job.Submit {
				return cmpInt(a.job.Submit, b.job.Submit)
			}
			return cmpInt(a.job.Number, b.job.Number)
		})
	}
	w.Jobs = make([]Job, len(rows))
	own := make([]owner, len(rows))
	for i := range rows {
		w.Jobs[i], own[i] = rows[i].job, rows[i].own
	}
	if err := w.buildCampaigns(own, opt); err != nil {
		return nil, err
	}
	return w, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// owner is the SWF user and group of one kept job.
type owner struct{ user, group int }

func (w *Workload) buildCampaigns(own []owner, opt Options) error {
	// Campaign ids and group ids in ascending order.
	ids := make([]int, 0, len(own))
	gids := make([]int, 0, len(own))
	for _, o := range own {
		id := o.user
		if opt.ByGroup {
			id = o.group
		}
		ids = append(ids, id)
		gids = append(gids, o.group)
	}
	ids = sortedUnique(ids)
	gids = sortedUnique(gids)
	w.Campaigns = make([]Campaign, len(ids))
	w.Groups = make([]Group, len(gids))
	for i, id := range ids {
		kind := "user"
		if opt.ByGroup {
			kind = "group"
		}
		w.Campaigns[i] = Campaign{Name: fmt.Sprintf("%s %d", kind, id), ID: id}
	}
	for i, g := range gids {
		w.Groups[i] = Group{ID: g}
	}
	// GPU-seconds by campaign and by (campaign, group), for the user's group.
	byGroup := make([][]int64, len(ids))
	var total int64
	for i := range w.Jobs {
		j := &w.Jobs[i]
		id := own[i].user
		if opt.ByGroup {
			id = own[i].group
		}
		c, _ := slices.BinarySearch(ids, id)
		g, _ := slices.BinarySearch(gids, own[i].group)
		j.Campaign = c
		gs := int64(j.GPUs) * j.Run
		w.Campaigns[c].GPUSeconds += gs
		w.Campaigns[c].Jobs++
		total += gs
		if byGroup[c] == nil {
			byGroup[c] = make([]int64, len(gids))
		}
		byGroup[c][g] += gs
	}
	for c := range w.Campaigns {
		best := 0
		for g, v := range byGroup[c] {
			if v > byGroup[c][best] {
				best = g
			}
		}
		w.Campaigns[c].Group = best
		w.Groups[best].Members = append(w.Groups[best].Members, c)
		if opt.EqualShares {
			w.Campaigns[c].Share = 1 / float64(len(ids))
		} else {
			w.Campaigns[c].Share = float64(w.Campaigns[c].GPUSeconds) / float64(total)
		}
		w.Groups[best].Share += w.Campaigns[c].Share
	}
	// A user whose GPU-seconds all went to other groups leaves a group empty;
	// a group without members is not part of the hierarchy.
	kept := w.Groups[:0]
	remap := make([]int, len(w.Groups))
	for g := range w.Groups {
		remap[g] = -1
		if len(w.Groups[g].Members) > 0 {
			remap[g] = len(kept)
			kept = append(kept, w.Groups[g])
		}
	}
	w.Groups = kept
	for c := range w.Campaigns {
		w.Campaigns[c].Group = remap[w.Campaigns[c].Group]
	}
	if len(w.Jobs) == 0 {
		return errors.New(w.Name + ": no replayable job in the window")
	}
	return nil
}

func sortedUnique(xs []int) []int {
	slices.Sort(xs)
	return slices.Compact(xs)
}

// Envelope is campaign c's Bursar envelope (docs/studies.md §3): no guarantee
// (g = 0), sustained rate R = share × pool, burst ceiling = the pool, bucket
// B = R × BucketHours × 3600 GPU-seconds, class burst (each request carries
// its job's own class), and a credit budget that never binds: the whole
// pool for the whole trace span plus a day, at the highest class price (4
// per GPU-hour). Trace users are not metered on io or inference.
//
// A rigid job maps to one request of exactly GPUs for Run seconds, granted
// whole or not at all (§6.1); the lease it gets is released at grant +
// Run (its real end, known to the replay), while Estimate is what
// backfilling believes. A preempted job is requeued with its submit time
// and restarts from zero (§6.7).
func (w *Workload) Envelope(c int) policy.Envelope {
	r := w.Campaigns[c].Share * float64(w.Pool)
	first, last := w.Span()
	hours := float64(last-first)/3600 + 24
	return policy.Envelope{
		Name:         w.Campaigns[c].Name,
		Budget:       float64(w.Pool) * hours * 4,
		Guaranteed:   0,
		Sustained:    r,
		BurstCeiling: w.Pool,
		Bucket:       r * w.BucketHours * 3600,
		Class:        policy.AgentBurst,
	}
}

// Span is the first submit time and the latest possible end (every job run
// back to back after the last submit would end later, but no job can end
// before its submit + run): [first submit, max(submit + run)].
func (w *Workload) Span() (first, last int64) {
	if len(w.Jobs) == 0 {
		return 0, 0
	}
	first = w.Jobs[0].Submit
	for i := range w.Jobs {
		last = max(last, w.Jobs[i].Submit+w.Jobs[i].Run)
	}
	return first, last
}
