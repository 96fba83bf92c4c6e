package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/figures"
	"github.com/bursar-hpc/bursar/internal/atomicfile"
	"github.com/bursar-hpc/bursar/internal/manifest"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/sweep"
	"github.com/bursar-hpc/bursar/swf"
	"github.com/bursar-hpc/bursar/trace"
	"github.com/bursar-hpc/bursar/tracestudy"
	"github.com/urfave/cli/v2"
)

// traceStudy is the trace experiment of docs/studies.md §5.
func traceStudy() study {
	return study{Command: &cli.Command{
		Name:  "trace",
		Usage: "replay a real job log under every policy: bounded slowdown, wait, utilization, fairness",
		Description: "Each policy on a trace (docs/studies.md §5): every job a rigid request filed at\n" +
			"its submit time, never expiring, replayed until every job has finished or been denied, or to\n" +
			"its horizon. --windows N×D replays N disjoint windows of D days spread over the log (each\n" +
			"estimate then gets a 95 % interval over windows, and each policy a paired difference from\n" +
			"fifo); --warmup and --cooldown (1d each) are replayed, not measured. Prints a table and writes\n" +
			"summary.json, runs.csv, fig_trace (the bounded-slowdown CDF over every job, the served /\n" +
			"denied / unfinished counts, mean wait, useful / lost / idle-while-waiting GPU time, and the\n" +
			"fairness measures), manifest.json and with --jobs every replay's per-job records\n" +
			"(docs/metrics.md, docs/traces.md). The default trace is the embedded 28-day SDSC-SP2\n" +
			"excerpt; --trace FILE reads any SWF log, plain or gzip.\n" +
			studyDistHelp("trace"),
		Flags: append(traceFlags("results/trace", true), mappingFlags()...),
	},
		setup:  func(c *cli.Context, d *sweep.Dist) (sweep.Job, error) { return setupTraceStudy(c, d, "trace") },
		outFor: customOutFor("trace", "results/trace"),
	}
}

// budgetKnobsStudy is budget-knobs, docs/studies.md §5.
func budgetKnobsStudy() study {
	return study{Command: &cli.Command{
		Name:  "budget-knobs",
		Usage: "the budget policy's window W × minimum runtime m against fairness, wait and lost work",
		Description: "The study a site runs before changing its lookback window (docs/studies.md §5): the budget\n" +
			"policy on a trace at every W ∈ {1, 3, 7, 14} days × m ∈ {0, 5 min, 1 h, 4 h} (m for every\n" +
			"class) × restart ∈ {checkpoint:3600, zero}, with the trace's groups as the hierarchy. By default\n" +
			"on 8 windows of 14 days of the full SDSC-SP2 log (embedded; 256 replays, about 100 s of CPU);\n" +
			"--windows N×D, --window or --trace choose others. Each estimate gets a 95 % interval over the\n" +
			"windows and each cell a paired difference from W = 7 d, m = 1 h, checkpoint:3600. Writes\n" +
			"summary.json, runs.csv, fig_budget_knobs (mean wait, lost work, preemptions and fairness\n" +
			"against W, one line per m, a column per restart, × on a cell that did not converge) and\n" +
			"manifest.json.\n" + studyDistHelp("budget-knobs"),
		Flags: budgetKnobsFlags(),
	},
		setup:  func(c *cli.Context, d *sweep.Dist) (sweep.Job, error) { return setupTraceStudy(c, d, "budget-knobs") },
		outFor: customOutFor("budget-knobs", "results/trace/budget-knobs"),
	}
}

