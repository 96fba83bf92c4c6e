package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/bursar-hpc/bursar/internal/atomicfile"
	"github.com/bursar-hpc/bursar/internal/outlock"
	"golang.org/x/sync/errgroup"
)

// Options tune how a study's runs are computed (Execute, ExecuteStudy,
// Job.Execute).
type Options struct {
	// Workers is how many runs go at once; 0 or less means one per CPU.
	Workers int
	// Progress, when set, hears after every finished run how many of the
	// total are done. Calls never overlap and done only grows.
	Progress func(done, total int)
	// Runs, when not nil, are the only runs to compute (one shard's, see
	// Job.Shards), by index among the study's runs (the runs of a sweep's
	// plans count on from one plan to the next); the others' results
	// stay zero.
	Runs []int
	// Cache, when set, is asked for each run first; computed runs are
	// stored in it as soon as they finish, so that an interrupted study
	// keeps them.
	Cache *Cache
}

// runs are a study's runs as the worker pool and the cache see them:
// how many, how to compute run i, and run i's content address and cache
// entry. Execute (engine plans) and ExecuteStudy (any other result) are
// two ways of filling one in, so every study shares one pool and one
// cache path.
type runs[R any] struct {
	n   int
	run func(i int) (R, error)
	// key is run i's content address; entry is what its cache entry
	// holds (JSON); decode reads an entry's checked body back for key.
	key    func(i int) string
	entry  func(i int, key string, r *R) (any, error)
	decode func(key string, body []byte) (R, error)
}

