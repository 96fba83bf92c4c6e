package static

// PlainScavenge makes r look every job scavenge walks up by id (the
// oracle of the positions scavenge keeps).
func PlainScavenge(r *Rule) { r.plainScavenge = true }

// Relooked is the number of jobs scavenge did not find where the grants
// left them.
func Relooked(r *Rule) int { return r.relooked }

// PlainAdmit makes r take its partitions' queues from the whole pending
// list at every pass (the oracle of the queues it keeps).
func PlainAdmit(r *Rule) { r.plainAdmit = true }

// Refused is the number of jobs the backfill's search found and its test
// then refused for the shadow time.
func Refused(r *Rule) int { return r.refused }
