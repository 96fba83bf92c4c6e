package service

import (
	"sort"

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
// The table is rebuilt by replay, not stored: every request, live or
// replayed from the journal or a snapshot, goes through core.apply, which
// appends the broker's id to the campaign's list (TestSnapshotReplayProperty
// and TestCampaignRequestIDs check that a restart keeps it). It costs one
// int per request ever filed, which is less than the request's record in
// the journal file and in every snapshot.

// noteRequest records that the campaign's next request is the broker's
// request global.
func (cs *campState) noteRequest(global int) {
	cs.reqs = append(cs.reqs, global)
}

// localID is the campaign's id for the broker's request (or lease) global,
// 0 when it is not one of the campaign's. The broker's ids grow, so the
// list is sorted.
func (cs *campState) localID(global int) int {
	i := sort.SearchInts(cs.reqs, global)
	if i < len(cs.reqs) && cs.reqs[i] == global {
		return i + 1
	}
	return 0
}

// globalID is the broker's id of the campaign's request local, 0 (which no
// broker request has) when the campaign filed no such request.
func (cs *campState) globalID(local int) int {
	if local < 1 || local > len(cs.reqs) {
		return 0
	}
	return cs.reqs[local-1]
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
