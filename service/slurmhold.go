package service

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/bursar-hpc/bursar/api"
	"github.com/bursar-hpc/bursar/policy"
)

// A lease ends when nothing of it runs (issue 35, docs/slurm.md "A lease
// ends when nothing of it runs"). A Slurm job can outlive its lease:
// cancelled by its own user just before the end, a job whose tasks
// ignore SIGTERM runs on, COMPLETING, for Slurm's KillWait, and Slurm
// then takes no more signals for it; a job whose lease its user releases
// runs on through its notice and the kill. Until the job is gone its
// tasks hold the lease's GPUs, so the broker must give them to no other
// lease. Two journaled operations keep the lease held meanwhile:
//
//   - "slurm-hold" (HoldSlurmLease): the enforcer of `serve
//     --slurm-enforce` holds the lease of every job it sees running or
//     completing near or past its end a few seconds at a time, for as
//     long as the job is listed (the broker seconds from the operation's
//     time to the hold's end);
//   - "slurm-release" (the release of a lease whose job the enforcer saw
//     running at its last read of the queue): the lease is not dropped
//     but ends slurmReleaseHold on (policy.Broker.EndLeaseBy), and the
//     enforcer's holds keep it while the job is listed; the enforcer is
//     told the lease is no longer held, so the job gets its notice and
//     its kill.
//
// Either marks the lease over (campState.slurmOver), journaled and in
// the snapshot, so that a restart keeps the mark: no token is issued for
// an over lease, and a released one stays released.

// The journal operations: lease is the broker's lease id, duration how
// many broker seconds from the operation's time the lease is held at the
// least (slurm-hold) or at the most (slurm-release).
const (
	opSlurmHold    = "slurm-hold"
	opSlurmRelease = "slurm-release"
)

// slurmReleaseHold is how long a released lease whose job runs is held
// before the enforcer's first hold: the enforcer's own hold (slurmgate's
// slurmHoldFor), a few of its reads of the queue.
const slurmReleaseHold = 3 * time.Second

// markSlurmOver marks lease (the broker's id) over: released by its user
// (released), or held past its own end. A released lease stays released.
func (cs *campState) markSlurmOver(lease int, released bool) {
	if cs.slurmOver == nil {
		cs.slurmOver = map[int]bool{}
	}
	cs.slurmOver[lease] = cs.slurmOver[lease] || released
}

func (c *core) applySlurmHold(cid policy.CampaignID, cs *campState, o *op) (result, bool, error) {
	if o.Duration < 1 {
		return result{}, false, fmt.Errorf("%w: slurm-hold: a hold of %d s", errReplay, o.Duration)
	}
	moved, err := c.b.HoldLease(cid, o.Lease, c.b.Now()+o.Duration)
	if err != nil {
		return result{}, false, err
	}
	// Only a hold past the lease's end is journaled (HoldSlurmLease).
	// A hold that moves nothing still marks a lease not yet marked, a
	// change of state that must be journaled too, or a replay would
	// lose the mark.
	_, marked := cs.slurmOver[o.Lease]
	cs.markSlurmOver(o.Lease, false)
	return result{}, moved || !marked, nil
}

func (c *core) applySlurmRelease(cid policy.CampaignID, cs *campState, o *op) (result, bool, error) {
	if o.Duration < 1 {
		return result{}, false, fmt.Errorf("%w: slurm-release: a hold of %d s", errReplay, o.Duration)
	}
	gpus := -1
	for _, l := range c.b.Leases() {
		if l.ID == o.Lease && l.Campaign == cid {
			gpus = l.GPUs
			break
		}
	}
	if _, err := c.b.EndLeaseBy(cid, o.Lease, c.b.Now()+o.Duration); err != nil {
		return result{}, false, err
	}
	cs.markSlurmOver(o.Lease, true)
	return result{releasedLeases: 1, releasedGPUs: gpus}, true, nil
}

// brokerSecondsTo is how many broker seconds from the broker's now wall
// time until is, rounded up (the caller holds the state lock): the
// broker's now is tickWall.
func (s *Service) brokerSecondsTo(until time.Time) int {
	return int(math.Ceil(time.Until(until).Seconds()*s.opts.Speed + float64(time.Now().UnixMilli()-s.tickWall)/1e3*s.opts.Speed))
}

