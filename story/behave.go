package story

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/budget"
	"github.com/bursar-hpc/bursar/policy/fairshare"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/trace"
)

// Rules are the users' two behaviours (docs/story.md, "Users who respond
// to the policy"). Each project acts as one unit. With both off the
// users are honest: every job is declared its own class, no job is
// parked.
type Rules struct {
	// Inflate: a project declares its non-urgent training and evaluation
	// jobs deadline (the top tier) while doing so pays (Raises).
	Inflate bool
	// WaitValue ν_w is what an hour of wait is worth to a project, in
	// credits per GPU of the waiting job (a credit is a GPU-hour at the
	// standard class's price).
	WaitValue float64
	// ReviewDays is the mean time between a project's reviews of its
	// declared class; each project's period is drawn uniformly from
	// [ReviewDays ÷ 2, 3 ReviewDays ÷ 2] and its first review from the
	// first period.
	ReviewDays float64
	// MemoryDays is how far back a project looks at waits and at its own
	// jobs.
	MemoryDays float64

	// Squat: a project parks a no-op job on DebugWidest GPUs while its
	// debug latency is above Tolerance and the latency it saves is worth
	// more than what the policy charges for the parked GPU-hours (Squats).
	Squat bool
	// LatencyValue ν_l is what an hour of debug launch latency is worth,
	// in credits per debug job.
	LatencyValue float64
	// Tolerance is the debug latency, in seconds, a project accepts
	// before it considers parking.
	Tolerance int64
	// ParkHours is a parked job's length: the project reviews its park
	// at this period.
	ParkHours float64
}

// DefaultRules are the strategic users of the study: both behaviours,
// ν_w = 1 credit per GPU-hour of wait, reviews every 7 days on average
// looking back 7 days, ν_l = 8 credits per hour of debug latency, a
// tolerance of 10 minutes, parks of 6 hours.
func DefaultRules() Rules {
	return Rules{Inflate: true, WaitValue: 1, ReviewDays: 7, MemoryDays: 7,
		Squat: true, LatencyValue: 8, Tolerance: 600, ParkHours: 6}
}

// Honest are users who never respond to the policy; the other knobs are
// the defaults', unused.
func Honest() Rules {
	r := DefaultRules()
	r.Inflate, r.Squat = false, false
	return r
}

// Strategic reports whether any behaviour is on.
func (r Rules) Strategic() bool { return r.Inflate || r.Squat }

// Check names the first knob out of range.
func (r Rules) Check() error {
	switch {
	case !(r.WaitValue >= 0) || math.IsInf(r.WaitValue, 0):
		return fmt.Errorf("rules: wait_value %v: at least 0", r.WaitValue)
	case !(r.ReviewDays > 0 && r.ReviewDays <= 365):
		return fmt.Errorf("rules: review_days %v: above 0 and at most 365", r.ReviewDays)
	case !(r.MemoryDays > 0 && r.MemoryDays <= 365):
		return fmt.Errorf("rules: memory_days %v: above 0 and at most 365", r.MemoryDays)
	case !(r.LatencyValue >= 0) || math.IsInf(r.LatencyValue, 0):
		return fmt.Errorf("rules: latency_value %v: at least 0", r.LatencyValue)
	case r.Tolerance < 0:
		return fmt.Errorf("rules: tolerance %d s: at least 0", r.Tolerance)
	case !(r.ParkHours >= 1.0/60 && r.ParkHours <= 168):
		return fmt.Errorf("rules: park_hours %v: from a minute to a week", r.ParkHours)
	}
	return nil
}

// Price is what policy name charges a project for holding a GPU for an
// hour in class c, in credits (docs/story.md, "What each policy charges"):
// the Bursar broker its class's base price over the standard class's
// (agent-burst: 1 credit; deadline 4/3, interactive 2/3); budget and
// fairshare 1 whatever the class (the hour counts in the usage that
// orders the project's queue); the others nothing (priority, fifo,
// static, quota, slurm: holding a GPU or declaring a higher class costs a
// project nothing the policy counts).
func Price(name string, c policy.Class) float64 {
	switch name {
	case policies.Bursar:
		return c.BasePrice() / policy.AgentBurst.BasePrice()
	case budget.Name, fairshare.Name:
		return 1
	}
	return 0
}

// Raises is the inflation rule at a review (docs/story.md): a project
// declares its non-urgent jobs at the top tier when the wait it saves is
// worth more than the extra it is charged, and its own class when not.
// gapHours is the mean wait of the jobs declared at their own lower
// classes less that of the jobs declared top, over the memory (what the
// queue shows every user); gpus is Σ GPUs of the project's non-urgent
// training and evaluation jobs submitted over the memory, and extra Σ
// GPUs × run hours × the price the policy adds for declaring them top.
func Raises(waitValue, gapHours, gpus, extra float64) bool {
	return waitValue*gapHours*gpus > extra
}