func traceFlags(defaultOut string, withPolicies bool) []cli.Flag {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "trace", Usage: "SWF log `FILE` (plain or .gz), or sdsc-sp2 / sdsc-sp2-excerpt for the logs embedded in the binary", DefaultText: "the embedded SDSC-SP2 excerpt"},
		&cli.StringFlag{Name: "window", Usage: "replay the jobs submitted in `START:END` (seconds after the log's start; END may be empty)"},
		&cli.IntFlag{Name: "pool", Usage: "`GPUS` in the pool", DefaultText: "the log's MaxProcs"},
		&cli.IntFlag{Name: "workers", Usage: "`N` runs at once", Value: runtime.NumCPU(), DefaultText: fmt.Sprintf("one per CPU, %d here", runtime.NumCPU())},
		&cli.StringFlag{Name: "out", Usage: "output `FOLDER`", Value: defaultOut, DefaultText: defaultOut + " (results/<command>-custom-<digest of the inputs> with --trace, --window, --pool or --config)"},
		&cli.StringFlag{Name: "format", Usage: "figure `FORMAT`: png, svg or pdf", Value: string(figures.PNG)},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress on stderr"},
		&cli.StringFlag{Name: "config", Usage: "study config `FILE` (configs/<command>.yaml says what it may set); flags override it"},
	}
	flags = append(flags, distFlags()...)
	if withPolicies {
		flags = append(flags,
			&cli.StringFlag{Name: "policies", Usage: "comma-separated `LIST` of policies", DefaultText: strings.Join(policies.Names, ",")},
			&cli.StringFlag{Name: "policy", Usage: "one policy `NAME` (the same as --policies NAME)"})
	}
	return flags
}

// parseWindowAt reads --window START:END: each end whole seconds after
// the log's start (21772800), days after it (252d, 252.5d), or a date
// (1998-12-01) at midnight in the log's time zone (its header's
// TimeZoneString, else its TimeZone offset; h nil: dates refused). END
// may be empty: to the log's end.
func parseWindowAt(s string, h *swf.Header) (from, until int64, err error) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, fmt.Errorf("--window %q: want START:END in seconds, days or dates after the log's start, e.g. 21772800:24192000, 252d:280d or 1998-12-01:1998-12-29", s)
	}
	if from, err = windowEnd(strings.TrimSpace(a), h); err != nil || from < 0 {
		return 0, 0, fmt.Errorf("--window %q: START: %v", s, orNegative(err))
	}
	if strings.TrimSpace(b) != "" {
		if until, err = windowEnd(strings.TrimSpace(b), h); err != nil || until <= from {
			return 0, 0, fmt.Errorf("--window %q: END must be a whole number of seconds (or days, or a date) after START%s", s, errSuffix(err))
		}
	}
	return from, until, nil
}

func orNegative(err error) error {
	if err == nil {
		return fmt.Errorf("before the log's start")
	}
	return err
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

// windowEnd reads one end of --window.
func windowEnd(s string, h *swf.Header) (int64, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		x, err := strconv.ParseFloat(d, 64)
		if err != nil || x < 0 || x > 1e6 || x*86400 != math.Trunc(x*86400) {
			return 0, fmt.Errorf("%q: want days ≥ 0 such as 252d", s)
		}
		return int64(x * 86400), nil
	}
	if strings.Count(s, "-") == 2 && len(s) == 10 {
		if h == nil {
			return 0, fmt.Errorf("%q: a date needs the log's header; give seconds or days here", s)
		}
		if h.UnixStartTime <= 0 {
			return 0, fmt.Errorf("%q: the log's header has no UnixStartTime; give seconds or days", s)
		}
		loc := time.UTC
		if l, err := time.LoadLocation(h.TimeZoneString); h.TimeZoneString != "" && err == nil {
			loc = l
		} else if h.HasTimeZone {
			loc = time.FixedZone("log", int(h.TimeZone))
		}
		t, err := time.ParseInLocation("2006-01-02", s, loc)
		if err != nil {
			return 0, fmt.Errorf("%q: not a date YYYY-MM-DD", s)
		}
		return t.Unix() - h.UnixStartTime, nil
	}
	x, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: want whole seconds, days (252d) or a date (YYYY-MM-DD)", s)
	}
	return x, nil
}

// studyDistHelp is the help text of a trace study's --config, --shard and
// --cache.
func studyDistHelp(command string) string {
	return "--config FILE reads a study config (configs/" + command + ".yaml is this command's defaults;\n" +
		"flags override it). --shard I/N, --cache DIR and `bursar-sweep merge` work as for the\n" +
		"sweeps (docs/cluster.md); slurm-script runs the study as a job array."
}

