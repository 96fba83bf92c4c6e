package sweep

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/internal/manifest"
)

// The sweep studies' setup and reports: the command line reads the shared
// sweep flags into a Setup, and PaperJob, GridJob and CompareJob turn the
// configs into the job (SweepJob) whose report reduces the results,
// writes the data, the table, the figure and manifest.json.

// CompareExperiment is the embedded config of `compare`
// (configs/compare.yaml).
const CompareExperiment = "compare"

// Setup is what a sweep command's flags say beyond the runner's (Dist).
type Setup struct {
	Env   Env
	Quick bool
	Seeds []int64 // nil: the config's
	// SeedsByCount says the seeds were given as a count (--nseeds).
	SeedsByCount bool
	Workers      int
	Out          string
	// Given are the config files given with --config; the other configs
	// are the embedded ones.
	Given []string
}

// plan is cfg's plan with the flags' seeds; seeds that make it too big
// are blamed on the flag that gave them, not on the config.
func (s *Setup) plan(cfg *configs.Config) (*configs.Plan, error) {
	plan, err := cfg.Plan(s.Quick, s.Seeds)
	var many *configs.TooManySeedsError
	if errors.As(err, &many) {
		if s.SeedsByCount {
			return nil, fmt.Errorf("--nseeds %d: %w", len(s.Seeds), err)
		}
		return nil, fmt.Errorf("--seeds: %w", err)
	}
	return plan, err
}

// PaperJob runs paper experiments, writes their data, prints their tables
// and draws their figures, the figures last so that a failing figure costs
// nothing else.
func PaperJob(s *Setup, label string, cfgs []*configs.Config) (*SweepJob, error) {
	if s.Out == "" {
		return nil, fmt.Errorf("--out must name a folder")
	}
	var plans []*configs.Plan
	for _, cfg := range cfgs {
		plan, err := s.plan(cfg)
		if err != nil {
			return nil, err
		}
		// Check the shape before spending any CPU on runs.
		if err := CheckPaperPlan(plan); err != nil {
			return nil, err
		}
		plans = append(plans, plan)
	}
	return &SweepJob{Name: label, Plans: plans, Write: func(results []*Results, _ bool) error {
		return reportPaper(s, label, cfgs, plans, results)
	}}, nil
}

// reportPaper reduces and writes the paper experiments' results.
func reportPaper(s *Setup, label string, cfgs []*configs.Config, plans []*configs.Plan, results []*Results) error {
	elapsed := time.Since(s.Env.Start)
	paper, err := ReducePaper(results)
	if err != nil {
		return err
	}
	if err := WriteData(s.Out, results, paper.Summary.JSON()); err != nil {
		return err
	}
	w := s.Env.Stdout
	if err := paper.WriteTables(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %d runs in %.1f s; wrote %s, %s and %s into %s\n", label, len(runIDs(plans)), elapsed.Seconds(),
		SummaryFile, RunsFile, LatenciesFile, s.Out)
	figErr := paper.WriteFigures(s.Out, s.Env.Format)
	files := slices.Clone(DataFiles)
	var figs []string
	for _, p := range plans {
		figs = append(figs, FigureFile(p.Experiment, s.Env.Format))
	}
	if figErr == nil {
		files = append(files, figs...)
	}
	if err := s.writeManifest(cfgs, plans, files); err != nil {
		return err
	}
	if figErr != nil {
		return fmt.Errorf("the data files are in %s, but drawing failed: %w", s.Out, figErr)
	}
	fmt.Fprintf(w, "%s: drew %s into %s\n", label, strings.Join(figs, ", "), s.Out)
	return nil
}

// GridJob is the job of a config's grid (`bursar-sweep sweep`).
func GridJob(s *Setup, cfg *configs.Config) (*SweepJob, error) {
	plan, err := s.plan(cfg)
	if err != nil {
		return nil, err
	}
	return &SweepJob{Name: cfg.Experiment, Plans: []*configs.Plan{plan}, Write: func(results []*Results, _ bool) error {
		return reportGrid(s, cfg, plan, results)
	}}, nil
}

