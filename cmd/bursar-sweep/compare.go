package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/policy/registry"
	"github.com/bursar-hpc/bursar/tracestudy"

	"github.com/bursar-hpc/bursar/sweep"
	"github.com/urfave/cli/v2"
)

// compareExperiment is the embedded config of `compare` (configs/compare.yaml).
const compareExperiment = sweep.CompareExperiment

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
			"knobs, a scenario file, or a policy's knobs: policy: {name: quota, borrowing_limit: 64}).\n" +
			"--platform FILE (or the config's platform: key) schedules every policy on nodes\n" +
			"(docs/platform.md); its GPUs are the pool (the scenario's guarantees need 176 or more).\n\n" +
			"Seeds: --seeds LIST or --nseeds N (the first N of 7, 11, 13, 17, …) replace the config's.\n\n" +
			"Examples:\n" +
			"   bursar-sweep compare                 # 7 policies × 30 seeds into results/compare\n" +
			"   bursar-sweep compare --quick         # 3 seeds, into results/compare-quick\n" +
			"   bursar-sweep compare --policies fifo,slurm  # these series only (slurm is not a default)\n" +
			"   bursar-sweep compare --cache ~/.cache/bursar --workers 2",
		Flags: append(sweepFlags(out, true, false), platformFlag(),
			&cli.StringFlag{Name: "policies", Usage: "run one series per policy of this comma-separated `LIST` (the config's series of that policy, else its defaults), any policy known by name, the optional ones (slurm) included", DefaultText: "the config's series"}),
	}, setup: func(c *cli.Context, d *sweep.Dist) (sweep.Job, error) {
		st, err := readSetup(c, d)
		if err != nil {
			return nil, err
		}
		cfg, err := loadConfig(c, c.String("config"), compareExperiment)
		if err != nil {
			return nil, err
		}
		if c.IsSet("platform") {
			if cfg.Platform, err = configs.ReadPlatform(c.String("platform")); err != nil {
				return nil, fmt.Errorf("--platform: %w", err)
			}
		}
		var names []string
		if c.IsSet("policies") {
			reg := appPolicies(c)
			if names, err = tracestudy.PolicyList(reg, c.String("policies")); err != nil {
				return nil, err
			}
			cfg.Series = policySeries(cfg.Series, names, reg.DefaultKnobs())
		}
		if !c.IsSet("out") {
			st.Out = sweep.VariantOut(st, compareExperiment, sweep.OwnSeeds(st, cfg), 0)
			if names != nil {
				st.Out += "-policies-" + strings.Join(names, "-")
			}
			if c.IsSet("platform") {
				st.Out += fmt.Sprintf("-platform-%dx%d", cfg.Platform.Nodes, cfg.Platform.GPUsPerNode)
			}
		}
		job, err := sweep.CompareJob(st, cfg)
		return sweepJob(c, d, st, job, err)
	},
	}
}

// policySeries is compare's series for --policies: per name, in order, the
// config's series of that policy (the first), else a series of its own at
// the policies' default knobs def.
func policySeries(series []configs.Series, names []string, def registry.Knobs) []configs.Series {
	out := make([]configs.Series, 0, len(names))
	for _, n := range names {
		i := slices.IndexFunc(series, func(s configs.Series) bool { return s.Policy != nil && s.Policy.Name == n })
		if i >= 0 {
			out = append(out, series[i])
			continue
		}
		out = append(out, configs.Series{Name: n, Policy: &configs.Policy{Name: n, Knobs: def}})
	}
	return out
}
