// Package priority is the strict-priority baseline (docs/studies.md §2, §6.12):
// the scheduler an AI lab began with, before its users inflated every job
// to the top class.
//
// Rule. Requests are served by class — interactive (and deadline, which
// ranks with it: the top class is interactive), then agent-burst, then
// opportunistic — first come, first served within a class. A class's head
// that does not fit blocks the rest of its class but not lower classes,
// which may start in what is left (§6.12). A head that does not fit
// preempts leases of strictly lower classes (and the filler's), lowest
// class first, newest first, as a minimal set and only if it then fits,
// each with the grace notice; the GPUs freed are reserved for it (§6.6).
// This is Slurm's preemption by priority tier with GraceTime
// (https://slurm.schedmd.com/preempt.html: PreemptMode=CANCEL with
// GraceTime, the job is signalled and cancelled once GraceTime has
// passed).
//
// Knob Inflate: the campaigns that label every request with the top class;
// an inflated request is filed, served and priced as interactive.
//
// Everything else — leases, expiry, the request TTL, partial grants,
// flows, credits, the filler, the journal — is policy/baseline's.
package priority
