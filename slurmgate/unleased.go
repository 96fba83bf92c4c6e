package slurmgate

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bursar-hpc/bursar/internal/slurmtoken"
)

// Jobs without a lease (issue 35: jobs queued or running before the gate
// was enabled, docs/slurm.md "Enabling the gate with jobs already
// queued"). The gate admits no job into a gated partition without a
// token, so a job there without one was queued before the gate (or while
// it was off), or under a gate with another key. The site chooses what
// the enforcer does with them (serve --slurm-unleased):
//
//   - UnleasedIgnore: nothing (each is logged once); `bursar slurm
//     audit` lists them.
//   - UnleasedHold: a pending one gets an administrator's hold (scontrol
//     hold, which its user cannot release), held again if it is released
//     by anyone; a running one runs to its end (logged once).
//   - UnleasedCancel: a pending one is cancelled at once; a running one
//     gets SIGTERM through Slurm and the kill --slurm-grace later, as a
//     job whose lease is gone.
const (
	UnleasedIgnore = "ignore"
	UnleasedHold   = "hold"
	UnleasedCancel = "cancel"
)

// ParseUnleased checks a --slurm-unleased value ("" is UnleasedIgnore).
func ParseUnleased(s string) (string, error) {
	switch s {
	case "", UnleasedIgnore:
		return UnleasedIgnore, nil
	case UnleasedHold, UnleasedCancel:
		return s, nil
	}
	return "", fmt.Errorf("--slurm-unleased is ignore, hold or cancel, not %q", s)
}

// heldByAdmin is squeue's reason for a job an administrator held.
const heldByAdmin = "JobHeldAdmin"

// Unleased says whether queued job j runs, or would run, without a lease:
// in a gated partition (not in ungated) with no token signed by key in
// its comment (an expired token is a lease still: the enforcer's own
// rules end its job); without a key (nil), with no comment that reads as
// a token.
func Unleased(j QueuedJob, key []byte, ungated map[string]bool, now time.Time) bool {
	if ungated[j.Partition] {
		return false
	}
	if !strings.HasPrefix(j.Comment, slurmtoken.Prefix+":") {
		return true
	}
	if key == nil {
		_, err := slurmtoken.Parse(j.Comment)
		return err != nil
	}
	l, err := slurmtoken.Verify(key, j.Comment, now)
	return err != nil && l.Lease == 0
}

// unleased acts on queued job j, which has no lease, by the site's rule:
// it adds j to the calls of this read of the queue (holds, cancels and
// notices) and returns them.
func (e *Enforcer) unleased(j QueuedJob, now time.Time, hold, gone, notice, graceOver []string) ([]string, []string, []string, []string) {
	if !e.warned[j.ID] {
		e.warned[j.ID] = true
		e.Log.Warn("slurm enforcer: a job without a lease", "job", j.ID, "partition", j.Partition, "state", j.State, "rule", e.unleasedRule())
	}
	switch {
	case e.unleasedRule() == UnleasedHold && j.State == "PENDING" && j.Reason != heldByAdmin && !e.recentlyCancelled(j.ID, now):
		hold = append(hold, j.ID)
	case e.unleasedRule() != UnleasedCancel:
	case j.State == "PENDING":
		if !e.recentlyCancelled(j.ID, now) {
			gone = append(gone, j.ID)
		}
	case j.State == "RUNNING":
		if at, ok := e.termed[j.ID]; !ok {
			e.termed[j.ID] = now
			notice = append(notice, j.ID)
		} else if now.Sub(at) >= e.Grace && !e.recentlyCancelled(j.ID, now) {
			graceOver = append(graceOver, j.ID)
		}
	}
	return hold, gone, notice, graceOver
}

func (e *Enforcer) unleasedRule() string {
	if e.Unleased == "" {
		return UnleasedIgnore
	}
	return e.Unleased
}

// holdJobs holds ids (one call), noting them as cancelled so that a hold
// not yet shown by squeue is not asked for again at once.
func (e *Enforcer) holdJobs(ids []string) {
	if len(ids) == 0 {
		return
	}
	now := time.Now()
	e.mu.Lock()
	for _, id := range ids {
		e.cancelled[id] = now
	}
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), CmdTimeout)
	err := e.Cluster.Hold(ctx, ids...)
	cancel()
	e.Log.Info("slurm enforcer: held pending jobs without a lease", "jobs", strings.Join(ids, ","), "scontrol", OKOr(err))
}

// Audit lists the queued jobs without a lease (Unleased), in queue order.
func Audit(queue []QueuedJob, key []byte, ungated map[string]bool, now time.Time) []QueuedJob {
	var out []QueuedJob
	for _, j := range queue {
		if Unleased(j, key, ungated, now) {
			out = append(out, j)
		}
	}
	return out
}

// ReportAudit writes `bursar slurm audit`'s lines: one per job without a
// lease, then how many of how many queued jobs.
func ReportAudit(w io.Writer, queue, unleased []QueuedJob) {
	for _, j := range unleased {
		what := "no lease token"
		if strings.HasPrefix(j.Comment, slurmtoken.Prefix+":") {
			what = "a token this key did not sign"
		}
		state := j.State
		if j.Reason == heldByAdmin {
			state += " (held by an administrator)"
		}
		fmt.Fprintf(w, "job %s (%s, %s, %s CPUs): without a lease: %s\n", j.ID, j.Partition, state, j.CPUs, what)
	}
	fmt.Fprintf(w, "%d jobs queued: %d without a lease\n", len(queue), len(unleased))
}
