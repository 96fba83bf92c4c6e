package trace

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/bursar-hpc/bursar/platform"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/swf"
)

// DefaultBucketHours is the depth of a trace campaign's GPU bucket, in
// hours of its sustained rate, under revision 1's mapping (`bucket:
// hours:24`, docs/studies.md §3); the default is BucketLargestJob.
const DefaultBucketHours = 24

// BucketLargestJob is the `bucket` knob's default (docs/studies.md §3.2,
// §6.18): each campaign's bucket is deep enough for the largest of its
// jobs in the window. The other form is "hours:N".
const BucketLargestJob = "largest-job"

// ParseBucket reads the `bucket` knob: "" or "largest-job" (0: the
// largest job), or "hours:N" (N > 0 hours of the campaign's R).
func ParseBucket(s string) (hours float64, err error) {
	switch {
	case s == "" || s == BucketLargestJob:
		return 0, nil
	case strings.HasPrefix(s, "hours:"):
		h, err := strconv.ParseFloat(strings.TrimPrefix(s, "hours:"), 64)
		if err != nil || !(h > 0) || math.IsInf(h, 0) {
			return 0, fmt.Errorf("bucket %q: hours must be a positive number", s)
		}
		return h, nil
	}
	return 0, fmt.Errorf("bucket %q: want %s or hours:N", s, BucketLargestJob)
}

// Options are the knobs of §3; the zero value is the spec's default.
type Options struct {
	// ByGroup makes each SWF group one campaign instead of each (user,
	// group) pair.
	ByGroup bool
	// UserCampaigns is revision 1's mapping: one campaign per user, placed
	// in the group of most of its GPU-seconds in the window (ties: the
	// earlier group), named `user 13`. With Shares: ShareUsers it is
	// revision 1's workload exactly, which the README's revision-1
	// findings were measured on.
	UserCampaigns bool `json:",omitempty"`
	// Shares is how entitlements are set (docs/studies.md §1; the
	// ShareMode constants); "" means ShareLookback.
	Shares ShareMode `json:",omitempty"`
	// Lookback is how far before the window ShareLookback reads the
	// log's own record, in seconds; 0 means DefaultLookback.
	Lookback int64 `json:",omitempty"`
	// LookbackBefore is where that record ends: the window's start T
	// when the replay begins earlier, at a lead-in (the jobs of [From,
	// T) are replayed and in the record too); 0 means From. The mapping
	// is then the window's [T, Until), as without a lead-in
	// (Workload.WindowFrom): the lead-in adds jobs, not entitlements.
	LookbackBefore int64 `json:",omitempty"`
	// Meter is what Bursar meters on a trace (docs/studies.md §3.2): ""
	// or MeterGroup (the default), one metered campaign per group, the
	// account a site budgets; MeterUser, each campaign its own, with its
	// share of the group's entitlement (revision 2). Only Bursar reads it.
	Meter string `json:",omitempty"`
	// Restart is the study's restart rule for every policy's preempted
	// jobs where the mapping gives one (docs/studies.md §6.7; "" is the
	// default on an SWF log, `zero`): the replays read it from the
	// policies' knobs (registry.Knobs.Restart); it is here so that a run's
	// inputs record it.
	Restart string `json:",omitempty"`
	// Pool is the number of GPUs; 0 means the header's MaxProcs (or, where
	// the header has none, MaxNodes).
	Pool int
	// From and Until select the jobs submitted in [From, Until), in seconds
	// after the log's start (SWF field 2); Until 0 means no end.
	From, Until int64
	// Bucket is the Bursar envelope's bucket rule (ParseBucket): "" or
	// "largest-job" (the default), or "hours:N" for B = R × N hours.
	Bucket string `json:",omitempty"`
	// Classes overrides the class of a queue, by the queue's name in the
	// header (or its number written in decimal where the header names none).
	Classes map[string]policy.Class
	// Tiers overrides the priority tier of a queue, keyed as Classes, by a
	// tier's name (priority.Tier: interactive, express, high, normal,
	// low, standby). Without it a queue's tier is its name's, or the
	// max-run-time rule's (QueueTiers).
	Tiers map[string]string `json:",omitempty"`
	// Platform, if set, is the machine's nodes (docs/platform.md): its
	// GPUs are the pool (Pool must be 0 or the same), a job's processors
	// become GPUs seated on them, and every replay of the workload
	// schedules on them (Workload.Platform).
	Platform *platform.Spec `json:",omitempty"`
}

// The `meter` knob's values (Options.Meter).
const (
	MeterGroup = "group"
	MeterUser  = "user"
)

// ShareMode is the `shares` knob: how a trace's groups and campaigns are
// entitled to the pool (docs/studies.md §1). In every mode but users, a
// group's members split its entitlement equally.
type ShareMode string

