// Package lease is the wrapper `bursar lease -- CMD` (docs/workflows.md,
// docs/service.md, docs/slurm.md): it negotiates a lease for a campaign
// (Run: request, long-poll for the grant, release a grant below MinGPUs
// and wait for the supply, withdraw on a signal or at Wait), turns the
// lease into a local wall-clock deadline, runs the command in its own
// process group with the lease in its environment and without the
// tokens, forwards signals and hands over the terminal, gives the command
// SIGTERM at the notice and SIGKILL at the deadline (or at a preemption
// notice's end, or KillAfter after the lease vanished) whether or not the
// service answers, and releases the lease once nothing of the command
// runs: on Linux the wrapper is the command's child subreaper and signals
// its whole tree as found in /proc, setsid'd descendants included
// (tree_linux.go, docs/workflows.md "The whole tree"), and where a
// delegated cgroup v2 is writable the command runs in a cgroup of its own
// ended with cgroup.kill (cgroup_linux.go). With Slurm the command is a
// Slurm client whose jobs carry the lease's token and are signalled
// through package slurmgate.
//
// The watchdog (RunWatchdog, `bursar lease-watchdog`) is the same program
// started again in a process group of its own, holding a pipe to the
// wrapper: when the wrapper dies without its goodbye it ends the command
// (its group, and its processes that left the group, found by MarkEnv in
// their environment) and gives the lease back. Its notes are Note; its state machine is
// watchdogState.
//
// The service is reached through Client (*client.Client answers), Slurm
// through slurmgate.Cluster, and the command through the process seam
// (startGroup starts a real process group), so that the unit tests drive
// the wait, the notice, the deadline and the kill without a service, a
// cluster or a process. The wall clock is the real one: the tests use
// deadlines of a fraction of a second. The flags that fill Options are
// cmd/bursar's; its tests run the binary end to end.
package lease
