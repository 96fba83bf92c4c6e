package story

import (
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/hosts"
	"github.com/bursar-hpc/bursar/internal/atomicfile"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/sweep"
)

// DefaultOut is the study's folder without --out and without a custom
// input.
var DefaultOut = filepath.Join("results", "story")

// Quick is the --quick study: 28 days, seeds 1 and 2, no sensitivity
// runs (a few seconds; the test suite runs it).
func (st *Study) Quick() {
	st.Lab.Days = 28
	st.Seeds = []int64{1, 2}
	st.Users = st.Users[:st.Sensitive]
	st.HostSensitivity = false
}

// CustomFlags are the flags that change what the study computes: without
// --out, a run given any of them writes into OutFor's own folder, never
// into the committed results/story.
var CustomFlags = []string{"quick", "days", "seeds", "nseeds", "policies", "sensitivity-seeds"}

// OutFor is the folder of a run with flags f: --out, else
// results/story-quick for --quick alone, results/story-custom-<digest of
// the custom flags> for any other custom run, else results/story.
func OutFor(f sweep.Flags) string {
	if f.Has("out") {
		return f["out"]
	}
	var given []string
	for _, name := range CustomFlags {
		if f.Has(name) {
			given = append(given, name+"="+f[name])
		}
	}
	switch {
	case len(given) == 0:
		return DefaultOut
	case len(given) == 1 && given[0] == "quick=true":
		return DefaultOut + "-quick"
	}
	h := sha256.Sum256([]byte(strings.Join(given, "\n")))
	return DefaultOut + "-custom-" + hex.EncodeToString(h[:4])
}

// Configure lays the flags given over the study's defaults.
func (st *Study) Configure(f sweep.Flags) error {
	if f.Bool("quick") {
		st.Quick()
	}
	if f.Has("days") {
		st.Lab.Days = f.Int("days", 0)
		if st.Lab.Days < 7 || st.Lab.Days > 730 {
			return fmt.Errorf("--days must be between 7 and 730, got %s", f["days"])
		}
	}
	switch {
	case f.Has("seeds") && f.Has("nseeds"):
		return fmt.Errorf("give --seeds (a list) or --nseeds (a count), not both")
	case f.Has("seeds"):
		s, err := configs.ParseSeeds(f["seeds"])
		if err != nil {
			return fmt.Errorf("--seeds: %w", err)
		}
		st.Seeds = s
	case f.Has("nseeds"):
		n := f.Int("nseeds", 0)
		if n < 1 || n > 1000 {
			return fmt.Errorf("--nseeds must be between 1 and 1000, got %s", f["nseeds"])
		}
		st.Seeds = make([]int64, n)
		for i := range st.Seeds {
			st.Seeds[i] = int64(i + 1)
		}
	}
	if f.Has("policies") {
		st.Policies = nil
		for _, p := range strings.Split(f["policies"], ",") {
			if p = strings.TrimSpace(p); p != "" && !slices.Contains(st.Policies, p) {
				st.Policies = append(st.Policies, p)
			}
		}
	}
	if f.Has("sensitivity-seeds") {
		n := f.Int("sensitivity-seeds", -1)
		if n < 0 {
			return fmt.Errorf("--sensitivity-seeds must be 0 or more, got %s", f["sensitivity-seeds"])
		}
		if n == 0 {
			st.Users = st.Users[:st.Sensitive]
		}
		st.SensitiveSeeds = n
	}
	if err := st.Check(); err != nil {
		return fmt.Errorf("%w (--policies, --days, --seeds)", err)
	}
	return nil
}