// SetSlurmRunning gives the service the enforcer's view of the queue:
// running says whether a job of a lease (its campaign and the campaign's
// own lease id) is running or completing in Slurm. From then on a
// release of such a lease holds it until nothing of it runs
// (releaseWhileSlurmRuns). `bursar serve --slurm-enforce` sets it.
func (s *Service) SetSlurmRunning(running func(campaign string, lease int) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slurmRunning = running
}

// releaseWhileSlurmRuns is the release of campaign cs's lease l (local:
// the campaign's own id) while a Slurm job of it runs (the caller holds
// the state lock): the lease is marked released and ends
// slurmReleaseHold on, held by the enforcer for as long as the job is
// listed. A lease released so already is left as it is (nothing is
// released twice). slurm says whether it was such a release; when it was
// not (no enforcer, a clock driven by hand, no job of it running) the
// caller releases the lease at once.
func (t *txn) releaseWhileSlurmRuns(id policy.CampaignID, cs *campState, l policy.Lease, local int) (res result, slurm bool, err error) {
	if t.s.slurmRunning == nil || t.s.opts.Speed <= 0 || !t.s.slurmRunning(cs.name, local) {
		return result{}, false, nil
	}
	if cs.slurmOver[l.ID] {
		return result{}, true, nil
	}
	res, err = t.apply(&op{Op: opSlurmRelease, C: int(id), Lease: l.ID, Duration: max(1, t.s.brokerSecondsTo(time.Now().Add(slurmReleaseHold)))})
	return res, true, err
}

// releaseAllWhileSlurmRuns releases every lease of campaign cs of class
// (empty: every class) and drops its pending requests of that class (the
// caller holds the state lock), each lease by the rule of
// releaseWhileSlurmRuns: one whose Slurm job runs is marked released and
// held until nothing of it runs (slurm-release), the others are released
// at once. With none held it is the one release-all operation of before;
// with some held, the others are released one by one (release-lease) and
// the pending requests withdrawn (withdraw), in the broker's order, so
// that the held ones stay. It returns the answer but its time, the
// released leases' tokens (markSlurmReleased) and whether any lease was
// freed at once.
func (t *txn) releaseAllWhileSlurmRuns(id policy.CampaignID, cs *campState, class string) (out api.ReleaseResult, spent []SlurmLease, freed bool, err error) {
	cls := policy.AnyClass
	if class != "" {
		if cls, err = policy.ParseClass(class); err != nil {
			return out, nil, false, err
		}
	}
	match := func(k policy.Class) bool { return cls == policy.AnyClass || cls == k }
	var ours, free []policy.Lease
	for _, l := range t.c.b.Leases() {
		if l.Campaign == id && match(l.Class) {
			ours = append(ours, l)
		}
	}
	add := func(res result) {
		out.ReleasedLeases += res.releasedLeases
		out.ReleasedGPUs += max(0, res.releasedGPUs)
		out.DroppedRequests += res.droppedRequests
		out.DroppedGPUs += res.droppedGPUs
	}
	for _, l := range ours {
		local := cs.localID(l.ID)
		res, slurm, err := t.releaseWhileSlurmRuns(id, cs, l, local)
		if err != nil {
			return out, spent, false, err
		}
		spent = append(spent, t.s.releasedSlurmTokens(cs.name, local, l.GPUs)...)
		if !slurm {
			free = append(free, l)
			continue
		}
		add(res)
		out.HeldGPUs += l.GPUs
	}
	if out.HeldGPUs == 0 {
		res, err := t.apply(&op{Op: opReleaseAll, C: int(id), Class: class})
		add(res)
		return out, spent, res.releasedLeases > 0, err
	}
	for _, l := range free {
		res, err := t.apply(&op{Op: opReleaseLease, C: int(id), Lease: l.ID})
		if err != nil {
			return out, spent, len(free) > 0, err
		}
		add(res)
	}
	var pending []int
	for _, r := range t.c.b.Pending() {
		if r.Campaign == id && match(r.Class) {
			pending = append(pending, r.ID)
		}
	}
	for _, r := range pending {
		res, err := t.apply(&op{Op: opWithdraw, C: int(id), Lease: r})
		if err != nil {
			return out, spent, len(free) > 0, err
		}
		add(res)
	}
	return out, spent, len(free) > 0, nil
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
		ahead := s.brokerSecondsTo(until)
		if now+ahead <= l.Expires && (!l.UnderNotice || now+ahead <= l.PreemptAt) {
			return nil // within the lease: nothing to hold yet
		}
		_, err = t.apply(&op{Op: opSlurmHold, C: int(id), Lease: l.ID, Duration: max(1, ahead)})
		return err
	})
	return held, err
}