// Squats is the squatting rule at a review (docs/story.md): park when the
// debug latency is above the tolerance and the latency the park saves,
// ν_l × latency × the debug jobs expected during the park, is worth more
// than the parked GPU-hours' charge.
func Squats(latencyValue, latencyHours, toleranceHours, debugJobs, parkCharge float64) bool {
	return latencyHours > toleranceHours && latencyValue*latencyHours*debugJobs > parkCharge
}

// Tiers a job's declaration is counted in (the public waits).
const (
	tierTop   = iota // declared deadline (training and evaluation)
	tierOwn          // declared its own lower class
	tierDebug        // a debug job filed through the policy
	numTiers
)

// users are the lab's projects on the machine: the trace.Actor (and
// trace.Users) a replay steps beside the policy. They choose each job's
// declared class (Declare), absorb the debug jobs that fit in a parked
// job (Denies), review their behaviour at their review times (Act) and
// learn of starts and of their parks' grants (Started, Record).
type users struct {
	w     *Workload
	rules Rules
	name  string // the policy's
	price func(policy.Class) float64
	base  int64 // the policy's tick t is second t + base of the log

	alloc policy.Allocator
	rr    policy.RigidRequester
	ids   []policy.CampaignID // each project's id in the policy

	// Per job.
	declared []policy.Class
	start    []int64 // first start, −1 none yet
	absorbed []bool  // ran in its project's park

	// The public waits: first starts in order, and each tier's prefix
	// sums of count and wait.
	hist    []int64 // start second
	histSum [numTiers][]float64
	histN   [numTiers][]int32

	proj []project
	// Debug jobs of each project (indices, submit order), and its
	// non-urgent training and evaluation jobs with their prefix sums of
	// GPUs and extra price × GPU-hours.
	debugJobs [][]int32
	ownJobs   [][]int32
	ownGPUs   [][]float64
	ownExtra  [][]float64

	// Changes of each project's declared level, for the outputs.
	Levels []LevelChange
	Parks  []Park
}

// project is one project's state.
type project struct {
	raised       bool
	review       int64 // next inflation review, second of the log
	period       int64
	squatReview  int64
	park         int // index into Parks of its current park, −1 none
	lastGap      float64
	gapKnown     bool
	lastLatency  float64
	latencyKnown bool
}

// LevelChange is a project's declaration changing at second T.
type LevelChange struct {
	Project int
	T       int64
	Raised  bool
}

// Park is one parked no-op job: filed at Filed, held from Start to End
// (−1 while pending), with the debug GPU-seconds that ran inside it.
type Park struct {
	Project    int
	GPUs       int
	Lease      int
	Filed      int64
	Start, End int64
	DebugGPUs  int64 // GPU-seconds of debug work inside
	inside     []parkedJob
}

type parkedJob struct {
	end  int64
	gpus int
}

// userStream separates the users' draws.
const userStream = 0x7573657273 // "users"

func newUsers(w *Workload, rules Rules, policyName string, seed int64) *users {
	n := len(w.Jobs)
	u := &users{w: w, rules: rules, name: policyName, base: w.Jobs[0].Submit - 1,
		declared: make([]policy.Class, n), start: make([]int64, n), absorbed: make([]bool, n)}
	u.price = func(c policy.Class) float64 { return Price(policyName, c) }
	for i := range u.declared {
		u.declared[i] = policy.AnyClass
		u.start[i] = -1
	}
	nc := len(w.Campaigns)
	u.debugJobs = make([][]int32, nc)
	u.ownJobs = make([][]int32, nc)
	u.ownGPUs = make([][]float64, nc)
	u.ownExtra = make([][]float64, nc)
	for c := range nc {
		u.ownGPUs[c] = []float64{0}
		u.ownExtra[c] = []float64{0}
	}
	top := u.price(policy.Deadline)
	for i := range w.Jobs {
		jb := &w.Jobs[i]
		c := jb.Campaign
		switch {
		case w.Kind[i] == Debug:
			u.debugJobs[c] = append(u.debugJobs[c], int32(i))
		case jb.Class != policy.Deadline:
			u.ownJobs[c] = append(u.ownJobs[c], int32(i))
			g := float64(jb.GPUs)
			u.ownGPUs[c] = append(u.ownGPUs[c], u.ownGPUs[c][len(u.ownGPUs[c])-1]+g)
			x := g * float64(jb.Run) / 3600 * (top - u.price(jb.Class))
			u.ownExtra[c] = append(u.ownExtra[c], u.ownExtra[c][len(u.ownExtra[c])-1]+x)
		}
	}
	for t := range numTiers {
		u.histSum[t] = []float64{0}
		u.histN[t] = []int32{0}
	}
	r := rand.New(rand.NewPCG(uint64(seed), userStream))
	first := w.Jobs[0].Submit
	park := int64(rules.ParkHours * 3600)
	for range nc {
		period := int64(rules.ReviewDays * Day * (0.5 + r.Float64()))
		period = max(period, 1)
		p := project{period: period, park: -1,
			review:      first + 1 + r.Int64N(period),
			squatReview: first + 1 + r.Int64N(max(park, 1))}
		u.proj = append(u.proj, p)
	}
	return u
}

