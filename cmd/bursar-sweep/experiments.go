package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/figures"
	"github.com/bursar-hpc/bursar/sweep"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// paperExperiments are the paper's three experiments, in --help order.
func paperExperiments() []study {
	return []study{
		paperExperimentCommand(sweep.LatencyPrice,
			"sweep backfill headroom and preemption grace against the probe's time to 128 GPUs",
			"What buys low latency (docs/model.md §11). With the probe on, sweeps the backfill\n"+
				"headroom over 16…256 GPUs and the preemption grace over 15…120 s, each at every seed,\n"+
				"and reduces: mean pool utilization (with its band over seeds) and the pooled p50 and\n"+
				"p95 of the probe's time to 128 GPUs outside the storm window. Draws\n"+
				"fig_latency_price: latency is bought with the grace period, not with idle headroom."),
		paperExperimentCommand(sweep.Overbooking,
			"add storms until burst ceilings overbook the pool 7×; watch the guaranteed victim",
			"Overbooking vs isolation (docs/model.md §11). With the probe on, runs 1…6 storm\n"+
				"campaigns sharing the storm window, so the sum of burst ceilings over the pool,\n"+
				"φ = (64 + 2·384 + 384·storms + 512)/512, grows to 7.1. Reduces the victim's in-window\n"+
				"p95 and violations (> 60 s; means over seeds) and the probe's pooled in-window p50.\n"+
				"Draws fig_overbooking."),
		paperExperimentCommand(sweep.Bucket,
			"sweep the storm bucket B with prepaid leases and with grant-time-only enforcement",
			"Enforcement semantics (docs/model.md §11). With the probe off, sweeps the storm bucket\n"+
				"B over 25k…600k GPU-seconds in three series: contended (the full scenario, prepaid\n"+
				"leases), idle-prepaid (no science tasks) and idle-leaky (no tasks, tokens checked at\n"+
				"grant time only), and reduces the storm's excess GPU-seconds above R (mean over seeds).\n"+
				"Draws fig_bucket."),
	}
}

const seedsHelp = "Seeds: --seeds 7,11,13 runs exactly those; --nseeds N runs the first N of the sequence\n" +
	"7, 11, 13, 17, 19, 23, … (the published seeds, then the following primes), so --nseeds 3\n" +
	"is the paper and --nseeds 1 is seed 7. Without either, the config's seeds (7, 11, 13;\n" +
	"--quick: 7)."

func sweepFlags(defaultOut string, figure, multiConfig bool) []cli.Flag {
	flags := []cli.Flag{
		&cli.BoolFlag{Name: "quick", Usage: "run the config's quick variant (seed 7, fewer grid points)"},
		&cli.StringFlag{Name: "seeds", Usage: "run these seeds at every grid point, a comma-separated `LIST` such as 7,11,13", DefaultText: "the config's"},
		&cli.IntFlag{Name: "nseeds", Usage: "run the first `N` seeds of 7, 11, 13, 17, 19, 23, …", DefaultText: "the config's"},
		&cli.IntFlag{Name: "workers", Usage: "`N` runs at once", Value: runtime.NumCPU(), DefaultText: fmt.Sprintf("one per CPU, %d here", runtime.NumCPU())},
		&cli.StringFlag{Name: "out", Usage: "output `FOLDER`", Value: defaultOut, DefaultText: outDefault(defaultOut)},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress on stderr"},
	}
	flags = append(flags, distFlags()...)
	if figure {
		flags = append(flags, &cli.StringFlag{Name: "format", Usage: "figure `FORMAT`: png, svg or pdf", Value: string(figures.PNG)})
	}
	switch {
	case multiConfig:
		flags = append(flags, &cli.StringSliceFlag{Name: "config", Usage: "experiment config `FILE` replacing the embedded one of the same experiment (repeatable)"})
	case figure:
		flags = append(flags, &cli.StringFlag{Name: "config", Usage: "experiment config `FILE` instead of the embedded one"})
	default:
		flags = append(flags, &cli.StringFlag{Name: "config", Usage: "experiment config `FILE` (required)"})
	}
	return flags
}

// outDefault documents the default of --out, which for sweep depends on
// the config.
func outDefault(def string) string {
	if def == "" {
		return "results/<experiment>"
	}
	return def + "; " + def + "-<variant> with --quick, other seeds or --config"
}

