package trace

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
)

// driver steps a policy through a workload's jobs: the one loop that
// replays a log (docs/traces.md, "The replay driver"). Before each tick it
// files the jobs due by then (the jobs from limit on are withheld), steps
// the actor, ticks the policy, drains the tick's grants and releases into
// its books, steps the hosts' failure process (docs/hosts.md), files the
// preempted jobs and those the hosts ended again, and skips the quiet
// ticks up to the next submit, the policy's next change or the actor's or
// the hosts' next act.
// It stops when every job is done (finished or denied), when the policy's
// clock reaches end, or when its books say so at a grant.
//
// Replay is a driver over the whole workload whose books are the jobs'
// records; a fair-start fork is a driver on a copy of the policy, limited
// to the jobs submitted by the fork, whose books only watch for grants
// (forkState.run).
type driver struct {
	w     *Workload
	base  int64               // the policy's tick t is second t + base of the log
	ids   []policy.CampaignID // each workload campaign's id in the policy
	alloc policy.Allocator
	rr    policy.RigidRequester
	skip  policy.EventSkipper // nil: every tick is stepped
	cap   *capture
	books books
	actor Actor      // nil: none
	users Users      // the actor as the workload's users (nil: none)
	hosts *hostsHook // nil: no failure process

	next  int // the next job to file
	limit int // the jobs from limit on are withheld
	done  int // the jobs finished or denied
	end   int // the tick at which the driver stops

	jobOf jobTable
	// reqOf, if not nil (the replay's, with fair starts), is each job's
	// last request id (−1: none): a fair start's fork names its jobs'
	// requests to a policy that forecasts their grants (fairForks.take).
	reqOf   []int32
	kept    checkpoints
	requeue []int32
	ticks   int64 // the Ticks executed
	// tickByTick: every tick is stepped even where the policy could skip
	// (the exactness tests' oracle); a fork of the driver is too.
	tickByTick bool
}

// books are what the owner of a driver keeps of its jobs' leases: the
// replay's per-job records, or a fork's watch for grants. The driver
// itself keeps only what it needs to go on (which jobs are done, what a
// requeued job has left to run).
type books interface {
	// filing is called before the jobs due at the next tick are filed,
	// filed after.
	filing(d *driver) error
	filed(d *driver) error
	// denied: the policy refused job j at once (policy.ErrExceedsLimit),
	// or the actor did before the policy saw it.
	denied(j int)
	// granted is job j's grant e; stop ends the run after this tick.
	granted(d *driver, j int32, e *policy.Event) (stop bool, err error)
	// preempted is the end of job j's lease e by preemption, or by a
	// host (e.Reason a hosts.Why's: the lease was on a node that failed or
	// drained); the driver then adds what its checkpoints kept and files
	// it again.
	preempted(d *driver, j int32, e *policy.Event) error
	// released is job j's end, lease e.
	released(d *driver, j int32, e *policy.Event) error
}

// An Actor shares the machine with a workload's users: the agents of the
// agents-arrive study (docs/studies.md §3.3). Replay registers the
// workload's campaigns with the envelopes the actor gives them, then lets
// the actor join (register its own campaigns), asks it before filing each
// job, and steps it around each of the policy's ticks, never skipping a
// tick at which it acts. A fair-start fork runs without it (Replay
// refuses both at once).
type Actor interface {
	// Envelope is the envelope a workload campaign registers with, given
	// the workload's.
	Envelope(env policy.Envelope) policy.Envelope
	// Join registers the actor's campaigns on the policy, after the
	// workload's and before the first job is filed.
	Join(a policy.Allocator) error
	// Denies reports whether job jb is denied before the policy sees it:
	// a job its campaign can never hold beside the actor. The driver
	// counts it as the policy's refusal.
	Denies(jb *Job) bool
	// Act is the actor's step at tick t, just before the policy's Tick.
	Act(t int)
	// Acted follows the policy's Tick t, before the tick's grants and
	// releases are drained.
	Acted(t int) error
	// NextAct is the first tick after now at which the actor acts
	// (math.MaxInt: none); no tick from it on is skipped.
	NextAct(now int) int
}

