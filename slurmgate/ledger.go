package slurmgate

import (
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/bursar-hpc/bursar/internal/slurmtoken"
)

// LedgerEntry binds a Slurm job to its lease: Job is the id squeue's %i
// prints (9_1 for an array task), Number Slurm's job number when it
// differs (jobcomp's JobId for that task).
type LedgerEntry struct {
	Job      string `json:"job"`
	Number   string `json:"job_id,omitempty"`
	Lease    int    `json:"lease"`
	Campaign string `json:"campaign"`
	GPUs     int    `json:"gpus"`
	Expires  int64  `json:"expires_unix"`
	CPUs     string `json:"cpus"`
	Seen     int64  `json:"seen_unix"`
}

// readLedger binds the jobs of the ledger's live leases (those that had
// not ended a minute before now) again after a restart: the ledger's first
// job of a lease is the one its token admitted. The binding is by the
// lease's WcKey.
func (e *Enforcer) readLedger(now time.Time) map[string]string {
	bound := map[string]string{}
	if e.Ledger == "" {
		return bound
	}
	b, err := os.ReadFile(e.Ledger)
	if err != nil {
		return bound
	}
	for _, line := range strings.Split(string(b), "\n") {
		var en LedgerEntry
		if json.Unmarshal([]byte(line), &en) != nil || en.Expires < now.Unix()-60 {
			continue
		}
		key := slurmtoken.WCKey(slurmtoken.Lease{Lease: en.Lease, Campaign: en.Campaign, GPUs: en.GPUs, Expires: en.Expires})
		if _, ok := bound[key]; !ok {
			bound[key] = en.Job
		}
	}
	return bound
}

// record appends en to the ledger, one JSON line (a failure is logged:
// the kill does not depend on the ledger).
func (e *Enforcer) record(en LedgerEntry) {
	if e.Ledger == "" {
		return
	}
	b, _ := json.Marshal(en)
	e.appendLedger(b)
}

// event appends job's event at t to the ledger.
func (e *Enforcer) event(job, event string, t time.Time) {
	if e.Ledger == "" {
		return
	}
	b, _ := json.Marshal(LedgerEvent{Job: job, Event: event, T: t.UnixMilli()})
	e.appendLedger(b)
}

// appendLedger appends one line to the ledger.
func (e *Enforcer) appendLedger(b []byte) {
	f, err := os.OpenFile(e.Ledger, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		e.Log.Warn("slurm enforcer: ledger", "err", err)
		return
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		e.Log.Warn("slurm enforcer: ledger", "err", err)
	}
}
