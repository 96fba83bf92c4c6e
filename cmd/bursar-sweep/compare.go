package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/internal/atomicfile"
	"github.com/bursar-hpc/bursar/sweep"
	"github.com/urfave/cli/v2"
)

// compareExperiment is the embedded config of `compare` (configs/compare.yaml).
const compareExperiment = "compare"

func compareCommand() study {
	out := filepath.Join("results", compareExperiment)
	return study{Command: &cli.Command{
		Name:  compareExperiment,
		Usage: "run the paper's agent scenario under Bursar and the six baseline policies, side by side",
		Description: "What Bursar buys (docs/studies.md §5; docs/policies.md). Runs the paper's\n" +
			"agent scenario under every admission policy — bursar, fifo, priority, static, fairshare,\n" +
			"quota, budget, each at its documented defaults — at 30 seeds (--quick: 3), on the same\n" +
			"worker pool as the paper's commands, and prints a table: per policy, the mean over seeds\n" +
			"and its 95 % t interval of the headline metrics (the victim's in-storm p95 and violations\n" +
			"with unserved requests at their censored latency, the storm's GPU-seconds above R,\n" +
			"utilization, adaptive and naive science per credit, Jain's index of usage ÷ share,\n" +
			"preemptions and preempted GPU-seconds; docs/metrics.md). Writes into --out (default\n" +
			out + "): summary.json (per policy: n and every metric's band with its interval),\n" +
			"runs.csv (one row per run, with a policy column), latencies.json, table.txt (the printed\n" +
			"table), manifest.json and\n" +
			"fig_policies.png (or --format svg|pdf): one panel per headline metric, the policies\n" +
			"along the axis. --config FILE replaces the embedded configs/compare.yaml (e.g. other\n" +
			"knobs, a scenario file, or a policy's knobs: policy: {name: quota, borrowing_limit: 64}).\n\n" +
			"Seeds: --seeds LIST or --nseeds N (the first N of 7, 11, 13, 17, …) replace the config's.\n\n" +
			"Examples:\n" +
			"   bursar-sweep compare                 # 7 policies × 30 seeds into results/compare\n" +
			"   bursar-sweep compare --quick         # 3 seeds, into results/compare-quick\n" +
			"   bursar-sweep compare --cache ~/.cache/bursar --workers 2",
		Flags: sweepFlags(out, true, false),
	}, setup: func(c *cli.Context, d *sweep.Dist) (sweep.Job, error) {
		st, err := readSetup(c, d)
		if err != nil {
			return nil, err
		}
		cfg, err := loadConfig(c.String("config"), compareExperiment)
		if err != nil {
			return nil, err
		}
		if !c.IsSet("out") {
			st.out = variantOutFor(c, st, compareExperiment, cfg)
		}
		plan, err := cfg.Plan(st.quick, st.seeds)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		return sweepJob(c, st, compareExperiment, []*configs.Plan{plan}, func(results []*sweep.Results) error {
			return reportCompare(c, st, cfg, plan, results, start)
		})
	},
	}
}

// reportCompare reduces and writes the comparison.
func reportCompare(c *cli.Context, st *sweepSetup, cfg *configs.Config, plan *configs.Plan, results []*sweep.Results, start time.Time) error {
	elapsed := time.Since(start)
	if err := sweep.WriteData(st.out, results, sweep.GenericSummary(results[0])); err != nil {
		return err
	}
	w := sweepStdout(c)
	// The printed table is also the folder's table.txt.
	var table bytes.Buffer
	if err := sweep.WriteCompareTable(&table, results[0]); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(st.out, compareTableFile), table.Bytes()); err != nil {
		return err
	}
	if _, err := w.Write(table.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %d policies × %d seeds = %d runs in %.1f s; wrote %s, %s, %s and %s into %s\n",
		compareExperiment, len(plan.Points), len(plan.Seeds), plan.NumRuns(), elapsed.Seconds(),
		sweep.SummaryFile, sweep.RunsFile, sweep.LatenciesFile, compareTableFile, st.out)
	figErr := sweep.WritePoliciesFigure(st.out, st.format, results[0])
	files := []string{sweep.RunsFile, sweep.LatenciesFile, sweep.SummaryFile, compareTableFile}
	if figErr == nil {
		files = append(files, sweep.PoliciesFigureFile(st.format))
	}
	if err := writeSweepManifest(c, st, []*configs.Config{cfg}, []*configs.Plan{plan}, start, files); err != nil {
		return err
	}
	if figErr != nil {
		return fmt.Errorf("the data files are in %s, but drawing failed: %w", st.out, figErr)
	}
	fmt.Fprintf(w, "%s: drew %s into %s\n", compareExperiment, sweep.PoliciesFigureFile(st.format), st.out)
	return nil
}

// compareTableFile is the printed comparison table, kept in the folder.
const compareTableFile = "table.txt"

// variantOutFor is variantOut for a config with seeds of its own (the
// comparison's 30): the output folder is results/<label> for the
// config's own run, and names the variant otherwise (quick, other seeds,
// another config), so that only the committed run writes results/compare.
func variantOutFor(c *cli.Context, st *sweepSetup, label string, cfg *configs.Config) string {
	list := cfg.Seeds.Full
	if st.quick {
		list = cfg.Seeds.Quick
	}
	own := make([]int64, len(list))
	for i, v := range list {
		own[i] = int64(v.V)
	}
	var parts []string
	if st.quick {
		parts = append(parts, "quick")
	}
	if st.seeds != nil && !slices.Equal(st.seeds, own) {
		if c.IsSet("nseeds") {
			parts = append(parts, "nseeds"+strconv.Itoa(len(st.seeds)))
		} else {
			parts = append(parts, fmt.Sprintf("seeds%d-%s", len(st.seeds), seedsDigest(st.seeds)))
		}
	}
	for _, path := range configFlagPaths(c) {
		parts = append(parts, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	}
	if len(parts) == 0 {
		return filepath.Join("results", label)
	}
	return filepath.Join("results", label+"-"+strings.Join(parts, "-"))
}