// studyConfig reads --config, a trace study's config (configs.StudyConfig)
// for experiment; without --config, an empty one (every value the
// command's default).
func studyConfig(c *cli.Context, experiment string) (*configs.StudyConfig, error) {
	if !c.IsSet("config") {
		return &configs.StudyConfig{Experiment: experiment}, nil
	}
	cfg, err := configs.LoadStudy(c.String("config"))
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	if cfg.Experiment != experiment {
		return nil, fmt.Errorf("--config: %s is a config of %s, not of %s", cfg.File, cfg.Experiment, experiment)
	}
	return cfg, nil
}

// studyTrace is the log to read and the name outputs give it: --trace,
// else the config's trace (read relative to the config's folder, named as
// the config writes it), else "" and the embedded excerpt's name. A
// built-in name (tracestudy.Builtin) is named by its archive name.
func studyTrace(c *cli.Context, cfg *configs.StudyConfig) (path, name string) {
	switch {
	case c.IsSet("trace"):
		path, name = c.String("trace"), c.String("trace")
	case cfg.Trace != "":
		path, name = cfg.Trace, cfg.TraceName
	}
	if _, archive, ok := tracestudy.Builtin(path); ok {
		name = archive
	}
	return path, name
}

// studyTableFile is a trace study's printed table, kept in its folder.
const studyTableFile = "table.txt"

// printTableFile prints the table print draws to stdout and writes the
// same bytes, atomically, to the folder's table.txt.
func printTableFile(stdout io.Writer, out string, print func(io.Writer) error) error {
	var table bytes.Buffer
	if err := print(&table); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(out, studyTableFile), table.Bytes()); err != nil {
		return err
	}
	_, err := stdout.Write(table.Bytes())
	return err
}

// embeddedTrace reports whether path names a log embedded in the binary.
func embeddedTrace(path string) bool {
	_, _, ok := tracestudy.Builtin(path)
	return ok
}

// studyPool sets opt.Pool from --pool, else the config's pool.
func studyPool(c *cli.Context, cfg *configs.StudyConfig, opt *trace.Options) error {
	switch {
	case c.IsSet("pool"):
		if opt.Pool = c.Int("pool"); opt.Pool < 1 {
			return fmt.Errorf("--pool must be at least 1, got %d", opt.Pool)
		}
	case cfg.Pool != nil:
		opt.Pool = *cfg.Pool
	}
	return nil
}

// studyPolicies is --policies or --policy, else the config's policies,
// else all of them.
func studyPolicies(c *cli.Context, cfg *configs.StudyConfig) ([]string, error) {
	if !c.IsSet("policies") && !c.IsSet("policy") && cfg.Policies != nil {
		return cfg.Policies, nil
	}
	return parsePolicies(c)
}

// studyOut is --out, else results/<experiment>-custom-<digest> when the
// trace, the window or the pool is not the default one (a flag or
// --config; customOut), else the command's default folder.
func studyOut(c *cli.Context, experiment string) string {
	if c.IsSet("out") {
		return c.String("out")
	}
	given := map[string]string{}
	for _, name := range customInputs {
		if c.IsSet(name) {
			given[name] = fmt.Sprint(c.Value(name))
		}
	}
	if len(given) > 0 {
		return customOut(experiment, given)
	}
	return c.String("out")
}

// parsePolicies reads --policies / --policy.
func parsePolicies(c *cli.Context) ([]string, error) {
	if c.IsSet("policies") && c.IsSet("policy") {
		return nil, fmt.Errorf("give --policies or --policy, not both")
	}
	list := c.String("policies")
	if c.IsSet("policy") {
		list = c.String("policy")
	}
	if list == "" {
		return policies.Names, nil
	}
	var names []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if !slices.Contains(policies.Names, n) {
			return nil, fmt.Errorf("--policies: unknown policy %q (want some of %s)", n, strings.Join(policies.Names, ", "))
		}
		if slices.Contains(names, n) {
			return nil, fmt.Errorf("--policies: %q given twice", n)
		}
		names = append(names, n)
	}
	return names, nil
}

