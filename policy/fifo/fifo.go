package fifo

import (
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
)

// Name is the policy's name in configs and reports.
const Name = "fifo"

// Rule is FCFS with EASY backfilling.
type Rule struct {
	baseline.Base
	queue baseline.Queue
	easy  baseline.EASY
	// waiting is the queue kept between passes (baseline.Waiting), in
	// one band: submit order.
	waiting baseline.Waiting
}

// New returns an FCFS + EASY allocator.
func New(cfg policy.Config) (*baseline.Core, error) { return baseline.New(cfg, &Rule{}) }

// Name is the policy's name.
func (*Rule) Name() string { return Name }

// Admit is one FCFS + EASY pass; the pending list is in submit order
// already. On a trace's queue (baseline.Core.Indexable) the pass reads
// the queue kept between passes, not the whole pending list.
func (r *Rule) Admit(k *baseline.Core) {
	if k.Indexable() {
		k.AdmitEASYWaiting(&r.easy, &r.waiting, nil)
		return
	}
	k.KeepOrder()
	r.waiting.Forget()
	k.AdmitEASY(&r.easy, r.queue.Build(k, nil), nil)
}

// UnorderedPending lets the Core keep a trace's pending list in no order
// (baseline.UnorderedPending): the kept queue orders it, and a grant in
// the middle of a long queue moves one request, not the queue behind it.
// A pass that reads the list's order puts it back in order first
// (KeepOrder).
func (*Rule) UnorderedPending() {}

// Filed keeps the queue (baseline.Watcher).
func (r *Rule) Filed(k *baseline.Core, q *baseline.Request) {
	if !k.Campaign(q.Campaign).Filler {
		r.waiting.File(k, q, 0)
	}
}

// Left keeps the queue (baseline.Watcher).
func (r *Rule) Left(k *baseline.Core, q baseline.Request) {
	if !k.Campaign(q.Campaign).Filler {
		r.waiting.Leave(k, &q, 0)
	}
}

// WaitingQueue is the queue kept between passes (baseline.WaitingRule).
func (r *Rule) WaitingQueue() *baseline.Waiting { return &r.waiting }

// CloneRule is a copy of the rule for a copy of its Core
// (baseline.RuleCloner), without the reflection: every table copied. A
// field added to Rule must be copied here: TestCloneRuleCopiesEveryField
// and trace's TestCloneSharesNothingMutable fail until it is.
func (r *Rule) CloneRule(_, _ *baseline.Core) baseline.Rule {
	c := *r
	c.queue, c.easy, c.waiting = r.queue.Clone(), r.easy.Clone(), r.waiting.Clone()
	return &c
}
