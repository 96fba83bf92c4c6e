// Package slurmconf reads a site's slurm.conf (slurm.conf(5) of Slurm
// 22.05) and maps what it says about scheduling onto policy slurm's knobs
// and the pool (docs/site-config.md; issue 30 item 5).
//
// Syntax, as slurm.conf(5) states it: key=value pairs, several to a line,
// keys case insensitive (node and partition names are not), text after
// "#" a comment, a trailing "\" continuing the line, "Include FILE" read
// in place (relative to the including file), values in double quotes
// holding blanks; NodeName, NodeSet and PartitionName lines are records
// of several pairs, NodeName=DEFAULT and PartitionName=DEFAULT the
// defaults of the lines after them, node names hostlists (gpu[01-16]).
//
// Mapping. SchedulerType, PriorityType, PriorityWeight*, PriorityMaxAge,
// PriorityDecayHalfLife, PriorityCalcPeriod, PriorityFlags=NO_FAIR_TREE
// and the SchedulerParameters options sched_interval,
// default_queue_depth, bf_interval, bf_resolution, bf_window (minutes)
// and bf_max_job_test set the knobs; every other scheduling key must hold
// the value the model assumes (Slurm's default, mostly) or the file is
// refused with one error naming the file, the line and the key. The pool
// is the default partition's GPUs (the gpu entries of its nodes' Gres),
// or its CPUs where none has a GPU. Keys that do not bear on scheduling
// are listed in Conf.Ignored with the reason, once each, in file order.
//
// The API other packages use (bursar-sweep trace --slurm-conf, and
// validate-slurm, which feeds the same file to a real slurmctld):
//
//	c, err := slurmconf.Parse(name, r) // or ParseFile(path)
//	knobs, pool := c.Policy()          // slurm.Knobs and the pool
//
// ParseWith takes an Opener for Includes (tests and fuzzing read none
// from disk). ParseSshare reads an `sshare -P -a` dump as the account
// tree, and Tree.Entitlements maps its shares onto a log's groups and
// users (docs/site-config.md, "The account tree").
package slurmconf
