package service

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
)

// The service's state as data (issue 34 §6). A snapshot is one "state"
// record: the broker's dump (policy.Broker.Dump) and what the service
// keeps beside it — each campaign's name, token hash, retained journal
// records and grants, grant totals, request-id table and Slurm job
// bindings, and the whole journal's retained records. Its size is set by
// the campaigns and the caps (docs/service.md, "Bounded disk"), not by
// the service's age: an operation history, which snapshots were before,
// grows with every request, release and consume a tenant makes.
//
// Loading it on a fresh core gives the state a replay of every operation
// before it would give (TestSnapshotReplayProperty: snapshot + tail =
// full replay = the live state, and both go on alike), so a journal
// segment after it replays onto it as onto the replayed state.

// opState is the snapshot's record of the whole state; N is how many
// operations it stands for.
const opState = "state"

// coreDump is a core's state.
type coreDump struct {
	Broker    *policy.State `json:"broker"`
	Campaigns []campDump    `json:"campaigns"`
	Journal   ringDump      `json:"journal"`
}

type campDump struct {
	Name        string   `json:"name"`
	Hash        string   `json:"hash"`
	Revoked     bool     `json:"revoked,omitempty"`
	Journal     ringDump `json:"journal"`
	Grants      ringDump `json:"grants"`
	GrantedGPUs int64    `json:"granted_gpus"`
	Pending     int      `json:"pending"`
	// Filed is the campaign's requests ever filed; Reqs the (campaign's
	// id, broker's id) pairs still kept (ids.go).
	Filed     int          `json:"filed"`
	Reqs      [][2]int     `json:"reqs"`
	SlurmJobs []slurmBound `json:"slurm_jobs,omitempty"`
	// SlurmReleased and SlurmHeldOver are the leases (the broker's ids)
	// held only while their Slurm jobs run: released by their user, and
	// held past their own end (campState.slurmOver).
	SlurmReleased []int `json:"slurm_released,omitempty"`
	SlurmHeldOver []int `json:"slurm_held_over,omitempty"`
}

type slurmBound struct {
	Lease int    `json:"lease"`
	Job   string `json:"job"`
}

type ringDump struct {
	Last    int64       `json:"last"`
	Entries []entryDump `json:"entries"`
}

// entryDump is a retained record. The event's class goes apart as a
// number: a record's class may be one no class name stands for (a
// release of every class).
type entryDump struct {
	Seq   int64        `json:"seq"`
	Ev    policy.Event `json:"ev"`
	Class uint8        `json:"class"`
	Wall  int64        `json:"wall,omitempty"`
	Job   string       `json:"job,omitempty"`
}

func (r *ring) dump() ringDump {
	d := ringDump{Last: r.last, Entries: make([]entryDump, len(r.buf))}
	for i := range r.buf {
		e := r.at(i)
		d.Entries[i] = entryDump{Seq: e.seq, Ev: e.ev, Class: uint8(e.ev.Class), Wall: e.wall, Job: e.job}
		d.Entries[i].Ev.Class = 0
	}
	return d
}

// restoreRing is the ring of at most max records that d is; with fewer
// room than d has records, the newest are kept.
func restoreRing(d ringDump, max int) (ring, error) {
	r := newRing(max)
	es := d.Entries
	if len(es) > max {
		es = es[len(es)-max:]
	}
	r.last = d.Last - int64(len(es)) // pushEntry numbers on from here
	for i, e := range es {
		if e.Seq != d.Last-int64(len(es)-1-i) {
			return r, fmt.Errorf("retained record %d has seq %d, not contiguous up to %d", i, e.Seq, d.Last)
		}
		ev := e.Ev
		ev.Class = policy.Class(e.Class)
		r.pushEntry(entry{ev: ev, wall: e.Wall, job: e.Job})
	}
	return r, nil
}