// reportGrid reduces and writes a config's grid (sweep).
func reportGrid(s *Setup, cfg *configs.Config, plan *configs.Plan, results []*Results) error {
	if err := WriteData(s.Out, results, GenericSummary(results[0])); err != nil {
		return err
	}
	if err := s.writeManifest([]*configs.Config{cfg}, []*configs.Plan{plan}, DataFiles); err != nil {
		return err
	}
	w := s.Env.Stdout
	if err := WriteGenericTable(w, results[0]); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %d grid points × %d seeds = %d runs in %.1f s; wrote %s, %s and %s into %s\n",
		cfg.Experiment, len(plan.Points), len(plan.Seeds), plan.NumRuns(), time.Since(s.Env.Start).Seconds(),
		SummaryFile, RunsFile, LatenciesFile, s.Out)
	// The figure last, as for the paper: a failing figure costs
	// nothing else.
	if err := WriteSweepFigure(s.Out, s.Env.Format, results[0]); err != nil {
		return fmt.Errorf("the data files are in %s, but drawing failed: %w", s.Out, err)
	}
	fmt.Fprintf(w, "%s: drew %s into %s\n", cfg.Experiment, SweepFigureFile(s.Env.Format), s.Out)
	return nil
}

// CompareJob is the job of the policy comparison (`bursar-sweep compare`).
func CompareJob(s *Setup, cfg *configs.Config) (*SweepJob, error) {
	plan, err := s.plan(cfg)
	if err != nil {
		return nil, err
	}
	return &SweepJob{Name: CompareExperiment, Plans: []*configs.Plan{plan}, Write: func(results []*Results, _ bool) error {
		return reportCompare(s, cfg, plan, results)
	}}, nil
}

// reportCompare reduces and writes the comparison.
func reportCompare(s *Setup, cfg *configs.Config, plan *configs.Plan, results []*Results) error {
	elapsed := time.Since(s.Env.Start)
	if err := WriteData(s.Out, results, GenericSummary(results[0])); err != nil {
		return err
	}
	w := s.Env.Stdout
	// The printed table is also the folder's table.txt.
	if err := PrintTableFile(w, s.Out, func(w io.Writer) error { return WriteCompareTable(w, results[0]) }); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %d policies × %d seeds = %d runs in %.1f s; wrote %s, %s, %s and %s into %s\n",
		CompareExperiment, len(plan.Points), len(plan.Seeds), plan.NumRuns(), elapsed.Seconds(),
		SummaryFile, RunsFile, LatenciesFile, TableFile, s.Out)
	figErr := WritePoliciesFigure(s.Out, s.Env.Format, results[0])
	files := append(slices.Clone(DataFiles), TableFile)
	if figErr == nil {
		files = append(files, PoliciesFigureFile(s.Env.Format))
	}
	if err := s.writeManifest([]*configs.Config{cfg}, []*configs.Plan{plan}, files); err != nil {
		return err
	}
	if figErr != nil {
		return fmt.Errorf("the data files are in %s, but drawing failed: %w", s.Out, figErr)
	}
	fmt.Fprintf(w, "%s: drew %s into %s\n", CompareExperiment, PoliciesFigureFile(s.Env.Format), s.Out)
	return nil
}

// writeManifest writes the manifest of an experiment folder: the
// configs as used (the embedded YAML, or the file given with --config), the
// seeds that ran, the worker count and the files written.
func (s *Setup) writeManifest(cfgs []*configs.Config, plans []*configs.Plan, files []string) error {
	m := s.Env.Manifest()
	given := s.Given
	for _, cfg := range cfgs {
		var src []byte
		var err error
		embedded := !slices.Contains(given, cfg.File)
		if embedded {
			src, err = configs.DefaultSource(cfg.Experiment)
		} else {
			src, err = os.ReadFile(cfg.File)
		}
		if err != nil {
			return fmt.Errorf("manifest: %w", err)
		}
		m.Inputs = append(m.Inputs, manifest.NewInput("config", cfg.File, embedded, src))
	}
	for _, p := range plans {
		for _, seed := range p.Seeds {
			if !slices.Contains(m.Seeds, seed) {
				m.Seeds = append(m.Seeds, seed)
			}
		}
	}
	m.Quick = s.Quick
	m.Workers = s.Workers
	m.Warnings = PlanWarnings(plans)
	return m.Write(s.Out, s.Env.Start, files)
}

// PlanWarnings are the warnings of the plans' scenarios
// (engine.Scenario.Warnings), each once, with the first point that has
// it: a grid that runs a degenerate scenario says so (issue 34 §7). The
// embedded configs have none.
func PlanWarnings(plans []*configs.Plan) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range plans {
		for i := range p.Points {
			pt := &p.Points[i]
			for _, w := range pt.Scenario.Warnings() {
				if !seen[w] {
					seen[w] = true
					out = append(out, fmt.Sprintf("%s, %s: %s", p.Experiment, pt.Label(), w))
				}
			}
		}
	}
	return out
}