// The share modes.
const (
	// ShareLookback (the default): each group is entitled to its fraction
	// of the GPU-seconds the log records in the lookback before the
	// window (jobs submitted in [From − Lookback, From), every record the
	// pool can run), and Bursar's largest-job bucket is taken over those
	// jobs too: what a site knows when the window starts, nothing after
	// it (docs/studies.md §1, "No default reads the future"). The
	// fractions are taken over the groups that submit in the window, so
	// that they sum to 1; a group with no work in the lookback is
	// entitled to nothing (it runs on idle GPUs only), and where none of
	// them has any (a window at the log's start) every group gets the
	// same share, Slurm's default of one raw share per account.
	ShareLookback ShareMode = "lookback"
	// ShareGroups (an oracle, labelled so): each group is entitled to its
	// fraction of the whole log's GPU-seconds (every record of the file
	// that the pool can run, inside the window or not, after it too). The
	// fractions are taken over the groups that submit in the window, so
	// that they sum to 1.
	ShareGroups ShareMode = "groups"
	// ShareWindow (an oracle, labelled so): each group its fraction of the
	// window's GPU-seconds.
	ShareWindow ShareMode = "window"
	// ShareUsers (revision 1): each campaign its own fraction of the
	// window's GPU-seconds; a group is entitled to the sum of its members'.
	ShareUsers ShareMode = "users"
	// ShareEqualGroups: every group the same.
	ShareEqualGroups ShareMode = "equal-groups"
	// ShareEqualUsers: every campaign the same; a group the sum of its
	// members'.
	ShareEqualUsers ShareMode = "equal-users"
)

// ShareModes lists the modes, the default first.
var ShareModes = []ShareMode{ShareLookback, ShareGroups, ShareWindow, ShareUsers, ShareEqualGroups, ShareEqualUsers}

// DefaultLookback is ShareLookback's default lookback: 90 days, the
// least docs/studies.md §1 allows.
const DefaultLookback = 90 * Day

// Oracle reports whether mode reads the log after the window's start
// (the whole log's or the window's own work): a labelled oracle, never a
// default.
func (m ShareMode) Oracle() bool { return m == ShareGroups || m == ShareWindow || m == ShareUsers }

