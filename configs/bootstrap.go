package configs

import (
	"math"

	"gopkg.in/yaml.v3"
)

// Bootstrap is the resampling the sweep's reductions use for the 95 %
// interval of a pooled percentile (sweep.PooledCI): how many resamples of
// the seeds, and the seed of the random stream that draws them. It is part
// of the config, not of the machine, so that an interval is the same bit
// for bit wherever and however the sweep runs.
type Bootstrap struct {
	// Seed seeds the resampling stream (each grid point and quantity
	// derives its own stream from it, see sweep.PooledCI).
	Seed uint64
	// Resamples is the number of bootstrap resamples.
	Resamples int
}

// DefaultBootstrap is the resampling of a config without a bootstrap key:
// 2000 resamples, enough that the 2.5 % and 97.5 % quantiles of the
// resampled statistic move by less than one pooled observation between
// streams in the paper's grids, and seed 1.
var DefaultBootstrap = Bootstrap{Seed: 1, Resamples: 2000}

// maxResamples bounds bootstrap.resamples, so that a typo (an extra
// zero or three) fails at once instead of stalling the reduction.
const maxResamples = 1_000_000

var bootstrapKeys = []string{"seed", "resamples"}

// bootstrap reads the optional top-level key
//
//	bootstrap: {seed: 1, resamples: 2000}
//
// Either field may be left out and keeps its default.
func (p *parser) bootstrap(n *yaml.Node, path string) (Bootstrap, error) {
	b := DefaultBootstrap
	err := p.mapping(n, path, bootstrapKeys, func(name string, _, v *yaml.Node) error {
		key := join(path, name)
		var x int64
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" {
			return p.errAt(v, key, "want a whole number, got %s", describe(v))
		}
		if v.Decode(&x) != nil {
			return p.errAt(v, key, "%s is out of range (at most %d)", v.Value, int64(math.MaxInt64))
		}
		switch name {
		case "seed":
			if x < 0 {
				return p.errAt(v, key, "the bootstrap seed must not be negative, got %d", x)
			}
			b.Seed = uint64(x)
		case "resamples":
			if x < 1 || x > maxResamples {
				return p.errAt(v, key, "want between 1 and %d resamples, got %d", maxResamples, x)
			}
			b.Resamples = int(x)
		}
		return nil
	})
	return b, err
}
