// Package configs holds the paper's experiments as declarative YAML
// (latency-price.yaml, overbooking.yaml, bucket.yaml, embedded in the
// binary), the policy comparison (compare.yaml) and the strict parser that turns such a file into a Config and a
// Config into a Plan: the list of scenarios a sweep runs.
//
// docs/configs.md lists every key of the three formats read here (a
// config, a study config, a scenario file) with its type, default, range
// and meaning; KeySets is the list of keys that page is tested against.
//
// A config file:
//
//	experiment: bucket            # required: the output folder and the runs.csv column
//	description: free text        # optional
//	scenario: facility.yaml       # optional: the base scenario (default: the paper's)
//	seeds: [7, 11, 13]            # required: one run per seed at every grid point
//	fixed:                        # optional: knob: value, for every run
//	  probe: false
//	grid:                         # optional: knob: [values], the Cartesian product
//	  storm_bucket: [25000, 150000]
//	series:                       # optional: named variants of the grid
//	  - name: contended
//	  - name: idle-leaky
//	    fixed: {tasks: 0, leaky: true}
//	    grid: {grace: [30, 60]}
//	bootstrap: {seed: 1, resamples: 2000}  # optional: the intervals' resampling
//	policy: {name: quota, borrowing_limit: 64}  # optional: the admission policy
//
// policy (top level, or in a series, which overrides it; policy.go) names
// the admission policy of every run — bursar (the default) or one of the
// six baselines of docs/policies.md — alone (policy: fifo) or with that
// policy's knobs; it overrides a scenario file's. compare.yaml, embedded
// like the paper's three, is `bursar-sweep compare`: one series per policy.
//
// A config may also name a scenario file (scenario: FILE, relative to the
// config's folder; docs/scenarios.md): its scenario replaces the published
// defaults as the base, and keys of fixed and grid may then also be paths
// to any field of it (window.start, campaigns.storm-pm.window.start,
// campaigns.genomics.bucket, …). ParseScenario, LoadScenario and
// FormatScenario read and write scenario files themselves, as strictly as
// configs.
//
// Keys of fixed and grid are scenario knobs (engine.Knobs: pool, headroom,
// grace, storms, storm_bucket, leaky, probe, …) except seed, which only
// seeds sets. A knob's value must be of its kind: a whole number for an int
// knob, a number for a float knob, true or false for a bool knob.
//
// Any list (seeds or a grid axis) may instead be written
// {full: [...], quick: [...]}: the quick list is the --quick variant. A plain
// list serves both.
//
// bootstrap sets the seeded resampling behind the 95 % intervals of pooled
// percentiles (see sweep's doc): the stream's seed and the number of
// resamples, by default 1 and 2000 (DefaultBootstrap). It is part of the
// config so that the intervals are reproducible bit for bit.
//
// Precedence, from weakest: the published defaults, the top-level fixed,
// the series' fixed, the grid. A knob may appear only once among the fixed
// and grid of one level, and a knob swept by the top-level grid may not be
// set again by a series. Grid axes vary in the order written, the first
// slowest; the series run in the order written; without series there is
// one, named "default".
//
// The trace studies have configs of their own (study.go; trace.yaml,
// budget-knobs.yaml, agents-arrive.yaml, each the command with its
// defaults): ParseStudy and LoadStudy read what a study replays (trace,
// window, pool) and which runs it makes (policies; W and m; modes, max_k,
// stay, seeds) into a StudyConfig, as strictly as a sweep config, for
// `--config FILE` on those commands, whose flags override the file.
//
// Decoding is strict: an unknown key, an unknown knob, a value of the wrong
// type, a duplicate, a YAML alias, or a value that makes any expanded
// scenario fail engine's Scenario.Validate is an *Error naming the file, the
// line and the key.
package configs
