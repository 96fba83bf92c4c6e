package policy

import "slices"

// Withdraw drops campaign c's pending request id: its agent stopped
// waiting (an interrupted `bursar lease`, a timeout), and a grant made now
// would hold GPUs for nobody until the lease expired. The GPUs it asked for
// stop counting as demand at once. Like the requests ReleaseAll drops, a
// withdrawal writes no journal record: the request never held anything.
// It returns the request and whether it was pending; a request already
// granted, expired or of another campaign is left alone (false).
func (b *Broker) Withdraw(c CampaignID, id int) (Request, bool, error) {
	if err := b.check(c); err != nil {
		return Request{}, false, err
	}
	for i := range b.pending {
		if r := b.pending[i]; r.ID == id && r.Campaign == c {
			b.dropPending(&b.camps[c], &r)
			// slices.Delete keeps the admission order of the others
			// and zeroes the vacated slot.
			if b.counting {
				b.work.Walked += int64(i + 1)
				b.work.Moved += int64(len(b.pending) - i - 1)
			}
			b.pending = slices.Delete(b.pending, i, i+1)
			b.runsOK = false
			return r, true, nil
		}
	}
	return Request{}, false, nil
}
