package service

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/bursar-hpc/bursar/policy"
)

// A lease ends when nothing of it runs (issue 35, docs/slurm.md "A lease
// ends when nothing of it runs"). A Slurm job can outlive its lease's
// end: cancelled by its own user just before the end, a job whose tasks
// ignore SIGTERM runs on, COMPLETING, for Slurm's KillWait, and Slurm
// then takes no more signals for it. The enforcer of `serve
// --slurm-enforce` sees such a job in the queue and holds its lease
// (HoldSlurmLease) a few seconds at a time for as long as it is listed,
// so that the broker keeps counting its GPUs and gives them to no other
// lease while they are still in use. The hold is a journaled operation,
// "slurm-hold" (the broker seconds from its time to the hold's end), so
// a replay holds the lease as the service did.

// opSlurmHold is the journal operation: lease is the broker's lease id,
// duration how many broker seconds from the operation's time it is held
// at the least.
const opSlurmHold = "slurm-hold"

func (c *core) applySlurmHold(cid policy.CampaignID, o *op) (result, bool, error) {
	if o.Duration < 1 {
		return result{}, false, fmt.Errorf("%w: slurm-hold: a hold of %d s", errReplay, o.Duration)
	}
	moved, err := c.b.HoldLease(cid, o.Lease, c.b.Now()+o.Duration)
	return result{}, moved, err
}

// HoldSlurmLease keeps campaign's lease (its own id, as in the token)
// held until wall time until at the least, in whole broker seconds
// rounded up, and says whether the lease is held. A lease no longer held
// (released, expired) is not an error: there is nothing left to hold.
// From the first hold on, no new token is issued for the lease.
func (s *Service) HoldSlurmLease(ctx context.Context, campaign string, lease int, until time.Time) (held bool, err error) {
	if s.opts.Speed <= 0 {
		return false, fmt.Errorf("slurm hold: the broker's clock is driven by hand (no --speed)")
	}
	err = s.withState(ctx, func(t *txn) error {
		id, cs, err := t.campaign(campaign)
		if err != nil {
			return nil
		}
		l, ok := t.c.heldLease(id, cs, lease)
		if !ok {
			return nil
		}
		held = true
		now := t.c.b.Now()
		// The broker's time now is tickWall; until is that many broker
		// seconds after it.
		ahead := int(math.Ceil(time.Until(until).Seconds()*s.opts.Speed + float64(time.Now().UnixMilli()-t.s.tickWall)/1e3*s.opts.Speed))
		if now+ahead <= l.Expires && (!l.UnderNotice || now+ahead <= l.PreemptAt) {
			return nil // within the lease: nothing to hold yet
		}
		if t.s.slurmHeldOver == nil {
			t.s.slurmHeldOver = map[slurmLeaseName]bool{}
		}
		t.s.slurmHeldOver[slurmLeaseName{cs.name, lease}] = true
		_, err = t.apply(&op{Op: opSlurmHold, C: int(id), Lease: l.ID, Duration: max(1, ahead)})
		return err
	})
	return held, err
}
