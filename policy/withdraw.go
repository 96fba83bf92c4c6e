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
	walked := 0
	defer func() {
		if b.counting {
			b.work.Walked += int64(walked)
		}
	}()
	for i := range b.runs {
		k := &b.runs[i]
		if k.camp != int32(c) {
			continue // only the campaign's runs are walked
		}
		reqs := b.reqsOf(k)
		for j, r := range reqs {
			walked++
			if r.ID != id {
				continue
			}
			b.dropPending(&b.camps[c], &r)
			if b.counting {
				b.work.Moved += int64(min(j, len(reqs)-j-1))
			}
			b.sumOf(k.slot).withdrawn(&r)
			if b.runReqs[k.slot] = dropAt(reqs, j); len(reqs) == 1 {
				b.dropRun(i)
			}
			return r, true, nil
		}
	}
	return Request{}, false, nil
}

// dropAt is reqs without reqs[j], the others in their order: the
// requests on the shorter side of j shift one place over it, and the
// vacated slot is zeroed. A request withdrawn near a run's head (the
// scavenge step moves a campaign's first held-back jobs out, sitemeter)
// thus moves the few before it, not the run's whole tail.
func dropAt(reqs []Request, j int) []Request {
	if j >= len(reqs)-j-1 {
		return slices.Delete(reqs, j, j+1)
	}
	copy(reqs[1:j+1], reqs[:j])
	reqs[0] = Request{}
	return reqs[1:]
}
