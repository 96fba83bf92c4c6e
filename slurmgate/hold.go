package slurmgate

import (
	"context"
	"sort"
	"time"

	"github.com/bursar-hpc/bursar/internal/slurmtoken"
)

// A lease ends when nothing of it runs (issue 35, docs/slurm.md). A job
// on a lease can outlive the lease's end: its own user's scancel a
// moment before the end leaves a job whose tasks ignore SIGTERM
// running, COMPLETING, for Slurm's KillWait, and Slurm then takes no
// signal for it (the enforcer's and the wrapper's kills get "Invalid job
// id"); on a busy slurmctld a kill takes a few seconds. Until the queue
// no longer lists it, the job's CPUs or GPUs are in use, and the broker
// must not give them to another lease. So every read of the queue holds
// the lease of each job that is running or completing within
// slurmHoldAhead of its token's expiry (or past it) until slurmHoldFor
// from now (Leases.HoldSlurmLease, a journaled operation of the
// service): the hold is renewed while the job is listed and lapses
// slurmHoldFor after it is gone. The token's expiry does not move: the
// job is still killed at it, and no new job is admitted on it. A lease
// its user released while its job runs is held the same way, whenever
// its end: the service does not drop such a lease but ends it a few
// seconds on (it asks Running at the release), and the job gets its
// notice and its kill as any job whose lease is no longer held.
const (
	slurmHoldAhead = 2 * time.Second
	slurmHoldFor   = 3 * time.Second
)

// holdEnding holds the leases of ending (by WcKey), in WcKey order, until
// slurmHoldFor from now, and says which the broker still holds.
func (e *Enforcer) holdEnding(ctx context.Context, now time.Time, ending map[string]slurmtoken.Lease) map[string]bool {
	heldOn := map[string]bool{}
	for _, k := range sortedKeys(ending) {
		l := ending[k]
		held, err := e.Leases.HoldSlurmLease(ctx, l.Campaign, l.Lease, now.Add(slurmHoldFor))
		heldOn[k] = err == nil && held
		switch {
		case err != nil:
			e.Log.Warn("slurm enforcer: cannot hold the lease of a job that still runs", "lease", l.Lease, "campaign", l.Campaign, "err", err)
		case held && !e.holding[k] && now.Unix() >= l.Expires:
			e.holding[k] = true
			e.Log.Info("slurm enforcer: lease held past its end while its job ends", "lease", l.Lease, "campaign", l.Campaign)
		}
	}
	for k := range e.holding {
		if _, ok := ending[k]; !ok {
			delete(e.holding, k)
		}
	}
	return heldOn
}

// sortedKeys are m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
