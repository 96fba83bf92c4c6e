//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/bursar-hpc/bursar/service"
)

// slurmEnforcer is the service's own hand on Slurm (serve --slurm-enforce,
// issue 23 item 2): whatever the wrappers do, every job on a lease token
// is killed (killSlurmJobs: SIGKILL to each step, then cancellation) by
// the token's wall-clock expiry, and gets SIGTERM through Slurm, then the
// kill --slurm-grace later, once its lease is no longer held (released,
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
type slurmEnforcer struct {
	key  []byte
	held func(ctx context.Context, campaign string, lease int) (bool, bool, error)
	// bind journals the binding of a lease to its first job and answers
	// the job the lease is bound to (service.BindSlurmJob).
	bind   func(ctx context.Context, campaign string, lease int, job string) (string, error)
	grace  time.Duration
	ledger string // "" none
	log    *slog.Logger
	ctx    context.Context

	// The loop's own: the jobs seen so far and when each got its SIGTERM.
	seen   map[string]bool
	termed map[string]time.Time
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
	// steps are the running steps of the jobs due soon, read ahead of
	// their kill (killSlurmSteps): JOB.STEP, or JOB for a batch shell.
	steps map[string][]string
	// kills are how long the last kills took (killSlurmJobs, from the
	// call to the answer of the cancellation), newest last: the lead.
	kills []time.Duration
}

// slurmEnforceEvery is how often the enforcer reads the queue;
// slurmRecancel is how long a job still listed after its cancellation is
// left before it is cancelled again.
const (
	slurmEnforceEvery = 500 * time.Millisecond
	slurmRecancel     = time.Second
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
func (e *slurmEnforcer) lead() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leadLocked()
}

// leadLocked is how long before a token's expiry its jobs' kill starts
// (the caller holds mu).
func (e *slurmEnforcer) leadLocked() time.Duration {
	d := slurmMinLead
	for _, k := range e.kills {
		d = max(d, k)
	}
	return min(d, slurmMaxLead)
}

