//go:build unix

package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/bursar-hpc/bursar/service"
)

// slurmEnforcer is the service's own hand on Slurm (serve --slurm-enforce,
// issue 23 item 2): whatever the wrappers do, every job on a lease token
// is cancelled once the token's wall-clock expiry has passed, and gets
// SIGTERM through Slurm, then cancellation --slurm-grace later, once its
// lease is no longer held (released, reclaimed) or is under preemption
// notice. Token expiries are wall time fixed at issue, so a restart or an
// outage of the service does not lengthen what it enforces. Each job seen
// on a token is written once to the ledger (a JSON line: job id, lease,
// campaign, GPUs, expiry, CPUs), binding the lease to its Slurm job ids.
type slurmEnforcer struct {
	key    []byte
	held   func(ctx context.Context, campaign string, lease int) (bool, bool, error)
	grace  time.Duration
	ledger string // "" none
	log    *slog.Logger

	seen   map[string]bool
	termed map[string]time.Time
}

// slurmEnforceEvery is how often the enforcer reads the queue.
const slurmEnforceEvery = 500 * time.Millisecond

func (e *slurmEnforcer) run(ctx context.Context) {
	e.seen, e.termed = map[string]bool{}, map[string]time.Time{}
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

func (e *slurmEnforcer) pass(ctx context.Context, now time.Time) {
	qctx, cancel := context.WithTimeout(ctx, slurmCmdTimeout)
	out, err := exec.CommandContext(qctx, "squeue", "-h", "-o", "%i|%k|%T|%C").Output()
	cancel()
	if err != nil {
		e.log.Warn("slurm enforcer: squeue failed", "err", err)
		return
	}
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
			e.record(ledgerEntry{Job: id, Lease: l.Lease, Campaign: l.Campaign, GPUs: l.GPUs, Expires: l.Expires, CPUs: f[3], Seen: now.Unix()})
		}
		if err != nil { // expired
			if ids := []string{id}; scancelJobs(ids, false) == nil {
				e.log.Info("slurm enforcer: cancelled a job past its lease", "job", id, "lease", l.Lease, "campaign", l.Campaign)
			}
			continue
		}
		held, notice, err := e.held(ctx, l.Campaign, l.Lease)
		if err != nil || (held && !notice) || f[2] == "PENDING" && held {
			continue
		}
		if at, ok := e.termed[id]; !ok {
			e.termed[id] = now
			_ = scancelJobs([]string{id}, true)
			e.log.Info("slurm enforcer: SIGTERM through Slurm", "job", id, "lease", l.Lease, "held", held, "under_notice", notice)
		} else if now.Sub(at) >= e.grace {
			_ = scancelJobs([]string{id}, false)
			e.log.Info("slurm enforcer: cancelled", "job", id, "lease", l.Lease)
		}
	}
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
	e := &slurmEnforcer{key: key, held: svc.SlurmLeaseHeld, grace: c.grace, ledger: c.ledger, log: log}
	go e.run(ctx)
	log.Info("slurm enforcer started", "grace", c.grace, "ledger", c.ledger)
	return nil
}
