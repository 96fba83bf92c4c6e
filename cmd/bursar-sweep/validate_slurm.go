package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/bursar-hpc/bursar/internal/interrupt"
	"github.com/bursar-hpc/bursar/slurmcheck"
	"github.com/urfave/cli/v2"
)

// validateSlurmCommand is `validate-slurm`: a log through a real
// slurmctld and through policy slurm, from the same settings
// (slurmcheck, docs/validate-slurm.md). It is no study of the runner: its
// replays run in real time on one cluster, and cannot be sharded.
func validateSlurmCommand() *cli.Command {
	return &cli.Command{
		Name:  "validate-slurm",
		Usage: "replay a short log through a real slurmctld and through the simulated slurm policy, and measure how close they are",
		Description: "Draws a log (--jobs jobs on --nodes one-CPU nodes at offered load --load, run times\n" +
			"log-uniform in [--run-min, --run-max] log seconds, divided by --scale log seconds per real\n" +
			"second; limits rounded up to whole minutes), replays it --runs times in real time through\n" +
			"slurmctld on the cluster of scripts/slurm-local.sh (root; Debian's slurmctld slurmd\n" +
			"slurm-client munge), and simulates each replay under policy slurm and fifo (FCFS + EASY)\n" +
			"from Slurm's own submit and run times, with the same scheduler settings. Prints per-job\n" +
			"start-time errors and Kendall's τ-b for each, and Slurm's run-to-run spread; writes\n" +
			"summary.json, jobs.csv, slurm-scheduler.conf and manifest.json into --out.\n" +
			"docs/validate-slurm.md has the figures and what they mean.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Value: "validate-slurm", Usage: "the outputs' folder"},
			&cli.IntFlag{Name: "jobs", Value: 30, Usage: "jobs in the log"},
			&cli.IntFlag{Name: "nodes", Value: 8, Usage: "one-CPU nodes (each a GPU's stand-in)"},
			&cli.Float64Flag{Name: "load", Value: 0.9, Usage: "offered load of the log"},
			&cli.Float64Flag{Name: "scale", Value: 60, Usage: "log seconds per real second (60: a log hour is a real minute)"},
			&cli.Float64Flag{Name: "run-min", Value: 180, Usage: "shortest run, log seconds"},
			&cli.Float64Flag{Name: "run-max", Value: 900, Usage: "longest run, log seconds"},
			&cli.Float64Flag{Name: "overask", Value: 0.2, Usage: "fraction of jobs whose limit is 3–10× their run (else 1.2–3×)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "the log's seed"},
			&cli.IntFlag{Name: "runs", Value: 3, Usage: "real replays (at least 2: the spread)"},
			&cli.IntFlag{Name: "parallel", Value: 1, Usage: "real replays at once, each on its own cluster and ports (faster; loads the machine more)"},
			&cli.StringFlag{Name: "slurm-conf", Usage: "slurm.conf lines that set the scheduler (SchedulerParameters, Priority*, …; no nodes or partitions), given to slurmctld and read into policy slurm's knobs (siteconf/slurmconf); default: the --bf-* settings with every interval 1 s"},
			&cli.IntFlag{Name: "bf-resolution", Value: 1, Usage: "bf_resolution in seconds, on both sides"},
			&cli.IntFlag{Name: "bf-window", Value: 1440, Usage: "bf_window in minutes (at least the replay's horizon)"},
			&cli.IntFlag{Name: "bf-max-job-test", Value: 0, Usage: "bf_max_job_test and default_queue_depth (0: the job count)"},
			&cli.StringFlag{Name: "script", Value: filepath.Join("scripts", "slurm-local.sh"), Usage: "the cluster's start/stop script"},
			&cli.StringFlag{Name: "state-dir", Value: filepath.Join(os.TempDir(), "bursar-validate-slurm"), Usage: "the clusters' state (a fresh folder per replay)"},
			&cli.IntFlag{Name: "ctld-port", Value: 7817, Usage: "slurmctld's port"},
			&cli.IntFlag{Name: "slurmd-port", Value: 7818, Usage: "the first slurmd's port (one per node from there)"},
			&cli.IntFlag{Name: "nice", Value: -10, Usage: "the daemons' niceness (SLURM_NICE)"},
			&cli.StringFlag{Name: "from-state", Usage: "measure again the real replays an earlier run with the same log and settings left in this --state-dir, without running Slurm (after a change of the simulator)"},
			&cli.BoolFlag{Name: "quiet", Usage: "no progress on stderr"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("validate-slurm takes no arguments, got %q", c.Args().Slice())
			}
			start := time.Now()
			jobs := c.Int("jobs")
			test := c.Int("bf-max-job-test")
			if test == 0 {
				test = max(jobs, 1)
			}
			script, err := filepath.Abs(c.String("script"))
			if err != nil {
				return err
			}
			cfg := slurmcheck.Config{
				Log: slurmcheck.LogSpec{Jobs: jobs, Nodes: c.Int("nodes"), Load: c.Float64("load"), Scale: c.Float64("scale"),
					RunMin: c.Float64("run-min"), RunMax: c.Float64("run-max"), Seed: c.Uint64("seed"), Overask: c.Float64("overask")},
				Settings: slurmcheck.Settings{Nodes: c.Int("nodes"), BfResolution: c.Int("bf-resolution"), BfWindow: c.Int("bf-window"), JobTest: test},
				Runs:     c.Int("runs"), Parallel: c.Int("parallel"),
				Cluster: slurmcheck.Cluster{Script: script, Dir: c.String("state-dir"),
					CtldPort: c.Int("ctld-port"), SlurmdPort: c.Int("slurmd-port"), Nice: c.Int("nice")},
			}
			if f := c.String("slurm-conf"); f != "" {
				text, err := os.ReadFile(f)
				if err != nil {
					return fmt.Errorf("--slurm-conf: %w", err)
				}
				cfg.Scheduler = slurmcheck.SchedulerConf{Name: f, Text: string(text)}
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			progress := sweepStderr(c)
			if c.Bool("quiet") {
				progress = io.Discard
			}
			var res *slurmcheck.Result
			if from := c.String("from-state"); from != "" {
				if res, err = slurmcheck.FromState(cfg, from); err != nil {
					return err
				}
			} else {
				if _, err := os.Stat(script); err != nil {
					return fmt.Errorf("--script: %w", err)
				}
				ctx, stop := interrupt.Context(c.Context)
				defer stop()
				if res, err = slurmcheck.Run(ctx, cfg, progress); err != nil {
					return err
				}
			}
			out := c.String("out")
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			if err := res.Write(out); err != nil {
				return err
			}
			res.Table(sweepStdout(c))
			m := newManifest(c.Command.Name, start)
			m.Seeds = append(m.Seeds, int64(cfg.Log.Seed))
			m.Workers = 1
			return m.Write(out, start, slurmcheck.Files)
		},
	}
}
