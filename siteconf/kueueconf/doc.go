// Package kueueconf reads a site's Kueue manifests (multi-document YAML:
// ClusterQueue, Cohort, LocalQueue, ResourceFlavor,
// WorkloadPriorityClass, and Kueue's Configuration, also inside a
// ConfigMap) and maps what they say about admission onto policy quota's
// knobs and the pool (docs/site-config.md; issue 30 item 5).
//
// The ClusterQueues must share one cohort (or have none: then no queue
// borrows, borrowing_limit 0) and agree on what quota holds once for
// every queue: queueingStrategy, spec.preemption (reclaimWithinCohort,
// withinClusterQueue, borrowWithinCohort.policy) and the GPU
// borrowingLimit. Those, the Configuration's fairSharing.enable and
// preemptionStrategies, and Kueue's API defaults where the manifests are
// silent become quota's knobs (Conf.Knobs, each with where it came
// from); the pool is the ClusterQueues' nominal quota of the GPU
// resource (nvidia.com/gpu; cpu where none covers a GPU). A field the
// model does not replay (lendingLimit, fair-sharing weights other than 1,
// hierarchical cohorts, maxPriorityThreshold, admission fair sharing) or
// an unknown ClusterQueue field is one error naming the file, the line
// and the field; fields and objects that do not bear on admission are
// listed in Conf.Ignored.
//
//	c, err := kueueconf.Parse(name, r) // or ParseFile(path)
//	err = c.Apply(&knobs)              // quota's knobs, through its own parsers
package kueueconf
