package configs

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSeeds reads --seeds: non-negative integers, comma-separated.
func ParseSeeds(s string) ([]int64, error) {
	var seeds []int64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		v, err := strconv.ParseInt(part, 10, 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("--seeds: %q is not a seed (want comma-separated non-negative integers, e.g. 7,11,13)", part)
		}
		seeds = append(seeds, v)
	}
	if err := CheckSeeds(seeds); err != nil {
		return nil, fmt.Errorf("--seeds: %w", err)
	}
	return seeds, nil
}

// MaxSeeds bounds --nseeds; configs.MaxRuns bounds the whole sweep anyway.
const MaxSeeds = 10000

// SeedSequence is --nseeds n: the published seeds 7, 11, 13 and then the
// following primes, so that more seeds always extend the paper's set.
func SeedSequence(n int) ([]int64, error) {
	if n < 1 || n > MaxSeeds {
		return nil, fmt.Errorf("--nseeds must be between 1 and %d, got %d", MaxSeeds, n)
	}
	seeds := make([]int64, 0, n)
	for x := int64(7); len(seeds) < n; x += 2 {
		prime := true
		for d := int64(3); d*d <= x; d += 2 {
			if x%d == 0 {
				prime = false
				break
			}
		}
		if prime {
			seeds = append(seeds, x)
		}
	}
	return seeds, nil
}
