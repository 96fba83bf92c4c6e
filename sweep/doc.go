// Package sweep runs an experiment's plan (configs.Plan) and reduces it as
// docs/model.md §11 (the paper's experiments) says.
//
// Execute runs every run of one or more plans on a bounded pool of workers
// (errgroup with SetLimit). Each run's metrics are stored at its run index
// and every reduction walks the runs in index order, so summary.json,
// runs.csv and latencies.json are byte-identical whatever the worker count
// and the order in which runs finish. A cancelled context stops the queue
// and Execute returns an error, never partial results.
//
// The reductions:
//
//   - band(key) (BandOf): per grid point, the mean of a scalar metric over
//     seeds with the smallest and largest value; NaN if any seed's value is
//     NaN (a percentile of nothing), so a mean is never over fewer seeds
//     than it claims.
//   - pooled(key, p) (Pooled): per grid point, the seeds' latency lists
//     concatenated in seed order, then engine.Percentile (model.md §8).
//     That rule (the element at rank ⌊p·N⌋ of the sorted pool) is kept
//     rather than gonum's stat.Quantile for parity with the prototype's
//     published numbers.
//   - Intervals (reduce_stats.go), 95 %, with n (the seeds) on every
//     point: TInterval, the Student t interval of a mean over seeds
//     (gonum's stat.StdDev and distuv.StudentsT), and PooledCI, a seeded
//     percentile bootstrap over seeds of a pooled percentile (gonum's
//     stat.Quantile with the Empirical rule for the bounds). The bootstrap
//     is the config's (configs.Bootstrap: seed and resamples); each
//     interval draws from a PCG stream named by experiment, grid point and
//     quantity (Stream), so intervals are bit-identical whatever the
//     worker count or the order of reduction. A percentile at the probe's
//     591 s censor is flagged _censored: a lower bound.
//
// ReducePaper turns the paper's experiments (latency-price, overbooking,
// bucket) into summary.json, with exactly the keys of experiments.md
// (headroom, grace, overbooking, bucket; NaN as null), and into the data
// of the figures package. GenericSummary is the summary of any other grid
// (`bursar-sweep sweep`): per point, band of every scalar metric and the
// pooled probe percentiles, with their intervals; WriteGenericTable prints
// it and SweepFigure gives its small multiples (figures.WriteSweep).
//
// The data files (WriteData), all written atomically:
//
//   - runs.csv: a header and one row per run: experiment, run (its index in
//     the experiment), series, every knob but the seed, seed, every scalar
//     metric. Numbers are plain digits (no exponent), booleans true/false,
//     NaN an empty cell; pandas, R and polars read it without options.
//   - latencies.json: per run (same experiment and run keys), its swept
//     knobs, seed, and the probe's raw latency lists probe_lats (out of the
//     storm window) and probe_lats_in (in it).
//   - runs.parquet (parquet.go): runs.csv's rows and columns, typed, NaN
//     as null.
//   - summary.json.
//
// Beyond one process (docs/cluster.md): AssignShards splits a sweep into
// shards of about equal expected cost (RunCost, the LPT greedy rule);
// Options.Runs runs one shard; a ShardFile holds its runs' metrics exactly
// (shard_metrics.go) with the plan's digest; CollectShards and
// ShardSet.Results check a set of shards and rebuild the results, which
// the caller reduces exactly as an unsharded sweep. Options.Cache (Cache)
// keeps each run under a content address (RunKey: the scenario, its cast
// and policy, and ProgramVersion), stored as soon as the run finishes, so that a cancelled
// sweep resumes where it stopped.
//
// Studies (study.go) are lists of runs whose results are not
// engine.Metrics: the trace studies of tracestudy and arrive. A StudyPlan
// names each run's effective inputs as text and its expected cost;
// ExecuteStudy, AssignStudyShards, StudyShardFile, CollectStudyShards and
// MergeStudy give them the same worker pool, LPT split (assignLPT),
// shard-set checks (collectHeaders) and cache entries (frameEntry) as a
// sweep, with the study's own codec for its results.
package sweep