// sharedInputs are what every run shares: the lab, the restart rule and
// the prices' rule, as canonical text.
func (st *Study) sharedInputs() string {
	l := st.Lab
	var b strings.Builder
	fmt.Fprintf(&b, "platform=%s\n", st.Platform)
	fmt.Fprintf(&b, "lab pool=%d days=%d load=%g season=%g season_days=%g mix=%v urgent=%g restart=%s\n",
		l.Pool, l.Days, l.Load, l.Season, l.SeasonDays, l.Mix, l.Urgent, st.Restart)
	for _, t := range l.Teams {
		fmt.Fprintf(&b, "team %s", t.Name)
		for _, p := range t.Projects {
			fmt.Fprintf(&b, " %s=%g", p.Name, p.Weight)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// NewPlan is the study's plan for the runner: one run per spec, its
// inputs the policy, the users' rules and the seed.
func (st *Study) NewPlan() *sweep.StudyPlan {
	p := &sweep.StudyPlan{Command: "story", Inputs: st.sharedInputs()}
	for _, sp := range st.Specs {
		p.Runs = append(p.Runs, sweep.StudyRun{Label: st.Label(sp),
			Inputs: fmt.Sprintf("policy=%s line=%q users=%s rules=%+v seed=%d hosts=%s", sp.Policy, sp.line(), st.Users[sp.Users].Name, st.Users[sp.Users].Rules, sp.Seed, hostsInput(sp.Hosts)),
			Cost:   st.registry().Cost(sp.Policy)})
	}
	return p
}

func hostsInput(h *hosts.Config) string {
	if h == nil {
		return "none"
	}
	return fmt.Sprintf("%+v", *h)
}

// Codec writes a result to shard files and cache entries exactly.
var Codec = sweep.GobCodec[Result]("a story result")

// FromConfig is the story job: the flags given laid over the study's
// defaults, the plan, the run of spec i, the codec and the report
// (summary.json, runs.csv, fig_story, table.txt, manifest.json, and with
// --jobs every run's per-job records). It sets where d writes.
func FromConfig(f sweep.Flags, env sweep.Env, d *sweep.Dist) (sweep.Job, error) {
	st := NewStudy()
	if env.Policies != nil {
		st.Registry = env.Policies
	}
	if err := st.Configure(f); err != nil {
		return nil, err
	}
	st.Plan()
	out := OutFor(f)
	d.Out = out
	jobsDir := ""
	if f.Bool("jobs") {
		if d.Cache != "" {
			return nil, fmt.Errorf("--jobs with --cache: a run taken from the cache has no per-job records; drop one of them")
		}
		jobsDir = filepath.Join(out, "jobs")
	}
	compute := func(i int) (Result, error) {
		sp := st.Specs[i]
		r, rep, err := st.RunSpec(sp)
		if err != nil || jobsDir == "" {
			return r, err
		}
		return r, writeJobs(filepath.Join(jobsDir, fileLabel(st, sp), "jobs.csv"), rep)
	}
	d.Progress = func(total int) (func(done, total int), func(error)) {
		fmt.Fprintf(env.Stderr, "story: %d runs (%s × %d populations × seeds), %d GPUs, %d days, %d workers\n",
			total, strings.Join(st.Policies, ", "), len(st.Users), st.Lab.Pool, st.Lab.Days, d.Workers)
		step := max(1, total/10)
		began := time.Now()
		return func(done, total int) {
			if done%step == 0 || done == total {
				fmt.Fprintf(env.Stderr, "  %d/%d runs done (%s)\n", done, total, time.Since(began).Round(time.Second))
			}
		}, nil
	}
	report := func(rs []Result, _ bool) error {
		sum := &Summary{Study: st, Runs: rs}
		files, err := Write(out, env.Format, sum)
		if err != nil {
			return err
		}
		if err := sweep.PrintTableFile(env.Stdout, out, func(w io.Writer) error { return PrintTable(w, sum) }); err != nil {
			return err
		}
		files = append(files, sweep.TableFile)
		m := env.Manifest()
		m.Seeds = slices.Clone(st.Seeds)
		m.Workers = d.Workers
		if err := m.Write(out, env.Start, files); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "story: %d runs; wrote %s, manifest.json into %s\n", len(rs), strings.Join(files, ", "), out)
		return nil
	}
	return &sweep.Study[Result]{Plan: st.NewPlan(), Compute: compute, Codec: Codec, Write: report}, nil
}

// fileLabel names a run's folder under jobs/: "budget-strategic-s3".
func fileLabel(st *Study, sp Spec) string {
	clean := strings.NewReplacer("=", "", ".", "p", ", ", "-", " ", "")
	return fmt.Sprintf("%s-%s-s%d", clean.Replace(sp.line()), clean.Replace(st.Users[sp.Users].Name), sp.Seed)
}

// JobColumns are jobs.csv's columns (docs/story.md, "Per-job records").
var JobColumns = []string{"job", "project", "team", "kind", "class", "declared", "gpus", "submit", "run", "estimate",
	"first_start", "end", "preemptions", "state", "in_park", "wait_s"}

// writeJobs writes a run's per-job records.
func writeJobs(path string, rep *Replayed) error {
	w, u, run := rep.W, rep.users, rep.Run
	return atomicfile.WriteFunc(path, func(out io.Writer) error {
		cw := csv.NewWriter(out)
		if err := cw.Write(JobColumns); err != nil {
			return err
		}
		i64 := func(x int64) string { return strconv.FormatInt(x, 10) }
		for j := range w.Jobs {
			jb, rec := &w.Jobs[j], &run.Records[j]
			decl := u.declared[j]
			if decl == policy.AnyClass {
				decl = jb.Class
			}
			state, end, wait := rec.State.String(), rec.End, ""
			if u.absorbed[j] {
				state, end = "in-park", jb.Submit+jb.Run
			}
			if u.start[j] >= 0 {
				wait = i64(u.start[j] - jb.Submit)
			}
			row := []string{i64(jb.Number), w.Campaigns[jb.Campaign].Name, w.Groups[w.Team[jb.Campaign]].Name, w.Kind[j].String(),
				jb.Class.String(), decl.String(), strconv.Itoa(jb.GPUs), i64(jb.Submit), i64(jb.Run), i64(jb.Estimate),
				i64(u.start[j]), i64(end), strconv.Itoa(rec.Preemptions), state, strconv.FormatBool(u.absorbed[j]), wait}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	})
}
