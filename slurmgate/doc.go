// Package slurmgate is Bursar's hand on Slurm (docs/slurm.md): the rules
// by which jobs submitted on a lease token are watched and ended, apart
// from the commands that carry them out.
//
//   - The enforcer (Enforcer, `bursar serve --slurm-enforce`) reads the
//     queue, kills every job on a token by the token's wall-clock expiry,
//     gives a job whose lease is gone or under notice SIGTERM and then
//     the kill, cancels a second job on one token, and writes each job it
//     sees to the ledger.
//   - The job helpers find a lease's jobs by the token in their comment
//     or the WcKey the gate wrote (JobsOf, EndLease), and end them: a
//     SIGTERM through Slurm, or a kill that SIGKILLs every step before the
//     cancellation (Kill says why). `bursar lease --slurm` and its
//     watchdog use them.
//   - Reconciliation (Reconcile, `bursar slurm reconcile`) reads Slurm's
//     records back and lists every job that ran without a lease, past it,
//     larger than it, or as a second job on it.
//   - Pool counts a partition's GPUs (or CPUs) for `serve --pool-from-slurm`.
//
// Every Slurm command goes through Cluster (squeue, scancel): Exec runs
// them, and the tests give a fake, so that these rules are checked
// without Slurm. The lease token itself (its signature, its WcKey) is
// package internal/slurmtoken; the gate in slurmctld is
// scripts/slurm/job_submit.lua.
package slurmgate
