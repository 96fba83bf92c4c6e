package tracestudy

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/internal/cliusage"
	"github.com/bursar-hpc/bursar/internal/manifest"
	"github.com/bursar-hpc/bursar/platform"
	"github.com/bursar-hpc/bursar/policy/registry"
	"github.com/bursar-hpc/bursar/sweep"
	"github.com/bursar-hpc/bursar/swf"
	"github.com/bursar-hpc/bursar/trace"
)

// The setup of the studies that read a trace (trace, budget-knobs; arrive
// shares Common): a study's config (configs.StudyConfig, --config) with
// the flags given laid over it (sweep.Flags), turned into the study's job.
// The command line only parses flags and calls FromConfig.

// DefaultOut is the folder a trace study writes into without --out and
// without a custom input (CustomInputs).
var DefaultOut = map[string]string{
	"trace":         filepath.Join("results", "trace"),
	"budget-knobs":  filepath.Join("results", "trace", "budget-knobs"),
	"agents-arrive": filepath.Join("results", "agents-arrive"),
}

// Budget-knobs' own defaults (docs/studies.md §5: over several windows):
// the full SDSC-SP2 log, embedded, in windows of 14 days as many as the
// default rule gives, min(12, ⌊span ÷ D⌋) (§5.1): 12 on this log.
var (
	BudgetKnobsTrace   = BuiltinFull
	BudgetKnobsWindows = configs.WindowsSpec{Days: 14}
)

// Common is what every study on a trace reads the same way: its config,
// the trace mapping with the flags on top, the log (path, and the name
// outputs give it), the window and the pool (Options), and the warm-up
// and cool-down.
type Common struct {
	// Registry is the registry the study's policies are found in (nil:
	// policies.Default).
	Registry         *registry.Registry
	Config           *configs.StudyConfig
	Mapping          configs.TraceMapping
	Path, Name       string
	Options          trace.Options
	Warmup, Cooldown int64
	// Site is what the site's own files configure (--slurm-conf,
	// --kueue; nil: none), read by ReadCommon.
	Site *Site
}

// ReadCommon reads the config of experiment (--config, else an empty one:
// every value the command's default), the mapping, the trace (--trace,
// else the config's, else defaults(c) sets it: c.Path "" is the embedded
// excerpt), the window and the pool. defaults may be nil; it runs before
// the window is read. Policy names are found in reg (nil:
// policies.Default).
//
// The site's files (--slurm-conf; ReadSite) are read too, their ignored
// keys listed on stderr (nil: io.Discard).
func ReadCommon(experiment string, f sweep.Flags, reg *registry.Registry, defaults func(c *Common)) (*Common, error) {
	return ReadCommonSite(experiment, f, reg, defaults, nil)
}

// ReadCommonSite is ReadCommon listing the site files' ignored keys on
// stderr.
func ReadCommonSite(experiment string, f sweep.Flags, reg *registry.Registry, defaults func(c *Common), stderr io.Writer) (*Common, error) {
	if stderr == nil {
		stderr = io.Discard
	}
	c := &Common{Registry: reg, Config: &configs.StudyConfig{Experiment: experiment}}
	if f.Has("config") {
		cfg, err := (configs.Reader{Policies: reg}).LoadStudy(f["config"])
		if err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
		if cfg.Experiment != experiment {
			return nil, fmt.Errorf("--config: %s is a config of %s, not of %s", cfg.File, cfg.Experiment, experiment)
		}
		c.Config = cfg
	}
	cfg := c.Config
	var err error
	if c.Mapping, err = readMapping(f, cfg); err != nil {
		return nil, err
	}
	switch {
	case f.Has("trace"):
		c.Path, c.Name = f["trace"], f["trace"]
	case cfg.Trace != "":
		c.Path, c.Name = cfg.Trace, cfg.TraceName
	}
	if _, archive, ok := Builtin(c.Path); ok {
		c.Name = archive
	}
	if defaults != nil {
		defaults(c)
	}
	if c.Site, err = ReadSite(f, cfg, stderr); err != nil {
		return nil, err
	}
	switch {
	case f.Has("window"):
		h, err := Header(c.Path)
		if err != nil {
			return nil, fmt.Errorf("--trace: %w", err)
		}
		if c.Options.From, c.Options.Until, err = parseWindowAt(f["window"], h); err != nil {
			return nil, err
		}
	case cfg.Window != nil:
		c.Options.From, c.Options.Until = cfg.Window.From, cfg.Window.Until
	}
	switch {
	case f.Has("pool"):
		if c.Options.Pool = f.Int("pool", 0); c.Options.Pool < 1 {
			return nil, fmt.Errorf("--pool must be at least 1, got %d", c.Options.Pool)
		}
	case cfg.Pool != nil:
		c.Options.Pool = *cfg.Pool
	case c.Site != nil && c.Site.Pool > 0:
		// The site's default partition, where neither --pool nor the
		// config gives one.
		c.Options.Pool = c.Site.Pool
	}
	if c.Options.Platform, err = readPlatform(f, cfg); err != nil {
		return nil, err
	}
	c.Warmup, c.Cooldown = int64(DefaultWarmup), int64(DefaultCooldown)
	if c.Mapping.Warmup != nil {
		c.Warmup = *c.Mapping.Warmup
	}
	if c.Mapping.Cooldown != nil {
		c.Cooldown = *c.Mapping.Cooldown
	}
	return c, nil
}