var (
	_ trace.Actor     = (*users)(nil)
	_ trace.Users     = (*users)(nil)
	_ policy.Recorder = (*users)(nil)
)

// Envelope leaves a project's envelope as the workload gives it.
func (u *users) Envelope(env policy.Envelope) policy.Envelope { return env }

// Registered keeps the policy's id of each project: a park is filed
// under it (under Bursar as a site meters it, the team's account).
func (u *users) Registered(ids []policy.CampaignID) { u.ids = slices.Clone(ids) }

// Join keeps the policy: the users file their parks on it.
func (u *users) Join(a policy.Allocator) error {
	if len(u.ids) != len(u.w.Campaigns) {
		return fmt.Errorf("story users: %d campaigns registered, the lab has %d", len(u.ids), len(u.w.Campaigns))
	}
	u.alloc = a
	u.rr, _ = a.(policy.RigidRequester)
	return nil
}

func (u *users) index(jb *trace.Job) int { return int(jb.Number - 1) }

// Declare is the class job jb is filed with: deadline for a raised
// project's non-urgent training or evaluation job, its own otherwise. A
// requeued job keeps its first declaration.
func (u *users) Declare(jb *trace.Job) policy.Class {
	j := u.index(jb)
	if u.declared[j] == policy.AnyClass {
		cls := jb.Class
		if u.w.Kind[j] != Debug && u.proj[jb.Campaign].raised {
			cls = policy.Deadline
		}
		u.declared[j] = cls
	}
	return u.declared[j]
}

// Denies takes a debug job out of the policy's hands when it fits, by
// its GPUs and its run, in what its project's held park has free at its
// submit: it runs there at once. The replay counts it as refused; the
// study counts it as served with no wait (absorbed).
func (u *users) Denies(jb *trace.Job) bool {
	j := u.index(jb)
	if u.w.Kind[j] != Debug || u.declared[j] != policy.AnyClass || u.absorbed[j] {
		return false
	}
	p := u.proj[jb.Campaign].park
	if p < 0 {
		return false
	}
	pk := &u.Parks[p]
	if pk.Start < 0 || jb.Submit < pk.Start || jb.Submit+jb.Run > pk.End {
		return false
	}
	used := 0
	keep := pk.inside[:0]
	for _, in := range pk.inside {
		if in.end > jb.Submit {
			used += in.gpus
			keep = append(keep, in)
		}
	}
	pk.inside = keep
	if used+jb.GPUs > pk.GPUs {
		return false
	}
	pk.inside = append(pk.inside, parkedJob{end: jb.Submit + jb.Run, gpus: jb.GPUs})
	pk.DebugGPUs += int64(jb.GPUs) * jb.Run
	u.absorbed[j] = true
	u.declared[j] = jb.Class
	u.start[j] = jb.Submit
	return true
}

// Started records a job's first start in the public waits.
func (u *users) Started(jb *trace.Job, t int64) {
	j := u.index(jb)
	if u.start[j] >= 0 {
		return
	}
	u.start[j] = t
	tier := tierOwn
	switch {
	case u.w.Kind[j] == Debug:
		tier = tierDebug
	case u.declared[j] == policy.Deadline:
		tier = tierTop
	}
	u.hist = append(u.hist, t)
	for k := range numTiers {
		s, n := u.histSum[k][len(u.histSum[k])-1], u.histN[k][len(u.histN[k])-1]
		if k == tier {
			s += float64(t-jb.Submit) / 3600
			n++
		}
		u.histSum[k] = append(u.histSum[k], s)
		u.histN[k] = append(u.histN[k], n)
	}
}

// meanWait is tier k's mean wait in hours over the starts in [from, to),
// and whether there were at least minSamples.
func (u *users) meanWait(k int, from int64) (float64, bool) {
	lo, _ := slices.BinarySearch(u.hist, from)
	hi := len(u.hist)
	n := u.histN[k][hi] - u.histN[k][lo]
	if n < minSamples {
		return 0, false
	}
	return (u.histSum[k][hi] - u.histSum[k][lo]) / float64(n), true
}

