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
}

// New returns an FCFS + EASY allocator.
func New(cfg policy.Config) (*baseline.Core, error) { return baseline.New(cfg, &Rule{}) }

// Name is the policy's name.
func (*Rule) Name() string { return Name }

// Admit is one FCFS + EASY pass; the pending list is in submit order
// already.
func (r *Rule) Admit(k *baseline.Core) {
	k.AdmitEASY(&r.easy, r.queue.Build(k, nil), nil)
}