// budgetKnobsFlags are trace's flags without --policies, with
// budget-knobs' own defaults in their help.
func budgetKnobsFlags() []cli.Flag {
	flags := append(traceFlags("results/trace/budget-knobs", false), mappingFlags()...)
	for _, f := range flags {
		switch f := f.(type) {
		case *cli.StringFlag:
			switch f.Name {
			case "trace":
				f.DefaultText = budgetKnobsTrace + ", the full SDSC-SP2 log embedded in the binary"
			case "windows":
				f.DefaultText = budgetKnobsWindows.String() + " (one window with --window)"
			case "restart":
				f.Usage = "only this restart rule after a preemption, `zero` or checkpoint:S"
				f.DefaultText = strings.Join(tracestudy.BudgetRestarts, " and ")
			}
		}
	}
	return flags
}

// Budget-knobs' own defaults (docs/studies.md §5: over several windows):
// the full SDSC-SP2 log, embedded, in 8 windows of 14 days. 256 replays
// take about 100 s of CPU (docs/traces.md).
var (
	budgetKnobsTrace   = tracestudy.BuiltinFull
	budgetKnobsWindows = configs.WindowsSpec{N: 8, Days: 14}
)

// budgetKnobsDefaults applies budget-knobs' defaults: its trace when no
// --trace or config trace names one, its windows when no --windows,
// --window or config window or windows is given.
func budgetKnobsDefaults(c *cli.Context, cfg *configs.StudyConfig, m *configs.TraceMapping, path, name string) (string, string) {
	if !c.IsSet("trace") && cfg.Trace == "" {
		path = budgetKnobsTrace
		_, name, _ = tracestudy.Builtin(path)
	}
	if m.Windows == nil && !c.IsSet("window") && cfg.Window == nil {
		w := budgetKnobsWindows
		m.Windows = &w
	}
	return path, name
}

// mappingFlags are the trace mapping and measurement flags of trace and
// budget-knobs (configs.TraceMapping; docs/traces.md).
func mappingFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "windows", Usage: "replay `N×D` disjoint windows of D days spread evenly over the log (e.g. 4x14d); every estimate gets a 95 % interval over them", DefaultText: "one window: the whole log or --window"},
		&cli.StringFlag{Name: "warmup", Usage: "`DURATION` of submits at a window's start replayed but not measured (1d, 12h, 3600)", DefaultText: "1d"},
		&cli.StringFlag{Name: "cooldown", Usage: "`DURATION` of submits at a window's end replayed but not measured", DefaultText: "1d"},
		&cli.StringFlag{Name: "by", Usage: "a campaign is one `user` or one group (user|group)", DefaultText: "user"},
		&cli.StringFlag{Name: "classes", Usage: "queue → class overrides, `QUEUE=CLASS,…` (classes interactive, agent-burst, opportunistic)"},
		&cli.StringFlag{Name: "shares", Usage: "entitlement `RULE`: " + strings.Join(configs.ShareRules, ", ")},
		&cli.StringFlag{Name: "bucket", Usage: "Bursar's bucket on a trace: `largest-job` or hours:N"},
		&cli.StringFlag{Name: "restart", Usage: "budget's restart after a preemption: `zero` or checkpoint:S"},
		&cli.IntFlag{Name: "fair-sample", Usage: "`N` measured jobs per window get a fair start time (docs/studies.md §4.4; 0: none)", Value: trace.DefaultFairSample},
		&cli.BoolFlag{Name: "jobs", Usage: "also write every replay's per-job records, jobs/<policy>-w<window>/jobs.parquet and jobs.csv"},
	}
}

// studyMapping is the config's trace mapping with the flags on top.
func studyMapping(c *cli.Context, cfg *configs.StudyConfig) (configs.TraceMapping, error) {
	m := cfg.Mapping
	for _, f := range []struct {
		name  string
		dst   *string
		check func(string) error
	}{{"by", &m.By, configs.CheckBy}, {"shares", &m.Shares, configs.CheckShares}, {"bucket", &m.Bucket, configs.CheckBucket},
		{"restart", &m.Restart, configs.CheckRestart}} {
		if c.IsSet(f.name) {
			if err := f.check(c.String(f.name)); err != nil {
				return m, fmt.Errorf("--%s %w", f.name, err)
			}
			*f.dst = c.String(f.name)
		}
	}
	if c.IsSet("classes") {
		cl, err := configs.ParseClasses(c.String("classes"))
		if err != nil {
			return m, fmt.Errorf("--classes: %w", err)
		}
		m.Classes = cl
	}
	for _, f := range []struct {
		name string
		dst  **int64
	}{{"warmup", &m.Warmup}, {"cooldown", &m.Cooldown}} {
		if c.IsSet(f.name) {
			d, err := configs.ParseDuration(c.String(f.name))
			if err != nil {
				return m, fmt.Errorf("--%s %w", f.name, err)
			}
			*f.dst = &d
		}
	}
	if c.IsSet("windows") {
		w, err := configs.ParseWindows(c.String("windows"))
		if err != nil {
			return m, fmt.Errorf("--windows %w", err)
		}
		m.Windows = &w
	}
	return m, nil
}

