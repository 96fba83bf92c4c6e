// Package tracestudy owns the trace experiments of
// docs/studies.md §5: `trace` (every policy on one trace: the
// distribution of bounded slowdown, mean wait, utilization, Jain's
// fairness, preemptions and lost work) and `budget-knobs` (the budget
// policy's sliding window W × minimum runtime m against fairness, wait and
// lost work). A run is one trace.Replay of a workload under one policy; the
// runs are independent and deterministic and go through a bounded worker
// pool, so the outputs are byte-identical at any worker count. It writes
// summary.json, runs.csv and the figure (gonum/plot), atomically.
//
// A study is a list of Specs; NewPlan turns it into a sweep.StudyPlan (the
// trace's content digest, the options it was read with and each run's
// policy and knobs as canonical text, and a cost per run: the jobs times
// PolicyFactor), and ExecutePlan runs it through sweep.ExecuteStudy, the
// runner that gives the trace studies the sweeps' --shard, merge and
// --cache. Codec writes a Result exactly (NaN included) into shard files
// and cache entries. arrive uses the same runner.
//
// The default trace is the committed 28-day SDSC-SP2 excerpt, embedded
// (gzipped) so that the binary works from a fresh clone; see
// testdata/traces/README.md for its source and terms (Parallel Workloads
// Archive; Feitelson, Tsafrir & Krakov 2014).
package tracestudy
