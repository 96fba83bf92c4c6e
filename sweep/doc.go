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
//     concatenated in seed order, then stats.Percentile (model.md §8).
//     That rule (the element at rank ⌊p·N⌋ of the sorted pool) is kept
//     rather than gonum's stat.Quantile for parity with the prototype's
//     published numbers.
//   - Intervals (reduce_stats.go), 95 %, with n (the seeds) on every
//     point: TInterval, the Student t interval of a mean over seeds
//     (stats.MeanT: gonum's stat.StdDev and distuv.StudentsT), and
//     PooledCI, a seeded percentile bootstrap over seeds of a pooled
//     percentile (stats.Bootstrap: gonum's stat.Quantile with the
//     Empirical rule for the bounds). The bootstrap
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
// One runner for every study (runner.go): a study is a plan of runs, a
// function that computes run i, a codec for a run's result and a report
// (Job; Study for any result over a StudyPlan, SweepJob for engine
// plans). Run drives any Job the same way: one worker pool (runs.execute),
// --shard (Job.Shards splits the runs into shards of about equal expected
// cost by the LPT greedy rule, assignLPT; a shard file holds its runs'
// results exactly with the plan's digest), merge (ReadShardSet checks a
// set of shards, and the command replayed with it reduces exactly as an
// unsharded one) and --cache (each run under a content address, stored as
// soon as it finishes, so that a cancelled study resumes where it
// stopped). docs/cluster.md.
//
// The two forms keep their own file formats and keys: a sweep's runs are
// engine.Run of a scenario, cached under RunKey (the scenario, its cast
// and policy, and ProgramVersion) with ShardFile (RunCost); a study's
// (tracestudy, arrive) name their effective inputs as text in a StudyPlan
// (StudyPlan.RunKey, StudyShardFile) and their cost.
package sweep
