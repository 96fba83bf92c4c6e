package trace

import (
	"errors"
	"fmt"
	"slices"

	"github.com/bursar-hpc/bursar/hosts"
	"github.com/bursar-hpc/bursar/platform"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
)

// onNodes is what the hosts hook needs of a policy that schedules on a
// platform's nodes (policy.Placed, which the Bursar broker and the
// baselines implement): its placer, and a call that tells it a node
// changed state outside a grant or a release.
type onNodes interface {
	Placer() *platform.Placer
	NodesChanged()
}

// rooted is a policy whose own lease ids, the placer's, are not those the
// replay knows its jobs' leases by (sitemeter's broker: a job refiled on
// a scavenger keeps its first id): Root maps one to the other, and
// ReleaseSeated releases the policy's lease on whichever campaign holds
// it.
type rooted interface {
	Root(lease int) int
	ReleaseSeated(lease int) error
}

// hostsHook runs a failure process (package hosts, docs/hosts.md) on the
// policy's nodes within the replay driver: it is the hosts.Machine of the
// process, reading the placer's leases and the driver's jobs.
type hostsHook struct {
	h       *hosts.Hosts
	d       *driver
	placer  *platform.Placer
	policy  onNodes
	rooted  rooted // nil: the policy's lease ids are the replay's
	restart baseline.Restart
	// start and class are each job's current lease's grant tick and class
	// (the class its grant journaled: the one its user declared, or a
	// scavenger's).
	start  []int
	class  []policy.Class
	leases []int // scratch
	roots  []int // this step's ended leases, as the replay knows them
	tally  *hosts.Tally
}

func newHostsHook(h *hosts.Hosts, d *driver, tally *hosts.Tally) (*hostsHook, error) {
	on, ok := d.alloc.(onNodes)
	if !ok || on.Placer() == nil {
		return nil, errors.New("hosts need a policy on a platform's nodes")
	}
	if p := on.Placer(); p.Nodes() != h.Nodes() {
		return nil, fmt.Errorf("hosts of %d nodes on a platform of %d", h.Nodes(), p.Nodes())
	}
	n := len(d.w.Jobs)
	k := &hostsHook{h: h, d: d, placer: on.Placer(), policy: on, start: make([]int, n), class: make([]policy.Class, n), tally: tally}
	k.rooted, _ = d.alloc.(rooted)
	if r, ok := d.alloc.(interface{ Restart() baseline.Restart }); ok {
		k.restart = r.Restart()
	}
	return k, nil
}

// SetState puts a node in state s on the placer, and tells the policy.
func (k *hostsHook) SetState(i int, s hosts.State) {
	k.placer.SetState(i, platform.State(s))
	k.policy.NodesChanged()
}

// root is the id the replay knows the policy's lease by.
func (k *hostsHook) root(lease int) int {
	if k.rooted != nil {
		return k.rooted.Root(lease)
	}
	return lease
}

// job is the job of the policy's lease (−1: none, an actor's).
func (k *hostsHook) job(lease int) int32 { return k.d.jobOf.at(k.root(lease)) }

// Seats are node i's leases with their jobs' starts and classes.
func (k *hostsHook) Seats(i int, dst []hosts.Seat) []hosts.Seat {
	k.leases = k.placer.Leases(i, k.leases[:0])
	for _, l := range k.leases {
		if j := k.job(l); j >= 0 {
			dst = append(dst, hosts.Seat{Lease: l, Start: k.start[j], Preemptible: k.class[j] == policy.Opportunistic})
		}
		// A lease that is no job's (an actor's) the hosts leave be.
	}
	return dst
}

// step runs the process at tick t, after the policy's Tick t and the
// books' reading of its grants and releases (the first n of d.cap.ev):
// it notes the grants' starts, steps the process, ends the leases it
// returns and hands each job's aborted run to the books as a preempted
// one — with the reason the host gave and what the study's restart rule
// kept — to be filed again with the tick's preempted jobs.
func (k *hostsHook) step(t, n int) error {
	d := k.d
	for i := range d.cap.ev[:n] {
		if e := &d.cap.ev[i]; e.Kind == policy.EventGrant {
			if j := d.jobOf.at(e.Lease); j >= 0 {
				k.start[j], k.class[j] = e.T, e.Class
			}
		}
	}
	ends := k.h.Step(t, k)
	*k.tally = k.h.Tally()
	if len(ends) == 0 {
		return nil
	}
	k.roots = k.roots[:0]
	for _, e := range ends {
		j := k.job(e.Lease)
		k.roots = append(k.roots, k.root(e.Lease))
		var err error
		if k.rooted != nil {
			err = k.rooted.ReleaseSeated(e.Lease)
		} else {
			err = d.alloc.ReleaseLease(d.ids[d.w.Jobs[j].Campaign], e.Lease)
		}
		if err != nil {
			return fmt.Errorf("hosts: job %d on node %d (%s): %w", d.w.Jobs[j].Number, e.Node, e.Why, err)
		}
	}
	for i := n; i < len(d.cap.ev); i++ {
		e := d.cap.ev[i]
		x := slices.Index(k.roots, e.Lease)
		if e.Kind != policy.EventRelease || x < 0 {
			continue
		}
		j := d.jobOf.at(e.Lease)
		e.Reason, e.Kept = ends[x].Why.String(), k.restart.Kept(k.start[j], t)
		if err := d.books.preempted(d, j, &e); err != nil {
			return err
		}
		if e.Kept > 0 {
			d.kept.add(j, int64(e.Kept), len(d.w.Jobs))
		}
		d.requeue = append(d.requeue, j)
	}
	return nil
}

// nextAct is the first tick after now at which the process acts.
func (k *hostsHook) nextAct(now int) int { return k.h.NextAct(now, k) }
