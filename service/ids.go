package service

import (
	"cmp"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
)

// Per-campaign request ids. The broker numbers requests with one counter
// for all campaigns (a grant's lease keeps its request's id), so a
// campaign that saw ids 7 and 12 would know that other campaigns filed
// four requests in between. The API therefore never shows a campaign the
// broker's ids: request n of a campaign (counted from 1, denied requests
// included, since they take an id too) is id n in every path, body and
// journal record under /v1/campaigns/{campaign}/… and in the campaign's
// own journal scope, for a campaign token and the administrator alike.
// The broker, the journal file and the snapshots keep the global ids; the
// translation happens here, at the API boundary, and nowhere else.
//
// The table is kept by replay and in the snapshot's state record
// (dump.go): every request, live or replayed, goes through core.apply,
// which appends its pair (TestSnapshotReplayProperty and
// TestCampaignRequestIDs check that a restart keeps it). So that it stays
// bounded (issue 34 §6), a request drops the pairs nothing refers to
// any more once a campaign holds more than idKeep of them (pruneIDs): an id
// is kept while its request is pending, its lease is held or a retained
// journal record or grant names it. A dropped id is answered as one whose
// request is gone (404), as it was before.

// reqPair is the campaign's request local and the broker's id global.
type reqPair struct{ local, global int }

// noteRequest records that campaign cid's next request is the broker's
// request global, and prunes its ids when they exceed idKeep.
func (c *core) noteRequest(cid policy.CampaignID, cs *campState, global int) {
	cs.filed++
	cs.reqs = append(cs.reqs, reqPair{local: cs.filed, global: global})
	if len(cs.reqs) > c.idKeep {
		c.pruneIDs(cid, cs)
	}
}

// localID is the campaign's id for the broker's request (or lease) global,
// 0 when it is not one of the campaign's (or no longer kept). The
// broker's ids grow, so the pairs are sorted by both.
func (cs *campState) localID(global int) int {
	if i, ok := slices.BinarySearchFunc(cs.reqs, global, func(p reqPair, g int) int { return cmp.Compare(p.global, g) }); ok {
		return cs.reqs[i].local
	}
	return 0
}

// globalID is the broker's id of the campaign's request local, 0 (which no
// broker request has) when the campaign filed no such request or it is
// no longer kept.
func (cs *campState) globalID(local int) int {
	if i, ok := slices.BinarySearchFunc(cs.reqs, local, func(p reqPair, l int) int { return cmp.Compare(p.local, l) }); ok {
		return cs.reqs[i].global
	}
	return 0
}

// pruneIDs drops the campaign's request ids that nothing refers to, and
// the Slurm job bindings of leases it no longer holds. It runs inside
// apply, live and on replay alike, so the table is the same whichever
// way the state was rebuilt.
func (c *core) pruneIDs(cid policy.CampaignID, cs *campState) {
	live := map[int]bool{}
	for _, l := range c.b.Leases() {
		if l.Campaign == cid {
			live[l.ID] = true
		}
	}
	for lease := range cs.slurmJobs {
		if !live[lease] {
			delete(cs.slurmJobs, lease)
		}
	}
	for lease := range cs.slurmOver {
		if !live[lease] {
			delete(cs.slurmOver, lease)
		}
	}
	for _, r := range c.b.Pending() {
		if r.Campaign == cid {
			live[r.ID] = true
		}
	}
	for _, rg := range []*ring{&cs.journal, &cs.grants} {
		for j := range rg.buf {
			live[rg.buf[j].ev.Lease] = true
		}
	}
	cs.reqs = slices.Clip(slices.DeleteFunc(cs.reqs, func(p reqPair) bool { return !live[p.global] }))
}

// heldLease is the live lease the campaign knows as id local (a lease of
// the campaign's that was released, expired or reclaimed is not found).
// Handlers that take a lease id in the path look it up here, never among
// the broker's ids.
func (c *core) heldLease(cid policy.CampaignID, cs *campState, local int) (policy.Lease, bool) {
	g := cs.globalID(local)
	if g == 0 {
		return policy.Lease{}, false
	}
	for _, l := range c.b.Leases() {
		if l.ID == g && l.Campaign == cid {
			return l, true
		}
	}
	return policy.Lease{}, false
}

// leaseCount is how many leases the campaign holds.
func (c *core) leaseCount(cid policy.CampaignID) int {
	n := 0
	for _, l := range c.b.Leases() {
		if l.Campaign == cid {
			n++
		}
	}
	return n
}