// LookbackSpan is how much of the log before a window opt's shares read:
// the lookback under ShareLookback ("" included), else 0. Windows of a
// study start at least this long after the log's first submit.
func (o Options) LookbackSpan() int64 {
	if o.Shares != "" && o.Shares != ShareLookback {
		return 0
	}
	if o.Lookback > 0 {
		return o.Lookback
	}
	return DefaultLookback
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

// Campaign is one (user, group) pair of the trace, as a Slurm association
// is (a user who submits under two groups is two campaigns), or with
// Options.ByGroup one group.
type Campaign struct {
	// Name is "user 13/group 12"; "user 13" where the log gives the job no
	// group (the user is its own group); "group 12" with ByGroup.
	Name string
	ID   int // SWF user id (group id with ByGroup)
	// Group is the index into Workload.Groups of the campaign's group.
	Group int
	// Share is the campaign's entitlement, a fraction of the pool: its
	// group's split equally among the group's members (docs/studies.md §1),
	// or its own under ShareUsers and ShareEqualUsers. It sums to 1 over
	// the campaigns. Bursar's R is Share × pool but under ShareWindow
	// (Workload.Rate).
	Share      float64
	GPUSeconds int64 // Σ GPUs × Run over its jobs in the window (a lead-in's left out)
	Jobs       int   // its jobs replayed, a lead-in's included
}

// Group is one group (SWF field 13, or a user where the log gives none):
// the upper level of the hierarchy.
type Group struct {
	// ID is the SWF group id, or for a user standing as its own group the
	// user id (then User is true).
	ID   int
	User bool
	Name string // "group 12", "user 13"
	// Members are campaign indices, ascending.
	Members []int
	// Share is the group's entitlement, a fraction of the pool; it sums
	// to 1 over the groups, and its members' shares sum to it.
	Share float64
	// GPUSeconds are its jobs' in the window (a lead-in's left out,
	// Workload.WindowFrom), LogGPUSeconds in the whole log (every record
	// the pool can run), LookbackGPUSeconds in ShareLookback's record
	// before the window.
	GPUSeconds, LogGPUSeconds, LookbackGPUSeconds int64
}

// Workload is a trace as the policies see it.
type Workload struct {
	Name   string // the file name
	Header *swf.Header
	Pool   int
	// BucketHours is B ÷ R of the Bursar envelope, in hours; 0 is the
	// largest-job bucket (Options.Bucket).
	BucketHours float64
	// Shares is the entitlement rule the workload was read with
	// (Options.Shares, ShareLookback where it gives none; "" in a
	// workload built by hand, read as ShareGroups). It decides how
	// Bursar's R is split inside a group (Rate) and which jobs its
	// largest-job bucket is taken over (bucketJobs).
	Shares ShareMode
	// LookbackFrom is where ShareLookback's record starts (the window's
	// From less the lookback, at least the log's first submit), and
	// LookbackJobs the replayable jobs submitted in it before From; both
	// 0 under every other rule.
	LookbackFrom int64
	LookbackJobs int
	// WindowFrom is where the window proper starts when the replay
	// begins earlier, at a lead-in (Options.LookbackBefore); 0: the
	// window is every job. The mapping is then the window proper's, as
	// a replay of it without the lead-in has it (docs/studies.md §4.5):
	// the entitlements are normalised over the groups and campaigns
	// that submit in it, and the GPU-seconds, the window shares, the
	// oracles' largest-job buckets and the groups' widest jobs are its
	// jobs'. A group or campaign that submits only in the lead-in is
	// entitled to nothing (share 0, as a group with no record in the
	// lookback is): its jobs are replayed and charged to it, and it
	// takes no share of the pool from those that submit in the window.
	WindowFrom int64
	// lookback are those jobs, for the largest-job bucket (bucketJobs).
	lookback []sized
	// Meter is Options.Meter, checked: MeterGroup or MeterUser.
	Meter     string
	Jobs      []Job // by submit time, then job number
	Campaigns []Campaign
	Groups    []Group
	Skipped   swf.Skips
	Records   int // records read in the window, kept or skipped
	// QueueTiers is every queue the log's replayable jobs name, by
	// number, with the priority tier its jobs take (AssignTiers).
	QueueTiers []QueueTier
	// Platform is Options.Platform: the nodes every replay of the
	// workload schedules on (nil: the pool is a number).
	Platform *platform.Spec
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
	if p := opt.Platform; p != nil {
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("%s: platform: %w", r.Name(), err)
		}
		if pool != 0 && pool != p.GPUs() {
			return nil, fmt.Errorf("%s: pool %d, platform %s of %d GPUs: a platform's GPUs are the pool", r.Name(), pool, p, p.GPUs())
		}
		pool = p.GPUs()
	}
	if pool == 0 {
		pool = h.MaxProcs
		if pool <= 0 {
			pool = h.MaxNodes
		}
		if pool <= 0 {
			// A file that is no SWF log at all (a text file given by
			// mistake) has no header either: say what is wrong with its
			// first record before asking for a pool it does not need.
			if _, err := r.Next(); err != nil && err != io.EOF {
				return nil, err
			}
			return nil, fmt.Errorf("%s: the header gives neither MaxProcs nor MaxNodes: set the pool", r.Name())
		}
	}
	bh, err := ParseBucket(opt.Bucket)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.Name(), err)
	}
	// In name order, so that the error names the same queue every time.
	for _, q := range slices.Sorted(maps.Keys(opt.Classes)) {
		if c := opt.Classes[q]; !slices.Contains(traceClasses[:], c) {
			return nil, fmt.Errorf("%s: queue %q: class %v: a trace job is interactive, agent-burst or opportunistic", r.Name(), q, c)
		}
	}
	for _, q := range slices.Sorted(maps.Keys(opt.Tiers)) {
		if t := opt.Tiers[q]; !IsTierName(t) {
			return nil, fmt.Errorf("%s: queue %q: tier %q: want one of %s", r.Name(), q, t, strings.Join(tierNames(), ", "))
		}
	}
	if opt.Shares != "" && !slices.Contains(ShareModes, opt.Shares) {
		return nil, fmt.Errorf("%s: shares %q: want one of %s", r.Name(), opt.Shares, joinModes())
	}
	meter := opt.Meter
	switch meter {
	case "":
		meter = MeterGroup
	case MeterGroup, MeterUser:
	default:
		return nil, fmt.Errorf("%s: meter %q: want %s or %s", r.Name(), opt.Meter, MeterGroup, MeterUser)
	}
	if opt.Until != 0 && opt.Until <= opt.From {
		return nil, fmt.Errorf("%s: window [%d, %d): empty", r.Name(), opt.From, opt.Until)
	}
	// Each queue's class, found once: a log has a handful of queues and
	// tens of thousands of jobs. Small queue numbers in a table, the rest
	// in a map: hashing every job's queue was 0.5 % of `trace --policy
	// fifo` on a 300k-job log.
	classOf := map[int]policy.Class{}
	var small [64]struct {
		known bool
		class policy.Class
	}
	queueClass := func(q int) policy.Class {
		if q >= 0 && q < len(small) && small[q].known {
			return small[q].class
		}
		if c, ok := classOf[q]; ok {
			return c
		}
		name := h.QueueName(q)
		key := name
		if key == "" {
			key = fmt.Sprint(q)
		}
		if c, ok := opt.Classes[key]; ok {
			return c
		}
		c := ClassOfQueue(name)
		classOf[q] = c
		if q >= 0 && q < len(small) {
			small[q].known, small[q].class = true, c
		}
		return c
	}
	w := &Workload{Name: r.Name(), Header: h, Pool: pool, BucketHours: bh, Meter: meter, Platform: opt.Platform}
	var kept keptJobs
	sorted := true
	// The whole log's GPU-seconds by group (by the user where the job has
	// no group), for ShareGroups.
	var groupGS, userGS byID
	// The whole log's longest recorded time by queue, for the tiers of
	// queues without a tier's name (AssignTiers).
	var qmax byID
	// ShareLookback's record: the jobs submitted in [T − span, T), T the
	// window's start (From, or LookbackBefore after a lead-in).
	span := opt.LookbackSpan()
	lbEnd := opt.From
	if opt.LookbackBefore > 0 {
		lbEnd = opt.LookbackBefore
	}
	var lb []lookbackJob
	firstSubmit := int64(-1)
	for {
		j, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		why := swf.Check(&j, pool)
		if why == swf.Keep {
			if g := groupOf(owner{j.User, j.Group}); g.user {
				userGS.add(g.id, int64(j.Procs())*j.Run)
			} else {
				groupGS.add(g.id, int64(j.Procs())*j.Run)
			}
			if j.Queue >= 0 {
				qmax.atLeast(j.Queue, j.Estimate())
			}
			if firstSubmit < 0 || j.Submit < firstSubmit {
				firstSubmit = j.Submit
			}
			if span > 0 && j.Submit < lbEnd && j.Submit >= lbEnd-span {
				lb = append(lb, lookbackJob{owner{j.User, j.Group}, sized{gpus: j.Procs(), estimate: j.Estimate()}, int64(j.Procs()) * j.Run})
			}
		}
		if j.Submit < opt.From || (opt.Until != 0 && j.Submit >= opt.Until) {
			continue
		}
		w.Records++
		if why != swf.Keep {
			w.Skipped.Add(why)
			continue
		}
		if j.Submit > maxTime || j.Estimate() > maxTime {
			return nil, fmt.Errorf("%s:%d: job %d: submit time %d or estimate %d beyond %d s: not a real log", r.Name(), r.Line(), j.Number, j.Submit, j.Estimate(), int64(maxTime))
		}
		if p := kept.last(); p != nil {
			sorted = sorted && (p.submit < j.Submit || (p.submit == j.Submit && p.number < j.Number))
		}
		// The widths, queue, user and group are 32-bit fields of the log
		// (swf checks their range).
		kept.add(keptJob{
			number: j.Number, submit: j.Submit, run: j.Run, estimate: j.Estimate(), logWait: j.Wait,
			gpus: int32(j.Procs()), queue: int32(j.Queue), user: int32(j.User), group: int32(j.Group),
		})
	}
	jobs, own := kept.table(queueClass)
	// Submit order, ties by job number (§2.1). PWA logs are in that order
	// already; others are sorted, stably so that equal keys keep file order.
	if !sorted {
		slices.SortStableFunc(jobs, func(a, b Job) int {
			if a.Submit != b.Submit {
				return cmpInt(a.Submit, b.Submit)
			}
			return cmpInt(a.Number, b.Number)
		})
		for i := range jobs {
			own[i] = owner{jobs[i].User, jobs[i].Group}
		}
	}
	w.Jobs = jobs
	w.QueueTiers = AssignTiers(h, qmax.table(), opt.Tiers)
	if span > 0 {
		w.LookbackFrom = max(lbEnd-span, firstSubmit, 0)
	}
	if opt.LookbackBefore > opt.From {
		w.WindowFrom = opt.LookbackBefore
	}
	logGS := map[groupKey]int64{}
	for id, gs := range groupGS.table() {
		logGS[groupKey{id: id}] = gs
	}
	for id, gs := range userGS.table() {
		logGS[groupKey{user: true, id: id}] = gs
	}
	if err := w.buildCampaigns(own, opt, logGS, lb); err != nil {
		return nil, err
	}
	return w, nil
}

