package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/internal/atomicfile"
	"github.com/bursar-hpc/bursar/sweep"
	"github.com/urfave/cli/v2"
)

// distSetup is what --shard and --cache say.
type distSetup struct {
	shard *sweep.Shard // nil: every run
	cache string       // "": no cache
	// command and args are the invocation a shard file records.
	command string
	args    []string
}

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

func readDist(c *cli.Context, st *sweepSetup) error {
	if c.IsSet("shard") {
		sh, err := sweep.ParseShard(c.String("shard"))
		if err != nil {
			return err
		}
		st.dist.shard = &sh
	}
	st.dist.cache = c.String("cache")
	if c.IsSet("cache") && st.dist.cache == "" {
		return fmt.Errorf("--cache must name a folder")
	}
	st.dist.command = c.Command.Name
	args, err := recordedArgs(c)
	if err != nil {
		return err
	}
	st.dist.args = args
	return nil
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

// mergedShards returns the shards merge handed to the command, if any.
func mergedShards(c *cli.Context) *sweep.ShardSet {
	set, _ := c.Context.Value(mergeKey{}).(*sweep.ShardSet)
	return set
}

// prepare sets the runs to compute (one shard's) and the cache.
func (d *distSetup) prepare(plans []*configs.Plan, opt *sweep.Options) error {
	if d.shard != nil {
		opt.Runs = sweep.AssignShards(plans, d.shard.Of)[d.shard.Index]
		if opt.Runs == nil {
			opt.Runs = []sweep.RunID{} // more shards than runs: this one has none
		}
	}
	if d.cache != "" {
		cache, err := sweep.OpenCache(d.cache)
		if err != nil {
			return err
		}
		opt.Cache = cache
	}
	return nil
}

// finish reports the cache's counts (also after an interruption, when
// they say what a rerun will reuse) and, for a shard, writes its file and
// returns no results: there is nothing to reduce.
func (d *distSetup) finish(c *cli.Context, st *sweepSetup, label string, opt *sweep.Options, results []*sweep.Results, err error) ([]*sweep.Results, error) {
	if opt.Cache != nil {
		fmt.Fprintf(sweepStdout(c), "%s: cache %s: %s\n", label, d.cache, opt.Cache.Stats())
	}
	if err != nil || d.shard == nil {
		return results, err
	}
	if st.out == "" {
		return nil, fmt.Errorf("--out must name a folder")
	}
	f := sweep.NewShardFile(d.command, d.args, results, *d.shard, opt.Runs)
	path := filepath.Join(st.out, sweep.ShardFileName(*d.shard))
	if err := atomicfile.Write(path, f.Encode()); err != nil {
		return nil, err
	}
	fmt.Fprintf(sweepStdout(c), "%s: shard %s: %d runs; wrote %s (bursar-sweep merge %s makes the outputs once all %d shards are there)\n",
		label, d.shard, len(opt.Runs), path, st.out, d.shard.Of)
	return nil, nil
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
			var names []string
			for _, a := range c.Args().Slice() {
				fi, err := os.Stat(a)
				if err != nil {
					return err
				}
				if !fi.IsDir() {
					names = append(names, a)
					continue
				}
				found, err := filepath.Glob(filepath.Join(a, "shard-*-of-*.json"))
				if err != nil {
					return err
				}
				if len(found) == 0 {
					return fmt.Errorf("%s holds no shard files (shard-I-of-N.json)", a)
				}
				names = append(names, found...)
			}
			// A sweep's shards (sweep.ShardFormat) or a trace study's
			// (sweep.StudyShardFormat), told apart by the first file.
			var (
				sweepSet   *sweep.ShardSet
				studySet   *sweep.StudyShardSet
				sweepFiles []*sweep.ShardFile
				studyFiles []*sweep.StudyShardFile
				study      bool
			)
			for i, name := range names {
				data, err := os.ReadFile(name)
				if err != nil {
					return err
				}
				isStudy := sweep.ShardFileFormat(data) == sweep.StudyShardFormat
				if i == 0 {
					study = isStudy
				} else if isStudy != study {
					return fmt.Errorf("%s and %s are shards of different kinds (a sweep's and a trace study's): not one sweep", names[0], name)
				}
				if study {
					f, err := sweep.DecodeStudyShardFile(name, data)
					if err != nil {
						return err
					}
					studyFiles = append(studyFiles, f)
					continue
				}
				f, err := sweep.DecodeShardFile(name, data)
				if err != nil {
					return err
				}
				sweepFiles = append(sweepFiles, f)
			}
			var (
				command string
				args    []string
				shards  int
				err     error
			)
			if study {
				if studySet, err = sweep.CollectStudyShards(names, studyFiles); err != nil {
					return err
				}
				command, args, shards = studySet.Command, studySet.Args, len(studySet.Shards)
			} else {
				if sweepSet, err = sweep.CollectShards(names, sweepFiles); err != nil {
					return err
				}
				command, args, shards = sweepSet.Command, sweepSet.Args, len(sweepSet.Shards)
			}
			out := c.String("out")
			if out == "" {
				out = c.Args().First()
				if fi, _ := os.Stat(out); fi != nil && !fi.IsDir() {
					out = filepath.Dir(out)
				}
			}
			// Replay the command that made the shards, on the same path
			// from results to files as when it runs unsharded.
			argv := append([]string{c.App.Name, command}, args...)
			argv = append(argv, "--out="+out, "--quiet")
			app := newApp()
			app.Writer, app.ErrWriter = c.App.Writer, c.App.ErrWriter
			ctx := context.WithValue(c.Context, mergeKey{}, sweepSet)
			if study {
				ctx = context.WithValue(c.Context, studyMergeKey{}, studySet)
			}
			if err := app.RunContext(ctx, argv); err != nil {
				return err
			}
			fmt.Fprintf(sweepStdout(c), "merge: %d shards of `%s %s` into %s\n", shards, command, strings.Join(args, " "), out)
			return nil
		},
	}
}
