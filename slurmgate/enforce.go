package slurmgate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bursar-hpc/bursar/internal/slurmtoken"
)

// Enforcer is the service's own hand on Slurm (serve --slurm-enforce,
// issue 23 item 2): whatever the wrappers do, every job on a lease token
// is killed (Kill: SIGKILL to each step, then cancellation) by the
// token's wall-clock expiry, and gets SIGTERM through Slurm, then the
// kill Grace later, once its lease is no longer held (released,
// reclaimed) or is under preemption notice; a pending job whose lease is
// gone is cancelled at once. Token expiries are wall time fixed at issue,
// so a restart or an outage of the service does not lengthen what it
// enforces. A job is killed by a timer set when it is first seen, ahead of
// its expiry by the time the last kills took (lead), not at the next read
// of the queue, and every call is batched: one round of calls for all the
// jobs due in the same second, and per read one for the notices and one
// for the kills (on a loaded slurmctld each call takes up to a second,
// which a call per job would add up). Each job seen on a token is written
// once to the ledger (a JSON line: job id, lease, campaign, GPUs, expiry,
// CPUs), binding the lease to its Slurm job ids.
type Enforcer struct {
	// Key checks the jobs' lease tokens (the key the service signs with).
	Key []byte
	// Leases is the service: whether a lease is held, and the job each
	// lease is bound to.
	Leases Leases
	// Cluster is Slurm (Exec: its commands).
	Cluster Cluster
	// Grace is the time between a job's SIGTERM and its kill once its
	// lease is gone or under notice.
	Grace time.Duration
	// Ledger is the file each job seen on a token is appended to ("":
	// none).
	Ledger string
	// Unit is what a lease's size counts, as the gate's plugin counts it
	// (its UNIT): slurmtoken.UnitCPU, where CPUs stand in for GPUs (""
	// too), or slurmtoken.UnitGPU. A running job is held to its lease's
	// size in that unit, and never to more GPUs than its lease.
	Unit string
	// Unleased is what is done with a job in a gated partition without a
	// lease (UnleasedIgnore, UnleasedHold, UnleasedCancel; "": ignore),
	// and Ungated the partitions the gate lets through (its UNGATED).
	Unleased string
	Ungated  map[string]bool
	Log      *slog.Logger

	ctx context.Context

	// The loop's own: the jobs seen so far, those seen running (whose
	// allocation was compared with their lease), and when each got its
	// SIGTERM.
	seen, sized map[string]bool
	warned      map[string]bool // the jobs without a lease logged
	holding     map[string]bool // the leases held past their end, by WcKey
	// lastSeen is when each job on a token was last listed, and
	// released the jobs whose lease was seen released (the ledger's
	// events).
	lastSeen map[string]time.Time
	released map[string]bool
	termed   map[string]time.Time
	// bound is the job each lease's token admitted first (by the lease's
	// WcKey, which names the token): one token, one job. It is read back
	// from the ledger at start.
	bound map[string]string

	// mu guards what the expiry timers share with the loop: the jobs due
	// at each expiry second, and when each job was last cancelled.
	mu        sync.Mutex
	due       map[int64][]string
	cancelled map[string]time.Time
	live      map[string]bool // the jobs the last squeue listed
	// running are the leases (leaseName) with a job running or
	// completing at the last read of the queue, and read whether there
	// was one yet (Running).
	running map[string]bool
	read    bool
	// steps are the running steps of the jobs due soon, read ahead of
	// their kill (killSteps): JOB.STEP, or JOB for a batch shell.
	steps map[string][]string
	// kills are how long the last kills took (Kill, from the
	// call to the answer of the cancellation), newest last: the lead.
	kills []time.Duration
}

// Leases is what the enforcer asks the service (*service.Service
// answers): whether a lease is held (and whether under preemption
// notice), and the job a lease is bound to, binding it to job when it is
// bound to none (the journal keeps the binding across restarts).
type Leases interface {
	SlurmLeaseHeld(ctx context.Context, campaign string, lease int) (held, underNotice bool, err error)
	BindSlurmJob(ctx context.Context, campaign string, lease int, job string) (bound string, err error)
	// HoldSlurmLease keeps a lease held until at the least until (never
	// shorter), and says whether it is held: a lease ends when nothing
	// of it runs (hold.go).
	HoldSlurmLease(ctx context.Context, campaign string, lease int, until time.Time) (held bool, err error)
}