// dump is the core's state; it shares nothing with the core.
func (c *core) dump() *coreDump {
	d := &coreDump{Broker: c.b.Dump(), Journal: c.journal.dump(), Campaigns: make([]campDump, len(c.camps))}
	for i, cs := range c.camps {
		cd := campDump{Name: cs.name, Hash: hexHash(cs.hash), Revoked: cs.revoked, Journal: cs.journal.dump(), Grants: cs.grants.dump(),
			GrantedGPUs: cs.grantedGPUs, Pending: cs.pending, Filed: cs.filed, Reqs: make([][2]int, len(cs.reqs))}
		for j, p := range cs.reqs {
			cd.Reqs[j] = [2]int{p.local, p.global}
		}
		for lease, job := range cs.slurmJobs {
			cd.SlurmJobs = append(cd.SlurmJobs, slurmBound{Lease: lease, Job: job})
		}
		slices.SortFunc(cd.SlurmJobs, func(a, b slurmBound) int { return cmp.Compare(a.Lease, b.Lease) })
		for lease, released := range cs.slurmOver {
			if released {
				cd.SlurmReleased = append(cd.SlurmReleased, lease)
			} else {
				cd.SlurmHeldOver = append(cd.SlurmHeldOver, lease)
			}
		}
		slices.Sort(cd.SlurmReleased)
		slices.Sort(cd.SlurmHeldOver)
		d.Campaigns[i] = cd
	}
	return d
}

// restore makes a fresh core (no campaign, time 0) the state d is.
func (c *core) restore(d *coreDump) error {
	if c.b.NumCampaigns() != 0 || c.b.Now() != 0 || len(c.camps) != 0 {
		return fmt.Errorf("%w: a state record after other operations", errReplay)
	}
	if d == nil || d.Broker == nil {
		return fmt.Errorf("%w: a state record without a state", errReplay)
	}
	if d.Broker.Config != c.b.Config() {
		return fmt.Errorf("%w: the state's broker parameters %+v are not this service's %+v", errReplay, d.Broker.Config, c.b.Config())
	}
	if len(d.Campaigns) != len(d.Broker.Campaigns) {
		return fmt.Errorf("%w: %d campaigns beside the broker's %d", errReplay, len(d.Campaigns), len(d.Broker.Campaigns))
	}
	b, err := policy.Restore(d.Broker)
	if err != nil {
		return fmt.Errorf("%w: %w", errReplay, err)
	}
	journal, err := restoreRing(d.Journal, c.journal.max)
	if err != nil {
		return fmt.Errorf("%w: journal: %w", errReplay, err)
	}
	camps := make([]*campState, len(d.Campaigns))
	byName := make(map[string]policy.CampaignID, len(d.Campaigns))
	for i, cd := range d.Campaigns {
		if cd.Name != d.Broker.Campaigns[i].Env.Name {
			return fmt.Errorf("%w: campaign %d is %q beside the broker's %q", errReplay, i, cd.Name, d.Broker.Campaigns[i].Env.Name)
		}
		cs := &campState{name: cd.Name, revoked: cd.Revoked, grantedGPUs: cd.GrantedGPUs, pending: cd.Pending, filed: cd.Filed}
		if n, err := hex.Decode(cs.hash[:], []byte(cd.Hash)); err != nil || n != len(cs.hash) || len(cd.Hash) != 2*len(cs.hash) {
			return fmt.Errorf("%w: campaign %s: bad token hash", errReplay, cd.Name)
		}
		if cs.journal, err = restoreRing(cd.Journal, c.keepCampaign); err != nil {
			return fmt.Errorf("%w: campaign %s journal: %w", errReplay, cd.Name, err)
		}
		if cs.grants, err = restoreRing(cd.Grants, c.keepGrants); err != nil {
			return fmt.Errorf("%w: campaign %s grants: %w", errReplay, cd.Name, err)
		}
		cs.reqs = make([]reqPair, len(cd.Reqs))
		for j, p := range cd.Reqs {
			cs.reqs[j] = reqPair{local: p[0], global: p[1]}
			if p[0] < 1 || p[0] > cd.Filed || j > 0 && (p[0] <= cd.Reqs[j-1][0] || p[1] <= cd.Reqs[j-1][1]) {
				return fmt.Errorf("%w: campaign %s: request ids out of order at %v", errReplay, cd.Name, p)
			}
		}
		for _, sb := range cd.SlurmJobs {
			if cs.slurmJobs == nil {
				cs.slurmJobs = map[int]string{}
			}
			cs.slurmJobs[sb.Lease] = sb.Job
		}
		for _, lease := range cd.SlurmHeldOver {
			cs.markSlurmOver(lease, false)
		}
		for _, lease := range cd.SlurmReleased {
			cs.markSlurmOver(lease, true)
		}
		camps[i] = cs
		byName[cd.Name] = policy.CampaignID(i)
	}
	b.SetRecorder(c)
	c.b, c.camps, c.byName, c.journal = b, camps, byName, journal
	return nil
}
