package main

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/figures"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/sweep"
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
			"its horizon. --windows N×D replays N disjoint windows of D days spread over the log, --windows D\n" +
			"min(12, ⌊span ÷ D⌋) of them (each estimate then gets a 95 % interval over windows, each policy a\n" +
			"paired difference from fifo, and the primary contrasts an exact signed-rank test with Holm's\n" +
			"adjustment); --warmup and --cooldown (1d each) are replayed, not measured, and so is a lead-in\n" +
			"before each of several windows (--lead-in auto by default: the machine already running at the\n" +
			"window's start, docs/studies.md §4.5; --lead-in none starts each window empty). Prints a table and writes\n" +
			"summary.json, runs.csv, fig_trace (the bounded-slowdown CDF over every job, the served /\n" +
			"denied / unfinished counts, mean wait, useful / lost / idle-while-waiting GPU time, and the\n" +
			"fairness measures), manifest.json and with --jobs every replay's per-job records\n" +
			"(docs/metrics.md, docs/traces.md). The default trace is the embedded 28-day SDSC-SP2\n" +
			"excerpt; --trace FILE reads any SWF log, plain or gzip. --slurm-conf FILE sets policy slurm's\n" +
			"knobs and the pool from a site's slurm.conf, --kueue FILE policy quota's from its Kueue\n" +
			"manifests (docs/site-config.md); without --policies they run fifo and the configured policies.\n" +
			"--platform FILE schedules every policy on nodes (docs/platform.md): its GPUs are the pool, a\n" +
			"job's processors become GPUs seated on nodes.\n" +
			studyDistHelp("trace"),
		Flags: append(append(append(traceFlags(tracestudy.DefaultOut["trace"], true), leadInDefault(mappingFlags(), "auto")...), siteFlags()...), platformFlag()),
	},
		setup:  traceSetup("trace"),
		outFor: tracestudy.OutFor("trace"),
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
			"on 14-day windows of the full SDSC-SP2 log, min(12, ⌊span ÷ 14 d⌋) of them (embedded; 12, 384 replays);\n" +
			"--windows N×D, --window or --trace choose others. Each estimate gets a 95 % interval over the\n" +
			"windows and each cell a paired difference from W = 7 d, m = 1 h, checkpoint:3600 (descriptive);\n" +
			"a primary family of cell against cell is tested exactly, Holm across it. Writes\n" +
			"summary.json, runs.csv, fig_budget_knobs (mean wait, lost work, preemptions and fairness\n" +
			"against W, one line per m, a column per restart, × on a cell that did not converge) and\n" +
			"manifest.json.\n" + studyDistHelp("budget-knobs"),
		Flags: budgetKnobsFlags(),
	},
		setup:  traceSetup("budget-knobs"),
		outFor: tracestudy.OutFor("budget-knobs"),
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

// studyDistHelp is the help text of a trace study's --config, --shard and
// --cache.
func studyDistHelp(command string) string {
	return "--config FILE reads a study config (configs/" + command + ".yaml is this command's defaults;\n" +
		"flags override it). --shard I/N, --cache DIR and `bursar-sweep merge` work as for the\n" +
		"sweeps (docs/cluster.md); slurm-script runs the study as a job array."
}

// budgetKnobsFlags are trace's flags without --policies, with
// budget-knobs' own defaults in their help.
func budgetKnobsFlags() []cli.Flag {
	flags := append(traceFlags(tracestudy.DefaultOut["budget-knobs"], false), mappingFlags()...)
	for _, f := range flags {
		switch f := f.(type) {
		case *cli.StringFlag:
			switch f.Name {
			case "trace":
				f.DefaultText = tracestudy.BudgetKnobsTrace + ", the full SDSC-SP2 log embedded in the binary"
			case "windows":
				f.DefaultText = tracestudy.BudgetKnobsWindows.String() + " (one window with --window)"
			case "restart":
				f.Usage = "only this restart rule after a preemption, `zero` or checkpoint:S"
				f.DefaultText = strings.Join(tracestudy.BudgetRestarts, " and ")
			}
		}
	}
	return flags
}

