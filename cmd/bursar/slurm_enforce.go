//go:build unix

package main

import (
	"context"
	"encoding/json"
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
// is cancelled once the token's wall-clock expiry has passed, and gets
// SIGTERM through Slurm, then cancellation --slurm-grace later, once its
// lease is no longer held (released, reclaimed) or is under preemption
// notice. Token expiries are wall time fixed at issue, so a restart or an
// outage of the service does not lengthen what it enforces. A job is
// cancelled at its expiry by a timer set when it is first seen, not at the
// next read of the queue, and every call is batched: one scancel for all
// the jobs due in the same second, and per read one for the notices and
// one for the cancellations (on a loaded slurmctld each call takes up to
// a second, which a call per job would add up). Each job seen
// on a token is written once to the ledger (a JSON line: job id, lease,
// campaign, GPUs, expiry, CPUs), binding the lease to its Slurm job ids.
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
}

// slurmEnforceEvery is how often the enforcer reads the queue;
// slurmRecancel is how long a job still listed after its cancellation is
// left before it is cancelled again.
const (
	slurmEnforceEvery = 500 * time.Millisecond
	slurmRecancel     = 3 * time.Second
)

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
		time.AfterFunc(time.Until(time.Unix(expires, 0)), func() { e.expire(expires) })
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
		e.cancel(ids, "cancelled jobs at their lease's end")
	}
}

// cancel ends jobs at once (SIGKILL through Slurm, then cancellation), in
// one call each, and notes when.
func (e *slurmEnforcer) cancel(ids []string, why string) {
	if len(ids) == 0 {
		return
	}
	now := time.Now()
	e.mu.Lock()
	for _, id := range ids {
		e.cancelled[id] = now
	}
	e.mu.Unlock()
	// A job that ended meanwhile makes scancel fail for its id only.
	err := scancelJobs(ids, false)
	e.log.Info("slurm enforcer: "+why, "jobs", strings.Join(ids, ","), "scancel", errOrOK(err))
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
	var expired, notice, graceOver, reused []string
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
			if !e.recentlyCancelled(id, now) {
				expired = append(expired, id)
			}
			continue
		}
		held, underNotice, err := e.held(ctx, l.Campaign, l.Lease)
		if err != nil || (held && !underNotice) || f[2] == "PENDING" && held {
			continue
		}
		if at, ok := e.termed[id]; !ok {
			e.termed[id] = now
			notice = append(notice, id)
		} else if now.Sub(at) >= e.grace && !e.recentlyCancelled(id, now) {
			graceOver = append(graceOver, id)
		}
	}
	e.cancel(reused, "cancelled jobs on a lease token that admitted another job")
	e.cancel(expired, "cancelled jobs past their lease")
	if len(notice) > 0 {
		err := scancelJobs(notice, true)
		e.log.Info("slurm enforcer: SIGTERM through Slurm to jobs whose lease is gone or under notice", "jobs", strings.Join(notice, ","), "scancel", errOrOK(err))
	}
	e.cancel(graceOver, "cancelled jobs whose lease is gone, after the grace")
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
