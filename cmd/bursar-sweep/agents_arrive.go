package main

import (
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/bursar-hpc/bursar/arrive"
	"github.com/bursar-hpc/bursar/sweep"
	"github.com/bursar-hpc/bursar/tracestudy"
)

func arriveStudy() study {
	var flags []cli.Flag
	for _, f := range append(traceFlags(tracestudy.DefaultOut["agents-arrive"], true), mappingFlags()...) {
		switch sf := f.(type) {
		case *cli.StringFlag:
			switch sf.Name {
			case "trace":
				sf.DefaultText = "sdsc-sp2, the full SDSC-SP2 log embedded in the binary"
			case "windows":
				sf.DefaultText = arrive.DefaultWindows + " (one window with --window)"
			case "policies":
				sf.DefaultText = strings.Join(arrive.DefaultPolicies, ",")
			}
		case *cli.IntFlag:
			if sf.Name == "fair-sample" {
				continue // no fair start times here
			}
		case *cli.BoolFlag:
			if sf.Name == "jobs" {
				sf.Usage = "also write every run's per-job records, jobs/<policy>-<mode>-k<K>-s<seed>-w<window>/jobs.parquet and jobs.csv"
			}
		}
		flags = append(flags, f)
	}
	flags = append(flags,
		&cli.IntFlag{Name: "max-k", Usage: "largest number `K` of agent campaigns", Value: arrive.DefaultMaxK},
		&cli.StringFlag{Name: "stay", Usage: "`DURATION` the agents act (2d, 12h, 3600), from a time after the warm-up drawn from the seed", DefaultText: "2d"},
		&cli.StringFlag{Name: "seeds", Usage: "seeds, a comma-separated `LIST` such as 1,2,3: each draws the agents' arrival and the science agents' tasks", DefaultText: "1"},
		&cli.IntFlag{Name: "nseeds", Usage: "the seeds 1 … `N`", DefaultText: strconv.Itoa(arrive.DefaultSeeds)},
		&cli.Float64Flag{Name: "agent-scale", Usage: "`X`: the agents' GPU quantities are the paper's × pool/512 × X", Value: arrive.DefaultAgentScale},
		&cli.Float64Flag{Name: "agent-phi", Usage: "`PHI`: the agents' envelopes, Σ max(R, g), as a multiple of their entitlement agent-share × pool (R and g scaled by one factor)", Value: arrive.DefaultAgentPhi},
		&cli.Float64Flag{Name: "agent-share", Usage: "`FRACTION` of the pool the agents' group is entitled to, split equally among them; the users keep the rest", Value: arrive.DefaultAgentShare},
	)
	return study{Command: &cli.Command{
		Name:  "agents-arrive",
		Usage: "k = 0…8 agent campaigns arrive on a trace: are the site's users protected with Bursar in front of its policy?",
		Description: "docs/studies.md §3.3, §5, §6.14: the paper's storm, naive-sci and adaptive-sci (in that order,\n" +
			"cycling), their GPU quantities scaled by pool/512 × --agent-scale, arrive on a replay of each\n" +
			"window after its warm-up (at a time drawn from the seed) and act for --stay. For every site policy\n" +
			"(fifo, priority, static, fairshare, quota, budget) the agents either submit to it unmetered, or\n" +
			"each request first passes Bursar's cap and token checks for the agent's envelope (metered); the\n" +
			"site's users are never metered. bursar is one more line: Bursar as the whole site policy, users\n" +
			"metered too. The agents form one group entitled to --agent-share of the pool; the users'\n" +
			"entitlements are scaled to the rest. k = 0 is one run per window. The users' metrics are\n" +
			"measured over each window less its warm-up and cool-down, and over the jobs submitted during\n" +
			"the stay; each point is the mean over windows of the per-window mean over seeds, with a 95 % t\n" +
			"interval over windows; each contrast an exact signed-rank p over windows, Holm-adjusted in the\n" +
			"primary family and Benjamini–Hochberg-adjusted otherwise, with a Hodges–Lehmann interval. Writes summary.json, runs.csv, agents.csv, fig_agents_arrive,\n" +
			"manifest.json and with --jobs every run's per-job records (docs/metrics.md). The default log is\n" +
			"the full SDSC-SP2 log embedded in the binary (--trace sdsc-sp2), 7-day windows, min(12, ⌊span ÷ 7 d⌋)\n" +
			"of them (12), one seed each; --trace\n" +
			"FILE reads any SWF log, plain or gzip.\n" + studyDistHelp("agents-arrive"),
		Flags: flags,
	}, setup: setupAgentsArrive, outFor: tracestudy.OutFor("agents-arrive")}
}

// setupAgentsArrive is agents-arrive's setup: the flags given laid over
// the study's config (arrive.FromConfig).
func setupAgentsArrive(c *cli.Context, d *sweep.Dist) (sweep.Job, error) {
	env, err := studyEnv(c)
	if err != nil {
		return nil, err
	}
	return arrive.FromConfig(givenFlags(c), env, d)
}
