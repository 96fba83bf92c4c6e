// Package slurm is Slurm 22.05's scheduler as a baseline (issue 30;
// docs/policies.md "slurm"): the main scheduler, the backfill pass and
// multifactor priority with Fair Tree, each default read in Slurm's source
// (slurm-22-05-9-1) and cited where it is set (slurm.go).
//
// Rule. Each admission (on every event: a job filed, started or ended, a
// notice) runs the main scheduler (job_scheduler.c, _schedule): the queue
// in priority order (sort_job_queue2: priority, then submit time, then
// job id), each job started if it fits now, the first that does not
// stopping the partition (it may preempt the filler, as every baseline's
// blocked head, docs/studies.md §6.2); an event run tests at most
// default_queue_depth jobs, the run at each sched_interval tick the whole
// queue. At every bf_interval tick the backfill pass (backfill.go)
// tests the first bf_max_job_test jobs in the same order on a map of the
// free GPUs over time, starts those that fit now without delaying any
// earlier job's reservation, and reserves the others' earliest starts
// within bf_window, at bf_resolution. Unlike EASY (policy/fifo) every
// job tested holds a reservation, not only the queue's head.
//
// Priorities (priority.go) are multifactor, recomputed once per
// PriorityCalcPeriod; the fair-share factor is Fair Tree's (fairtree.go),
// or classic fair share under NoFairTree, on the entitlements' groups and
// members (baseline.Core.Groups, docs/studies.md §1) with usage decayed by
// PriorityDecayHalfLife (policy/fairshare's books, history preloaded,
// §6.16). Every weight defaults to Slurm's 0: the queue is in submit
// order.
//
// Between events the rule is Paced (baseline.Paced): a trace replay skips
// to the next bf_interval or sched_interval tick at which a pass could do
// something, so its cost follows the log's events, not its seconds.
package slurm
