package policy

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// The closed forms of repeat.go against stepping, tick by tick, the very
// expressions Tick evaluates: on random buckets, rates, drains, credits,
// charges and spans, bit for bit after every span. The values are drawn
// to cross binades (a bucket filling from empty, credits draining through
// powers of two), to hit the clamps (full and empty buckets), and to meet
// ties (rates and charges with few significant bits: 0.5, 0.75, 3, ...).

// drawMagnitude draws a positive value over many binades: either few
// significant bits (ties and exact sums) or a full mantissa.
func drawMagnitude(t *rapid.T, name string, minExp, maxExp int) float64 {
	e := rapid.IntRange(minExp, maxExp).Draw(t, name+"-exp")
	if rapid.Bool().Draw(t, name+"-short") {
		return math.Ldexp(float64(rapid.IntRange(1, 15).Draw(t, name+"-bits")), e)
	}
	return math.Ldexp(rapid.Float64Range(1, 2).Draw(t, name+"-mantissa"), e)
}

// drawSpan draws a number of ticks: a fixed one, or about as many as a
// value x moving by step a tick takes to cross a few binades (so that the
// span ends near a binade's edge or a clamp as often as not).
func drawSpan(t *rapid.T, x, step float64) int {
	if rapid.Bool().Draw(t, "span-crosses") && step > 0 {
		n := math.Abs(x) / step * rapid.Float64Range(0.2, 4).Draw(t, "span-binades")
		return int(math.Max(1, math.Min(n, 400000)))
	}
	return rapid.SampledFrom([]int{1, 2, 3, 17, 1000, 65536, 300000}).Draw(t, "span")
}

func TestRefillStepsIsStepping(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rate := drawMagnitude(t, "rate", -12, 7)
		if rapid.Bool().Draw(t, "zero-rate") {
			rate = 0
		}
		drain := float64(rapid.SampledFrom([]int{0, 0, 0, 1, 2, 64}).Draw(t, "drain"))
		bucket := drawMagnitude(t, "bucket", -2, 40)
		if rapid.Bool().Draw(t, "infinite-bucket") {
			bucket = math.Inf(1)
		}
		var tok float64
		switch rapid.IntRange(0, 3).Draw(t, "start") {
		case 0: // empty
		case 1:
			tok = bucket
		case 2: // where the rate's rounding to the fill's ulp ties or nearly does
			_, er := math.Frexp(rate)
			tok = math.Min(bucket, math.Ldexp(rapid.Float64Range(0.5, 1).Draw(t, "tokens-mantissa"), er+rapid.IntRange(49, 55).Draw(t, "tokens-over-rate")))
		default:
			tok = math.Min(bucket, drawMagnitude(t, "tokens", -12, 40))
		}
		if math.IsInf(tok, 0) {
			tok = 1e6
		}
		for range rapid.IntRange(1, 4).Draw(t, "spans") {
			n := drawSpan(t, tok, math.Abs(rate-drain))
			want := tok
			for range n {
				want = clamp(want+rate-drain, 0, bucket)
			}
			got := TokenBucket{Rate: rate, Depth: bucket}.Steps(tok, drain, n)
			if !sameBits(got, want) {
				t.Fatalf("from %v (rate %v, drain %v, bucket %v), %d ticks: stepping gives %v (%x), the closed form %v (%x)",
					tok, rate, drain, bucket, n, want, math.Float64bits(want), got, math.Float64bits(got))
			}
			tok = want
		}
	})
}

func TestSumStepsIsStepping(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		x := drawMagnitude(t, "x", -30, 45)
		near := rapid.Bool().Draw(t, "near-tie")
		switch rapid.IntRange(0, 3).Draw(t, "sign") {
		case 0:
			x = -x
		case 1:
			x = 0
		}
		adds := make([]float64, rapid.IntRange(1, 4).Draw(t, "addends"))
		for i := range adds {
			switch rapid.IntRange(0, 2).Draw(t, "addend-kind") {
			case 0: // a lease's charge: GPUs × price × multiplier ÷ 3600, taken off
				gpus := rapid.IntRange(1, 256).Draw(t, "gpus")
				m := rapid.SampledFrom([]float64{1, 1.5, 2.25, 3}).Draw(t, "multiplier")
				price := rapid.SampledFrom(basePrice[:]).Draw(t, "price")
				adds[i] = -float64(float64(gpus)*price*m) / 3600
			case 1: // a utilization
				adds[i] = 1 - float64(rapid.IntRange(0, 128).Draw(t, "free"))/128
			default:
				adds[i] = drawMagnitude(t, "addend", -20, 10)
				if rapid.Bool().Draw(t, "negative") {
					adds[i] = -adds[i]
				}
			}
		}
		if near && x != 0 {
			// x's ulp near twice the lowest bit of the first addend,
			// where the addend's rounding to x's ulp ties or nearly does.
			_, ea := math.Frexp(adds[0])
			frac, _ := math.Frexp(x)
			x = math.Ldexp(frac, ea+rapid.IntRange(49, 55).Draw(t, "x-over-addend"))
		}
		var step float64
		for _, a := range adds {
			step += a
		}
		for range rapid.IntRange(1, 4).Draw(t, "spans") {
			n := drawSpan(t, x, math.Abs(step))
			want := x
			for range n {
				for _, a := range adds {
					want -= -a // as account writes it: credits -= charge
				}
			}
			got := sumSteps(x, adds, n)
			if !sameBits(got, want) {
				t.Fatalf("from %v adding %v, %d ticks: stepping gives %v (%x), the closed form %v (%x)",
					x, adds, n, want, math.Float64bits(want), got, math.Float64bits(got))
			}
			x = want
		}
	})
}

// A bucket of the trace mapping (R a small fraction of a GPU, B deep
// enough for a wide job's estimate) refilling over months: the closed form
// takes few steps where stepping takes millions, and lands on the same
// bits.
func TestRefillStepsDeepBucket(t *testing.T) {
	const rate, bucket = 0.0754187, 233729.3
	n := 3_100_000
	want := 0.0
	for range n {
		want = clamp(want+rate-0, 0, bucket)
	}
	if got := (TokenBucket{Rate: rate, Depth: bucket}).Steps(0, 0, n); !sameBits(got, want) {
		t.Fatalf("closed form %v, stepping %v", got, want)
	}
	// And draining while the campaign holds 2 GPUs over its rate.
	want2 := want
	for range 100_000 {
		want2 = clamp(want2+rate-2, 0, bucket)
	}
	if got := (TokenBucket{Rate: rate, Depth: bucket}).Steps(want, 2, 100_000); !sameBits(got, want2) {
		t.Fatalf("draining: closed form %v, stepping %v", got, want2)
	}
}
