package main

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/bursar-hpc/bursar/arrive"
	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/figures"
	"github.com/bursar-hpc/bursar/internal/manifest"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/sweep"
	"github.com/bursar-hpc/bursar/tracestudy"
)

// Defaults of agents-arrive (docs/studies.md §5, §6.14): 4 windows of 7
// days of the full SDSC-SP2 log (embedded), the agents staying 2 days,
// seeds 1 … 3 in each window.
const (
	arriveDefaultWindows = "4x7d"
	arriveDefaultSeeds   = 3
	// arriveMaxSeeds bounds --nseeds as the config bounds nseeds.
	arriveMaxSeeds = 1000
)

func arriveStudy() study {
	var flags []cli.Flag
	for _, f := range append(traceFlags("results/agents-arrive", true), mappingFlags()...) {
		switch sf := f.(type) {
		case *cli.StringFlag:
			switch sf.Name {
			case "trace":
				sf.DefaultText = "sdsc-sp2, the full SDSC-SP2 log embedded in the binary"
			case "windows":
				sf.DefaultText = arriveDefaultWindows + " (one window with --window)"
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
		&cli.StringFlag{Name: "seeds", Usage: "seeds, a comma-separated `LIST` such as 1,2,3: each draws the agents' arrival and the science agents' tasks", DefaultText: "1,2,3"},
		&cli.IntFlag{Name: "nseeds", Usage: "the seeds 1 … `N`", DefaultText: strconv.Itoa(arriveDefaultSeeds)},
		&cli.Float64Flag{Name: "agent-scale", Usage: "`X`: the agents' GPU quantities are the paper's × pool/512 × X", Value: arrive.DefaultAgentScale},
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
			"interval over windows. Writes summary.json, runs.csv, agents.csv, fig_agents_arrive,\n" +
			"manifest.json and with --jobs every run's per-job records (docs/metrics.md). The default log is\n" +
			"the full SDSC-SP2 log embedded in the binary (--trace sdsc-sp2), 4 windows of 7 days; --trace\n" +
			"FILE reads any SWF log, plain or gzip.\n" + studyDistHelp("agents-arrive"),
		Flags: flags,
	}, setup: setupAgentsArrive, outFor: customOutFor("agents-arrive", "results/agents-arrive")}
}

func setupAgentsArrive(c *cli.Context, dist *sweep.Dist) (sweep.Job, error) {
	start := time.Now()
	workers := dist.Workers
	format, err := figures.ParseFormat(c.String("format"))
	if err != nil {
		return nil, fmt.Errorf("--format: %w", err)
	}
	cfg, err := studyConfig(c, "agents-arrive")
	if err != nil {
		return nil, err
	}
	mapping, err := studyMapping(c, cfg)
	if err != nil {
		return nil, err
	}
	path, name := studyTrace(c, cfg)
	if !c.IsSet("trace") && cfg.Trace == "" {
		path, name = tracestudy.BuiltinFull, tracestudy.FullSDSCName
	}
	st := arrive.NewStudy()
	if st.Policies, err = studyPolicies(c, cfg); err != nil {
		return nil, err
	}
	if !c.IsSet("policies") && !c.IsSet("policy") && cfg.Policies == nil {
		st.Policies = append([]string{}, arrive.DefaultPolicies...)
	}
	var opt = st.Options
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
	specs := []tracestudy.Spec{{Policy: policies.Bursar, Knobs: st.Knobs}}
	if err := tracestudy.ApplyMapping(mapping, &opt, specs); err != nil {
		return nil, err
	}
	st.Knobs = specs[0].Knobs
	warmup, cooldown := int64(tracestudy.DefaultWarmup), int64(tracestudy.DefaultCooldown)
	if mapping.Warmup != nil {
		warmup = *mapping.Warmup
	}
	if mapping.Cooldown != nil {
		cooldown = *mapping.Cooldown
	}
	// Windows: --windows (or the config's), else one window where a
	// --window narrows the log, else the default 4×7d.
	n, days := 0, int64(0)
	switch {
	case mapping.Windows != nil:
		n, days = mapping.Windows.N, mapping.Windows.Days
	case opt.From == 0 && opt.Until == 0:
		ws, _ := configs.ParseWindows(arriveDefaultWindows)
		n, days = ws.N, ws.Days
	}
	if err := arriveKnobs(c, cfg, st); err != nil {
		return nil, err
	}
	if st.Seeds, err = arriveSeeds(c, cfg); err != nil {
		return nil, err
	}
	w, err := st.Lay(path, opt, n, days, warmup, cooldown)
	if err != nil {
		if opt.From != 0 || opt.Until != 0 {
			return nil, fmt.Errorf("--window (or the config's window) on %s: %w", name, err)
		}
		return nil, fmt.Errorf("--trace %s, --windows, --warmup, --cooldown: %w", name, err)
	}
	if err := st.Check(); err != nil {
		return nil, fmt.Errorf("%w (--stay, --agent-scale, --agent-share, --max-k, --windows)", err)
	}
	st.Plan()
	content, err := tracestudy.Content(path)
	if err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	out := studyOut(c, "agents-arrive")
	if c.Bool("jobs") {
		if dist.Cache != "" {
			return nil, fmt.Errorf("--jobs with --cache: a run taken from the cache has no per-job records; drop one of them")
		}
		st.JobsDir = filepath.Join(out, "jobs")
	}
	plan := st.NewPlan(st.SharedInputs(tracestudy.Digest(content), w))
	dist.Out = out
	{
		stderr := sweepStderr(c)
		dist.Progress = func(total int) (func(done, total int), func(error)) {
			fmt.Fprintf(stderr, "agents-arrive: %d runs on %s (pool %d), %d window(s) of %s, agents for %s, k ≤ %d, %d seed(s), %d workers\n",
				total, name, w.Pool, len(st.Windows), fmtDays(st.Windows[0].Days()), fmtDays(float64(st.Stay)/tracestudy.Day), st.MaxK, len(st.Seeds), workers)
			step := max(1, total/20)
			began := time.Now()
			return func(done, total int) {
				if done%step == 0 || done == total {
					fmt.Fprintf(stderr, "  %d/%d runs done (%s)\n", done, total, time.Since(began).Round(time.Second))
				}
			}, nil
		}
	}
	report := func(rs []arrive.Result, _ bool) error {
		sum := &arrive.Summary{Trace: tracestudy.Info(w, name, opt.From, opt.Until), Study: st, Warmup: warmup, Cooldown: cooldown, Runs: rs}
		files, err := arrive.Write(out, format, sum)
		if err != nil {
			return err
		}
		stdout := sweepStdout(c)
		if err := printTableFile(stdout, out, func(w io.Writer) error { return arrive.PrintTable(w, sum) }); err != nil {
			return err
		}
		files = append(files, studyTableFile)
		m := newManifest(c.Command.Name, start)
		m.Inputs = append(m.Inputs, manifest.NewInput("trace", name, embeddedTrace(path), content))
		m.Workers = workers
		if err := m.Write(out, start, files); err != nil {
			return err
		}
		jobs := ""
		if st.JobsDir != "" {
			jobs = fmt.Sprintf(", jobs/ (%d runs' per-job records)", len(st.Specs))
		}
		fmt.Fprintf(stdout, "agents-arrive: %d runs; wrote %s, manifest.json%s into %s\n", len(rs), strings.Join(files, ", "), jobs, out)
		return nil
	}
	return &sweep.Study[arrive.Result]{Plan: plan, Compute: st.Run, Codec: arrive.Codec, Write: report}, nil
}

func fmtDays(d float64) string {
	if d == math.Trunc(d) {
		return fmt.Sprintf("%.0f d", d)
	}
	return fmt.Sprintf("%.2f d", d)
}

// arriveKnobs sets the study's max-k, stay, agent scale and share from
// the flags, else the config, else the defaults NewStudy set.
func arriveKnobs(c *cli.Context, cfg *configs.StudyConfig, st *arrive.Study) error {
	switch {
	case c.IsSet("max-k"):
		st.MaxK = c.Int("max-k")
	case cfg.MaxK != nil:
		st.MaxK = *cfg.MaxK
	}
	if st.MaxK < 0 || st.MaxK > 64 {
		return fmt.Errorf("--max-k must be between 0 and 64, got %d", st.MaxK)
	}
	switch {
	case c.IsSet("stay"):
		d, err := configs.ParseDuration(c.String("stay"))
		if err != nil {
			return fmt.Errorf("--stay %w", err)
		}
		st.Stay = d
	case cfg.Stay != nil:
		st.Stay = *cfg.Stay
	}
	if st.Stay < 2 {
		return fmt.Errorf("--stay must be at least 2 seconds, got %d", st.Stay)
	}
	switch {
	case c.IsSet("agent-scale"):
		st.AgentScale = c.Float64("agent-scale")
	case cfg.AgentScale != nil:
		st.AgentScale = *cfg.AgentScale
	}
	if !(st.AgentScale > 0 && st.AgentScale <= arrive.MaxAgentScale) {
		return fmt.Errorf("--agent-scale must be above 0 and at most %d, got %v", arrive.MaxAgentScale, st.AgentScale)
	}
	switch {
	case c.IsSet("agent-share"):
		st.AgentShare = c.Float64("agent-share")
	case cfg.AgentShare != nil:
		st.AgentShare = *cfg.AgentShare
	}
	if !(st.AgentShare > 0 && st.AgentShare < 1) {
		return fmt.Errorf("--agent-share must be above 0 and below 1 (the users keep the rest), got %v", st.AgentShare)
	}
	return nil
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