// readSetup reads the shared sweep flags; d is what readDist read.
func readSetup(c *cli.Context, d *sweep.Dist) (*sweep.Setup, error) {
	env, err := studyEnv(c)
	if err != nil {
		return nil, err
	}
	st := &sweep.Setup{Env: env, Quick: c.Bool("quick"), Workers: d.Workers, Out: c.String("out"), Given: configFlagPaths(c)}
	switch {
	case c.IsSet("seeds") && c.IsSet("nseeds"):
		return nil, fmt.Errorf("give --seeds or --nseeds, not both")
	case c.IsSet("seeds"):
		seeds, err := configs.ParseSeeds(c.String("seeds"))
		if err != nil {
			return nil, err
		}
		st.Seeds = seeds
	case c.IsSet("nseeds"):
		seeds, err := configs.SeedSequence(c.Int("nseeds"))
		if err != nil {
			return nil, err
		}
		st.Seeds, st.SeedsByCount = seeds, true
	}
	return st, nil
}

func sweepStdout(c *cli.Context) io.Writer {
	if c.App.Writer != nil {
		return c.App.Writer
	}
	return os.Stdout
}

func sweepStderr(c *cli.Context) io.Writer {
	if c.App.ErrWriter != nil {
		return c.App.ErrWriter
	}
	return os.Stderr
}

// sweepJob sends a sweep's job's shard to st.Out and draws its progress
// as a bar on stderr.
func sweepJob(c *cli.Context, d *sweep.Dist, st *sweep.Setup, job *sweep.SweepJob, err error) (sweep.Job, error) {
	if err != nil {
		return nil, err
	}
	for _, w := range sweep.PlanWarnings(job.Plans) {
		fmt.Fprintf(sweepStderr(c), "bursar-sweep: warning: %s\n", w)
	}
	d.Out = st.Out
	d.Progress = func(n int) (func(done, total int), func(error)) {
		w := sweepStderr(c)
		f, isFile := w.(*os.File)
		pr := sweep.NewProgress(w, isFile && term.IsTerminal(int(f.Fd())), job.Name, n)
		return pr.Update, func(err error) {
			if err != nil {
				pr.Abandon()
			} else {
				pr.Finish()
			}
		}
	}
	return job, nil
}

// paperJob is the job of paper experiments (sweep.PaperJob), into
// variantOut's folder without --out.
func paperJob(c *cli.Context, d *sweep.Dist, st *sweep.Setup, label string, cfgs []*configs.Config) (sweep.Job, error) {
	if !c.IsSet("out") {
		st.Out = sweep.VariantOut(st, label, sweep.PublishedSeeds, 6)
	}
	job, err := sweep.PaperJob(st, label, cfgs)
	return sweepJob(c, d, st, job, err)
}

// loadConfig reads --config or the embedded config of experiment.
func loadConfig(c *cli.Context, path, experiment string) (*configs.Config, error) {
	if path == "" {
		return configReader(c).Default(experiment)
	}
	return configReader(c).Load(path)
}

func paperExperimentCommand(experiment, usage, description string) study {
	out := filepath.Join("results", experiment)
	return study{Command: &cli.Command{
		Name:  experiment,
		Usage: usage,
		Description: description + "\n\n" +
			"Writes into --out (default " + out + "): " + sweep.FigureFile(experiment, figures.PNG) + " (or --format svg|pdf),\n" +
			"summary.json, runs.csv (one row per run) and latencies.json (the probe's raw latencies).\n" +
			"The data files are written even if the figure fails. --config FILE replaces the\n" +
			"embedded configs/" + experiment + ".yaml (same experiment and series; values, fixed knobs and\n" +
			"seeds may change).\n\n" + seedsHelp + "\n\n" +
			"Examples:\n" +
			"   bursar-sweep " + experiment + "                     # the paper's grid, seeds 7, 11, 13\n" +
			"   bursar-sweep " + experiment + " --quick --format svg # a quick look, seed 7\n" +
			"   bursar-sweep " + experiment + " --nseeds 10 --out /tmp/" + experiment,
		Flags: sweepFlags(out, true, false),
	}, setup: func(c *cli.Context, d *sweep.Dist) (sweep.Job, error) {
		st, err := readSetup(c, d)
		if err != nil {
			return nil, err
		}
		cfg, err := loadConfig(c, c.String("config"), experiment)
		if err != nil {
			return nil, err
		}
		if cfg.Experiment != experiment {
			return nil, fmt.Errorf("%s is the config of experiment %q, not %q (bursar-sweep sweep --config %s runs any grid)", cfg.File, cfg.Experiment, experiment, cfg.File)
		}
		return paperJob(c, d, st, experiment, []*configs.Config{cfg})
	},
	}
}

