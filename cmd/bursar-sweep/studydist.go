package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/bursar-hpc/bursar/internal/atomicfile"
	"github.com/bursar-hpc/bursar/sweep"
	"github.com/urfave/cli/v2"
)

// The trace studies (trace, budget-knobs, agents-arrive) take --shard and
// --cache with the sweep commands' meaning (distFlags); their runs go
// through sweep.ExecuteStudy, their shard files through the same merge.

// readStudyDist reads --shard and --cache of a trace study and the flags a
// shard file records.
func readStudyDist(c *cli.Context) (*distSetup, error) {
	d := &distSetup{command: c.Command.Name, cache: c.String("cache")}
	if c.IsSet("shard") {
		sh, err := sweep.ParseShard(c.String("shard"))
		if err != nil {
			return nil, err
		}
		d.shard = &sh
	}
	if c.IsSet("cache") && d.cache == "" {
		return nil, fmt.Errorf("--cache must name a folder")
	}
	args, err := recordedArgs(c)
	if err != nil {
		return nil, err
	}
	d.args = args
	return d, nil
}

// studyMergeKey carries the study shards that merge replays a command with.
type studyMergeKey struct{}

// mergedStudyShards returns the study shards merge handed to the command.
func mergedStudyShards(c *cli.Context) *sweep.StudyShardSet {
	set, _ := c.Context.Value(studyMergeKey{}).(*sweep.StudyShardSet)
	return set
}

// runStudy runs a study's plan as the command's flags say: under merge,
// the results come from the shard files; with --shard, only that shard's
// runs are computed and its file is written into out (and no results are
// returned: there is nothing to reduce); with --cache, runs are taken
// from and stored in the cache, whose counts are printed (also after an
// interruption, when they say what a rerun will reuse). Ctrl-C (or
// SIGTERM) cancels the runs, and then nothing is written.
func runStudy[R any](c *cli.Context, d *distSetup, out string, plan *sweep.StudyPlan, codec sweep.StudyCodec[R],
	opt sweep.StudyOptions, exec func(context.Context, sweep.StudyOptions) ([]R, error)) ([]R, error) {
	if set := mergedStudyShards(c); set != nil {
		return sweep.MergeStudy(set, plan, codec)
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if d.shard != nil {
		opt.Runs = sweep.AssignStudyShards(plan, d.shard.Of)[d.shard.Index]
		if opt.Runs == nil {
			opt.Runs = []int{} // more shards than runs: this one has none
		}
	}
	if d.cache != "" {
		cache, err := sweep.OpenCache(d.cache)
		if err != nil {
			return nil, err
		}
		opt.Cache = cache
	}
	results, err := exec(ctx, opt)
	if opt.Cache != nil {
		fmt.Fprintf(sweepStdout(c), "%s: cache %s: %s\n", plan.Command, d.cache, opt.Cache.Stats())
	}
	if err != nil || d.shard == nil {
		return results, err
	}
	if out == "" {
		return nil, fmt.Errorf("--out must name a folder")
	}
	f, err := sweep.NewStudyShardFile(d.command, d.args, plan, *d.shard, opt.Runs, results, codec)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(out, sweep.ShardFileName(*d.shard))
	if err := atomicfile.Write(path, f.Encode()); err != nil {
		return nil, err
	}
	fmt.Fprintf(sweepStdout(c), "%s: shard %s: %d runs; wrote %s (bursar-sweep merge %s makes the outputs once all %d shards are there)\n",
		plan.Command, d.shard, len(opt.Runs), path, out, d.shard.Of)
	return nil, nil
}
