// Package priority is the priority-tier baseline (docs/studies.md §2,
// §6.12): the scheduler an AI lab began with, before its users inflated
// every job to the top tier; on a trace, the site's own queues.
//
// Tiers, highest first: interactive, express, high, normal, low, standby.
// A trace job's tier is its queue's by name (baseline.Request.Queue,
// named by baseline.Core.QueueName; any other name is normal); a request
// in no queue takes its class's (interactive and deadline → interactive,
// agent-burst → normal, opportunistic → standby), so that the agent
// scenario's order is interactive > burst > opportunistic.
//
// Rule. EASY backfilling in tier order, FCFS within a tier
// (baseline.Core.AdmitEASY): the highest waiting request holds the
// reservation, and any later request, of any tier, starts now only if it
// fits and does not delay that reservation (docs/studies.md §2.1). This is
// Slurm's partition PriorityTier with its backfill scheduler
// (https://slurm.schedmd.com/slurm.conf.html, PriorityTier;
// https://slurm.schedmd.com/sched_config.html).
//
// Knob Preempt (default on; off on a log whose header says
// `Preemption: No`): a head that does not fit preempts leases of strictly
// lower tiers (and the filler's), lowest tier first, then newest, as a
// minimal set and only if it then fits, each with the grace notice; the
// GPUs freed are reserved for it (§6.6). This is Slurm's preemption by
// PriorityTier with PreemptMode=CANCEL and GraceTime
// (https://slurm.schedmd.com/preempt.html).
//
// Knob Inflate: the campaigns that label every request with the top tier;
// an inflated request is filed, served and priced as interactive.
//
// Everything else — leases, expiry, the request TTL, partial grants,
// flows, credits, the filler, the journal — is policy/baseline's, and so
// is the queue kept between passes on a trace's queue, a band per tier
// (baseline.Waiting; docs/traces.md "Work per job").
package priority