// slurmEnforceEvery is how often the enforcer reads the queue;
// Recancel is how long a job still listed after its cancellation is left
// before it is cancelled again (by the enforcer and the wrapper alike).
const (
	slurmEnforceEvery = 500 * time.Millisecond
	Recancel          = time.Second
)

// The kill at a lease's end starts this far before the token's expiry:
// as long as the slowest of the last slurmLeadOf kills took, at least
// slurmMinLead and at most slurmMaxLead. A kill is a squeue and three
// scancels, each a round trip through slurmctld, which answers in
// milliseconds when idle and in seconds when it is busy (a storm of
// submissions, each holding its job lock while the gate's check runs);
// started at the expiry, the job would run that much past it, on GPUs
// the broker has already given to the next lease. Starting it early
// takes at most slurmMaxLead off a lease whose token already ends on a
// whole second at or before the broker's end.
const (
	slurmMinLead = 250 * time.Millisecond
	slurmMaxLead = 2 * time.Second
	slurmLeadOf  = 8
)

// lead is how long before a token's expiry its jobs' kill starts.
func (e *Enforcer) lead() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leadLocked()
}

// leadLocked is how long before a token's expiry its jobs' kill starts
// (the caller holds mu).
func (e *Enforcer) leadLocked() time.Duration {
	d := slurmMinLead
	for _, k := range e.kills {
		d = max(d, k)
	}
	return min(d, slurmMaxLead)
}

// Run reads the queue every slurmEnforceEvery and acts on it until ctx
// ends.
func (e *Enforcer) Run(ctx context.Context) {
	e.start(ctx, time.Now())
	tk := time.NewTicker(slurmEnforceEvery)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		e.pass(ctx, time.Now())
	}
}

// start makes the loop's state, with the bindings of the ledger's leases
// live at now.
func (e *Enforcer) start(ctx context.Context, now time.Time) {
	e.ctx = ctx
	e.seen, e.sized, e.warned, e.termed, e.bound = map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]time.Time{}, e.readLedger(now)
	e.holding, e.lastSeen, e.released = map[string]bool{}, map[string]time.Time{}, map[string]bool{}
	e.due, e.cancelled, e.live = map[int64][]string{}, map[string]time.Time{}, map[string]bool{}
}

// schedule has job id cancelled at its token's expiry by a timer of its
// own, whatever the loop is doing then (an squeue on a loaded slurmctld
// takes up to a second): every job due in the same second goes in one
// scancel.
func (e *Enforcer) schedule(id string, expires int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids, ok := e.due[expires]
	e.due[expires] = append(ids, id)
	if !ok {
		time.AfterFunc(time.Until(time.Unix(expires, 0).Add(-e.leadLocked())), func() { e.expire(expires) })
	}
}

// expire cancels the jobs due at expires.
func (e *Enforcer) expire(expires int64) {
	e.mu.Lock()
	var ids []string
	for _, id := range e.due[expires] {
		if e.live[id] { // not one that ended already
			ids = append(ids, id)
		}
	}
	delete(e.due, expires)
	e.mu.Unlock()
	if e.ctx.Err() == nil {
		e.kill(ids, "cancelled jobs at their lease's end")
	}
}

// stepsFor is what kill signals for jobs ids: the steps the last read
// ahead found (readSteps) when it found some for each of ids; otherwise
// (a job that was pending then may have started since, and a job with no
// step is cancelled) a fresh read.
func (e *Enforcer) stepsFor(ids []string) (steps, batch []string, err error) {
	e.mu.Lock()
	for _, id := range ids {
		ss := e.steps[id]
		if len(ss) == 0 {
			e.mu.Unlock()
			return StepsOf(e.Cluster, ids)
		}
		for _, st := range ss {
			if strings.Contains(st, ".") {
				steps = append(steps, st)
			} else {
				batch = append(batch, st)
			}
		}
	}
	e.mu.Unlock()
	return steps, batch, nil
}