// Policies is --policies or --policy (every policy when empty), else the
// config's policies, else def.
func (c *Common) Policies(f sweep.Flags, def []string) ([]string, error) {
	if !f.Has("policies") && !f.Has("policy") {
		if c.Config.Policies != nil {
			return c.Config.Policies, nil
		}
		return def, nil
	}
	if f.Has("policies") && f.Has("policy") {
		return nil, fmt.Errorf("give --policies or --policy, not both")
	}
	list := f["policies"]
	if f.Has("policy") {
		list = f["policy"]
	}
	reg := orDefault(c.Registry)
	if list == "" {
		return reg.Names(), nil
	}
	return PolicyList(reg, list)
}

// PolicyList reads a --policies list: comma-separated names, each known
// to reg (Known: an optional policy such as slurm too), none twice.
func PolicyList(reg *registry.Registry, list string) ([]string, error) {
	known := reg.Known()
	var names []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("--policies: unknown policy %q%s (want some of %s)", n, cliusage.DidYouMean(n, known), strings.Join(known, ", "))
		}
		if slices.Contains(names, n) {
			return nil, fmt.Errorf("--policies: %q given twice", n)
		}
		names = append(names, n)
	}
	return names, nil
}

// Out is --out, else CustomOut's folder when the trace, the window, the
// pool or the config is given, else the study's DefaultOut.
func Out(experiment string, f sweep.Flags) string {
	if f.Has("out") {
		return f["out"]
	}
	if out := CustomOutOf(experiment, f); out != "" {
		return out
	}
	return DefaultOut[experiment]
}

// stored is the trace's size and digest for the plan's inputs and the
// manifest.
func (c *Common) stored() (Stored, error) {
	s, err := Fingerprint(c.Path)
	if err != nil {
		return Stored{}, fmt.Errorf("--trace: %w", err)
	}
	return s, nil
}

// readMapping is the config's trace mapping with the flags on top.
func readMapping(f sweep.Flags, cfg *configs.StudyConfig) (configs.TraceMapping, error) {
	m := cfg.Mapping
	for _, fl := range []struct {
		name  string
		dst   *string
		check func(string) error
	}{{"by", &m.By, configs.CheckBy}, {"shares", &m.Shares, configs.CheckShares}, {"bucket", &m.Bucket, configs.CheckBucket},
		{"meter", &m.Meter, configs.CheckMeter}, {"lead-in", &m.LeadIn, configs.CheckLeadIn},
		{"restart", &m.Restart, configs.CheckRestart}} {
		if v, ok := f[fl.name]; ok {
			if err := fl.check(v); err != nil {
				return m, fmt.Errorf("--%s %w", fl.name, err)
			}
			*fl.dst = v
		}
	}
	if v, ok := f["classes"]; ok {
		cl, err := configs.ParseClasses(v)
		if err != nil {
			return m, fmt.Errorf("--classes: %w", err)
		}
		m.Classes = cl
	}
	for _, fl := range []struct {
		name string
		dst  **int64
	}{{"warmup", &m.Warmup}, {"cooldown", &m.Cooldown}, {"lookback", &m.Lookback}} {
		if v, ok := f[fl.name]; ok {
			d, err := configs.ParseDuration(v)
			if err != nil {
				return m, fmt.Errorf("--%s %w", fl.name, err)
			}
			*fl.dst = &d
		}
	}
	if m.Lookback != nil {
		if err := configs.CheckLookback(*m.Lookback); err != nil {
			return m, fmt.Errorf("--lookback %w", err)
		}
	}
	if v, ok := f["windows"]; ok {
		w, err := configs.ParseWindows(v)
		if err != nil {
			return m, fmt.Errorf("--windows %w", err)
		}
		m.Windows = &w
	}
	return m, nil
}