func (e *slurmEnforcer) run(ctx context.Context) {
	e.ctx = ctx
	e.seen, e.termed, e.bound = map[string]bool{}, map[string]time.Time{}, e.readLedger()
	e.due, e.cancelled, e.live = map[int64][]string{}, map[string]time.Time{}, map[string]bool{}
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

// ledgerEntry binds a Slurm job to its lease.
type ledgerEntry struct {
	Job      string `json:"job"`
	Lease    int    `json:"lease"`
	Campaign string `json:"campaign"`
	GPUs     int    `json:"gpus"`
	Expires  int64  `json:"expires_unix"`
	CPUs     string `json:"cpus"`
	Seen     int64  `json:"seen_unix"`
}

// schedule has job id cancelled at its token's expiry by a timer of its
// own, whatever the loop is doing then (an squeue on a loaded slurmctld
// takes up to a second): every job due in the same second goes in one
// scancel.
func (e *slurmEnforcer) schedule(id string, expires int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids, ok := e.due[expires]
	e.due[expires] = append(ids, id)
	if !ok {
		time.AfterFunc(time.Until(time.Unix(expires, 0).Add(-e.leadLocked())), func() { e.expire(expires) })
	}
}

// expire cancels the jobs due at expires.
func (e *slurmEnforcer) expire(expires int64) {
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
func (e *slurmEnforcer) stepsFor(ids []string) (steps, batch []string, err error) {
	e.mu.Lock()
	for _, id := range ids {
		ss := e.steps[id]
		if len(ss) == 0 {
			e.mu.Unlock()
			return slurmStepsOf(ids)
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
func (e *slurmEnforcer) readSteps(now time.Time, live map[string]bool) {
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
	out, err := squeueSteps()
	if err != nil {
		e.log.Warn("slurm enforcer: squeue -s failed", "err", err)
		return
	}
	steps, batch := parseSlurmSteps(out, live)
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
// shells (killSlurmSteps, with the steps read ahead when it can), then
// their cancellation, each call for all of ids; it notes when, and how
// long the kill took (the lead of the kills to come).
func (e *slurmEnforcer) kill(ids []string, why string) {
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
		err = killSlurmJobsWith(ids, steps, batch)
	}
	if len(again) > 0 {
		// Still listed a second after its steps were killed: its steps'
		// processes are gone, but Slurm still counts the job as running
		// (its srun was killed before it could report their end, so the
		// step is listed and takes signals while nothing runs in it).
		// Only a cancellation ends such a job, and with nothing left to
		// ignore its SIGTERM it costs no KillWait.
		err = errors.Join(err, runScancel(again...))
	}
	took := time.Since(now)
	e.mu.Lock()
	e.kills = append(e.kills, took)
	if len(e.kills) > slurmLeadOf {
		e.kills = e.kills[1:]
	}
	e.mu.Unlock()
	e.log.Info("slurm enforcer: "+why, "jobs", strings.Join(ids, ","), "scancel", errOrOK(err), "kill took", took.Round(time.Millisecond),
		"lead", e.lead().Round(time.Millisecond))
}

// recentlyCancelled: the job was cancelled less than slurmRecancel ago.
func (e *slurmEnforcer) recentlyCancelled(id string, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	at, ok := e.cancelled[id]
	return ok && now.Sub(at) < slurmRecancel
}

func (e *slurmEnforcer) pass(ctx context.Context, now time.Time) {
	qctx, cancel := context.WithTimeout(ctx, slurmCmdTimeout)
	out, err := exec.CommandContext(qctx, "squeue", "-h", "-o", "%i|%k|%T|%C").Output()
	cancel()
	if err != nil {
		e.log.Warn("slurm enforcer: squeue failed", "err", err)
		return
	}
	// The calls to make, batched: one scancel for each list.
	var expired, notice, graceOver, reused, gone []string
	live := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 4 || !strings.HasPrefix(f[1], service.SlurmTokenPrefix+":") {
			continue
		}
		id := f[0]
		live[id] = true
		l, err := service.VerifySlurmToken(e.key, f[1], now)
		switch {
		case err != nil && l.Lease == 0:
			// Not signed with this key: the gate would not have let it in.
			e.log.Warn("slurm enforcer: job with a bad token", "job", id, "err", err)
			continue
		case !e.seen[id]:
			e.seen[id] = true
			key := service.SlurmWCKey(l)
			first, ok := e.bound[key]
			if e.bind != nil && (!ok || first == id) {
				// The journal's binding (it survives a restart with
				// --data-dir): the job bound before, or this one now.
				if b, err := e.bind(ctx, l.Campaign, l.Lease, id); err == nil {
					first, ok = b, true
				} else {
					e.log.Warn("slurm enforcer: cannot journal the job's lease", "job", id, "lease", l.Lease, "campaign", l.Campaign, "err", err)
				}
			}
			if ok && first != id {
				// The gate admits one job per token (its --once-dir);
				// one that got past it, or a gate without it, is ended.
				e.log.Warn("slurm enforcer: a second job on one lease token: cancelled", "job", id, "first", first, "lease", l.Lease, "campaign", l.Campaign)
				reused = append(reused, id)
				continue
			}
			e.bound[key] = id
			e.record(ledgerEntry{Job: id, Lease: l.Lease, Campaign: l.Campaign, GPUs: l.GPUs, Expires: l.Expires, CPUs: f[3], Seen: now.Unix()})
			if err == nil {
				e.mu.Lock()
				e.live[id] = true // the timer may fire before this pass ends
				e.mu.Unlock()
				e.schedule(id, l.Expires)
			}
		}
		if err != nil { // expired
			// A completing job has had its kill (or ended): Slurm takes
			// no more signals for it.
			if f[2] != "COMPLETING" && !e.recentlyCancelled(id, now) {
				expired = append(expired, id)
			}
			continue
		}
		held, underNotice, err := e.held(ctx, l.Campaign, l.Lease)
		switch {
		case err != nil || (held && !underNotice):
			continue
		case f[2] == "PENDING" && !held:
			// Nothing runs, so nothing to warn: it goes at once. (A
			// SIGTERM to a pending job is refused as "can not be
			// altered now", and scancel then retries for 5 s.)
			if !e.recentlyCancelled(id, now) {
				gone = append(gone, id)
			}
			continue
		case f[2] != "RUNNING":
			continue // pending on a lease under notice; completing
		}
		if at, ok := e.termed[id]; !ok {
			e.termed[id] = now
			notice = append(notice, id)
		} else if now.Sub(at) >= e.grace && !e.recentlyCancelled(id, now) {
			graceOver = append(graceOver, id)
		}
	}
	e.kill(reused, "cancelled jobs on a lease token that admitted another job")
	e.kill(expired, "cancelled jobs past their lease")
	e.kill(gone, "cancelled pending jobs whose lease is gone")
	if len(notice) > 0 {
		err := scancelJobs(notice, true)
		e.log.Info("slurm enforcer: SIGTERM through Slurm to jobs whose lease is gone or under notice", "jobs", strings.Join(notice, ","), "scancel", errOrOK(err))
	}
	e.kill(graceOver, "cancelled jobs whose lease is gone, after the grace")
	for id := range e.termed {
		if !live[id] {
			delete(e.termed, id)
		}
	}
	for id := range e.seen {
		if !live[id] {
			delete(e.seen, id)
		}
	}
	for key := range e.bound {
		if k, ok := parseLeaseKey(key); ok && k.Expires < now.Unix()-60 {
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
	e.mu.Unlock()
	e.readSteps(now, live)
}

// readLedger binds the jobs of the ledger's live leases again after a
// restart (the ledger's first job of a lease is the one its token
// admitted).
func (e *slurmEnforcer) readLedger() map[string]string {
	bound := map[string]string{}
	if e.ledger == "" {
		return bound
	}
	b, err := os.ReadFile(e.ledger)
	if err != nil {
		return bound
	}
	now := time.Now().Unix()
	for _, line := range strings.Split(string(b), "\n") {
		var en ledgerEntry
		if json.Unmarshal([]byte(line), &en) != nil || en.Expires < now-60 {
			continue
		}
		key := service.SlurmWCKey(service.SlurmLease{Lease: en.Lease, Campaign: en.Campaign, GPUs: en.GPUs, Expires: en.Expires})
		if _, ok := bound[key]; !ok {
			bound[key] = en.Job
		}
	}
	return bound
}

func (e *slurmEnforcer) record(en ledgerEntry) {
	if e.ledger == "" {
		return
	}
	b, _ := json.Marshal(en)
	f, err := os.OpenFile(e.ledger, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		e.log.Warn("slurm enforcer: ledger", "err", err)
		return
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		e.log.Warn("slurm enforcer: ledger", "err", err)
	}
}

// startSlurmEnforcer starts the enforcer when serve --slurm-enforce asks
// for it; it stops with ctx.
func startSlurmEnforcer(ctx context.Context, c slurmEnforceFlags, svc *service.Service, key []byte, log *slog.Logger) error {
	if !c.enforce {
		return nil
	}
	if len(key) == 0 {
		return errSlurmEnforceNoKey
	}
	e := &slurmEnforcer{key: key, held: svc.SlurmLeaseHeld, bind: svc.BindSlurmJob, grace: c.grace, ledger: c.ledger, log: log}
	go e.run(ctx)
	log.Info("slurm enforcer started", "grace", c.grace, "ledger", c.ledger)
	return nil
}