// readSteps reads the running steps of the live jobs ahead of their kill
// when one is due within the lead and a read of the queue from now, so
// that the kill itself is one round of calls: on a busy slurmctld every
// call takes its turn behind the others.
func (e *Enforcer) readSteps(now time.Time, live map[string]bool) {
	e.mu.Lock()
	soon := now.Add(e.leadLocked() + 2*slurmEnforceEvery).Unix()
	need := false
	for exp, ids := range e.due {
		if exp <= soon && len(ids) > 0 {
			need = true
			break
		}
	}
	e.mu.Unlock()
	if !need {
		return
	}
	lines, err := stepLines(e.Cluster)
	if err != nil {
		e.Log.Warn("slurm enforcer: squeue -s failed", "err", err)
		return
	}
	steps, batch := ParseSteps(lines, live)
	m := make(map[string][]string, len(live))
	for id := range live {
		m[id] = []string{}
	}
	for _, st := range steps {
		job, _, _ := strings.Cut(st, ".")
		m[job] = append(m[job], st)
	}
	for _, job := range batch {
		m[job] = append(m[job], job)
	}
	e.mu.Lock()
	e.steps = m
	e.mu.Unlock()
}

// kill ends jobs at once: SIGKILL through Slurm to their steps and batch
// shells (killSteps, with the steps read ahead when it can), then
// their cancellation, each call for all of ids; it notes when, and how
// long the kill took (the lead of the kills to come).
func (e *Enforcer) kill(ids []string, why string) {
	if len(ids) == 0 {
		return
	}
	now := time.Now()
	var again []string
	e.mu.Lock()
	for _, id := range ids {
		if _, ok := e.cancelled[id]; ok {
			again = append(again, id)
		}
		e.cancelled[id] = now
	}
	e.mu.Unlock()
	steps, batch, err := e.stepsFor(ids)
	if err == nil {
		err = killWith(e.Cluster, ids, steps, batch)
	}
	if len(again) > 0 {
		// Still listed a second after its steps were killed: its steps'
		// processes are gone, but Slurm still counts the job as running
		// (its srun was killed before it could report their end, so the
		// step is listed and takes signals while nothing runs in it).
		// Only a cancellation ends such a job, and with nothing left to
		// ignore its SIGTERM it costs no KillWait.
		err = errors.Join(err, Scancel(e.Cluster, again...))
	}
	took := time.Since(now)
	e.mu.Lock()
	e.kills = append(e.kills, took)
	if len(e.kills) > slurmLeadOf {
		e.kills = e.kills[1:]
	}
	e.mu.Unlock()
	e.Log.Info("slurm enforcer: "+why, "jobs", strings.Join(ids, ","), "scancel", OKOr(err), "kill took", took.Round(time.Millisecond),
		"lead", e.lead().Round(time.Millisecond))
}

// recentlyCancelled: the job was cancelled less than Recancel ago.
func (e *Enforcer) recentlyCancelled(id string, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	at, ok := e.cancelled[id]
	return ok && now.Sub(at) < Recancel
}