// byID is an int64 for each id seen, ids being a log's users, groups or
// queues: in a slice indexed by the id where it is small, as a log's are,
// in a map otherwise. A map's hashing for every job of the log was 1.5 %
// of `trace --policy fifo` on a 300k-job log.
type byID struct {
	v     []int64
	seen  []bool
	large map[int]int64
}

// maxSmallID bounds the ids byID keeps in its slice.
const maxSmallID = 1 << 16

// slot is the value of id in the slice, nil for an id the slice does not
// take; it marks id seen.
func (b *byID) slot(id int) *int64 {
	if id < 0 || id >= maxSmallID {
		return nil
	}
	if id >= len(b.v) {
		n := max(id+1, 2*len(b.v), 64)
		b.v = append(b.v, make([]int64, n-len(b.v))...)
		b.seen = append(b.seen, make([]bool, n-len(b.seen))...)
	}
	b.seen[id] = true
	return &b.v[id]
}

// add adds x to id's value.
func (b *byID) add(id int, x int64) {
	if p := b.slot(id); p != nil {
		*p += x
		return
	}
	if b.large == nil {
		b.large = map[int]int64{}
	}
	b.large[id] += x
}

// atLeast raises id's value to x (from 0 for an id not seen yet).
func (b *byID) atLeast(id int, x int64) {
	if p := b.slot(id); p != nil {
		*p = max(*p, x)
		return
	}
	if b.large == nil {
		b.large = map[int]int64{}
	}
	b.large[id] = max(b.large[id], x)
}

// table is every id seen and its value.
func (b *byID) table() map[int]int64 {
	t := make(map[int]int64, len(b.large))
	for id, ok := range b.seen {
		if ok {
			t[id] = b.v[id]
		}
	}
	for id, x := range b.large {
		t[id] = x
	}
	return t
}

// keptJob is one replayable job of the window as Read keeps it until the
// workload's table is built: the log's fields a Job takes, compact (40
// bytes of times and 16 of 32-bit widths and ids, no pointers), the class
// and campaign found later.
type keptJob struct {
	number, submit, run, estimate, logWait int64
	gpus, queue, user, group               int32
}

// keptBlock is how many kept jobs one block holds: 224 KiB.
const keptBlock = 4096

// keptJobs are the kept jobs in read order, in fixed-size blocks, so that
// reading a log never copies what it has read (a slice grown by appending
// copied a 300k-job table over and over: 135 MB allocated for 26 MB) and
// the workload's table is allocated once, at its length (table).
type keptJobs struct {
	blocks [][]keptJob
	n      int
}

func (k *keptJobs) add(j keptJob) {
	if k.n%keptBlock == 0 {
		k.blocks = append(k.blocks, make([]keptJob, 0, keptBlock))
	}
	b := &k.blocks[len(k.blocks)-1]
	*b = append(*b, j)
	k.n++
}

// last is the job added last, nil before the first.
func (k *keptJobs) last() *keptJob {
	if k.n == 0 {
		return nil
	}
	b := k.blocks[len(k.blocks)-1]
	return &b[len(b)-1]
}

