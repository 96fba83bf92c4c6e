package arrive

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/sweep"
	"github.com/bursar-hpc/bursar/tracestudy"
)

// Defaults of agents-arrive (docs/studies.md §5, §5.1, §6.14) beyond
// NewStudy's: windows of 7 days of the full SDSC-SP2 log (embedded), as
// many as the default rule gives, min(12, ⌊span ÷ D⌋) (12 on this log),
// and one seed in each window. Seeds are averaged inside a window before
// any interval or test, so a second seed adds no degree of freedom; the
// windows carry the variance, and each draws its own arrival (Arrival
// seeds the draw with the window too). Twelve windows of three seeds
// would take about 3 × 120 s of CPU, over the study's budget of 3 min.
const (
	DefaultWindows = "7d"
	DefaultSeeds   = 1
	// MaxSeeds bounds --nseeds as the config bounds nseeds.
	MaxSeeds = 1000
)

// FromConfig is the agents-arrive job: the study's config (--config) and
// the flags given (docs/studies.md §5) turned into the plan of runs, the
// run of spec i, the codec and the report (summary.json, runs.csv,
// agents.csv, the figure, table.txt, manifest.json). It sets where d
// writes a shard and the progress it prints.
func FromConfig(f sweep.Flags, env sweep.Env, d *sweep.Dist) (sweep.Job, error) {
	c, err := tracestudy.ReadCommon("agents-arrive", f, env.Policies, func(c *tracestudy.Common) {
		if !f.Has("trace") && c.Config.Trace == "" {
			c.Path, c.Name = tracestudy.BuiltinFull, tracestudy.FullSDSCName
		}
	})
	if err != nil {
		return nil, err
	}
	cfg, mapping, opt := c.Config, c.Mapping, c.Options
	st := NewStudy()
	if c.Registry != nil {
		st.Registry, st.Knobs = c.Registry, c.Registry.TraceKnobs()
	}
	if st.Policies, err = c.Policies(f, append([]string{}, DefaultPolicies...)); err != nil {
		return nil, err
	}
	specs := []tracestudy.Spec{{Policy: policies.Bursar, Knobs: st.Knobs}}
	if err := tracestudy.ApplyMapping(mapping, &opt, specs); err != nil {
		return nil, err
	}
	st.Knobs = specs[0].Knobs
	// Windows: --windows (or the config's), else one window where a
	// --window narrows the log, else the default: 7-day windows by rule.
	n, days := 0, int64(0)
	switch {
	case mapping.Windows != nil:
		n, days = mapping.Windows.N, mapping.Windows.Days
		if n == 0 {
			n = byRule // --windows D: N by the default rule
		}
	case opt.From == 0 && opt.Until == 0:
		ws, _ := configs.ParseWindows(DefaultWindows)
		n, days = ws.N, ws.Days
		if n == 0 {
			n = byRule
		}
	}
	if err := readKnobs(f, cfg, st); err != nil {
		return nil, err
	}
	if st.Seeds, err = readSeeds(f, cfg); err != nil {
		return nil, err
	}
	st.LeadInSpec = mapping.LeadIn
	w, err := st.Lay(c.Path, opt, n, days, c.Warmup, c.Cooldown)
	if err != nil {
		if opt.From != 0 || opt.Until != 0 {
			return nil, fmt.Errorf("--window (or the config's window) on %s: %w", c.Name, err)
		}
		return nil, fmt.Errorf("--trace %s, --windows, --warmup, --cooldown: %w", c.Name, err)
	}
	if err := st.Check(); err != nil {
		return nil, fmt.Errorf("%w (--stay, --agent-scale, --agent-share, --max-k, --windows)", err)
	}
	st.Plan()
	stored, err := tracestudy.Fingerprint(c.Path)
	if err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	out, err := c.Out("agents-arrive", f, d, &st.JobsDir)
	if err != nil {
		return nil, err
	}
	plan := st.NewPlan(st.SharedInputs(stored.Digest(), w))
	d.Progress = func(total int) (func(done, total int), func(error)) {
		fmt.Fprintf(env.Stderr, "agents-arrive: %d runs on %s (pool %d), %d window(s) of %s, agents for %s, k ≤ %d, %d seed(s), %d workers\n",
			total, c.Name, w.Pool, len(st.Windows), fmtDays(st.Windows[0].Days()), fmtDays(float64(st.Stay)/tracestudy.Day), st.MaxK, len(st.Seeds), d.Workers)
		step := max(1, total/20)
		began := time.Now()
		return func(done, total int) {
			if done%step == 0 || done == total {
				fmt.Fprintf(env.Stderr, "  %d/%d runs done (%s)\n", done, total, time.Since(began).Round(time.Second))
			}
		}, nil
	}
	report := func(rs []Result, _ bool) error {
		sum := &Summary{Trace: tracestudy.Info(w, c.Name, opt.From, opt.Until), Study: st, Warmup: c.Warmup, Cooldown: c.Cooldown, Runs: rs}
		files, err := Write(out, env.Format, sum)
		if err != nil {
			return err
		}
		if err := sweep.PrintTableFile(env.Stdout, out, func(w io.Writer) error { return PrintTable(w, sum) }); err != nil {
			return err
		}
		files = append(files, sweep.TableFile)
		if st.LeadIn != nil && st.LeadIn.Warning() != "" {
			fmt.Fprintf(env.Stderr, "warning: agents-arrive: %s (summary.json lead_in)\n", st.LeadIn.Warning())
		}
		for _, s := range tracestudy.ShortLookback(opt, st.Windows, st.Loads) {
			fmt.Fprintf(env.Stderr, "warning: agents-arrive: shares: lookback: %s\n", s)
		}
		if err := c.WriteManifest(env, d, out, stored, st.Seeds, files); err != nil {
			return err
		}
		jobs := ""
		if st.JobsDir != "" {
			jobs = fmt.Sprintf(", jobs/ (%d runs' per-job records)", len(st.Specs))
		}
		fmt.Fprintf(env.Stdout, "agents-arrive: %d runs; wrote %s, manifest.json%s into %s\n", len(rs), strings.Join(files, ", "), jobs, out)
		return nil
	}
	return &sweep.Study[Result]{Plan: plan, Compute: st.Run, Codec: Codec, Write: report}, nil
}

