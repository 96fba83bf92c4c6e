package kueueconf

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// quantity reads a Kubernetes resource quantity as a whole count of the
// resource (GPUs, or CPUs): a number with an optional decimal suffix (k,
// M, G, T) or binary one (Ki, Mi, Gi, Ti), or millis (m) rounded down
// ("500m" CPUs is 0 whole CPUs).
func quantity(s string) (int, error) {
	mult := 1.0
	for _, sfx := range []struct {
		s string
		m float64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"m", 1e-3}} {
		if rest, ok := strings.CutSuffix(s, sfx.s); ok {
			s, mult = rest, sfx.m
			break
		}
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || s == "" || strings.ContainsAny(s, "eEnNiIxX_") || x < 0 {
		return 0, fmt.Errorf("not a quantity ≥ 0 (8, 500m, 2k, 4Ki)")
	}
	v := math.Floor(x*mult + 1e-9)
	if v > math.MaxInt32 {
		return 0, fmt.Errorf("more than %d", math.MaxInt32)
	}
	return int(v), nil
}
