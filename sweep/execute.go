package sweep

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/engine"
	"golang.org/x/sync/errgroup"
)

// Results are the metrics of every run of one plan, by run index (see
// configs.Plan: the seeds of a point are adjacent, in seed order).
type Results struct {
	Plan    *configs.Plan
	Metrics []engine.Metrics
}

// seedsOf returns the metrics of grid point pt, in seed order.
func (r *Results) seedsOf(pt int) []engine.Metrics {
	n := len(r.Plan.Seeds)
	return r.Metrics[pt*n : (pt+1)*n]
}

// Options tune Execute.
type Options struct {
	// Workers is how many runs go at once; 0 or less means one per CPU.
	Workers int
	// Progress, when set, hears after every finished run how many of the
	// total are done. Calls never overlap and done only grows.
	Progress func(done, total int)
	// Runs, when not nil, are the only runs to compute (one shard's, see
	// AssignShards); the other runs' metrics stay zero.
	Runs []RunID
	// Cache, when set, is asked for each run first; computed runs are
	// stored in it as soon as they finish, so that an interrupted sweep
	// keeps them.
	Cache *Cache
}

// Execute runs every plan's runs on one bounded pool of workers, so that
// the paper's three experiments share the machine without a gap between
// them. Each run's metrics land at its own index, which makes the results
// (and everything reduced from them) the same whatever the worker count
// and the order in which runs finish.
//
// When ctx is cancelled no new run starts, the runs in flight finish (one
// takes tens of milliseconds), and Execute returns an error wrapping the
// cancellation cause; it never returns partial results.
func Execute(ctx context.Context, plans []*configs.Plan, opt Options) ([]*Results, error) {
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	out := make([]*Results, len(plans))
	var ids []RunID
	for i, p := range plans {
		out[i] = &Results{Plan: p, Metrics: make([]engine.Metrics, p.NumRuns())}
		if opt.Runs == nil {
			for ri := range p.NumRuns() {
				ids = append(ids, RunID{i, ri})
			}
		}
	}
	if opt.Runs != nil {
		ids = opt.Runs
	}
	total := len(ids)

	var mu sync.Mutex
	done := 0
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for _, id := range ids {
		// Go blocks while the pool is full; look at the context before
		// each launch so that a cancel stops the queue at once.
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if gctx.Err() != nil {
				return gctx.Err()
			}
			p, ri := plans[id.Plan], id.Run
			m, err := runOne(p, ri, opt.Cache)
			if err != nil {
				return err
			}
			out[id.Plan].Metrics[ri] = *m
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

// runOne computes run ri of p, or takes it from cache (when not nil) and
// stores it there once computed.
func runOne(p *configs.Plan, ri int, cache *Cache) (*engine.Metrics, error) {
	pt, s := p.Run(ri)
	var key string
	if cache != nil {
		key = RunKey(&s)
		m, err := cache.lookup(key)
		if err != nil || m != nil {
			return m, err
		}
	}
	res, err := engine.Run(s, engine.Options{})
	if err != nil {
		return nil, fmt.Errorf("%s: run %d (%s, seed %d): %w", p.Experiment, ri, pt.Label(), s.Seed, err)
	}
	if cache != nil {
		if err := cache.store(key, &s, &res.Metrics); err != nil {
			return nil, err
		}
	}
	return &res.Metrics, nil
}