// Users is an Actor that speaks for the workload's own users as well
// (the lab's teams of the story study, docs/story.md): it chooses the
// class each job is declared with when it is filed, and hears each of
// its starts, so that users can respond to what the policy did to them.
// Replay uses it where its Actor implements it.
type Users interface {
	// Registered gives the policy's id of each workload campaign (in
	// campaign order), before Join.
	Registered(ids []policy.CampaignID)
	// Declare is the class job jb is filed with (its own is jb.Class). A
	// job requeued after a preemption is filed again and asked again.
	Declare(jb *Job) policy.Class
	// Started is job jb's start (a grant) at second t of the log; a
	// requeued job starts again.
	Started(jb *Job, t int64)
}

// newDriver is a driver of alloc over w's jobs up to limit, stopping at
// tick end, with its journal captured by cap (already set on alloc). It
// skips quiet ticks where alloc can, unless tickByTick.
func newDriver(w *Workload, base int64, ids []policy.CampaignID, alloc policy.Allocator, cap *capture, b books, limit, end int, tickByTick bool) (*driver, error) {
	rr, ok := alloc.(policy.RigidRequester)
	if !ok {
		return nil, fmt.Errorf("policy %T cannot file rigid requests", alloc)
	}
	d := &driver{w: w, base: base, ids: ids, alloc: alloc, rr: rr, cap: cap, books: b, limit: limit, end: end, tickByTick: tickByTick}
	if !tickByTick {
		d.skip, _ = alloc.(policy.EventSkipper)
	}
	return d, nil
}

// due reports whether the next job is filed before tick now + 1.
func (d *driver) due(now int) bool {
	return d.next < d.limit && d.w.Jobs[d.next].Submit-d.base <= int64(now)+1
}

// run steps the policy until every job is done, its clock reaches end, or
// the books stop it.
func (d *driver) run() error {
	n := len(d.w.Jobs)
	for {
		now := d.alloc.Now()
		if d.due(now) {
			if err := d.books.filing(d); err != nil {
				return err
			}
			for d.due(now) {
				if err := d.file(d.next); err != nil {
					return err
				}
				d.next++
			}
			if err := d.books.filed(d); err != nil {
				return err
			}
		}
		if d.done == n || now >= d.end {
			return nil
		}
		t := now + 1
		if d.actor != nil {
			d.actor.Act(t)
		}
		d.alloc.Tick()
		d.ticks++
		if d.actor != nil {
			if err := d.actor.Acted(t); err != nil {
				return err
			}
		}
		// The tick's grants and releases of the jobs' leases go to the
		// books; the preempted jobs are filed again. This and the skip
		// below are written out, not called: a call per tick cost the
		// excerpt's static replay with fair starts 0.3 % more instructions
		// (callgrind), the forks' ticks being many and short.
		stop := false
		d.requeue = d.requeue[:0]
		for i := range d.cap.ev {
			e := &d.cap.ev[i]
			j := d.jobOf.at(e.Lease)
			if j < 0 {
				continue
			}
			var err error
			switch {
			case e.Kind == policy.EventGrant:
				if d.users != nil {
					d.users.Started(&d.w.Jobs[j], int64(e.T)+d.base)
				}
				var s bool
				s, err = d.books.granted(d, j, e)
				stop = stop || s
			case e.Kind == policy.EventRelease && e.Reason == policy.ReasonPreempted:
				err = d.books.preempted(d, j, e)
				if e.Kept > 0 {
					d.kept.add(j, int64(e.Kept), n)
				}
				d.requeue = append(d.requeue, j)
			case e.Kind == policy.EventRelease:
				err = d.books.released(d, j, e)
				d.done++
			}
			if err != nil {
				return err
			}
		}
		if d.hosts != nil {
			if err := d.hosts.step(t, len(d.cap.ev)); err != nil {
				return err
			}
		}
		d.cap.ev = d.cap.ev[:0]
		for _, j := range d.requeue {
			if err := d.file(int(j)); err != nil {
				return err
			}
		}
		now = d.alloc.Now()
		if stop || d.done == n || now >= d.end {
			return nil
		}
		// Skip the ticks before the next event: the policy's next change,
		// the next submit, the actor's or the hosts' next act; at most to end − 1, so
		// that the next tick is then end's, the last one, as when ticking
		// every second.
		if d.skip != nil {
			target := min(d.skip.NextChange()-1, d.end-1)
			if d.next < d.limit {
				target = min(target, int(d.w.Jobs[d.next].Submit-d.base)-1)
			}
			if d.actor != nil {
				target = min(target, d.actor.NextAct(now)-1)
			}
			if d.hosts != nil {
				target = min(target, d.hosts.nextAct(now)-1)
			}
			if target > now {
				d.skip.SkipTo(target)
			}
		}
	}
}

