package trace

import (
	"math"
	"slices"

	"github.com/bursar-hpc/bursar/policy/easy"
)

// ReplayEASY replays the workload under FCFS + EASY exactly as docs/studies.md
// §2.1 says, and returns each job's start time (indexed like w.Jobs).
//
// It advances from event to event: the next submit time and the next real
// end. At each event time t, in order: (1) leases whose real end is at or
// before t end; (2) jobs submitted at or before t join the queue in submit
// order (ties by job number, the order of w.Jobs); (3)–(4) one call of the
// shared pass easy.Scheduler.Pass starts the heads that fit and backfills.
// Between two events no lease ends and no job arrives, so the free GPUs,
// the queue and the reservation are unchanged and nothing could start: the
// tick-by-tick loop of the tests visits those seconds and starts nothing.
// It runs until every job has finished.
func ReplayEASY(w *Workload) []int64 {
	n := len(w.Jobs)
	if n == 0 {
		return make([]int64, 0)
	}
	e := newEasyRun(w)
	e.advance(nil, nil)
	return e.start
}

// easyRun is ReplayEASY's state between events, so that a copy of it can
// run on alone (the fair start times of docs/studies.md §6.17).
type easyRun struct {
	w     *Workload
	r     replayer
	start []int64 // −1 until the job starts
	free  int
	next  int // next job to arrive
	limit int // jobs from limit on never arrive (n: none withheld)
	t     int64
	// settled is how many jobs at the queue's front were there at the
	// last pass with no lease ended since (0 after an end): the jobs that
	// pass left, which easy.Scheduler.PassAfter need not try again.
	settled int
}

func newEasyRun(w *Workload) *easyRun {
	n := len(w.Jobs)
	e := &easyRun{w: w, start: make([]int64, n), free: w.Pool, limit: n, t: w.Jobs[0].Submit}
	for i := range e.start {
		e.start[i] = -1
	}
	e.r.init(w)
	return e
}

// advance runs from event to event until no event is left or done says
// stop (checked after each event's starts). arriving, if set, is called at
// each event at which jobs arrive, with the index of the first of them,
// after the event's ends and before its arrivals.
func (e *easyRun) advance(done func() bool, arriving func(next int)) {
	w, r := e.w, &e.r
	for {
		t := e.t
		// (1) Ends: real ends at or before t.
		for len(r.heap) > 0 && r.heap[0].end <= t {
			j := r.pop()
			e.free += w.Jobs[j].GPUs
			r.removeRunning(j)
			e.settled = 0
		}
		// (2) Arrivals.
		if arriving != nil && e.next < e.limit && w.Jobs[e.next].Submit <= t {
			arriving(e.next)
		}
		for e.next < e.limit && w.Jobs[e.next].Submit <= t {
			jb := &w.Jobs[e.next]
			r.queue = append(r.queue, int32(e.next))
			r.qjobs = append(r.qjobs, easy.Job{GPUs: jb.GPUs, Estimate: jb.Estimate})
			e.next++
		}
		// (3)–(4) Heads, then one EASY pass.
		if len(r.queue) > 0 && e.free > 0 {
			picked := r.sched.PassAfter(t, e.free, r.running, r.qjobs, e.settled)
			if len(picked) > 0 {
				for _, qi := range picked {
					j := r.queue[qi]
					jb := &w.Jobs[j]
					e.start[j] = t
					e.free -= jb.GPUs
					r.addRunning(j, t, jb)
				}
				r.dropStarted(picked)
			}
			e.settled = len(r.queue)
		}
		if done != nil && done() {
			return
		}
		// The next event.
		tn := int64(math.MaxInt64)
		if e.next < e.limit {
			tn = w.Jobs[e.next].Submit
		}
		if len(r.heap) > 0 {
			tn = min(tn, r.heap[0].end)
		}
		if tn == math.MaxInt64 {
			return
		}
		e.t = tn
	}
}