// table builds the workload's jobs in place, each block let go once
// copied, and each job's owner (user, group) beside it; classOf is the
// class of a queue.
func (k *keptJobs) table(classOf func(queue int) policy.Class) ([]Job, []owner) {
	jobs := make([]Job, k.n)
	own := make([]owner, k.n)
	i := 0
	for bi, b := range k.blocks {
		for _, r := range b {
			j := &jobs[i]
			j.Number, j.Submit, j.Run, j.Estimate, j.LogWait = r.number, r.submit, r.run, r.estimate, r.logWait
			j.GPUs, j.Queue, j.User, j.Group = int(r.gpus), int(r.queue), int(r.user), int(r.group)
			j.Class = classOf(j.Queue)
			own[i] = owner{j.User, j.Group}
			i++
		}
		k.blocks[bi] = nil
	}
	k.blocks, k.n = nil, 0
	return jobs, own
}

// lookbackJob is one job of ShareLookback's record: its owner, its size
// for the largest-job bucket and its GPU-seconds.
type lookbackJob struct {
	owner owner
	size  sized
	gs    int64
}

// sized is one job as the largest-job bucket reads it: its campaign and
// group (−1 where the window has none), its GPUs and its estimate.
type sized struct {
	campaign, group int
	gpus            int
	estimate        int64
}

