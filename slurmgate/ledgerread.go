package slurmgate

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"
)

// The ledger as reconciliation reads it (issue 35 item 5: reconcile
// trusts nothing a user can edit). The enforcer's ledger (serve
// --slurm-ledger) is written by the service alone: each job it sees on a
// token signed with the service's key, once (LedgerEntry), and then what
// became of it (LedgerEvent): when it was first seen running, when its
// lease was first seen no longer held while the job was listed, and the
// last read of the queue that listed it. A job's WcKey and comment are
// Slurm's copy of what the gate wrote; the ledger is Bursar's own.

// LedgerEvent is a line of the ledger about a job already in it: Event is
// "running" (first seen running), "released" (its lease first seen no
// longer held while the job was listed, and not held by the broker for
// it either: a lease its user released while the job runs is held until
// the job has ended, and is not written) or "last-seen" (the last read of
// the queue that listed it; written when a read no longer does); T is
// that read's wall time, unix milliseconds.
type LedgerEvent struct {
	Job   string `json:"job"`
	Event string `json:"event"`
	T     int64  `json:"t_unix_ms"`
}

// Ledger events.
const (
	LedgerRunning  = "running"
	LedgerReleased = "released"
	LedgerLastSeen = "last-seen"
)

// LedgerJob is what the ledger says of one job: the lease it was seen on
// and the times of its events (zero: none).
type LedgerJob struct {
	LedgerEntry
	Running, Released, LastSeen time.Time
}

// Ledger is the ledger read back: each job by the id the enforcer saw
// (9_1 for an array task) and by Slurm's job number (jobcomp's JobId).
type Ledger map[string]*LedgerJob

// ReadLedger reads an enforcer's ledger; a line that is neither an entry
// nor an event is an error naming it.
func ReadLedger(r io.Reader, name string) (Ledger, error) {
	l := Ledger{}
	var order []*LedgerJob
	byJob := map[string]*LedgerJob{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var probe struct {
			Event string `json:"event"`
		}
		if err := json.Unmarshal(b, &probe); err != nil {
			return nil, fmt.Errorf("%s:%d: not a ledger line: %v", name, line, err)
		}
		if probe.Event == "" {
			var en LedgerEntry
			if err := json.Unmarshal(b, &en); err != nil || en.Job == "" || en.Lease < 1 {
				return nil, fmt.Errorf("%s:%d: not a ledger entry (job and lease wanted)", name, line)
			}
			if _, ok := byJob[en.Job]; ok {
				continue // seen again after a restart: the first line stands
			}
			j := &LedgerJob{LedgerEntry: en}
			byJob[en.Job] = j
			order = append(order, j)
			continue
		}
		var ev LedgerEvent
		if err := json.Unmarshal(b, &ev); err != nil || ev.Job == "" {
			return nil, fmt.Errorf("%s:%d: not a ledger event", name, line)
		}
		j, ok := byJob[ev.Job]
		if !ok {
			return nil, fmt.Errorf("%s:%d: event %q of job %s, which no line before binds to a lease", name, line, ev.Event, ev.Job)
		}
		at := time.UnixMilli(ev.T)
		switch ev.Event {
		case LedgerRunning:
			if j.Running.IsZero() {
				j.Running = at
			}
		case LedgerReleased:
			if j.Released.IsZero() {
				j.Released = at
			}
		case LedgerLastSeen:
			if at.After(j.LastSeen) {
				j.LastSeen = at
			}
		default:
			return nil, fmt.Errorf("%s:%d: unknown ledger event %q", name, line, ev.Event)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for _, j := range order {
		l[j.Job] = j
		if j.Number != "" {
			l[j.Number] = j
		}
	}
	return l, nil
}

// ReconcileLedger checks jobs (Slurm's records) against the ledger alone:
// a job in a gated partition that the ledger does not bind to a lease
// ran without one, whatever its WcKey says; a bound job's end is the
// later of Slurm's record and the ledger's last sight of it (jobcomp
// records a cancellation's time, not when KillWait let the tasks end);
// it ran past its lease, larger than it, after its lease's release
// (beyond slack), or with the other jobs of its lease (an array's
// tasks) on more CPUs at once than the lease.
func ReconcileLedger(jobs []Job, led Ledger, ungated map[string]bool, now time.Time, slack time.Duration) []Finding {
	var out []Finding
	type span struct {
		start, end time.Time
		cpus       int
		job        Job
	}
	byLease := map[string][]span{}
	var leases []string
	for _, j := range jobs {
		if ungated[j.Partition] || j.Start.IsZero() {
			continue
		}
		lj, ok := led[j.ID]
		if !ok {
			out = append(out, Finding{j, "no lease", "the enforcer's ledger binds it to no lease (WcKey " + strconv.Quote(j.WCKey) + " not trusted)"})
			continue
		}
		end := j.End
		if end.IsZero() {
			end = now
		}
		if lj.LastSeen.After(end) {
			end = lj.LastSeen
		}
		expires := time.Unix(lj.Expires, 0)
		if over := end.Sub(expires); over > slack {
			note := fmt.Sprintf("lease %d ended %s, the job %v later", lj.Lease, expires.Format(slurmTimeLayout), over.Round(10*time.Millisecond))
			if lj.LastSeen.After(j.End) && !j.End.IsZero() {
				note += fmt.Sprintf(" (Slurm records its end at %s; the enforcer saw it %v after)", j.End.Format(slurmTimeLayout), lj.LastSeen.Sub(j.End).Round(10*time.Millisecond))
			}
			out = append(out, Finding{j, "past its lease", note})
		}
		if !lj.Released.IsZero() {
			if over := end.Sub(lj.Released); over > slack {
				out = append(out, Finding{j, "after its lease's release", fmt.Sprintf("lease %d of %s released by %s, the job ran %v longer",
					lj.Lease, lj.Campaign, lj.Released.Format(slurmTimeLayout), over.Round(10*time.Millisecond))})
			}
		}
		if j.CPUs > lj.GPUs {
			out = append(out, Finding{j, "larger than its lease", fmt.Sprintf("%d CPUs on lease %d of %d", j.CPUs, lj.Lease, lj.GPUs)})
		}
		key := lj.Campaign + ":" + strconv.Itoa(lj.Lease)
		if _, ok := byLease[key]; !ok {
			leases = append(leases, key)
		}
		byLease[key] = append(byLease[key], span{j.Start, end, j.CPUs, j})
	}
	// The jobs of one lease (an array's tasks) together: at the start of
	// each, the CPUs of those running then.
	for _, key := range leases {
		spans := byLease[key]
		if len(spans) < 2 {
			continue
		}
		sort.SliceStable(spans, func(a, b int) bool { return spans[a].start.Before(spans[b].start) })
		gpus := led[spans[0].job.ID].GPUs
		for i, s := range spans {
			n := 0
			for _, o := range spans[:i+1] {
				if !o.end.Before(s.start.Add(slack)) {
					n += o.cpus
				}
			}
			if n > gpus {
				out = append(out, Finding{s.job, "larger than its lease", fmt.Sprintf("with the other jobs of lease %s, %d CPUs at once on %d", key, n, gpus)})
				break
			}
		}
	}
	return out
}