// minSamples is the fewest starts a mean wait is read from; with fewer a
// project keeps what it read last.
const minSamples = 5

// Act runs the reviews due by tick t.
func (u *users) Act(t int) {
	now := int64(t) + u.base
	memory := int64(u.rules.MemoryDays * Day)
	for c := range u.proj {
		p := &u.proj[c]
		if u.rules.Inflate && p.review <= now {
			u.reviewLevel(c, now, memory)
			p.review = now + p.period
		}
		if u.rules.Squat && p.squatReview <= now {
			u.reviewPark(c, t, now, memory)
			p.squatReview = now + int64(u.rules.ParkHours*3600)
		}
	}
}

func (u *users) reviewLevel(c int, now, memory int64) {
	p := &u.proj[c]
	top, okTop := u.meanWait(tierTop, now-memory)
	own, okOwn := u.meanWait(tierOwn, now-memory)
	if okTop && okOwn {
		p.lastGap, p.gapKnown = own-top, true
	}
	if !p.gapKnown {
		return
	}
	lo, _ := slices.BinarySearchFunc(u.ownJobs[c], now-memory, func(j int32, t int64) int { return cmpInt(u.w.Jobs[j].Submit, t) })
	hi, _ := slices.BinarySearchFunc(u.ownJobs[c], now, func(j int32, t int64) int { return cmpInt(u.w.Jobs[j].Submit, t) })
	gpus := u.ownGPUs[c][hi] - u.ownGPUs[c][lo]
	extra := u.ownExtra[c][hi] - u.ownExtra[c][lo]
	if gpus == 0 {
		return
	}
	if raise := Raises(u.rules.WaitValue, p.lastGap, gpus, extra); raise != p.raised {
		p.raised = raise
		u.Levels = append(u.Levels, LevelChange{Project: c, T: now, Raised: raise})
	}
}

func (u *users) reviewPark(c int, t int, now, memory int64) {
	p := &u.proj[c]
	if lat, ok := u.meanWait(tierDebug, now-memory); ok {
		p.lastLatency, p.latencyKnown = lat, true
	}
	if !p.latencyKnown || u.rr == nil {
		return
	}
	if p.park >= 0 && u.Parks[p.park].End < 0 {
		return // still pending or held with no end yet
	}
	if p.park >= 0 && u.Parks[p.park].End > now {
		return // held: renewed at its end
	}
	lo, _ := slices.BinarySearchFunc(u.debugJobs[c], now-memory, func(j int32, t int64) int { return cmpInt(u.w.Jobs[j].Submit, t) })
	hi, _ := slices.BinarySearchFunc(u.debugJobs[c], now, func(j int32, t int64) int { return cmpInt(u.w.Jobs[j].Submit, t) })
	hours := u.rules.ParkHours
	expected := float64(hi-lo) * hours * 3600 / float64(memory)
	charge := u.price(policy.Interactive) * DebugWidest * hours
	if !Squats(u.rules.LatencyValue, p.lastLatency, float64(u.rules.Tolerance)/3600, expected, charge) {
		return
	}
	d := int(hours * 3600)
	id, err := u.rr.RequestRigid(u.ids[c], DebugWidest, d, d, policy.Interactive, t)
	if err != nil {
		return // refused: the project debugs through the queue
	}
	u.Parks = append(u.Parks, Park{Project: c, GPUs: DebugWidest, Lease: id, Filed: now, Start: -1, End: -1})
	p.park = len(u.Parks) - 1
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

// Acted: nothing after the policy's tick; the parks' grants and ends
// come through Record.
func (u *users) Acted(int) error { return nil }

// NextAct is the first review after now.
func (u *users) NextAct(now int) int {
	next := math.MaxInt
	for c := range u.proj {
		p := &u.proj[c]
		if u.rules.Inflate {
			next = min(next, int(max(p.review-u.base, int64(now)+1)))
		}
		if u.rules.Squat {
			next = min(next, int(max(p.squatReview-u.base, int64(now)+1)))
		}
	}
	return next
}

// Record follows the parks' grants and releases in the policy's journal.
func (u *users) Record(e policy.Event) {
	if e.Kind != policy.EventGrant && e.Kind != policy.EventRelease {
		return
	}
	var pk *Park
	for c := range u.proj {
		if p := u.proj[c].park; p >= 0 && u.Parks[p].Lease == e.Lease && u.ids[c] == e.CampaignID {
			pk = &u.Parks[p]
		}
	}
	if pk == nil {
		return
	}
	t := int64(e.T) + u.base
	switch e.Kind {
	case policy.EventGrant:
		pk.Start, pk.End = t, t+int64(u.rules.ParkHours*3600)
	case policy.EventRelease:
		pk.End = t // at its end, or earlier if preempted
	}
}
