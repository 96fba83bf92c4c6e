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
	total := 0
	for i, p := range plans {
		out[i] = &Results{Plan: p, Metrics: make([]engine.Metrics, p.NumRuns())}
		total += p.NumRuns()
	}

	var mu sync.Mutex
	done := 0
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
launch:
	for pi, p := range plans {
		for ri := range p.NumRuns() {
			// Go blocks while the pool is full; look at the context
			// before each launch so that a cancel stops the queue at once.
			if gctx.Err() != nil {
				break launch
			}
			g.Go(func() error {
				if gctx.Err() != nil {
					return gctx.Err()
				}
				pt, s := p.Run(ri)
				res, err := engine.Run(s, engine.Options{})
				if err != nil {
					return fmt.Errorf("%s: run %d (%s, seed %d): %w", p.Experiment, ri, pt.Label(), s.Seed, err)
				}
				out[pi].Metrics[ri] = res.Metrics
				mu.Lock()
				defer mu.Unlock()
				done++
				if opt.Progress != nil {
					opt.Progress(done, total)
				}
				return nil
			})
		}
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
