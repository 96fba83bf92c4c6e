package main

import (
	"runtime"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/bursar-hpc/bursar/figures"
	"github.com/bursar-hpc/bursar/story"
	"github.com/bursar-hpc/bursar/sweep"
)

func storyStudy() study {
	st := story.NewStudy()
	flags := []cli.Flag{
		&cli.StringFlag{Name: "out", Usage: "output `FOLDER`", Value: story.DefaultOut,
			DefaultText: story.DefaultOut + " (results/story-quick with --quick alone; results/story-custom-<digest> with other --days, --seeds, --nseeds, --policies or --sensitivity-seeds)"},
		&cli.BoolFlag{Name: "quick", Usage: "28 days, seeds 1 and 2, no sensitivity runs: a few seconds"},
		&cli.IntFlag{Name: "days", Usage: "`DAYS` of submits (the horizon)", DefaultText: strconv.Itoa(st.Lab.Days)},
		&cli.StringFlag{Name: "seeds", Usage: "seeds, a comma-separated `LIST`: each draws the lab's jobs, the seasons' phases and the users' review times", DefaultText: "1,2,3,4,5"},
		&cli.IntFlag{Name: "nseeds", Usage: "the seeds 1 … `N`"},
		&cli.IntFlag{Name: "sensitivity-seeds", Usage: "the sensitivity populations (ν_l and ν_w at ¼ and 4 × their defaults) run on the first `N` seeds; 0: none", DefaultText: strconv.Itoa(st.SensitiveSeeds)},
		&cli.StringFlag{Name: "policies", Usage: "comma-separated `LIST` of policies", DefaultText: strings.Join(story.DefaultPolicies, ",")},
		&cli.BoolFlag{Name: "jobs", Usage: "also write every run's per-job records, jobs/<policy>-<users>-s<seed>/jobs.csv"},
		&cli.IntFlag{Name: "workers", Usage: "`N` runs at once", Value: runtime.NumCPU(), DefaultText: "one per CPU, " + strconv.Itoa(runtime.NumCPU()) + " here"},
		&cli.StringFlag{Name: "format", Usage: "figure `FORMAT`: png, svg or pdf", Value: string(figures.PNG)},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress on stderr"},
	}
	flags = append(flags, distFlags()...)
	return study{Command: &cli.Command{
		Name:  "story",
		Usage: "the AI lab's story: priority, static ownership, budgets with fair share and a contract, and Bursar, with honest and strategic users",
		Description: "docs/story.md: a lab of 4 teams and 6 projects (A1 35 %, A2 10 %, B1 10 %, B2 20 %, C1 15 %, D1 10 %) on\n" +
			"128 GPUs submits training, debug and evaluation jobs with seasonal demand for 90 days. Each\n" +
			"policy — the lab's three regimes, priority, static (ownership) and budget at its defaults (7-day\n" +
			"window, minimum-runtime contract), then bursar, and fifo as the reference — replays it with\n" +
			"honest users (every job its own class, nothing parked) and with strategic users, who raise their\n" +
			"jobs to the top tier while that shortens their waits by more than the policy charges for it, and\n" +
			"park a no-op job on 8 GPUs to debug at once while the latency saved is worth more than the parked\n" +
			"GPU-hours' charge. Sensitivity populations move the value of latency and of wait. Writes\n" +
			"summary.json (intervals over seeds), runs.csv, fig_story, table.txt, manifest.json and with\n" +
			"--jobs the per-job records. --shard I/N, --cache DIR and `bursar-sweep merge` work as for the\n" +
			"other studies.",
		Flags: flags,
	}, setup: setupStory, outFor: func(args []string) string {
		f := sweep.Flags{}
		for _, a := range args {
			name, v, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if !ok {
				v = "true"
			}
			f[name] = v
		}
		return story.OutFor(f)
	}}
}

// setupStory is story's setup: the flags given laid over the study's
// defaults (story.FromConfig).
func setupStory(c *cli.Context, d *sweep.Dist) (sweep.Job, error) {
	env, err := studyEnv(c)
	if err != nil {
		return nil, err
	}
	return story.FromConfig(givenFlags(c), env, d)
}
