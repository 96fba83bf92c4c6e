// Package tracestudy owns the trace experiments of docs/studies.md §5:
// `trace` (every policy on a trace) and `budget-knobs` (the budget
// policy's sliding window W × minimum runtime m). A study replays every
// Spec on every Window of the log (--windows N×D: N disjoint windows of D
// days spread evenly over it, §6.16; else the whole log or --window), each
// measured less its warm-up and cool-down (trace.Measure: every job
// counted, one interval, convergence, §4.1–4.5), with the fairness of
// §4.4 (fair start times on a seeded sample, NUWT dispersion, the
// share-based daily index against a fifo control) and, for fairshare and
// budget, the usage the log itself records before the window (History).
// Every run records the shape of its mapping (Shape, WindowShape: tiers,
// weights, groups, partitions, whether it ran as fifo did), and
// FindDegenerate names the degenerate ones, which a study warns of,
// lists in summary.json and marks in the figure (docs/studies.md §4.9,
// docs/traces.md "Degenerate runs"); fifo's runs carry the model against
// the log (trace.CompareToLog, §4.8).
// Estimate turns the per-window results into means with 95 % t intervals
// over the windows and paired differences, window by window, from a
// reference (fifo; budget's default W and m). It writes summary.json,
// runs.csv, the figure (gonum/plot) and, with --jobs, each replay's
// per-job records (jobs.parquet, jobs.csv), atomically. The runs are
// independent and deterministic, so the outputs are byte-identical at any
// worker count.
//
// A Study is the specs × windows; NewPlan turns it into a sweep.StudyPlan (the
// trace's content digest, the options it was read with and each run's
// policy, knobs and window as canonical text, and a cost per run: the
// window's jobs times its policy's registry.Descriptor.Cost), and ExecutePlan runs it through sweep.ExecuteStudy, the
// runner that gives the trace studies the sweeps' --shard, merge and
// --cache. Codec writes a Result exactly (NaN included) into shard files
// and cache entries. arrive uses the same runner.
//
// The setup (setup.go): FromConfig turns a study's config
// (configs.StudyConfig, --config) and the flags given (sweep.Flags) into
// the study's job (sweep.Study: the plan, the replay of run i, the codec
// and the report), so that bursar-sweep only parses flags and calls it.
// ReadCommon is what every study on a trace reads alike (the config, the
// mapping, the log, --window, --pool, the warm-up and cool-down); arrive
// shares it. Out and CustomOut name the output folder
// (results/<command>-custom-<digest> for another log, window, pool or
// config).
//
// The default trace is the committed 28-day SDSC-SP2 excerpt, embedded
// (gzipped) so that the binary works from a fresh clone; see
// testdata/traces/README.md for its source and terms (Parallel Workloads
// Archive; Feitelson, Tsafrir & Krakov 2014).
package tracestudy