// execute computes the runs (or opt.Runs) on a bounded pool of workers
// and returns the results by run index, whatever the worker count and the
// order in which runs finish. With a cache, a run whose entry is there
// and sound is decoded instead of computed, and a computed run is stored
// at once, so an interrupted study resumes where it stopped.
//
// When ctx is cancelled no new run starts, the runs in flight finish, and
// execute returns an error wrapping the cancellation cause; it never
// returns partial results.
func (rs runs[R]) execute(ctx context.Context, opt Options) ([]R, error) {
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	ids := opt.Runs
	if ids == nil {
		ids = make([]int, rs.n)
		for i := range ids {
			ids[i] = i
		}
	}
	out := make([]R, rs.n)
	total := len(ids)
	var mu sync.Mutex
	done := 0
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for _, i := range ids {
		// Go blocks while the pool is full; look at the context before
		// each launch so that a cancel stops the queue at once.
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if gctx.Err() != nil {
				return gctx.Err()
			}
			r, err := rs.one(i, opt.Cache)
			if err != nil {
				return err
			}
			out[i] = r
			mu.Lock()
			defer mu.Unlock()
			done++
			if opt.Progress != nil {
				opt.Progress(done, total)
			}
			return nil
		})
	}
	err := g.Wait()
	if cerr := ctx.Err(); cerr != nil && (err != nil || done < total) {
		return nil, fmt.Errorf("interrupted after %d of %d runs, nothing reduced or written: %w", done, total, context.Cause(ctx))
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// one computes run i, or takes it from cache (when not nil) and stores
// it there once computed.
func (rs runs[R]) one(i int, cache *Cache) (R, error) {
	var zero R
	var key string
	if cache != nil {
		key = rs.key(i)
		data, err := cache.read(key)
		if err != nil {
			return zero, err
		}
		if data != nil {
			r, derr := rs.fromEntry(key, data)
			cache.counted(derr)
			if derr == nil {
				return r, nil
			}
		}
	}
	r, err := rs.run(i)
	if err != nil {
		return zero, err
	}
	if cache != nil {
		e, err := rs.entry(i, key, &r)
		if err != nil {
			return zero, err
		}
		if err := cache.write(key, frameEntry(append(marshalWire(e), '\n'))); err != nil {
			return zero, err
		}
	}
	return r, nil
}

// fromEntry checks an entry's frame and decodes its body for key.
func (rs runs[R]) fromEntry(key string, data []byte) (R, error) {
	body, err := unframeEntry(data)
	if err != nil {
		var zero R
		return zero, err
	}
	return rs.decode(key, body)
}

// decodeEntry parses an entry's body into e (a pointer to the entry's
// type) and checks that it holds key, whose field entryKey reads.
func decodeEntry(body []byte, e any, key string, entryKey func() string) error {
	if err := json.Unmarshal(body, e); err != nil {
		return fmt.Errorf("%w: %v", errCorrupt, err)
	}
	if k := entryKey(); k != key {
		return fmt.Errorf("%w: holds key %s", errCorrupt, k)
	}
	return nil
}

// A Job is a study bound to its results: a plan of runs, the function
// that computes run i, the codec of a run's result and the report that
// turns all results into the outputs. Study (any result, a StudyPlan) and
// SweepJob (engine plans) are its two forms; Run drives either, so every
// study shares one worker pool, one shard, merge and cache path.
type Job interface {
	// Label names the job in messages (the command or the experiment).
	Label() string
	// Len is the number of runs.
	Len() int
	// Shards splits the runs into n shards of about equal expected cost
	// (the LPT rule, assignLPT); each shard's run indices ascend.
	Shards(n int) [][]int
	// Execute computes the runs opt names and keeps their results.
	Execute(ctx context.Context, opt Options) error
	// EncodeShard is the file of shard sh (the runs ids, computed), made
	// by command with args.
	EncodeShard(command string, args []string, sh Shard, ids []int) ([]byte, error)
	// Merge takes every run's result from a complete set of shards.
	Merge(set *ShardSet) error
	// Report writes the outputs and prints the table; merged says the
	// results came from shards.
	Report(merged bool) error
}

// Study is a Job of runs whose results are R: the plan, the function
// that computes run i, the codec of a result (shard files and cache
// entries) and the report.
type Study[R any] struct {
	Plan    *StudyPlan
	Compute func(i int) (R, error)
	Codec   StudyCodec[R]
	Write   func(rs []R, merged bool) error
	results []R
}

func (s *Study[R]) Label() string        { return s.Plan.Command }
func (s *Study[R]) Len() int             { return len(s.Plan.Runs) }
func (s *Study[R]) Shards(n int) [][]int { return AssignStudyShards(s.Plan, n) }

func (s *Study[R]) Execute(ctx context.Context, opt Options) (err error) {
	s.results, err = ExecuteStudy(ctx, s.Plan, s.Compute, s.Codec, opt)
	return err
}

func (s *Study[R]) EncodeShard(command string, args []string, sh Shard, ids []int) ([]byte, error) {
	f, err := NewStudyShardFile(command, args, s.Plan, sh, ids, s.results, s.Codec)
	if err != nil {
		return nil, err
	}
	return f.Encode(), nil
}

func (s *Study[R]) Merge(set *ShardSet) (err error) {
	s.results, err = MergeStudy(set, s.Plan, s.Codec)
	return err
}

func (s *Study[R]) Report(merged bool) error { return s.Write(s.results, merged) }

// Dist says where a Job's results come from: computed here (all runs or
// one shard's, with or without a cache), or from the shards merge found.
type Dist struct {
	Workers int
	// Shard, when set, computes only that shard's runs and writes its
	// file into Out instead of the outputs.
	Shard *Shard
	Out   string
	// Cache, when not empty, is the cache folder.
	Cache string
	// Command and Args are the invocation a shard file records.
	Command string
	Args    []string
	// Merged, when set, are the shards whose results to report.
	Merged *ShardSet
	// Progress, when set, is called once with the number of runs to
	// compute; it returns the progress callback and what to call when
	// they are over (err: why they stopped).
	Progress func(runs int) (update func(done, total int), end func(err error))
	// Stdout hears the cache's counts and the shard's line.
	Stdout io.Writer
}

// Run drives job as d says: under merge, its results come from the shard
// files; with a shard, only that shard's runs are computed and its file
// is written into d.Out (and nothing is reported: there is nothing to
// reduce); with a cache, runs are taken from and stored in it, and its
// counts are printed (also after an interruption, when they say what a
// rerun will reuse). A cancelled ctx stops the runs, and then nothing is
// written.
//
// A whole run or a merge holds its folder's lock (internal/outlock) from
// here until its outputs are written: a second command into the same
// folder fails at once. Shards write files of their own into one folder,
// at once by design, and take none.
func Run(ctx context.Context, job Job, d Dist) error {
	if d.Shard == nil && d.Out != "" {
		lock, err := outlock.Take(d.Out, "bursar-sweep "+job.Label())
		if err != nil {
			return err
		}
		defer lock.Release()
	}
	if d.Merged != nil {
		if err := job.Merge(d.Merged); err != nil {
			return err
		}
		return job.Report(true)
	}
	opt := Options{Workers: d.Workers}
	if d.Shard != nil {
		opt.Runs = job.Shards(d.Shard.Of)[d.Shard.Index]
		if opt.Runs == nil {
			opt.Runs = []int{} // more shards than runs: this one has none
		}
	}
	if d.Cache != "" {
		cache, err := OpenCache(d.Cache)
		if err != nil {
			return err
		}
		opt.Cache = cache
	}
	var end func(error)
	if d.Progress != nil {
		n := len(opt.Runs)
		if opt.Runs == nil {
			n = job.Len()
		}
		opt.Progress, end = d.Progress(n)
	}
	err := job.Execute(ctx, opt)
	if end != nil {
		end(err)
	}
	if opt.Cache != nil {
		fmt.Fprintf(d.Stdout, "%s: cache %s: %s\n", job.Label(), d.Cache, opt.Cache.Stats())
	}
	if err != nil {
		return err
	}
	if d.Shard == nil {
		return job.Report(false)
	}
	if d.Out == "" {
		return fmt.Errorf("--out must name a folder")
	}
	data, err := job.EncodeShard(d.Command, d.Args, *d.Shard, opt.Runs)
	if err != nil {
		return err
	}
	path := filepath.Join(d.Out, ShardFileName(*d.Shard))
	if err := atomicfile.Write(path, data); err != nil {
		return err
	}
	fmt.Fprintf(d.Stdout, "%s: shard %s: %d runs; wrote %s (bursar-sweep merge %s makes the outputs once all %d shards are there)\n",
		job.Label(), d.Shard, len(opt.Runs), path, d.Out, d.Shard.Of)
	return nil
}