// file files job j as a rigid request with its original submit time,
// asking for what its checkpoints left of its run (§6.7).
func (d *driver) file(j int) error {
	jb := &d.w.Jobs[j]
	if d.actor != nil && d.actor.Denies(jb) {
		d.books.denied(j)
		d.done++
		return nil
	}
	cls := jb.Class
	if d.users != nil {
		cls = d.users.Declare(jb)
	}
	id, err := fileRigid(d.w, d.rr, d.ids[jb.Campaign], jb, cls, int(jb.Submit-d.base), d.kept.of(j))
	if id >= 0 {
		d.jobOf.set(id, int32(j))
		if d.reqOf != nil {
			d.reqOf[j] = int32(id)
		}
	}
	if errors.Is(err, policy.ErrExceedsLimit) {
		d.books.denied(j)
		d.done++
		return nil
	}
	if err != nil {
		return fmt.Errorf("job %d: %w", jb.Number, err)
	}
	return nil
}

// jobTable maps the policy's request ids to jobs (−1: not a job's). A
// fork reads the replay's table as it was at the fork (shared, never
// written: the replay only appends beyond it) and keeps its own new
// requests beyond it.
type jobTable struct {
	shared []int32
	own    []int32 // request id − len(shared) → job
}

func (t *jobTable) at(id int) int32 {
	switch {
	case id < 0:
		return -1
	case id < len(t.shared):
		return t.shared[id]
	case id-len(t.shared) < len(t.own):
		return t.own[id-len(t.shared)]
	}
	return -1
}

func (t *jobTable) set(id int, j int32) {
	if id < len(t.shared) {
		return
	}
	id -= len(t.shared)
	for len(t.own) <= id {
		t.own = append(t.own, -1)
	}
	t.own[id] = j
}

// checkpoints are each job's run kept by checkpoints (§6.7): a requeued
// job asks for what is left of its run and of its estimate. The replay
// keeps each job's total (now, made at its first checkpoint: only under a
// checkpointing restart rule) and every change in order (hist), so that a
// fork reads them as they were when it was taken (the changes before
// seen) without copying them; a fork keeps its own, few, in a map on top.
type checkpoints struct {
	now  []int64                // the replay's: each job's total
	hist map[int32][]keptChange // the replay's: each job's totals as they grew
	seq  int                    // the replay's changes so far
	// A fork's: the replay's (view) as of its change seen, and its own.
	view *checkpoints
	seen int
	own  map[int32]int64
}

// keptChange is a job's total after the replay's change seq.
type keptChange struct {
	seq   int
	total int64
}

func (c *checkpoints) of(j int) int64 {
	if c.view == nil {
		if c.now == nil {
			return 0
		}
		return c.now[j]
	}
	return c.view.asOf(j, c.seen) + c.own[int32(j)]
}

// asOf is job j's total after the replay's first seen changes.
func (c *checkpoints) asOf(j, seen int) int64 {
	h := c.hist[int32(j)]
	i, _ := slices.BinarySearchFunc(h, seen, func(k keptChange, seen int) int { return cmp.Compare(k.seq, seen) })
	if i == 0 {
		return 0
	}
	return h[i-1].total
}

// add adds s seconds kept to job j's, one of n jobs.
func (c *checkpoints) add(j int32, s int64, n int) {
	if c.view != nil {
		if c.own == nil {
			c.own = map[int32]int64{}
		}
		c.own[j] += s
		return
	}
	if c.now == nil {
		c.now, c.hist = make([]int64, n), map[int32][]keptChange{}
	}
	c.now[j] += s
	c.hist[j] = append(c.hist[j], keptChange{c.seq, c.now[j]})
	c.seq++
}
