package policy

import "fmt"

// HoldLease keeps lease of campaign c held until broker time until at the
// least: its expiry (and, under preemption notice, its preemption time)
// moves to until when that is later, never earlier. It is the service's
// way to keep counting GPUs that a lease's batch job still occupies past
// the lease's end (docs/slurm.md, "A lease ends when nothing of it
// runs": a job cancelled by its own user goes on running, COMPLETING,
// for Slurm's KillWait): until nothing of the lease runs, the broker
// must not give its GPUs to another lease. It says whether the lease
// moved; a lease the campaign does not hold is an error.
func (b *Broker) HoldLease(c CampaignID, lease, until int) (bool, error) {
	if err := b.check(c); err != nil {
		return false, err
	}
	for i := range b.leases {
		l := &b.leases[i]
		if l.ID != lease || l.Campaign != c {
			continue
		}
		moved := false
		if until > l.Expires {
			l.Expires, moved = until, true
		}
		if l.UnderNotice && until > l.PreemptAt {
			l.PreemptAt, moved = until, true
		}
		if moved {
			// A deadline moved later: nextDeadline stays a lower bound of
			// the deadlines, and what the skip computed is asked again.
			b.changedAt = b.now
			b.nextChangeNow = -1
		}
		return moved, nil
	}
	return false, fmt.Errorf("campaign %s holds no lease %d", b.camps[c].env.Name, lease)
}

// EndLeaseBy ends lease of campaign c at broker time until at the
// latest: its expiry (and, under preemption notice, its preemption time)
// moves to until when that is earlier, never later; until must be after
// now. It is the service's release of a lease whose batch job still runs
// (docs/slurm.md, "A lease ends when nothing of it runs"): the lease is
// not dropped at once, since the job's tasks still hold its GPUs, but
// ends a few seconds on, and HoldLease keeps it for as long as the job is
// seen running. It says whether the lease moved; a lease the campaign
// does not hold is an error.
func (b *Broker) EndLeaseBy(c CampaignID, lease, until int) (bool, error) {
	if err := b.check(c); err != nil {
		return false, err
	}
	if until <= b.now {
		return false, fmt.Errorf("a lease ends after now (%d), not at %d", b.now, until)
	}
	for i := range b.leases {
		l := &b.leases[i]
		if l.ID != lease || l.Campaign != c {
			continue
		}
		moved := false
		if until < l.Expires {
			l.Expires, moved = until, true
		}
		if l.UnderNotice && until < l.PreemptAt {
			l.PreemptAt, moved = until, true
		}
		if moved {
			// A deadline moved earlier: nextDeadline must stay a lower
			// bound of the deadlines, and what the skip computed is
			// asked again.
			b.nextDeadline = min(b.nextDeadline, until)
			b.changedAt = b.now
			b.nextChangeNow = -1
		}
		return moved, nil
	}
	return false, fmt.Errorf("campaign %s holds no lease %d", b.camps[c].env.Name, lease)
}
