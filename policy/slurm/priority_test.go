package slurm

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestAgeFactorIsTheFormula: ageFactor, which skips the division for a
// job as old as MaxAge or older, gives the bits of min(max(a, 0) ÷
// MaxAge, 1) for ages around MaxAge (at it, one second either side),
// far below and above it, negative (submitted after the period's start)
// and for MaxAge not a whole number of seconds. A shortcut taken for
// younger jobs (a < MaxAge) fails here.
func TestAgeFactorIsTheFormula(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		maxAge := rapid.SampledFrom([]float64{1, 3, 1209600, 604800.5, 0.25, 1e18}).Draw(t, "max-age")
		at := rapid.IntRange(0, 1<<40).Draw(t, "at")
		var age int
		switch rapid.IntRange(0, 2).Draw(t, "near") {
		case 0:
			age = int(math.Floor(maxAge)) + rapid.IntRange(-1, 1).Draw(t, "by")
		default:
			age = rapid.IntRange(-1000, 3*1209600).Draw(t, "age")
		}
		want := min(max(float64(age), 0)/maxAge, 1)
		if got := ageFactor(at, at-age, maxAge); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("age %d, MaxAge %v: %v, the formula %v", age, maxAge, got, want)
		}
	})
}
