package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/bursar-hpc/bursar/arrive"
	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/figures"
	"github.com/bursar-hpc/bursar/internal/manifest"
	"github.com/bursar-hpc/bursar/sweep"
	"github.com/bursar-hpc/bursar/trace"
	"github.com/bursar-hpc/bursar/tracestudy"
)

// Defaults of agents-arrive: two days of the excerpt (days 252–254 of
// the SDSC-SP2 log), agents on the machine for its first six hours, three
// seeds, both modes.
const (
	arriveDefaultWindow = "21772800:21945600"
	arriveDefaultStay   = 6 * 3600
	arriveDefaultSeeds  = 3
	arriveMaxK          = 8
	// arriveMaxSeeds bounds --nseeds as the config bounds nseeds.
	arriveMaxSeeds = 1000
)

func arriveCommand() *cli.Command {
	flags := traceFlags("results/agents-arrive", true)
	for _, f := range flags {
		if sf, ok := f.(*cli.StringFlag); ok && sf.Name == "window" {
			sf.DefaultText = arriveDefaultWindow + " (days 252–254 of SDSC-SP2) on the excerpt; another --trace is replayed whole (322 runs of the full SDSC-SP2 log take tens of minutes: give a window)"
		}
	}
	flags = append(flags,
		&cli.IntFlag{Name: "max-k", Usage: "largest number `K` of agent campaigns", Value: arriveMaxK},
		&cli.IntFlag{Name: "stay", Usage: "`SECONDS` the agents act, from the window's start", Value: arriveDefaultStay},
		&cli.StringFlag{Name: "seeds", Usage: "task seeds where seeds matter (k ≥ 2), a comma-separated `LIST` such as 1,2,3", DefaultText: "1,2,3"},
		&cli.IntFlag{Name: "nseeds", Usage: "the task seeds 1 … `N`", DefaultText: strconv.Itoa(arriveDefaultSeeds)},
		&cli.StringFlag{Name: "modes", Usage: "comma-separated `LIST` of modes: site (agents submit to the site's policy as ordinary users), metered (Bursar's cap and token checks first)", Value: arrive.ModeSite + "," + arrive.ModeMetered},
		&cli.BoolFlag{Name: "metered", Usage: "only the metered mode (the same as --modes metered)"},
	)
	return &cli.Command{
		Name:  "agents-arrive",
		Usage: "k = 0…8 agent campaigns arrive on a trace: the trace users' mean bounded slowdown and p95 wait against k",
		Description: "docs/studies.md §3.3, §6.14: the paper's storm, naive-sci and adaptive-sci (in that order, cycling)\n" +
			"arrive on a trace replay, their GPU quantities scaled by pool/512, and act for --stay seconds;\n" +
			"per policy and mode, the trace users' mean bounded slowdown and p95 wait against k, with 95 %\n" +
			"intervals over task seeds. Writes summary.json, runs.csv, fig_agents_arrive and manifest.json.\n" +
			studyDistHelp("agents-arrive"),
		Flags:  flags,
		Action: runAgentsArrive,
	}
}

