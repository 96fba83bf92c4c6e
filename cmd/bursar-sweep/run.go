package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/internal/atomicfile"
	"github.com/bursar-hpc/bursar/policy/registry"
	"github.com/bursar-hpc/bursar/replay"
	"github.com/urfave/cli/v2"
)

// policyHelp lists reg's policies for --help, one line each: its name and
// its descriptor's doc line.
func policyHelp(reg *registry.Registry) string {
	var b strings.Builder
	for _, d := range reg.Descriptors() {
		fmt.Fprintf(&b, "  %-10s %s\n", d.Name, d.Doc)
	}
	return b.String()
}

func runCommand(reg *registry.Registry) *cli.Command {
	flags := append(knobFlags("scenario knobs:"),
		&cli.StringFlag{Name: "out", Usage: "folder for metrics.json, journal.jsonl, series.csv and report.html", Value: filepath.Join("results", "run")},
		&cli.StringFlag{Name: "scenario", Usage: "run this scenario file (YAML, docs/scenarios.md; - reads standard input); knob flags given edit it"},
		&cli.StringFlag{Name: "policy", Usage: "run under this admission policy: " + strings.Join(reg.Names(), ", ") + " (the file's knobs for it, else its defaults; docs/policies.md)"},
		// The study commands' --quiet, which the README lists among the
		// shared flags: a script that passes it to every command must not
		// fail on run. run shows no progress, so it changes nothing.
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress on stderr, as for the study commands (run shows none; its report is printed either way)"},
		&cli.BoolFlag{Name: "print-scenario", Usage: "print the effective scenario (the file or the paper's, with the knob flags applied) as YAML and exit"},
	)
	return &cli.Command{
		Name:  "run",
		Usage: "simulate one scenario and print its report",
		Description: "Simulates the paper's five-campaign scenario (victim, adaptive-sci, naive-sci, storm,\n" +
			"backfill; plus the probe with --probe), or the scenario file given with --scenario, on the\n" +
			"broker and prints the report: grant paths, the victim's isolation, the storms' back\n" +
			"pressure, science per credit, the flow envelopes and utilization. With the defaults\n" +
			"(seed 7) it prints the published numbers. Writes metrics.json, journal.jsonl, series.csv\n" +
			"and report.html (an interactive replay of the run, one self-contained file) into --out.\n" +
			"Exits non-zero if the run reports a violated invariant.\n\n" +
			"The policies (--policy; docs/policies.md):\n" + policyHelp(reg) + "\n" +
			"  bursar-sweep run --print-scenario --storms 2 > my.yaml   # the effective scenario as YAML\n" +
			"  bursar-sweep run --scenario my.yaml                      # the same run (docs/scenarios.md)\n" +
			"  bursar-sweep run --policy quota                          # the same workload under a baseline (docs/policies.md)",
		Flags: flags,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("run takes no arguments, got %q (knobs are flags, e.g. --seed 11)", c.Args().Slice())
			}
			s, err := effectiveScenario(c)
			if err != nil {
				return err
			}
			if c.Bool("print-scenario") {
				_, err := c.App.Writer.Write(configs.FormatScenario(s))
				return err
			}
			for _, w := range s.Warnings() {
				fmt.Fprintf(c.App.ErrWriter, "bursar-sweep run: warning: %s\n", w)
			}
			res, err := engine.Run(s, engine.Options{Journal: true, Series: true})
			if err != nil {
				return err
			}
			if err := engine.WriteReport(c.App.Writer, res); err != nil {
				return err
			}
			out := c.String("out")
			if err := writeRunOutputs(out, res); err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "\nwrote journal.jsonl (%d records), metrics.json, series.csv and report.html into %s\n", res.JournalRecords, out)
			// The outputs are written (they show what went wrong), but a
			// run whose invariant broke must not look like a success.
			return res.CheckInvariants()
		},
	}
}

// writeRunOutputs writes a run's files into out, each atomically.
func writeRunOutputs(out string, res *engine.Result) error {
	if err := atomicfile.Write(filepath.Join(out, "metrics.json"), engine.MetricsFile(res)); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(out, "journal.jsonl"), res.Journal); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(out, "series.csv"), engine.SeriesCSV(res)); err != nil {
		return err
	}
	return atomicfile.WriteFunc(filepath.Join(out, "report.html"), func(w io.Writer) error { return replay.Write(w, res) })
}