func joinModes() string {
	s := make([]string, len(ShareModes))
	for i, m := range ShareModes {
		s[i] = string(m)
	}
	return strings.Join(s, ", ")
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

// groupKey names a group: an SWF group id, or (user) a user standing as
// its own group where the log gives the job none (a negative group).
type groupKey struct {
	user bool
	id   int
}

func groupOf(o owner) groupKey {
	if o.group < 0 {
		return groupKey{user: true, id: o.user}
	}
	return groupKey{id: o.group}
}

func (g groupKey) name() string {
	if g.user {
		return fmt.Sprintf("user %d", g.id)
	}
	return fmt.Sprintf("group %d", g.id)
}

func cmpGroup(a, b groupKey) int {
	if a.user != b.user {
		if !a.user {
			return -1
		}
		return 1
	}
	return cmp.Compare(a.id, b.id)
}

// campKey names a campaign: a (user, group) pair, or with ByGroup a group
// (user −1).
type campKey struct {
	group groupKey
	user  int
}

func cmpCamp(a, b campKey) int {
	if c := cmp.Compare(a.user, b.user); c != 0 {
		return c
	}
	return cmpGroup(a.group, b.group)
}

// buildCampaigns makes the campaigns (sorted by user, then group) and the
// groups (sorted by id, the users standing as groups last) of the jobs
// owned by own, and their entitlements by opt.Shares; logGS is the whole
// log's GPU-seconds by group (nil: the window is the whole log), lb the
// lookback's jobs (ShareLookback).
func (w *Workload) buildCampaigns(own []owner, opt Options, logGS map[groupKey]int64, lb []lookbackJob) error {
	if len(w.Jobs) == 0 {
		return errors.New(w.Name + ": no replayable job in the window")
	}
	main := map[int]groupKey{} // UserCampaigns: each user's group
	if opt.UserCampaigns && !opt.ByGroup {
		main = mainGroups(w.Jobs, own)
	}
	keyOf := func(o owner) campKey {
		g := groupOf(o)
		switch {
		case opt.ByGroup:
			return campKey{group: g, user: -1}
		case opt.UserCampaigns:
			return campKey{group: main[o.user], user: o.user}
		}
		return campKey{group: g, user: o.user}
	}
	// The distinct owners, each job's among them (a log has hundreds of
	// owners and up to hundreds of thousands of jobs: a sort of every
	// job's key and a binary search per job were 4 % of a `trace` process
	// on a 300k-job log), and the campaigns of those.
	// An owner is found by its user id in a table where the id is small
	// (among the user's few owners), in a map otherwise: hashing the
	// owner of every job whose owner is not its predecessor's was 1 % of
	// the process on a 300k-job log, whose users' jobs interleave.
	ownerOf := make([]int32, len(own))
	owners := []owner{}
	seen := map[owner]int32{}
	var ofUser [][]int32 // by user id: the indices of the user's owners
	for i, o := range own {
		if i > 0 && o == own[i-1] {
			ownerOf[i] = ownerOf[i-1]
			continue
		}
		k := int32(-1)
		if o.user >= 0 && o.user < maxSmallID {
			if o.user >= len(ofUser) {
				ofUser = append(ofUser, make([][]int32, max(o.user+1, 2*len(ofUser))-len(ofUser))...)
			}
			for _, x := range ofUser[o.user] {
				if owners[x] == o {
					k = x
					break
				}
			}
			if k < 0 {
				k = int32(len(owners))
				owners = append(owners, o)
				ofUser[o.user] = append(ofUser[o.user], k)
			}
		} else {
			var ok bool
			if k, ok = seen[o]; !ok {
				k = int32(len(owners))
				seen[o] = k
				owners = append(owners, o)
			}
		}
		ownerOf[i] = k
	}
	camps := make([]campKey, 0, len(owners))
	for _, o := range owners {
		camps = append(camps, keyOf(o))
	}
	slices.SortFunc(camps, cmpCamp)
	camps = slices.Compact(camps)
	campOf := make([]int, len(owners))
	for k, o := range owners {
		campOf[k], _ = slices.BinarySearchFunc(camps, keyOf(o), cmpCamp)
	}
	groups := make([]groupKey, 0, len(camps))
	for _, c := range camps {
		groups = append(groups, c.group)
	}
	slices.SortFunc(groups, cmpGroup)
	groups = slices.Compact(groups)
	w.Campaigns = make([]Campaign, len(camps))
	w.Groups = make([]Group, len(groups))
	for g, k := range groups {
		w.Groups[g] = Group{ID: k.id, User: k.user, Name: k.name()}
		if logGS != nil {
			w.Groups[g].LogGPUSeconds = logGS[k]
		}
	}
	for c, k := range camps {
		g, _ := slices.BinarySearchFunc(groups, k.group, cmpGroup)
		cp := &w.Campaigns[c]
		cp.Group = g
		switch {
		case opt.ByGroup:
			cp.Name, cp.ID = k.group.name(), k.group.id
		case k.group.user || opt.UserCampaigns:
			cp.Name, cp.ID = fmt.Sprintf("user %d", k.user), k.user
		default:
			cp.Name, cp.ID = fmt.Sprintf("user %d/group %d", k.user, k.group.id), k.user
		}
		w.Groups[g].Members = append(w.Groups[g].Members, c)
	}
	var total int64
	// in marks the groups and campaigns with a job in the window proper
	// (every one without a lead-in).
	in := windowSet{groups: make([]bool, len(w.Groups)), camps: make([]bool, len(w.Campaigns))}
	for i := range w.Jobs {
		j := &w.Jobs[i]
		c := campOf[ownerOf[i]]
		j.Campaign = c
		w.Campaigns[c].Jobs++
		if !w.InWindow(j) {
			continue
		}
		gs := int64(j.GPUs) * j.Run
		w.Campaigns[c].GPUSeconds += gs
		w.Groups[w.Campaigns[c].Group].GPUSeconds += gs
		in.camps[c], in.groups[w.Campaigns[c].Group] = true, true
		total += gs
	}
	if logGS == nil {
		for g := range w.Groups {
			w.Groups[g].LogGPUSeconds = w.Groups[g].GPUSeconds
		}
	}
	// The lookback's jobs, placed in the window's groups and campaigns
	// (−1 where it has none: they weigh nothing).
	w.LookbackJobs = len(lb)
	w.lookback = make([]sized, len(lb))
	for i := range lb {
		sz := lb[i].size
		sz.campaign, sz.group = -1, -1
		if g, ok := slices.BinarySearchFunc(groups, groupOf(lb[i].owner), cmpGroup); ok {
			sz.group = g
			w.Groups[g].LookbackGPUSeconds += lb[i].gs
			if _, known := main[lb[i].owner.user]; known || !opt.UserCampaigns || opt.ByGroup {
				if c, ok := slices.BinarySearchFunc(camps, keyOf(lb[i].owner), cmpCamp); ok {
					sz.campaign = c
				}
			}
		}
		w.lookback[i] = sz
	}
	w.Shares = opt.Shares
	if w.Shares == "" {
		w.Shares = ShareLookback
	}
	w.entitle(w.Shares, total, in)
	return nil
}

// InWindow is whether job j is the window proper's, not a lead-in's
// (WindowFrom).
func (w *Workload) InWindow(j *Job) bool { return j.Submit >= w.WindowFrom }

// windowSet marks the groups and campaigns that submit in the window
// proper (WindowFrom): the ones entitlements are normalised over.
type windowSet struct{ groups, camps []bool }

func count(in []bool) int {
	n := 0
	for _, b := range in {
		if b {
			n++
		}
	}
	return n
}

// mainGroups is each user's group of most GPU-seconds among the jobs
// (ties: the earlier group), for Options.UserCampaigns.
func mainGroups(jobs []Job, own []owner) map[int]groupKey {
	type pair struct {
		user  int
		group groupKey
	}
	gs := map[pair]int64{}
	var pairs []pair
	for i, o := range own {
		p := pair{o.user, groupOf(o)}
		if _, ok := gs[p]; !ok {
			pairs = append(pairs, p)
		}
		gs[p] += int64(jobs[i].GPUs) * jobs[i].Run
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		if c := cmp.Compare(a.user, b.user); c != 0 {
			return c
		}
		return cmpGroup(a.group, b.group)
	})
	main := map[int]groupKey{}
	for i, p := range pairs {
		if i == 0 || pairs[i-1].user != p.user || gs[p] > gs[pair{p.user, main[p.user]}] {
			main[p.user] = p.group
		}
	}
	return main
}

// entitle sets the groups' and campaigns' shares by mode (docs/studies.md
// §1); total is the window's GPU-seconds, in the groups and campaigns
// that submit in the window proper, over which the shares are
// normalised (all of them but after a lead-in, WindowFrom).
func (w *Workload) entitle(mode ShareMode, total int64, in windowSet) {
	var logTotal, lbTotal int64
	for g := range w.Groups {
		if in.groups[g] {
			logTotal += w.Groups[g].LogGPUSeconds
			lbTotal += w.Groups[g].LookbackGPUSeconds
		}
	}
	groups, camps := count(in.groups), count(in.camps)
	for g := range w.Groups {
		grp := &w.Groups[g]
		if !in.groups[g] {
			grp.Share = 0 // submits only in a lead-in
			continue
		}
		switch mode {
		case ShareLookback:
			if lbTotal == 0 {
				grp.Share = 1 / float64(groups)
			} else {
				grp.Share = float64(grp.LookbackGPUSeconds) / float64(lbTotal)
			}
		case ShareUsers, ShareEqualUsers:
			// Below, from the members.
		case ShareWindow:
			grp.Share = float64(grp.GPUSeconds) / float64(total)
		case ShareEqualGroups:
			grp.Share = 1 / float64(groups)
		default: // ShareGroups
			grp.Share = float64(grp.LogGPUSeconds) / float64(logTotal)
		}
	}
	for c := range w.Campaigns {
		cp := &w.Campaigns[c]
		grp := &w.Groups[cp.Group]
		if !in.camps[c] {
			cp.Share = 0 // submits only in a lead-in
			continue
		}
		switch mode {
		case ShareUsers:
			cp.Share = float64(cp.GPUSeconds) / float64(total)
			grp.Share += cp.Share
		case ShareEqualUsers:
			cp.Share = 1 / float64(camps)
			grp.Share += cp.Share
		default:
			cp.Share = grp.Share / float64(members(grp, in))
		}
	}
}