func paperCommand() study {
	out := filepath.Join("results", "paper")
	return study{Command: &cli.Command{
		Name:  "paper",
		Usage: "run the three paper experiments into one folder and print their summary tables",
		Description: "Runs latency-price, overbooking and bucket (105 runs on seeds 7, 11, 13; 18 with\n" +
			"--quick) on one pool of workers, prints the four summary tables (headroom, grace,\n" +
			"overbooking, bucket) and writes into --out (default " + out + "): the three figures\n" +
			"(fig_latency_price, fig_overbooking, fig_bucket; PNG unless --format), one summary.json\n" +
			"with the keys headroom, grace, overbooking and bucket, one runs.csv and one\n" +
			"latencies.json holding every run. The data files are written even if a figure fails.\n" +
			"--config FILE (repeatable) replaces the embedded config of FILE's experiment.\n\n" +
			seedsHelp + "\n\n" +
			"Examples:\n" +
			"   bursar-sweep paper                  # reproduce the paper into results/paper\n" +
			"   bursar-sweep paper --quick --quiet  # 18 runs, no progress\n" +
			"   bursar-sweep paper --config my-bucket.yaml --out /tmp/paper",
		Flags: sweepFlags(out, true, true),
	}, setup: func(c *cli.Context, d *sweep.Dist) (sweep.Job, error) {
		st, err := readSetup(c, d)
		if err != nil {
			return nil, err
		}
		byName := map[string]*configs.Config{}
		for _, path := range c.StringSlice("config") {
			cfg, err := configReader(c).Load(path)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(configs.Experiments, cfg.Experiment) {
				return nil, fmt.Errorf("%s is the config of experiment %q; paper runs %s (bursar-sweep sweep --config %s runs any grid)", path, cfg.Experiment, strings.Join(configs.Experiments, ", "), path)
			}
			if prev, dup := byName[cfg.Experiment]; dup {
				return nil, fmt.Errorf("--config: %s and %s are both experiment %q", prev.File, path, cfg.Experiment)
			}
			byName[cfg.Experiment] = cfg
		}
		var cfgs []*configs.Config
		for _, name := range configs.Experiments {
			cfg := byName[name]
			if cfg == nil {
				if cfg, err = configReader(c).Default(name); err != nil {
					return nil, err
				}
			}
			cfgs = append(cfgs, cfg)
		}
		return paperJob(c, d, st, "paper", cfgs)
	},
	}
}

// sweepExample is the config --help shows (a test checks that it parses).
const sweepExample = `experiment: storm-rate
seeds: {full: [7, 11, 13], quick: [7]}
fixed: {probe: true}
grid:
  storm_rate: [32, 64, 128]
  grace: {full: [30, 60, 90], quick: [60]}
series:
  - name: prepaid
  - name: leaky
    fixed: {leaky: true}
`

func indentLines(text, prefix string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

func gridCommand() study {
	return study{Command: &cli.Command{
		Name:  "sweep",
		Usage: "run any grid of scenario knobs from a YAML config (data, summary, table and figure)",
		Description: "Runs the grid of a config file: every combination of its grid values, for every\n" +
			"series, at every seed. Any scenario knob (see `bursar-sweep run --help`; in the file\n" +
			"they are spelt with underscores, e.g. storm_bucket) can be fixed or swept. The file is\n" +
			"checked strictly before anything runs: an unknown key or knob, a value of the wrong\n" +
			"type or out of range is an error naming the file, the line and the key.\n\n" +
			"Writes into --out (default results/<experiment>): runs.csv (one row per run),\n" +
			"latencies.json (the probe's raw latencies), summary.json (per grid point: n and band\n" +
			"{mean, min, max, lo, hi} over seeds of every scalar metric, lo–hi its 95 % t interval,\n" +
			"and the pooled probe percentiles with 95 % bootstrap intervals) and fig_sweep.png\n" +
			"(or --format svg|pdf): every metric against the first swept knob, one line per series\n" +
			"and combination of the other swept knobs, with the intervals. Prints the same as tables.\n" +
			"The config format is documented in configs/doc.go; configs/*.yaml are examples:\n\n" +
			indentLines(sweepExample, "   ") + "\n" +
			seedsHelp + "\n\n" +
			"Examples:\n" +
			"   bursar-sweep sweep --config storm-rate.yaml\n" +
			"   bursar-sweep sweep --config storm-rate.yaml --quick --workers 2 --out /tmp/sr",
		Flags: append(sweepFlags("", false, false), &cli.StringFlag{Name: "format", Usage: "figure `FORMAT`: png, svg or pdf", Value: string(figures.PNG)}),
	}, setup: func(c *cli.Context, d *sweep.Dist) (sweep.Job, error) {
		st, err := readSetup(c, d)
		if err != nil {
			return nil, err
		}
		path := c.String("config")
		if path == "" {
			return nil, fmt.Errorf("sweep needs --config FILE (see bursar-sweep sweep --help for the format)")
		}
		cfg, err := configReader(c).Load(path)
		if err != nil {
			return nil, err
		}
		if st.Out == "" {
			// The folder is named after the config's experiment.
			st.Out = sweep.GridOut(cfg.Experiment)
		}
		job, err := sweep.GridJob(st, cfg)
		return sweepJob(c, d, st, job, err)
	},
	}
}
