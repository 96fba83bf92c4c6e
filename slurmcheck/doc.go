// Package slurmcheck checks policy slurm against a real Slurm 22.05
// (issue 30 item 6; docs/validate-slurm.md): it draws a short log
// (Generate), replays it in real time through slurmctld on the cluster of
// scripts/slurm-local.sh (Cluster.Replay: a driver that sleeps until each
// submit and runs `sleep` payloads, the jobs' times read back from
// jobcomp/filetxt), replays what each real run saw under policy slurm and
// under fifo (Simulate: Slurm's own submit and run times, the same whole-
// minute limits), and measures how close they come (metrics.go: per-job
// start-time error, Kendall's τ-b over the pairs of jobs queued
// together), Slurm against itself included, its run-to-run spread.
//
// Both sides take their scheduler from one slurm.conf text (Config.
// Scheduler, by default the determinism Settings written out): slurmctld
// gets its lines, and the simulator policy slurm's knobs as
// siteconf/slurmconf reads them, so that they cannot drift apart.
// The simulation path is deterministic; the real replays are not, which is
// what the spread measures.
package slurmcheck
