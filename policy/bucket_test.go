package policy

import (
	"testing"

	"pgregory.net/rapid"
)

// clamp is the prototype's min(hi, max(lo, x)), written out for the tests
// as the oracle of TokenBucket.Refill.
func clamp(x, lo, hi float64) float64 { return pyMin(hi, pyMax(lo, x)) }

// drawBucket draws a bucket, a drain and a fill (drawFill): rates and
// depths over many binades, drains of whole GPUs, of any size, or near
// the rate (a flow's use).
func drawBucket(t *rapid.T) (k TokenBucket, drain, fill float64) {
	k = TokenBucket{Rate: drawMagnitude(t, "rate", -12, 7), Depth: drawMagnitude(t, "depth", -2, 40)}
	if rapid.Bool().Draw(t, "zero-rate") {
		k.Rate = 0
	}
	switch rapid.IntRange(0, 3).Draw(t, "drain-kind") {
	case 0:
	case 1:
		drain = float64(rapid.IntRange(1, 64).Draw(t, "gpus"))
	case 2:
		drain = drawMagnitude(t, "drain", -12, 7)
	default:
		drain = 2 * k.Rate * drawFraction(t, "drain-of-rate")
	}
	return k, drain, drawFill(t, k, drain)
}

// drawFill draws a fill of bucket k in [0, Depth]: empty, full, anywhere
// between, or a few thousand ticks' moves with drain below the top
// (where a rising line meets the clamp).
func drawFill(t *rapid.T, k TokenBucket, drain float64) (fill float64) {
	switch rapid.IntRange(0, 4).Draw(t, "fill-kind") {
	case 0:
	case 1:
		fill = k.Depth
	case 2:
		fill = k.Depth * drawFraction(t, "fill")
	default:
		below := float64(rapid.IntRange(0, 3000).Draw(t, "ticks-below-top"))
		fill = max(0, k.Depth-below*(k.Rate-drain))
	}
	return fill
}

// drawFraction draws a fraction in [0, 1) with a full mantissa as often
// as not (whose sums round).
func drawFraction(t *rapid.T, name string) float64 {
	return float64(rapid.Uint64Range(0, 1<<53-1).Draw(t, name)) / (1 << 53)
}

// A bucket's fill stays within [0, Depth] whatever is drawn from it, and
// a tick is the prototype's clamp(T + R − drain, 0, B) bit for bit.
func TestTokenBucketStaysWithinItsDepth(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k, _, fill := drawBucket(t)
		for i := range rapid.IntRange(1, 50).Draw(t, "ticks") {
			drain := float64(rapid.IntRange(0, 64).Draw(t, "held"))
			if rapid.Bool().Draw(t, "drawn") {
				drain = 2 * k.Rate * drawFraction(t, "drawn-of-rate")
			}
			next := k.Refill(fill, drain)
			if !(next >= 0 && next <= k.Depth) {
				t.Fatalf("tick %d: %v with %v drawn refills to %v, outside [0, %v]", i, fill, drain, next, k.Depth)
			}
			if want := clamp(fill+k.Rate-drain, 0, k.Depth); !sameBits(next, want) {
				t.Fatalf("tick %d: Refill(%v, %v) = %v, the prototype's clamp gives %v", i, fill, drain, next, want)
			}
			if k.AtRest(fill, drain) != sameBits(next, fill) {
				t.Fatalf("tick %d: AtRest(%v, %v) = %v, but the tick moves the fill to %v", i, fill, drain, !sameBits(next, fill), next)
			}
			fill = next
		}
	})
}

// Every point of a line is what stepping tick by tick gives: after j of
// its n ticks the fill is t + j·d, bit for bit, and Steps over any span
// is stepping too.
func TestTokenBucketLineIsStepping(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k, drain, fill := drawBucket(t)
		for try := range 4 { // several fills of one bucket
			if try > 0 {
				fill = drawFill(t, k, drain)
			}
			limit := rapid.IntRange(1, 5000).Draw(t, "limit")
			n, d := k.Line(fill, drain, limit)
			if n < 0 || n > limit {
				t.Fatalf("Line(%v, %v, %d) = %d ticks, outside [0, %d]", fill, drain, limit, n, limit)
			}
			stepped := fill
			for j := 1; j <= n; j++ {
				stepped = k.Refill(stepped, drain)
				on := fill // a fixed point keeps its very bits
				if d != 0 {
					on = fill + float64(j)*d
				}
				if !sameBits(on, stepped) {
					t.Fatalf("from %v (rate %v, drain %v, depth %v): tick %d of a %d-tick line of slope %v is %v, stepping gives %v",
						fill, k.Rate, drain, k.Depth, j, n, d, on, stepped)
				}
			}
			span := rapid.IntRange(0, 3000).Draw(t, "span")
			want := fill
			for range span {
				want = k.Refill(want, drain)
			}
			if got := k.Steps(fill, drain, span); !sameBits(got, want) {
				t.Fatalf("from %v (rate %v, drain %v, depth %v), %d ticks: Steps gives %v, stepping %v", fill, k.Rate, drain, k.Depth, span, got, want)
			}
		}
	})
}

// A worked line: a bucket of depth 100 refilling 0.5 a tick with 0.25
// drawn rises by exactly 0.25 a tick from 10. The closed form holds while
// every partial sum stays inside 10's binade [8, 16): the tick from 15.5
// first adds 0.5 and reaches 16, so the line is the 22 ticks up to 15.5.
// Stepped on, the fill reaches the depth and stays there.
func TestTokenBucketWorkedLine(t *testing.T) {
	k := TokenBucket{Rate: 0.5, Depth: 100}
	if n, d := k.Line(10, 0.25, 1000); n != 22 || d != 0.25 {
		t.Fatalf("Line(10, 0.25) = %d ticks of %v; want 22 ticks of 0.25", n, d)
	}
	// Under a depth of 12 a line rising 1 a tick from 10 ends at the top,
	// not at 10's binade's edge 16: past 12 the clamp bites.
	if n, d := (TokenBucket{Rate: 1, Depth: 12}).Line(10, 0, 1000); n > 2 || 10+float64(n)*d > 12 {
		t.Fatalf("Line(10, 0) under a depth of 12 = %d ticks of %v, past the top", n, d)
	}
	if got := k.Steps(10, 0.25, 1000); got != 100 {
		t.Fatalf("1000 ticks from 10 reach %v, want the depth 100", got)
	}
	if !k.AtRest(100, 0.25) || k.AtRest(100, 1) {
		t.Fatal("a full bucket drawn on less than its rate is at rest, drawn on more it is not")
	}
	if got := k.Refill(0.25, 1); got != 0 {
		t.Fatalf("Refill(0.25, 1) = %v, want the floor 0", got)
	}
}