// FromConfig is the job of the trace study experiment (trace or
// budget-knobs): its config and the flags given turned into the plan of
// replays, the replay of run i, the codec and the report (summary.json,
// runs.csv, the figure, table.txt, manifest.json). It sets where d writes
// a shard and the progress it prints.
func FromConfig(experiment string, f sweep.Flags, env sweep.Env, d *sweep.Dist) (sweep.Job, error) {
	budgetKnobs := experiment == "budget-knobs"
	var defaults func(*Common)
	if budgetKnobs {
		// Budget-knobs' trace when no --trace or config trace names one,
		// its windows when no --windows, --window or config window or
		// windows is given.
		defaults = func(c *Common) {
			if !f.Has("trace") && c.Config.Trace == "" {
				c.Path = BudgetKnobsTrace
				_, c.Name, _ = Builtin(c.Path)
			}
			if c.Mapping.Windows == nil && !f.Has("window") && c.Config.Window == nil {
				w := BudgetKnobsWindows
				c.Mapping.Windows = &w
			}
		}
	}
	c, err := ReadCommonSite(experiment, f, env.Policies, defaults, env.Stderr)
	if err != nil {
		return nil, err
	}
	cfg, mapping, opt := c.Config, c.Mapping, c.Options
	var specs []Spec
	if budgetKnobs {
		windows, mins := BudgetWindows, BudgetMinRuntimes
		if cfg.WindowsDays != nil {
			windows = cfg.WindowsDays
		}
		if cfg.MinRuntimes != nil {
			mins = cfg.MinRuntimes
		}
		restarts := BudgetRestarts
		if mapping.Restart != "" {
			restarts = []string{mapping.Restart}
		}
		if specs, err = BudgetKnobSpecs(windows, mins, restarts); err != nil {
			return nil, fmt.Errorf("--restart: %w", err)
		}
	} else {
		def := orDefault(c.Registry).Names()
		if c.Site != nil {
			def = c.Site.DefaultPolicies()
		}
		names, err := c.Policies(f, def)
		if err != nil {
			return nil, err
		}
		specs = TraceSpecsOf(c.Registry, names)
		if c.Site != nil {
			if err := c.Site.Apply(specs); err != nil {
				return nil, err
			}
		}
	}
	if err := ApplyMapping(mapping, &opt, specs); err != nil {
		return nil, err
	}
	w, err := LoadRange(c.Path, opt)
	if err != nil {
		if opt.From != 0 || opt.Until != 0 {
			return nil, fmt.Errorf("--window (or the config's window) on %s: %w", c.Name, err)
		}
		return nil, fmt.Errorf("--trace: %w", err)
	}
	for _, note := range c.Site.Notes(w.Entitlements()) {
		fmt.Fprintf(env.Stderr, "--sshare: %s\n", note)
	}
	// Every study: one window (the log, or --window) or --windows N×D
	// spread over it.
	st := &Study{Specs: specs, Policies: c.Registry}
	if mapping.Windows == nil {
		win, err := WholeWindow(w, opt, c.Warmup, c.Cooldown)
		if err != nil {
			return nil, fmt.Errorf("--warmup, --cooldown: %w", err)
		}
		st.Windows, st.Loads = []Window{win}, []*trace.Workload{w}
	} else {
		if st.Windows, err = LayWindows(w, opt, mapping.Windows.N, mapping.Windows.Days*Day, c.Warmup, c.Cooldown); err != nil {
			return nil, fmt.Errorf("--windows %s: %w", mapping.Windows, err)
		}
		// A machine already running at each window's start (docs/studies.md
		// §4.5): the lead-in, by the rule (auto, trace's default) or given;
		// none for budget-knobs unless given, and with `lead_in: none`.
		if mapping.LeadIn == "" && experiment == "trace" {
			mapping.LeadIn = LeadInAuto
		}
		if !LeadInOff(mapping.LeadIn) {
			li, err := PickLeadIn(w, st.Windows, mapping.LeadIn)
			if err != nil {
				return nil, fmt.Errorf("--lead-in %w", err)
			}
			li.Apply(st.Windows)
			st.LeadIn = &li
		}
		if st.Loads, err = LoadWindows(c.Path, opt, st.Windows); err != nil {
			return nil, fmt.Errorf("--windows %s: %w", mapping.Windows, err)
		}
		st.WindowRule = WindowRule(*mapping.Windows)
	}
	if st.FairSample = f.Int("fair-sample", trace.DefaultFairSample); st.FairSample < 0 {
		return nil, fmt.Errorf("--fair-sample must not be negative, got %d", st.FairSample)
	}
	// fairshare and budget start each window with the usage the log
	// records before it (docs/studies.md §6.16).
	st.Options = opt
	for _, sp := range specs {
		if st.registry().Lookback(sp.Policy, sp.Knobs) > 0 {
			if st.Recorded, err = ReadRecorded(c.Path, w.Pool); err != nil {
				return nil, fmt.Errorf("--trace: %w", err)
			}
			break
		}
	}
	stored, err := c.stored()
	if err != nil {
		return nil, err
	}
	out, err := c.Out(experiment, f, d, &st.JobsDir)
	if err != nil {
		return nil, err
	}
	// The reader's blocks of rows are garbage by now, the workload's table
	// built: collecting them before the replays sets the collector's next
	// goal at twice the workload rather than at twice the reader's peak
	// (its blocks and the table at once), which the replay's records
	// would otherwise fill before the run's first collection (docs/traces.md,
	// "On SDSC-SP2 and a 300k-job log").
	runtime.GC()
	plan := NewPlan(experiment, fmt.Sprintf("%s\nfair sample %d seed %d", SharedInputs(stored.Digest(), opt, w),
		st.FairSample, trace.DefaultFairSeed), st)
	d.Progress = func(n int) (func(done, total int), func(error)) {
		fmt.Fprintf(env.Stderr, "%s: %d runs on %s (%d jobs, pool %d), %d window(s), %d workers\n", experiment, n, w.Name, len(w.Jobs), w.Pool, len(st.Windows), d.Workers)
		return func(done, total int) { fmt.Fprintf(env.Stderr, "  %d/%d runs done\n", done, total) }, nil
	}
	report := func(rs []Result, merged bool) error {
		sum := Summary{Experiment: experiment, Trace: Info(w, c.Name, opt.From, opt.Until), Study: st,
			Warmup: c.Warmup, Cooldown: c.Cooldown, Runs: rs}
		shapes := sum.windowShapes() // once, for the outputs and the warnings
		// The replays' records are garbage by now: collecting them before the
		// figure lets its canvas (12 MB for fig_trace's PNG) reuse their
		// memory instead of faulting in fresh pages, which cost more CPU than
		// this collection (docs/traces.md, "trace --policy fifo against a
		// plain Python FCFS + EASY").
		runtime.GC()
		files, err := Write(out, sum, env.Format)
		if err != nil {
			return err
		}
		if err := sweep.PrintTableFile(env.Stdout, out, func(tw io.Writer) error { return PrintTable(tw, sum) }); err != nil {
			return err
		}
		files = append(files, sweep.TableFile)
		WarnDegenerate(env.Stderr, experiment, findDegenerate(st, rs, shapes), len(st.Windows))
		if st.LeadIn != nil && st.LeadIn.Warning() != "" {
			fmt.Fprintf(env.Stderr, "warning: %s: %s (summary.json lead_in)\n", experiment, st.LeadIn.Warning())
		}
		for _, s := range ShortLookback(opt, st.Windows, st.Loads) {
			fmt.Fprintf(env.Stderr, "warning: %s: shares: lookback: %s (summary.json windows[].lookback)\n", experiment, s)
		}
		WarnMarks(env.Stderr, rs)
		if tw := w.Skipped.TooWide; tw > 0 {
			fmt.Fprintf(env.Stdout, "%d of %d jobs dropped: wider than the pool of %d GPUs (summary.json trace.skipped.too_wide)\n", tw, w.Records, w.Pool)
		}
		if err := c.WriteManifest(env, d, out, stored, nil, files); err != nil {
			return err
		}
		jobs := ""
		switch {
		case st.JobsDir != "" && merged:
			// The shards replayed, so they wrote the records, each into its
			// own --out.
			jobs = " (the per-job records are in jobs/ of the folders the shards ran in)"
		case st.JobsDir != "":
			jobs = fmt.Sprintf(", jobs/ (%d replays' per-job records)", st.Runs())
		}
		if c.Site != nil {
			for _, sf := range c.Site.Configured {
				fmt.Fprintln(env.Stdout, sf.Summary)
			}
		}
		fmt.Fprintf(env.Stdout, "%s: %d runs; wrote %s, manifest.json%s into %s\n", experiment, st.Runs(),
			strings.Join(files, ", "), jobs, out)
		return nil
	}
	return &sweep.Study[Result]{Plan: plan, Compute: st.Run, Codec: Codec, Write: report}, nil
}

