package quota

import (
	"slices"

	"github.com/bursar-hpc/bursar/policy/baseline"
)

// CloneRule is a copy of the rule for a copy of its Core
// (baseline.RuleCloner): every table copied, the tests' hooks dropped.
// The reflective copy it replaces was a tenth of a StrictFIFO replay of
// the full SDSC-SP2 log with fair starts, whose thousand forks each copy
// queues thousands of workloads long. TestCloneRuleCopiesEveryField checks
// it against that copy, field for field, and that it shares no memory
// with the original.
func (r *Rule) CloneRule(_, _ *baseline.Core) baseline.Rule {
	c := *r
	c.queueOf, c.nominal = slices.Clone(r.queueOf), slices.Clone(r.nominal)
	c.members = baseline.CloneLists(r.members)
	if r.queues != nil {
		c.queues = make([]queue, len(r.queues))
		for i := range r.queues {
			q := r.queues[i]
			q.list, q.blockLeast = slices.Clone(q.list), slices.Clone(q.blockLeast)
			c.queues[i] = q
		}
	}
	for b := range r.byLeast {
		c.byLeast[b] = slices.Clone(r.byLeast[b])
	}
	for b := range r.byOver {
		c.byOver[b] = slices.Clone(r.byOver[b])
	}
	c.overAt, c.overKey, c.keptIdx, c.idxHeld = slices.Clone(r.overAt), slices.Clone(r.overKey), slices.Clone(r.keptIdx), slices.Clone(r.idxHeld)
	c.asked = slices.Clone(r.asked)
	c.bucketAt, c.open, c.live, c.preemptors = slices.Clone(r.bucketAt), slices.Clone(r.open), slices.Clone(r.live), slices.Clone(r.preemptors)
	c.usage, c.kept = slices.Clone(r.usage), slices.Clone(r.kept)
	c.cursor, c.done = slices.Clone(r.cursor), slices.Clone(r.done)
	c.bonus = slices.Clone(r.bonus)
	c.holding, c.borrowing = slices.Clone(r.holding), slices.Clone(r.borrowing)
	c.keptSum, c.excess = slices.Clone(r.keptSum), slices.Clone(r.excess)
	c.heads, c.order, c.ranks = slices.Clone(r.heads), slices.Clone(r.order), slices.Clone(r.ranks)
	c.vict, c.fillerVict, c.widest = baseline.CloneLists(r.vict), slices.Clone(r.fillerVict), slices.Clone(r.widest)
	c.vkeys = slices.Clone(r.vkeys)
	c.cands, c.withC, c.next = baseline.CloneLists(r.cands), slices.Clone(r.withC), slices.Clone(r.next)
	c.fillerCands = slices.Clone(r.fillerCands)
	c.minFail, c.sim = slices.Clone(r.minFail), slices.Clone(r.sim)
	c.deferred, c.owed = slices.Clone(r.deferred), slices.Clone(r.owed)
	c.targets, c.decisions = slices.Clone(r.targets), slices.Clone(r.decisions)
	c.retry = baseline.CloneLists(r.retry)
	c.unasked, c.late = slices.Clone(r.unasked), slices.Clone(r.late)
	c.asOf, c.asOfExcess, c.asOfKeptSum = slices.Clone(r.asOf), slices.Clone(r.asOfExcess), slices.Clone(r.asOfKeptSum)
	c.decide, c.audit, c.bound, c.takableAudit = nil, nil, nil, nil
	return &c
}
