package main

import (
	"fmt"
	"time"

	"github.com/bursar-hpc/bursar/figures"
	"github.com/bursar-hpc/bursar/internal/manifest"

	"github.com/bursar-hpc/bursar/sweep"
	"github.com/urfave/cli/v2"
)

// study is a command that runs a study: its help and flags, and setup,
// which turns the parsed flags into the job the one runner drives
// (sweep.Run) and says where its outputs and progress go. The command
// skeleton (command) does the rest, the same for every study: its
// arguments, --workers, --shard, --cache, --quiet and merge.
type study struct {
	*cli.Command
	setup func(c *cli.Context, d *sweep.Dist) (sweep.Job, error)
	// outFor is the folder the study writes into without --out, given
	// its flags as written (slurm-script's merge job needs it); nil: its
	// --out default.
	outFor func(args []string) string
}

// studies is the registry of the commands that run a study, in --help
// order: a new study is one line here. merge and slurm-script find
// studies here.
func studies() []study {
	return append(paperExperiments(), // latency-price, overbooking, bucket
		paperCommand(),
		gridCommand(),
		compareCommand(),
		traceStudy(),
		budgetKnobsStudy(),
		arriveStudy(),
		storyStudy(),
	)
}

// findStudy is the registered study named name, or nil.
func findStudy(name string) *study {
	for _, s := range studies() {
		if s.Name == name {
			return &s
		}
	}
	return nil
}

// command is the study's command: the skeleton around setup.
func (s study) command() *cli.Command {
	cmd := s.Command
	cmd.Action = func(c *cli.Context) error {
		if c.NArg() > 0 {
			return fmt.Errorf("%s takes no arguments, got %q (options are flags, e.g. --out DIR; see --help)", c.Command.Name, c.Args().Slice())
		}
		d, err := readDist(c)
		if err != nil {
			return err
		}
		job, err := s.setup(c, d)
		if err != nil {
			return err
		}
		if c.Bool("quiet") {
			d.Progress = nil
		}
		return runJob(c, job, d)
	}
	return cmd
}

// out is the folder the study writes into without --out, given its
// flags as written.
func (s study) out(args []string) string {
	if s.outFor != nil {
		return s.outFor(args)
	}
	for _, f := range s.Flags {
		if sf, ok := f.(*cli.StringFlag); ok && sf.Name == "out" {
			return sf.Value
		}
	}
	return ""
}

// studyEnv is what a study's report takes from its command: stdout and
// stderr, --format, the start time and the folder's manifest.
func studyEnv(c *cli.Context) (sweep.Env, error) {
	start := time.Now()
	format, err := figures.ParseFormat(c.String("format"))
	if err != nil {
		return sweep.Env{}, fmt.Errorf("--format: %w", err)
	}
	return sweep.Env{Stdout: sweepStdout(c), Stderr: sweepStderr(c), Format: format, Start: start, Policies: appPolicies(c),
		Manifest: func() *manifest.Manifest { return newManifest(c.Command.Name, start) }}, nil
}

// givenFlags are the flags given on the command line, each as its parser
// read it: what a study's FromConfig lays over its config.
func givenFlags(c *cli.Context) sweep.Flags {
	f := sweep.Flags{}
	for _, fl := range c.Command.Flags {
		if name := fl.Names()[0]; c.IsSet(name) {
			f[name] = fmt.Sprint(c.Value(name))
		}
	}
	return f
}