// traceSetup is the setup of trace or budget-knobs: the flags given laid
// over the study's config (tracestudy.FromConfig).
func traceSetup(experiment string) func(*cli.Context, *sweep.Dist) (sweep.Job, error) {
	return func(c *cli.Context, d *sweep.Dist) (sweep.Job, error) {
		env, err := studyEnv(c)
		if err != nil {
			return nil, err
		}
		return tracestudy.FromConfig(experiment, givenFlags(c), env, d)
	}
}

// leadInDefault is fs with the --lead-in flag's default shown as text
// (trace's is auto; the other studies' none).
func leadInDefault(fs []cli.Flag, text string) []cli.Flag {
	for _, f := range fs {
		if sf, ok := f.(*cli.StringFlag); ok && sf.Name == "lead-in" {
			sf.DefaultText = text
		}
	}
	return fs
}

// mappingFlags are the trace mapping and measurement flags of trace and
// budget-knobs (configs.TraceMapping; docs/traces.md).
func mappingFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "windows", Usage: "replay `N×D` disjoint windows of D days spread evenly over the log (e.g. 4x14d), or D alone (14d) for min(12, ⌊span ÷ D⌋) of them; every estimate gets a 95 % interval over them", DefaultText: "one window: the whole log or --window"},
		&cli.StringFlag{Name: "warmup", Usage: "`DURATION` of submits at a window's start replayed but not measured (1d, 12h, 3600)", DefaultText: "1d"},
		&cli.StringFlag{Name: "cooldown", Usage: "`DURATION` of submits at a window's end replayed but not measured", DefaultText: "1d"},
		&cli.StringFlag{Name: "by", Usage: "a campaign is one `user` or one group (user|group)", DefaultText: "user"},
		&cli.StringFlag{Name: "classes", Usage: "queue → class overrides, `QUEUE=CLASS,…` (classes interactive, agent-burst, opportunistic)"},
		&cli.StringFlag{Name: "shares", Usage: "entitlement `RULE`: " + strings.Join(configs.ShareRules, ", ") + " (groups and window read the log after a window's start: oracles)", DefaultText: "lookback"},
		&cli.StringFlag{Name: "lead-in", Usage: "`DURATION` of the log replayed, unmeasured, before each of several windows (at most 90d), auto: the shortest that brings fifo's waits near the whole log's (docs/studies.md §4.5), or none", DefaultText: "none"},
		&cli.StringFlag{Name: "lookback", Usage: "`DURATION` of the log before a window that shares: lookback reads (entitlements, Bursar's buckets), at least 90d", DefaultText: "90d"},
		&cli.StringFlag{Name: "bucket", Usage: "Bursar's bucket on a trace: `largest-job` or hours:N"},
		&cli.StringFlag{Name: "meter", Usage: "what Bursar meters on a trace: each `group` (the account a site budgets) or each user", DefaultText: "group"},
		&cli.StringFlag{Name: "restart", Usage: "every policy's restart after a preemption: `zero` (the default on a log) or checkpoint:S"},
		&cli.IntFlag{Name: "fair-sample", Usage: "`N` measured jobs per window get a fair start time (docs/studies.md §4.4; 0: none)", Value: trace.DefaultFairSample},
		&cli.BoolFlag{Name: "jobs", Usage: "also write every replay's per-job records, jobs/<policy>-w<window>/jobs.parquet and jobs.csv"},
	}
}

// siteFlags are trace's flags that read a site's own configuration
// (tracestudy.ReadSite; docs/site-config.md).
func siteFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "slurm-conf", Usage: "a site's slurm.conf `FILE`: policy slurm's knobs and the pool (its default partition's GPUs); without --policies runs fifo and slurm"},
		&cli.StringFlag{Name: "sshare", Usage: "an `sshare -P -a` dump `FILE` (with --slurm-conf): its account tree's shares are slurm's entitlements (docs/site-config.md)"},
		&cli.StringFlag{Name: "kueue", Usage: "a site's Kueue manifests `FILE` (YAML): policy quota's knobs and the pool (the ClusterQueues' GPU quota); without --policies runs fifo and quota"},
	}
}

// platformFlag is --platform FILE, the machine's nodes (docs/platform.md)
// for trace and compare.
func platformFlag() cli.Flag {
	return &cli.StringFlag{Name: "platform", Usage: "schedule every policy on the nodes of this platform `FILE` (platform: {nodes: N, gpus_per_node: G}; docs/platform.md); its GPUs are the pool", DefaultText: "none: the pool is a number"}
}