func fmtDays(d float64) string {
	if d == math.Trunc(d) {
		return fmt.Sprintf("%.0f d", d)
	}
	return fmt.Sprintf("%.2f d", d)
}

// readKnobs sets the study's max-k, stay, agent scale and share from
// the flags, else the config, else the defaults NewStudy set.
func readKnobs(f sweep.Flags, cfg *configs.StudyConfig, st *Study) error {
	switch {
	case f.Has("max-k"):
		st.MaxK = f.Int("max-k", st.MaxK)
	case cfg.MaxK != nil:
		st.MaxK = *cfg.MaxK
	}
	if st.MaxK < 0 || st.MaxK > 64 {
		return fmt.Errorf("--max-k must be between 0 and 64, got %d", st.MaxK)
	}
	switch {
	case f.Has("stay"):
		d, err := configs.ParseDuration(f["stay"])
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
	// The agents' size, share and φ: each its flag, else the config's
	// value, else the default, then checked.
	for _, k := range []struct {
		flag  string
		cfg   *float64
		dst   *float64
		valid func(float64) bool
		want  string
	}{
		{"agent-scale", cfg.AgentScale, &st.AgentScale, func(v float64) bool { return v > 0 && v <= MaxAgentScale },
			fmt.Sprintf("above 0 and at most %d", MaxAgentScale)},
		{"agent-share", cfg.AgentShare, &st.AgentShare, func(v float64) bool { return v > 0 && v < 1 },
			"above 0 and below 1 (the users keep the rest)"},
		{"agent-phi", cfg.AgentPhi, &st.AgentPhi, func(v float64) bool { return v > 0 && v <= MaxAgentPhi },
			fmt.Sprintf("above 0 and at most %d (the agents' Σ max(R, g) over their entitlement)", MaxAgentPhi)},
	} {
		switch {
		case f.Has(k.flag):
			*k.dst = f.Float(k.flag, *k.dst)
		case k.cfg != nil:
			*k.dst = *k.cfg
		}
		if !k.valid(*k.dst) {
			return fmt.Errorf("--%s must be %s, got %v", k.flag, k.want, *k.dst)
		}
	}
	return nil
}

// readSeeds is --seeds (a list) or --nseeds N (the seeds 1 … N), else
// the config's seeds or nseeds, else the seeds 1 … DefaultSeeds: the
// meaning --seeds and --nseeds have on every command, with
// agents-arrive's own sequence.
func readSeeds(f sweep.Flags, cfg *configs.StudyConfig) ([]int64, error) {
	n := DefaultSeeds
	switch {
	case f.Has("seeds") && f.Has("nseeds"):
		return nil, fmt.Errorf("give --seeds (a list) or --nseeds (a count), not both")
	case f.Has("seeds"):
		return configs.ParseSeeds(f["seeds"])
	case f.Has("nseeds"):
		n = f.Int("nseeds", 0)
		if n < 1 || n > MaxSeeds {
			return nil, fmt.Errorf("--nseeds must be between 1 and %d, got %d", MaxSeeds, n)
		}
	case cfg.Seeds != nil:
		return cfg.Seeds, nil
	case cfg.NSeeds != nil:
		n = *cfg.NSeeds
	}
	return seedsUpTo(n), nil
}

// seedsUpTo is the seeds 1 … n.
func seedsUpTo(n int) []int64 {
	seeds := make([]int64, n)
	for i := range seeds {
		seeds[i] = int64(i + 1)
	}
	return seeds
}
