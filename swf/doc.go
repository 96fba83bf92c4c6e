// Package swf reads job logs in the Standard Workload Format (SWF, version
// 2.2) of the Parallel Workloads Archive: plain or gzip-compressed (told
// apart by the gzip magic bytes 1f 8b, not by the file name), streamed one
// record at a time so that a two-year log never sits in memory as text.
//
// It owns the format and nothing about scheduling: the 18 fields of a job
// record, the `;` header comments (Version, Computer, Installation,
// MaxJobs, MaxRecords, MaxNodes, MaxProcs, MaxRuntime, MaxMemory,
// UnixStartTime, TimeZone, TimeZoneString, StartTime, EndTime, MaxQueues,
// MaxPartitions, Queue, Partition, Note, and any other `Key: value` line,
// kept verbatim), the value −1 for "unknown", and the rule of
// docs/studies.md §3 and §6.13 that decides which records are
// replayable jobs (run time > 0, at least one processor, no more than the
// pool in use), with every skipped record counted by reason.
//
// A malformed record is an error naming the file, the line and the field;
// the reader never panics on its input (FuzzReader).
//
// Source: D. G. Feitelson, "The Standard Workload Format",
// https://www.cs.huji.ac.il/labs/parallel/workload/swf.html, and the field
// list of the Parallel Workloads Archive's SWF page above (docs/traces.md).
package swf