func (e *Enforcer) pass(ctx context.Context, now time.Time) {
	qctx, cancel := context.WithTimeout(ctx, CmdTimeout)
	queue, err := e.Cluster.Queue(qctx)
	cancel()
	if err != nil {
		e.Log.Warn("slurm enforcer: squeue failed", "err", err)
		return
	}
	// The calls to make, batched: one scancel for each list.
	var expired, notice, graceOver, reused, gone, oversized, hold []string
	live := map[string]bool{}
	ending := map[string]slurmtoken.Lease{} // the leases to hold, by WcKey
	// gonePending are the jobs whose lease the service no longer holds
	// for them, with the lease's WcKey: the ledger says so unless the
	// broker still holds it while the job ends (holdEnding).
	gonePending := map[string]string{}
	running := map[string]bool{}
	for _, j := range queue {
		if Unleased(j, e.Key, e.Ungated, now) {
			live[j.ID] = true
			hold, gone, notice, graceOver = e.unleased(j, now, hold, gone, notice, graceOver)
			continue
		}
		if !strings.HasPrefix(j.Comment, slurmtoken.Prefix+":") {
			continue // in an ungated partition
		}
		id := j.ID
		live[id] = true
		firstSeen := false
		l, err := slurmtoken.Verify(e.Key, j.Comment, now)
		switch {
		case err != nil && l.Lease == 0:
			// Not signed with this key: the gate would not have let it in.
			e.Log.Warn("slurm enforcer: job with a bad token", "job", id, "err", err)
			continue
		case !e.seen[id]:
			e.seen[id] = true
			firstSeen = true
			key := slurmtoken.WCKey(l)
			// The tasks of an array (5_0, 5_1, 5_[2-7]) are one
			// submission, admitted on one token as a whole (the gate
			// checks that the lease covers them all at once): bound by
			// the array's job id.
			whole := ArrayJob(id)
			first, ok := e.bound[key]
			if !ok || first == whole {
				// The journal's binding (it survives a restart with
				// --data-dir): the job bound before, or this one now.
				if b, err := e.Leases.BindSlurmJob(ctx, l.Campaign, l.Lease, whole); err == nil {
					first, ok = b, true
				} else {
					e.Log.Warn("slurm enforcer: cannot journal the job's lease", "job", id, "lease", l.Lease, "campaign", l.Campaign, "err", err)
				}
			}
			if ok && first != whole {
				// The gate admits one job per token (its --once-dir);
				// one that got past it, or a gate without it, is ended.
				e.Log.Warn("slurm enforcer: a second job on one lease token: cancelled", "job", id, "first", first, "lease", l.Lease, "campaign", l.Campaign)
				reused = append(reused, id)
				continue
			}
			e.bound[key] = whole
			number := j.Number
			if number == id {
				number = ""
			}
			e.record(LedgerEntry{Job: id, Number: number, Lease: l.Lease, Campaign: l.Campaign, GPUs: l.GPUs, Expires: l.Expires, CPUs: j.CPUs, Seen: now.Unix()})
			if err == nil {
				e.mu.Lock()
				e.live[id] = true // the timer may fire before this pass ends
				e.mu.Unlock()
				e.schedule(id, l.Expires)
			}
		}
		if e.seen[id] {
			e.lastSeen[id] = now
		}
		if j.State != "PENDING" {
			running[leaseName(l.Campaign, l.Lease)] = true
		}
		if j.State == "RUNNING" && !e.sized[id] {
			// What Slurm allocated, compared with the lease once, the
			// first time the job is seen running: a job the gate's count
			// of its size missed (docs/slurm.md, "Sizes") ends at once.
			e.sized[id] = true
			e.event(id, LedgerRunning, now)
			if why := e.oversized(j, l); why != "" {
				e.Log.Warn("slurm enforcer: a job larger than its lease: killed", "job", id, "lease", l.Lease, "campaign", l.Campaign, "why", why)
				oversized = append(oversized, id)
				continue
			}
		}
		if j.State != "PENDING" && time.Unix(l.Expires, 0).Sub(now) < slurmHoldAhead {
			ending[slurmtoken.WCKey(l)] = l
		}
		if err != nil { // expired
			// A completing job has had its kill (or ended): Slurm takes
			// no more signals for it.
			if j.State != "COMPLETING" && !e.recentlyCancelled(id, now) {
				expired = append(expired, id)
			}
			continue
		}
		held, underNotice, err := e.Leases.SlurmLeaseHeld(ctx, l.Campaign, l.Lease)
		if err == nil && held && underNotice && j.State != "PENDING" {
			// Reclaimed: the lease ends at its preemption time, which
			// the broker holds back while the job (its notice sent, its
			// kill a grace later) still runs.
			ending[slurmtoken.WCKey(l)] = l
		}
		if err == nil && !held && e.seen[id] {
			if j.State != "PENDING" {
				// Released while it runs: the broker holds the lease
				// until nothing of it runs (hold.go).
				ending[slurmtoken.WCKey(l)] = l
			}
			if !e.released[id] {
				gonePending[id] = slurmtoken.WCKey(l)
			}
		}
		switch {
		case err != nil || (held && !underNotice):
			continue
		case firstSeen && !held && !e.recentlyCancelled(id, now):
			// Seen for the first time after its lease was released (or
			// reclaimed): it started, or was submitted, on resources the
			// broker has freed, so it gets no grace: killed at once.
			gone = append(gone, id)
			continue
		case j.State == "PENDING" && !held:
			// Nothing runs, so nothing to warn: it goes at once. (A
			// SIGTERM to a pending job is refused as "can not be
			// altered now", and scancel then retries for 5 s.)
			if !e.recentlyCancelled(id, now) {
				gone = append(gone, id)
			}
			continue
		case j.State != "RUNNING":
			continue // pending on a lease under notice; completing
		}
		if at, ok := e.termed[id]; !ok {
			e.termed[id] = now
			notice = append(notice, id)
		} else if now.Sub(at) >= e.Grace && !e.recentlyCancelled(id, now) {
			graceOver = append(graceOver, id)
		}
	}
	heldOn := e.holdEnding(ctx, now, ending)
	for _, id := range sortedKeys(gonePending) {
		if !heldOn[gonePending[id]] {
			e.released[id] = true
			e.event(id, LedgerReleased, now)
		}
	}
	e.kill(reused, "cancelled jobs on a lease token that admitted another job")
	e.kill(oversized, "cancelled jobs larger than their lease")
	e.kill(expired, "cancelled jobs past their lease")
	e.kill(gone, "cancelled pending jobs, and jobs first seen, whose lease is gone or that have none")
	e.holdJobs(hold)
	if len(notice) > 0 {
		err := End(e.Cluster, notice, true)
		e.Log.Info("slurm enforcer: SIGTERM through Slurm to jobs whose lease is gone or under notice", "jobs", strings.Join(notice, ","), "scancel", OKOr(err))
	}
	e.kill(graceOver, "cancelled jobs whose lease is gone, after the grace")
	for id := range e.termed {
		if !live[id] {
			delete(e.termed, id)
		}
	}
	for id := range e.seen {
		if !live[id] {
			if at, ok := e.lastSeen[id]; ok {
				e.event(id, LedgerLastSeen, at)
			}
			delete(e.seen, id)
			delete(e.sized, id)
			delete(e.lastSeen, id)
			delete(e.released, id)
		}
	}
	for id := range e.warned {
		if !live[id] {
			delete(e.warned, id)
		}
	}
	for key := range e.bound {
		if k, ok := ParseLeaseKey(key); ok && k.Expires < now.Unix()-60 {
			delete(e.bound, key) // its token is refused as expired anyway
		}
	}
	e.mu.Lock()
	for id := range e.cancelled {
		if !live[id] {
			delete(e.cancelled, id)
		}
	}
	e.live = live
	e.running, e.read = running, true
	e.mu.Unlock()
	e.readSteps(now, live)
}