func runAgentsArrive(c *cli.Context) error {
	start := time.Now()
	if c.NArg() > 0 {
		return fmt.Errorf("agents-arrive takes no arguments, got %q (options are flags, e.g. --trace FILE)", c.Args().Slice())
	}
	workers := c.Int("workers")
	if workers < 1 {
		return fmt.Errorf("--workers must be at least 1, got %d", workers)
	}
	format, err := figures.ParseFormat(c.String("format"))
	if err != nil {
		return fmt.Errorf("--format: %w", err)
	}
	cfg, err := studyConfig(c, "agents-arrive")
	if err != nil {
		return err
	}
	var opt trace.Options
	switch {
	case c.IsSet("window"):
		if opt.From, opt.Until, err = parseWindow(c.String("window")); err != nil {
			return err
		}
	case cfg.Window != nil:
		opt.From, opt.Until = cfg.Window.From, cfg.Window.Until
	default:
		// Another trace than the excerpt is replayed whole.
		window := arriveDefaultWindow
		if p, _ := studyTrace(c, cfg); p != "" {
			window = "0:"
		}
		if opt.From, opt.Until, err = parseWindow(window); err != nil {
			return err
		}
	}
	if err := studyPool(c, cfg, &opt); err != nil {
		return err
	}
	names, err := studyPolicies(c, cfg)
	if err != nil {
		return err
	}
	maxK, stay := c.Int("max-k"), c.Int("stay")
	for _, v := range []struct {
		flag string
		cfg  *int
		dst  *int
	}{{"max-k", cfg.MaxK, &maxK}, {"stay", cfg.Stay, &stay}} {
		if !c.IsSet(v.flag) && v.cfg != nil {
			*v.dst = *v.cfg
		}
	}
	switch {
	case maxK < 0:
		return fmt.Errorf("--max-k must not be negative, got %d", maxK)
	case stay < 2:
		return fmt.Errorf("--stay must be at least 2 seconds, got %d", stay)
	}
	seeds, err := arriveSeeds(c, cfg)
	if err != nil {
		return err
	}
	var modes []string
	switch {
	case c.Bool("metered"):
		modes = []string{arrive.ModeMetered}
	case !c.IsSet("modes") && cfg.Modes != nil:
		modes = cfg.Modes
	default:
		for _, m := range strings.Split(c.String("modes"), ",") {
			m = strings.TrimSpace(m)
			if m != arrive.ModeSite && m != arrive.ModeMetered {
				return fmt.Errorf("--modes: unknown mode %q (want %s or %s)", m, arrive.ModeSite, arrive.ModeMetered)
			}
			modes = append(modes, m)
		}
	}
	path, name := studyTrace(c, cfg)
	w, err := tracestudy.Load(path, opt)
	if err != nil {
		return fmt.Errorf("--trace: %w", err)
	}
	content, err := tracestudy.Content(path)
	if err != nil {
		return fmt.Errorf("--trace: %w", err)
	}
	dist, err := readStudyDist(c)
	if err != nil {
		return err
	}
	out := studyOut(c, "agents-arrive")
	specs := arrive.Specs(names, modes, maxK, seeds)
	st := arrive.Stay{Stay: stay}
	plan := arrive.NewPlan(arrive.SharedInputs(tracestudy.Digest(content), opt, w, st), w, specs)
	sopt := sweep.StudyOptions{Workers: workers}
	stderr := sweepStderr(c)
	if !c.Bool("quiet") && mergedStudyShards(c) == nil {
		n := len(specs)
		if dist.shard != nil {
			n = len(sweep.AssignStudyShards(plan, dist.shard.Of)[dist.shard.Index])
		}
		fmt.Fprintf(stderr, "agents-arrive: %d runs on %s (%d jobs, pool %d), agents for %d s, %d workers\n", n, w.Name, len(w.Jobs), w.Pool, stay, workers)
		step := max(1, n/10)
		sopt.Progress = func(done, total int) {
			if done%step == 0 || done == total {
				fmt.Fprintf(stderr, "  %d/%d runs done\n", done, total)
			}
		}
	}
	rs, err := runStudy(c, dist, out, plan, arrive.Codec, sopt, func(ctx context.Context, o sweep.StudyOptions) ([]arrive.Result, error) {
		return arrive.ExecutePlan(ctx, w, specs, st, plan, o)
	})
	if err != nil || rs == nil { // nil results: a shard, written
		return err
	}
	files, err := arrive.Write(out, format, tracestudy.Info(w, name, opt.From, opt.Until), st, rs)
	if err != nil {
		return err
	}
	if err := arrive.PrintTable(sweepStdout(c), arrive.Points(rs)); err != nil {
		return err
	}
	m := manifest.New(programName, os.Args, c.Command.Name, start)
	m.Inputs = append(m.Inputs, manifest.NewInput("trace", name, embeddedTrace(path), content))
	m.Workers = workers
	return m.Write(out, start, files)
}

// arriveSeeds is --seeds (a list) or --nseeds N (the seeds 1 … N), else
// the config's seeds or nseeds, else 1, 2, 3: the meaning --seeds and
// --nseeds have on every command, with agents-arrive's own sequence.
func arriveSeeds(c *cli.Context, cfg *configs.StudyConfig) ([]int64, error) {
	n := arriveDefaultSeeds
	switch {
	case c.IsSet("seeds") && c.IsSet("nseeds"):
		return nil, fmt.Errorf("give --seeds (a list) or --nseeds (a count), not both")
	case c.IsSet("seeds"):
		return parseSeeds(c.String("seeds"))
	case c.IsSet("nseeds"):
		n = c.Int("nseeds")
		if n < 1 || n > arriveMaxSeeds {
			return nil, fmt.Errorf("--nseeds must be between 1 and %d, got %d", arriveMaxSeeds, n)
		}
	case cfg.Seeds != nil:
		return cfg.Seeds, nil
	case cfg.NSeeds != nil:
		n = *cfg.NSeeds
	}
	seeds := make([]int64, n)
	for i := range seeds {
		seeds[i] = int64(i + 1)
	}
	return seeds, nil
}
