package engine

import (
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func hexFloat(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return v
}

// Vectors computed with CPython 3.11: random.Random(7) and friends.
func TestPyRandMatchesCPython(t *testing.T) {
	r := NewPyRand(7)
	for _, w := range []string{"0x1.4b9ad0f953a6ep-2", "0x1.34f0696513270p-3", "0x1.4d474883171ffp-1"} {
		require.Equal(t, hexFloat(t, w), r.Random())
	}
	for _, w := range []string{"0x1.4a62a411c9660p+8", "0x1.23259b5d8b790p+10"} {
		require.Equal(t, hexFloat(t, w), r.Uniform(200, 2000))
	}
	for _, w := range []string{"-0x1.f4f15cc123bd9p-3", "0x1.b24769de22593p-7", "-0x1.f54682d13210cp-4"} {
		require.Equal(t, hexFloat(t, w), r.Normal(0, 1))
	}
	// Go's Exp and glibc's may differ by an ulp: compare within 2 ulp.
	for _, w := range []string{"0x1.2e4934862d76fp-2", "0x1.e579b16ca391ap+0", "0x1.1e50a96ddcd97p-2"} {
		want, got := hexFloat(t, w), r.LogNormal(0, 1)
		require.LessOrEqual(t, ulps(want, got), uint64(2), "lognormal %v vs %v", want, got)
	}
}

func ulps(a, b float64) uint64 {
	x, y := math.Float64bits(a), math.Float64bits(b)
	if x > y {
		return x - y
	}
	return y - x
}

func TestPyRandSeeds(t *testing.T) {
	// A seed above 2^32 is split into two key words; 0 and a negative seed
	// seed like CPython (|seed|).
	require.Equal(t, hexFloat(t, "0x1.023e2261153dcp-1"), NewPyRand(1<<40+5).Random())
	require.Equal(t, hexFloat(t, "0x1.b0580f98a7dbep-1"), NewPyRand(0).Random())
	require.Equal(t, hexFloat(t, "0x1.e759ff97b7508p-3"), NewPyRand(-3).Random())
}

func TestNormalConstant(t *testing.T) {
	require.Equal(t, 4*math.Exp(-0.5)/math.Sqrt(2.0), nvMagicConst)
}