// leaseName names a lease as the service does: its campaign and the
// campaign's own lease id.
func leaseName(campaign string, lease int) string { return campaign + "/" + strconv.Itoa(lease) }

// Running says whether a job of campaign's lease (the campaign's own id,
// as in the token) was running or completing at the last read of the
// queue; before the first read it says yes, so that a release then
// holds the lease a few seconds rather than free GPUs a job may hold.
// The service asks it at each release (service.SetSlurmRunning).
func (e *Enforcer) Running(campaign string, lease int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.read || e.running[leaseName(campaign, lease)]
}

// oversized says how running job j's allocation exceeds its lease l (""
// when it does not): more GPUs than the lease, or, counting CPUs, more
// CPUs. The allocation is Slurm's TRES (cpu=N, gres/gpu=N), or squeue's
// CPU count when the TRES do not give one.
func (e *Enforcer) oversized(j QueuedJob, l slurmtoken.Lease) string {
	cpus, gpus := Allocated(j.TRES)
	if cpus == 0 {
		cpus, _ = strconv.Atoi(j.CPUs)
	}
	switch {
	case gpus > l.GPUs:
		return fmt.Sprintf("%d GPUs allocated, lease %d is for %d", gpus, l.Lease, l.GPUs)
	case e.Unit != slurmtoken.UnitGPU && cpus > l.GPUs:
		return fmt.Sprintf("%d CPUs allocated, lease %d is for %d", cpus, l.Lease, l.GPUs)
	}
	return ""
}

// Allocated reads the CPUs and GPUs of a TRES string as squeue prints a
// job's allocation ("cpu=16,mem=1000M,node=1,billing=16,gres/gpu=2";
// typed GPUs, gres/gpu:a100=2, are counted in gres/gpu too). What it
// cannot read counts as 0.
func Allocated(tres string) (cpus, gpus int) {
	for _, item := range strings.Split(tres, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(val)
		if err != nil {
			continue
		}
		switch name {
		case "cpu":
			cpus = n
		case "gres/gpu":
			gpus = n
		}
	}
	return cpus, gpus
}

// ArrayJob is the job id of an array task's array (5 for 5_0 and
// 5_[2-7], as squeue prints them), or id itself.
func ArrayJob(id string) string {
	whole, _, _ := strings.Cut(id, "_")
	return whole
}