func setupTraceStudy(c *cli.Context, dist *sweep.Dist, experiment string) (sweep.Job, error) {
	start := time.Now()
	workers := dist.Workers
	format, err := figures.ParseFormat(c.String("format"))
	if err != nil {
		return nil, fmt.Errorf("--format: %w", err)
	}
	cfg, err := studyConfig(c, experiment)
	if err != nil {
		return nil, err
	}
	mapping, err := studyMapping(c, cfg)
	if err != nil {
		return nil, err
	}
	path, name := studyTrace(c, cfg)
	if experiment == "budget-knobs" {
		path, name = budgetKnobsDefaults(c, cfg, &mapping, path, name)
	}
	var opt trace.Options
	switch {
	case c.IsSet("window"):
		h, err := tracestudy.Header(path)
		if err != nil {
			return nil, fmt.Errorf("--trace: %w", err)
		}
		if opt.From, opt.Until, err = parseWindowAt(c.String("window"), h); err != nil {
			return nil, err
		}
	case cfg.Window != nil:
		opt.From, opt.Until = cfg.Window.From, cfg.Window.Until
	}
	if err := studyPool(c, cfg, &opt); err != nil {
		return nil, err
	}
	var specs []tracestudy.Spec
	if experiment == "budget-knobs" {
		windows, mins := tracestudy.BudgetWindows, tracestudy.BudgetMinRuntimes
		if cfg.WindowsDays != nil {
			windows = cfg.WindowsDays
		}
		if cfg.MinRuntimes != nil {
			mins = cfg.MinRuntimes
		}
		restarts := tracestudy.BudgetRestarts
		if mapping.Restart != "" {
			restarts = []string{mapping.Restart}
		}
		if specs, err = tracestudy.BudgetKnobSpecs(windows, mins, restarts); err != nil {
			return nil, fmt.Errorf("--restart: %w", err)
		}
	} else {
		names, err := studyPolicies(c, cfg)
		if err != nil {
			return nil, err
		}
		specs = tracestudy.TraceSpecs(names)
	}
	if err := tracestudy.ApplyMapping(mapping, &opt, specs); err != nil {
		return nil, err
	}
	warmup, cooldown := int64(tracestudy.DefaultWarmup), int64(tracestudy.DefaultCooldown)
	if mapping.Warmup != nil {
		warmup = *mapping.Warmup
	}
	if mapping.Cooldown != nil {
		cooldown = *mapping.Cooldown
	}
	w, err := tracestudy.LoadRange(path, opt)
	if err != nil {
		if opt.From != 0 || opt.Until != 0 {
			return nil, fmt.Errorf("--window (or the config's window) on %s: %w", name, err)
		}
		return nil, fmt.Errorf("--trace: %w", err)
	}
	// Every study: one window (the log, or --window) or --windows N×D
	// spread over it.
	st := &tracestudy.Study{Specs: specs}
	if mapping.Windows == nil {
		win, err := tracestudy.WholeWindow(w, opt, warmup, cooldown)
		if err != nil {
			return nil, fmt.Errorf("--warmup, --cooldown: %w", err)
		}
		st.Windows, st.Loads = []tracestudy.Window{win}, []*trace.Workload{w}
	} else {
		first, last := w.Jobs[0].Submit, w.Jobs[len(w.Jobs)-1].Submit
		if st.Windows, err = tracestudy.Windows(first, last, mapping.Windows.N, mapping.Windows.Days*tracestudy.Day, warmup, cooldown); err != nil {
			return nil, fmt.Errorf("--windows %s: %w", mapping.Windows, err)
		}
		if st.Loads, err = tracestudy.LoadWindows(path, opt, st.Windows); err != nil {
			return nil, fmt.Errorf("--windows %s: %w", mapping.Windows, err)
		}
	}
	if st.FairSample = c.Int("fair-sample"); st.FairSample < 0 {
		return nil, fmt.Errorf("--fair-sample must not be negative, got %d", st.FairSample)
	}
	// fairshare and budget start each window with the usage the log
	// records before it (docs/studies.md §6.16).
	st.Options = opt
	for _, sp := range specs {
		if tracestudy.Lookback(sp) > 0 {
			if st.Recorded, err = tracestudy.ReadRecorded(path, w.Pool); err != nil {
				return nil, fmt.Errorf("--trace: %w", err)
			}
			break
		}
	}
	content, err := tracestudy.Content(path)
	if err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	out := studyOut(c, experiment)
	if c.Bool("jobs") {
		if dist.Cache != "" {
			return nil, fmt.Errorf("--jobs with --cache: a run taken from the cache has no per-job records; drop one of them")
		}
		st.JobsDir = filepath.Join(out, "jobs")
	}
	plan := tracestudy.NewPlan(experiment, fmt.Sprintf("%s\nfair sample %d seed %d", tracestudy.SharedInputs(tracestudy.Digest(content), opt, w),
		st.FairSample, trace.DefaultFairSeed), st)
	dist.Out = out
	{
		stderr := sweepStderr(c)
		dist.Progress = func(n int) (func(done, total int), func(error)) {
			fmt.Fprintf(stderr, "%s: %d runs on %s (%d jobs, pool %d), %d window(s), %d workers\n", experiment, n, w.Name, len(w.Jobs), w.Pool, len(st.Windows), workers)
			return func(done, total int) { fmt.Fprintf(stderr, "  %d/%d runs done\n", done, total) }, nil
		}
	}
	report := func(rs []tracestudy.Result, merged bool) error {
		sum := tracestudy.Summary{Experiment: experiment, Trace: tracestudy.Info(w, name, opt.From, opt.Until), Study: st,
			Warmup: warmup, Cooldown: cooldown, Runs: rs}
		// The replays' records are garbage by now: collecting them before the
		// figure lets its canvas (12 MB for fig_trace's PNG) reuse their
		// memory instead of faulting in fresh pages, which cost more CPU than
		// this collection (docs/traces.md, "trace --policy fifo against a
		// plain Python FCFS + EASY").
		runtime.GC()
		files, err := tracestudy.Write(out, sum, format)
		if err != nil {
			return err
		}
		stdout := sweepStdout(c)
		if err := printTableFile(stdout, out, func(w io.Writer) error { return tracestudy.PrintTable(w, sum) }); err != nil {
			return err
		}
		files = append(files, studyTableFile)
		if tw := w.Skipped.TooWide; tw > 0 {
			fmt.Fprintf(stdout, "%d of %d jobs dropped: wider than the pool of %d GPUs (summary.json trace.skipped.too_wide)\n", tw, w.Records, w.Pool)
		}
		m := newManifest(c.Command.Name, start)
		m.Inputs = append(m.Inputs, manifest.NewInput("trace", name, embeddedTrace(path), content))
		m.Workers = workers
		if err := m.Write(out, start, files); err != nil {
			return err
		}
		jobs := ""
		switch {
		case st.JobsDir != "" && merged:
			// The shards replayed, so they wrote the records, each into its
			// own --out.
			jobs = " (the per-job records are in jobs/ of the folders the shards ran in)"
		case st.JobsDir != "":
			jobs = fmt.Sprintf(", jobs/ (%d replays' per-job records)", st.Runs())
		}
		fmt.Fprintf(stdout, "%s: %d runs; wrote %s, manifest.json%s into %s\n", experiment, st.Runs(),
			strings.Join(files, ", "), jobs, out)
		return nil
	}
	return &sweep.Study[tracestudy.Result]{Plan: plan, Compute: st.Run, Codec: tracestudy.Codec, Write: report}, nil
}