// members is how many of grp's members submit in the window proper.
func members(grp *Group, in windowSet) int {
	n := 0
	for _, c := range grp.Members {
		if in.camps[c] {
			n++
		}
	}
	return n
}

// Entitlements are the workload's groups and campaigns with their shares,
// as every share-based policy reads them (policies.Knobs.Entitlements),
// and each group's widest job in the window (static's condo partitions).
func (w *Workload) Entitlements() *baseline.Entitlements {
	e := &baseline.Entitlements{Groups: make([]baseline.GroupShare, len(w.Groups))}
	widest := make([]int, len(w.Groups))
	for i := range w.Jobs {
		if !w.InWindow(&w.Jobs[i]) {
			continue
		}
		g := w.Campaigns[w.Jobs[i].Campaign].Group
		widest[g] = max(widest[g], w.Jobs[i].GPUs)
	}
	for g := range w.Groups {
		grp := &w.Groups[g]
		gs := baseline.GroupShare{Name: grp.Name, Share: grp.Share, Widest: widest[g], Members: make([]baseline.MemberShare, len(grp.Members))}
		for i, c := range grp.Members {
			gs.Members[i] = baseline.MemberShare{Name: w.Campaigns[c].Name, Share: w.Campaigns[c].Share}
		}
		e.Groups[g] = gs
	}
	return e
}

// Envelope is campaign c's Bursar envelope (docs/studies.md §3.2): no
// guarantee (g = 0), sustained rate R = Rate(c) (its entitlement × pool,
// under `shares: window` split by the members' work), burst
// ceiling = the pool, class burst (each request carries its job's own
// class), a credit budget out of reach (UnboundedBudget), and
// the bucket B of BucketHours: R × BucketHours × 3600 GPU-seconds, or with
// BucketHours 0 (`bucket: largest-job`, the default) deep enough for every
// one of its jobs in the lookback (ShareLookback; under an oracle's
// shares, in the window: §6.18): B = max over them of
// (gpus − R + 1) × estimate, at least 0. The broker's prepaid cap for a
// job of estimate e is ⌊R + B ÷ e⌋ with a full bucket, so every job fits
// it: the +1 keeps the truncation from falling one GPU short. Trace users
// are not metered on io or inference.
//
// A rigid job maps to one request of exactly GPUs for Run seconds, granted
// whole or not at all (§6.1); the lease it gets is released at grant +
// Run (its real end, known to the replay), while Estimate is what
// backfilling believes. A preempted job is requeued with its submit time
// and restarts from zero or resumes from its last checkpoint, as the
// policy's restart rule says (§6.7, Replay). Envelope reads every job:
// Envelopes gives them all in one pass.
func (w *Workload) Envelope(c int) policy.Envelope {
	return w.envelope(c, w.largestJob(c))
}

// Envelopes is every campaign's Envelope, in campaign order.
func (w *Workload) Envelopes() []policy.Envelope {
	need := make([]float64, len(w.Campaigns))
	if w.BucketHours == 0 {
		for _, j := range w.bucketJobs() {
			if j.campaign >= 0 {
				need[j.campaign] = max(need[j.campaign], w.jobNeed(j))
			}
		}
	}
	envs := make([]policy.Envelope, len(w.Campaigns))
	for c := range envs {
		envs[c] = w.envelope(c, need[c])
	}
	return envs
}

// bucketJobs are the jobs the largest-job bucket is taken over: under
// ShareLookback the lookback's (what the site knew when the window
// began), else the window's own (the oracles').
func (w *Workload) bucketJobs() []sized {
	if w.Shares == ShareLookback {
		return w.lookback
	}
	out := make([]sized, 0, len(w.Jobs))
	for i := range w.Jobs {
		if j := &w.Jobs[i]; w.InWindow(j) {
			out = append(out, sized{campaign: j.Campaign, group: w.Campaigns[j.Campaign].Group, gpus: j.GPUs, estimate: j.Estimate})
		}
	}
	return out
}

// jobNeed is the bucket job j needs to fit its campaign's cap:
// (gpus − R + 1) × estimate.
func (w *Workload) jobNeed(j sized) float64 {
	return (float64(j.gpus) - w.Rate(j.campaign) + 1) * float64(j.estimate)
}

// largestJob is campaign c's largest-job bucket (0 unless BucketHours is 0).
func (w *Workload) largestJob(c int) float64 {
	need := 0.0
	if w.BucketHours == 0 {
		for _, j := range w.bucketJobs() {
			if j.campaign == c {
				need = max(need, w.jobNeed(j))
			}
		}
	}
	return need
}

