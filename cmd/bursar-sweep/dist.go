package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bursar-hpc/bursar/internal/interrupt"
	"github.com/bursar-hpc/bursar/sweep"
	"github.com/urfave/cli/v2"
)

// distFlags are the flags of every sweep command that split a sweep over
// processes or machines and make it resumable.
func distFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "shard", Usage: "run only shard `I/N` of the runs (I counts from 0; balanced by expected cost) and write " +
			"--out/shard-I-of-N.json instead of the outputs; bursar-sweep merge turns the N files into them"},
		&cli.StringFlag{Name: "cache", Usage: "keep every run's result in `FOLDER` under a content address; a rerun or a resumed sweep computes only what is missing"},
	}
}

// notRecorded are the flags that do not change what a sweep computes or
// writes, and that a shard file therefore does not record.
var notRecorded = []string{"shard", "out", "workers", "quiet", "cache"}

// readDist reads --workers, --shard and --cache and the flags a shard
// file records into how the command's study runs (sweep.Run); under
// merge, the shards merge handed it.
func readDist(c *cli.Context) (*sweep.Dist, error) {
	d := &sweep.Dist{Workers: c.Int("workers"), Cache: c.String("cache"), Command: c.Command.Name, Stdout: sweepStdout(c)}
	if d.Workers < 1 {
		return nil, fmt.Errorf("--workers must be at least 1, got %d", d.Workers)
	}
	if c.IsSet("shard") {
		sh, err := sweep.ParseShard(c.String("shard"))
		if err != nil {
			return nil, err
		}
		d.Shard = &sh
	}
	if c.IsSet("cache") && d.Cache == "" {
		return nil, fmt.Errorf("--cache must name a folder")
	}
	args, err := recordedArgs(c)
	if err != nil {
		return nil, err
	}
	d.Args = args
	d.Merged, _ = c.Context.Value(mergeKey{}).(*sweep.ShardSet)
	return d, nil
}

// recordedArgs are the command's flags as set, in the command's flag
// order, as --name=value; config paths are made absolute so that merge
// finds them from another folder.
func recordedArgs(c *cli.Context) ([]string, error) {
	var args []string
	for _, f := range c.Command.Flags {
		name := f.Names()[0]
		if !c.IsSet(name) || slices.Contains(notRecorded, name) {
			continue
		}
		switch f.(type) {
		case *cli.StringFlag:
			v := c.String(name)
			if name == "config" {
				abs, err := filepath.Abs(v)
				if err != nil {
					return nil, fmt.Errorf("--config %s: %w", v, err)
				}
				v = abs
			}
			args = append(args, "--"+name+"="+v)
		case *cli.StringSliceFlag:
			for _, v := range c.StringSlice(name) {
				if name == "config" {
					abs, err := filepath.Abs(v)
					if err != nil {
						return nil, fmt.Errorf("--%s %s: %w", name, v, err)
					}
					v = abs
				}
				args = append(args, "--"+name+"="+v)
			}
		case *cli.BoolFlag, *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag, *cli.Float64Flag, *cli.DurationFlag:
			// fmt prints each of these as its flag parser reads it
			// (floats in the shortest form that parses back exactly).
			args = append(args, fmt.Sprintf("--%s=%v", name, c.Value(name)))
		default:
			return nil, fmt.Errorf("internal: flag --%s of type %T cannot be recorded for a shard", name, f)
		}
	}
	return args, nil
}

// mergeKey carries the shards that merge replays a command with.
type mergeKey struct{}

// runJob runs a command's job as d says (sweep.Run); Ctrl-C (or SIGTERM)
// cancels the runs, and then nothing is written.
func runJob(c *cli.Context, job sweep.Job, d *sweep.Dist) error {
	ctx, stop := interrupt.Context(c.Context)
	defer stop()
	return sweep.Run(ctx, job, *d)
}

func mergeCommand() *cli.Command {
	return &cli.Command{
		Name:      "merge",
		Usage:     "merge the shard files of a sweep or trace study run with --shard into its outputs",
		ArgsUsage: "DIR|FILE…",
		Description: "Reads the shard files (shard-I-of-N.json) in the given folders (or the files given),\n" +
			"checks that they are the complete shards of one sweep (one program build, one command\n" +
			"and flags, one plan; every shard once; a missing one is named), then replays the\n" +
			"sweep command with the shards' runs instead of computing them: the same tables,\n" +
			"summary.json, runs.csv, runs.parquet, latencies.json and figures as the unsharded\n" +
			"command, byte for byte. The trace studies (trace, budget-knobs, agents-arrive) merge\n" +
			"the same way. Config files named by --config, and a trace named by --trace (relative\n" +
			"to the folder merge runs in), must still be where (and what) they were.\n\n" +
			"Example:\n" +
			"   for i in 0 1 2; do bursar-sweep paper --shard $i/3 --out /tmp/shards & done; wait\n" +
			"   bursar-sweep merge --out results/paper /tmp/shards",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "output `FOLDER`", DefaultText: "the first DIR"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return fmt.Errorf("merge needs the folders (or files) holding the shard files")
			}
			set, err := sweep.FindShardSet(c.Args().Slice())
			if err != nil {
				return err
			}
			if findStudy(set.Command) == nil {
				return fmt.Errorf("%s: the shards are of %q, which is not a study of this program (want one of %s)", set.Files[0], set.Command, strings.Join(studyNames(), ", "))
			}
			out := c.String("out")
			if out == "" {
				out = set.Folder
			}
			// Replay the command that made the shards, on the same path
			// from results to files as when it runs unsharded.
			argv := append([]string{c.App.Name, set.Command}, set.Args...)
			argv = append(argv, "--out="+out, "--quiet")
			app := newApp(appPolicies(c))
			app.Writer, app.ErrWriter = c.App.Writer, c.App.ErrWriter
			if err := app.RunContext(context.WithValue(c.Context, mergeKey{}, set), argv); err != nil {
				return err
			}
			fmt.Fprintf(sweepStdout(c), "merge: %d shards of `%s %s` into %s\n", set.Len(), set.Command, strings.Join(set.Args, " "), out)
			return nil
		},
	}
}