// Out is the study's output folder (the package function Out), set as
// d's shard folder; with --jobs it sets jobsDir to its jobs/ (refused
// with --cache: a run taken from the cache has no per-job records).
func (c *Common) Out(experiment string, f sweep.Flags, d *sweep.Dist, jobsDir *string) (string, error) {
	out := Out(experiment, f)
	if f.Bool("jobs") {
		if d.Cache != "" {
			return "", fmt.Errorf("--jobs with --cache: a run taken from the cache has no per-job records; drop one of them")
		}
		*jobsDir = filepath.Join(out, "jobs")
	}
	d.Out = out
	return out, nil
}

// WriteManifest writes the folder's manifest.json: the trace as an input
// (embedded or a file), the seeds of a study that draws some
// (agents-arrive's agents; a replay has none) and the files written.
func (c *Common) WriteManifest(env sweep.Env, d *sweep.Dist, out string, stored Stored, seeds []int64, files []string) error {
	_, _, embedded := Builtin(c.Path)
	m := env.Manifest()
	m.Inputs = append(m.Inputs, manifest.NewStoredInput("trace", c.Name, embedded, stored.Bytes, stored.SHA256))
	m.Inputs = append(m.Inputs, c.Site.Inputs()...)
	if seeds != nil {
		m.Seeds = slices.Clone(seeds)
	}
	m.Workers = d.Workers
	return m.Write(out, env.Start, files)
}

