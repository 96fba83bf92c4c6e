// Package slurmjob lays a sharded study out as a Slurm job array: the
// batch script whose task I runs shard I/N of a bursar-sweep study and
// whose task 0 submits the merge job that waits for the whole array
// (`bursar-sweep slurm-script`, docs/cluster.md). The Kubernetes form of
// the same Job is internal/k8sjob's.
package slurmjob