// replayer holds the replay's state: the queue (job indices and what the
// EASY pass sees of them), the running leases (likewise, in any order) and a
// min-heap of real ends.
type replayer struct {
	sched   easy.Scheduler
	queue   []int32
	qjobs   []easy.Job
	running []easy.Running
	runJob  []int32
	slot    []int32 // job → index in running, while it runs
	heap    []ending
}

type ending struct {
	end int64
	job int32
}

func (r *replayer) init(w *Workload) {
	r.slot = make([]int32, len(w.Jobs))
}

func (r *replayer) addRunning(j int32, t int64, jb *Job) {
	r.slot[j] = int32(len(r.running))
	r.running = append(r.running, easy.Running{GPUs: jb.GPUs, EstEnd: t + jb.Estimate})
	r.runJob = append(r.runJob, j)
	r.push(ending{end: t + jb.Run, job: j})
}

// removeRunning swaps the last running lease into j's slot: the pass takes
// the running leases in any order.
func (r *replayer) removeRunning(j int32) {
	k := r.slot[j]
	last := int32(len(r.running) - 1)
	if k != last {
		r.running[k] = r.running[last]
		r.runJob[k] = r.runJob[last]
		r.slot[r.runJob[k]] = k
	}
	r.running = r.running[:last]
	r.runJob = r.runJob[:last]
}

// dropStarted removes the picked queue positions (ascending) keeping order.
// Heads started (picked 0, 1, …) are sliced off the front, and the queue
// before the first other picked position stays where it is: shifting the
// whole queue down at every start of a head was most of the replay's own
// time on a 300k-job log, whose queue is long.
func (r *replayer) dropStarted(picked []int) {
	h := 0
	for h < len(picked) && picked[h] == h {
		h++
	}
	r.queue, r.qjobs = r.queue[h:], r.qjobs[h:]
	picked = picked[h:]
	if len(picked) == 0 {
		return
	}
	out, p := picked[0]-h, 0
	for i := picked[0] - h; i < len(r.queue); i++ {
		if p < len(picked) && picked[p]-h == i {
			p++
			continue
		}
		r.queue[out] = r.queue[i]
		r.qjobs[out] = r.qjobs[i]
		out++
	}
	r.queue = r.queue[:out]
	r.qjobs = r.qjobs[:out]
}

// less orders the heap by end, then job index, so that pops are
// deterministic (the order of equal ends does not change the free count,
// but a fixed order keeps the running slice's layout reproducible).
func less(a, b ending) bool {
	return a.end < b.end || (a.end == b.end && a.job < b.job)
}

func (r *replayer) push(e ending) {
	h := append(r.heap, e)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	r.heap = h
}

func (r *replayer) pop() int32 {
	h := r.heap
	top := h[0].job
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		m := l
		if rr := l + 1; rr < len(h) && less(h[rr], h[l]) {
			m = rr
		}
		if !less(h[m], h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	r.heap = h
	return top
}

// fork is a copy of the replay's state that runs on alone with the jobs
// from limit on withheld (the fair start times of docs/studies.md §6.17).
// It copies what is proportional to the queue and the running leases. The
// per-job arrays (start, slot) are shared: the copy writes only the
// entries of jobs queued in the original (which starts none of them before
// unfork) and slots of the original's running leases, which unfork puts
// back. Call unfork before the original goes on.
func (e *easyRun) fork(limit int) *easyRun {
	// The copy's scheduler is new, its reservation not yet computed, but
	// its queue is as settled as the original's.
	c := &easyRun{w: e.w, start: e.start, free: e.free, next: e.next, limit: limit, t: e.t, settled: e.settled}
	c.r = replayer{
		queue: slices.Clone(e.r.queue), qjobs: slices.Clone(e.r.qjobs),
		running: slices.Clone(e.r.running), runJob: slices.Clone(e.r.runJob),
		slot: e.r.slot, heap: slices.Clone(e.r.heap),
	}
	return c
}

// unfork undoes what a fork wrote into the shared arrays.
func (e *easyRun) unfork(*easyRun) {
	for _, j := range e.r.queue {
		e.start[j] = -1
	}
	for k, j := range e.r.runJob {
		e.r.slot[j] = int32(k)
	}
}