// CustomInputs are the flags that make a trace study's run custom: another
// log, window, pool, study config, site configuration or platform file. Without --out such a run writes into
// CustomOut's folder, not the command's own.
var CustomInputs = []string{"trace", "window", "pool", "config", "slurm-conf", "kueue", "sshare", "platform"}

// CustomOutOf is CustomOut's folder when f gives a custom input, else "".
func CustomOutOf(command string, f sweep.Flags) string {
	given := map[string]string{}
	for _, name := range CustomInputs {
		if v, ok := f[name]; ok {
			given[name] = v
		}
	}
	if len(given) == 0 {
		return ""
	}
	return CustomOut(command, given)
}

// CustomOut is the folder of a custom trace-study run,
// results/<command>-custom-<digest>: the digest (8 hex digits of SHA-256)
// covers the custom inputs as given (pool as a number) and the bytes of
// the config file, so that runs with other inputs never overwrite each
// other and the same run (or slurm-script's shards of it) finds the same
// folder again. given maps a flag of CustomInputs to its value.
func CustomOut(command string, given map[string]string) string {
	var b []byte
	for _, name := range CustomInputs {
		v, ok := given[name]
		if !ok {
			continue
		}
		if name == "pool" {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				v = strconv.Itoa(n)
			}
		}
		b = fmt.Appendf(b, "%s=%q\n", name, v)
		if name == "config" || name == "platform" || slices.Contains(SiteFlags, name) {
			// An unreadable file fails the run itself with a clear error.
			if data, err := os.ReadFile(v); err == nil {
				b = fmt.Appendf(b, "%s-sha256=%s\n", name, manifest.Digest(data))
			}
		}
	}
	return filepath.Join("results", command+"-custom-"+manifest.Digest(b)[:8])
}

