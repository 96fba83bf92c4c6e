package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/bursar-hpc/bursar/internal/manifest"
	"github.com/bursar-hpc/bursar/internal/outlock"
	"github.com/urfave/cli/v2"
)

// programName is the program the manifests name.
const programName = "bursar-sweep"

// newManifest starts the manifest of a folder that command writes, with
// the program's command line less --cache: the cache is a folder on the
// machine that ran the command, and it never changes a number (an entry
// is keyed by the program's version and every input of the run:
// sweep.RunKey, StudyPlan.RunKey), so a record meant for reproducing the
// folder leaves it out, as shard files do (notRecorded).
func newManifest(command string, start time.Time) *manifest.Manifest {
	m := manifest.New(programName, os.Args, command, start)
	m.LeaveOut("cache")
	return m
}

// runOutputs are the files `run` writes, in the order the manifest lists
// them.
var runOutputs = []string{"metrics.json", "journal.jsonl", "series.csv", "report.html"}

// withRunManifest wraps the run command so that its folder gets a
// manifest.json once its outputs are written. The effective scenario is
// read back from the metrics.json the run wrote (its "scenario" object is
// exactly what was simulated), so the manifest follows whatever way the
// scenario was given.
func withRunManifest(cmd *cli.Command) *cli.Command {
	action := cmd.Action
	cmd.Action = func(c *cli.Context) error {
		start := time.Now()
		// The folder is the run's until its manifest is written: a second
		// run into it fails at once (internal/outlock).
		if !c.Bool("print-scenario") {
			lock, err := outlock.Take(c.String("out"), "bursar-sweep run")
			if err != nil {
				return err
			}
			defer lock.Release()
		}
		if err := action(c); err != nil {
			return err
		}
		out := c.String("out")
		// A run that wrote no outputs (printing the scenario, say) gets no
		// manifest: there is nothing in the folder for it to vouch for, and
		// a metrics.json older than this run is another run's. File times
		// come from the kernel's coarse clock, which may lag time.Now by a
		// few milliseconds: hence the second of slack.
		if c.Bool("print-scenario") {
			return nil
		}
		metricsPath := filepath.Join(out, "metrics.json")
		if fi, err := os.Stat(metricsPath); err != nil || fi.ModTime().Before(start.Add(-time.Second)) {
			return nil
		}
		metrics, err := os.ReadFile(metricsPath)
		if err != nil {
			return fmt.Errorf("manifest: %w", err)
		}
		var doc struct {
			Scenario json.RawMessage `json:"scenario"`
			Warnings []string        `json:"warnings"`
		}
		if err := json.Unmarshal(metrics, &doc); err != nil || len(doc.Scenario) == 0 {
			return fmt.Errorf("manifest: %s holds no scenario object", filepath.Join(out, "metrics.json"))
		}
		name, embedded := "the default scenario with the knob flags", true
		if c.IsSet("scenario") {
			name, embedded = c.String("scenario"), false
		}
		m := newManifest("run", start)
		m.Warnings = doc.Warnings
		m.Inputs = append(m.Inputs, manifest.NewInlineInput("scenario", name, embedded, doc.Scenario))
		var knobs struct {
			Seed *int64 `json:"seed"`
		}
		if json.Unmarshal(doc.Scenario, &knobs) == nil && knobs.Seed != nil {
			m.Seeds = append(m.Seeds, *knobs.Seed)
		}
		m.Workers = 1
		return m.Write(out, start, runOutputs)
	}
	return cmd
}

// configFlagPaths are the paths given with --config (one for the
// experiment commands and sweep, any number for paper).
func configFlagPaths(c *cli.Context) []string {
	for _, f := range c.Command.Flags {
		switch f := f.(type) {
		case *cli.StringSliceFlag:
			if f.Name == "config" {
				return c.StringSlice("config")
			}
		case *cli.StringFlag:
			if f.Name == "config" && c.String("config") != "" {
				return []string{c.String("config")}
			}
		}
	}
	return nil
}