// Rate is campaign c's sustained rate R under Bursar, in GPUs: its
// entitlement × pool (docs/studies.md §3.2), except under `shares: window`,
// where its group's entitlement × pool is split among the members by
// their GPU-seconds in the window instead of equally (docs/studies.md
// §3.2, **choice**; docs/traces.md "The Bursar envelope"). Why: a share
// weighs a job's place in a ranking policy's queue (fairshare's S,
// budget's order), but R is a meter: a campaign whose work in the window
// is above its bucket plus R × the time to its horizon cannot finish even
// on an idle machine. Under `window` every group's entitlement is its own
// work, so its rate pays for it; the equal split handed the member that
// did nearly all of its group's work a fraction of that rate, and 47 jobs
// of the full SDSC-SP2 log's 4 × 14-day windows were left unfinished.
// The members' rates still add up to their group's entitlement × pool.
func (w *Workload) Rate(c int) float64 {
	cp := &w.Campaigns[c]
	if w.Shares == ShareWindow && cp.Group < len(w.Groups) {
		if grp := &w.Groups[cp.Group]; grp.GPUSeconds > 0 {
			return grp.Share * float64(w.Pool) * float64(cp.GPUSeconds) / float64(grp.GPUSeconds)
		}
	}
	return cp.Share * float64(w.Pool)
}

func (w *Workload) envelope(c int, largest float64) policy.Envelope {
	return w.meteredEnvelope(w.Campaigns[c].Name, w.Rate(c), largest)
}

// UnboundedBudget is a trace campaign's credit budget, out of reach so
// that credits never end a replay (docs/studies.md §3.2): a pool of
// 100,000 GPUs held whole at the dearest class price and the highest
// congestion multiplier (4 × 3 credits a GPU-hour) takes over 95 years
// to spend it. The budget of revision 2 (the pool for the span plus a day
// at 4 credits a GPU-hour) ran out under congestion pricing: a replay of
// a held-out log by group stopped with "budget exhausted".
const UnboundedBudget = 1e15

// meteredEnvelope is a metered trace campaign's envelope (Envelope,
// GroupEnvelopes): g = 0, R = r, burst = the pool, class burst, the
// bucket of BucketHours (largest: the largest-job bucket) and a budget
// out of reach.
func (w *Workload) meteredEnvelope(name string, r, largest float64) policy.Envelope {
	b := largest
	if w.BucketHours > 0 {
		b = r * w.BucketHours * 3600
	}
	return policy.Envelope{
		Name:         name,
		Budget:       UnboundedBudget,
		Guaranteed:   0,
		Sustained:    r,
		BurstCeiling: w.Pool,
		Bucket:       b,
		Class:        policy.AgentBurst,
	}
}

// GroupEnvelopes are the groups' metered envelopes under Bursar as a site
// meters a trace (docs/studies.md §3.2, docs/traces.md "Bursar as a site
// meters it"), in group order: the group (the account a site budgets) is
// the campaign, with R = its entitlement × pool and the bucket of
// BucketHours, or with the largest-job rule over the group's jobs in the
// lookback (under an oracle's shares, in the window), B = max of
// (gpus − R + 1) × estimate. A job of the window wider than that bucket
// can ever pay for runs on the group's scavenger (sitemeter).
func (w *Workload) GroupEnvelopes() []policy.Envelope {
	rate := make([]float64, len(w.Groups))
	for g := range w.Groups {
		rate[g] = w.Groups[g].Share * float64(w.Pool)
	}
	need := make([]float64, len(w.Groups))
	if w.BucketHours == 0 {
		for _, j := range w.bucketJobs() {
			if g := j.group; g >= 0 {
				need[g] = max(need[g], (float64(j.gpus)-rate[g]+1)*float64(j.estimate))
			}
		}
	}
	envs := make([]policy.Envelope, len(w.Groups))
	for g := range envs {
		envs[g] = w.meteredEnvelope(w.Groups[g].Name, rate[g], need[g])
	}
	return envs
}

// QueueName is the header's name of job j's queue ("" where it names
// none).
func (w *Workload) QueueName(j *Job) string {
	if w.Header == nil || j.Queue < 0 {
		return ""
	}
	return strings.TrimSpace(w.Header.QueueName(j.Queue))
}

// SiteQueue is the site queue the replay files job j in
// (baseline.QueuedRequester), whose name priority's tiers read: its
// tier's name where the max-run-time rule or a config set the tier
// (QueueTiers), else its header name ("" where there is none).
func (w *Workload) SiteQueue(j *Job) string {
	if j.Queue >= 0 {
		if i, ok := slices.BinarySearchFunc(w.QueueTiers, j.Queue, func(t QueueTier, q int) int { return cmp.Compare(t.Queue, q) }); ok {
			if qt := &w.QueueTiers[i]; qt.By == TierByRunTime || qt.By == TierByConfig {
				return qt.Tier
			}
		}
	}
	return w.QueueName(j)
}

// Preemptible reports whether the machine the log comes from may preempt
// jobs: false only where its header says `Preemption: No`. It is
// priority's `preempt` default on a trace (docs/studies.md §2, §6.14).
func (w *Workload) Preemptible() bool {
	if w.Header == nil {
		return true
	}
	p, stated := w.Header.Preemption()
	return p || !stated
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