// CustomArgs finds the flags of CustomInputs in a command's arguments as
// written (--window 0:86400 or --window=0:86400); nil when there are none.
func CustomArgs(args []string) map[string]string {
	var given map[string]string
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, v, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !slices.Contains(CustomInputs, name) {
			continue
		}
		if !hasValue && i+1 < len(args) {
			v = args[i+1]
		}
		if given == nil {
			given = map[string]string{}
		}
		given[name] = v
	}
	return given
}

// parseWindowAt reads --window START:END: each end whole seconds after
// the log's start (21772800), days after it (252d, 252.5d), or a date
// (1998-12-01) at midnight in the log's time zone (its header's
// TimeZoneString, else its TimeZone offset; h nil: dates refused). END
// may be empty: to the log's end.
func parseWindowAt(s string, h *swf.Header) (from, until int64, err error) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, fmt.Errorf("--window %q: want START:END in seconds, days or dates after the log's start, e.g. 21772800:24192000, 252d:280d or 1998-12-01:1998-12-29", s)
	}
	if from, err = windowEnd(strings.TrimSpace(a), h); err != nil || from < 0 {
		return 0, 0, fmt.Errorf("--window %q: START: %v", s, orNegative(err))
	}
	if strings.TrimSpace(b) != "" {
		if until, err = windowEnd(strings.TrimSpace(b), h); err != nil || until <= from {
			return 0, 0, fmt.Errorf("--window %q: END must be a whole number of seconds (or days, or a date) after START%s", s, errSuffix(err))
		}
	}
	return from, until, nil
}

func orNegative(err error) error {
	if err == nil {
		return fmt.Errorf("before the log's start")
	}
	return err
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

// windowEnd reads one end of --window.
func windowEnd(s string, h *swf.Header) (int64, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		x, err := strconv.ParseFloat(d, 64)
		if err != nil || x < 0 || x > 1e6 || x*86400 != math.Trunc(x*86400) {
			return 0, fmt.Errorf("%q: want days ≥ 0 such as 252d", s)
		}
		return int64(x * 86400), nil
	}
	if strings.Count(s, "-") == 2 && len(s) == 10 {
		if h == nil {
			return 0, fmt.Errorf("%q: a date needs the log's header; give seconds or days here", s)
		}
		if h.UnixStartTime <= 0 {
			return 0, fmt.Errorf("%q: the log's header has no UnixStartTime; give seconds or days", s)
		}
		loc := time.UTC
		if l, err := time.LoadLocation(h.TimeZoneString); h.TimeZoneString != "" && err == nil {
			loc = l
		} else if h.HasTimeZone {
			loc = time.FixedZone("log", int(h.TimeZone))
		}
		t, err := time.ParseInLocation("2006-01-02", s, loc)
		if err != nil {
			return 0, fmt.Errorf("%q: not a date YYYY-MM-DD", s)
		}
		return t.Unix() - h.UnixStartTime, nil
	}
	x, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: want whole seconds, days (252d) or a date (YYYY-MM-DD)", s)
	}
	return x, nil
}

// OutFor is the out folder of the trace study command given its flags as
// written (slurm-script's merge job needs it): CustomOut's folder when
// they name a custom input, else its DefaultOut.
func OutFor(command string) func(args []string) string {
	return func(args []string) string {
		if given := CustomArgs(args); given != nil {
			return CustomOut(command, given)
		}
		return DefaultOut[command]
	}
}

// readPlatform is --platform FILE, else the config's platform: key (nil:
// none; docs/platform.md). Its GPUs are the pool; a pool given beside it
// must be the same (trace.Read says so).
func readPlatform(f sweep.Flags, cfg *configs.StudyConfig) (*platform.Spec, error) {
	if !f.Has("platform") {
		return cfg.Platform, nil
	}
	spec, err := configs.ReadPlatform(f["platform"])
	if err != nil {
		return nil, fmt.Errorf("--platform: %w", err)
	}
	return spec, nil
}
