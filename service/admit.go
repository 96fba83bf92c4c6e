package service

// Admission on request (issue 23 §5). The broker admits at its ticks: at
// speed 1 a request filed just after a tick waits up to a second for the
// next one, half a second on average, and a gate in front of a batch
// scheduler pays that on every job. With Options.AdmitOnRequest the
// service runs one admission pass (policy.Broker.Admit) right after each
// request and each release, under the same lock, so that a request the
// pool can take is granted before its answer is sent, and one that
// waited for GPUs is granted when they come back rather than at the next
// tick.
//
// The broker stays a pure state machine stepped by its caller: the pass
// is an operation of its own in the journal, "admit", written right after
// the operation it follows, so a replay runs the very same passes in the
// same order and rebuilds the same broker (a build that does not know the
// operation refuses the journal by name rather than replaying it
// differently). A pass is journaled whether or not it granted anything:
// even a pass that grants nothing may reorder the pending list, whose
// order breaks ties at the next tick.
//
// What it changes: a request is decided against the requests pending at
// that moment instead of those of the whole tick, so two requests filed
// in the same second are taken in the order they came when the pool can
// hold only one, instead of by fair-share deficit. The guarantees'
// reserve, the rate caps and preemption are the tick's own rules
// (docs/service.md).

// opAdmit is the journal operation of one admission pass between ticks.
const opAdmit = "admit"

// admitLocked runs and journals one admission pass when the service
// admits on request (the caller holds the lock and wakes the long polls
// once the answer is durable).
func (t *txn) admitLocked() error {
	if !t.s.opts.AdmitOnRequest {
		return nil
	}
	_, err := t.apply(&op{Op: opAdmit})
	return err
}

// wakeAfterAdmit answers the long polls after an operation that ran an
// admission pass, once its answer is durable (the handler's withState has
// returned): the pass may have granted any campaign's pending request.
func (s *Service) wakeAfterAdmit() {
	if s.opts.AdmitOnRequest {
		s.waits.wake()
	}
}
