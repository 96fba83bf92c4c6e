package policy

import (
	"math"
	mathbits "math/bits"
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

// binade reads off the bits what math.Frexp and math.Ldexp give, over
// every normal exponent repeatRun takes (from 2^−1000 up, where the ulp
// is subnormal below 2^−970, to the largest finite), either sign.
func TestBinadeIsFrexp(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e := rapid.OneOf(rapid.SampledFrom([]uint64{23, 24, 51, 52, 53, 54, 1023, 2045, 2046}), rapid.Uint64Range(23, 2046)).Draw(t, "exponent")
		bits := e<<52 | rapid.Uint64Range(0, 1<<52-1).Draw(t, "mantissa")
		if rapid.Bool().Draw(t, "negative") {
			bits |= 1 << 63
		}
		ax := math.Abs(math.Float64frombits(bits))
		_, exp := math.Frexp(ax)
		wantU := math.Ldexp(1, exp-53)
		wantX := int64(ax / wantU)
		X, u := binade(bits)
		if X != wantX || !sameBits(u, wantU) {
			t.Fatalf("%v: binade (%d, %v), Frexp and Ldexp (%d, %v)", math.Float64frombits(bits), X, u, wantX, wantU)
		}
	})
}

// within is min(n, room/step + 1), whether n binds or not, up to
// products that overflow 64 bits.
func TestWithinIsTheDivision(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.OneOf(rapid.Int64Range(1, 400000), rapid.Int64Range(1, math.MaxInt64)).Draw(t, "n")
		step := rapid.OneOf(rapid.Int64Range(1, 1000), rapid.Int64Range(1, 1<<53)).Draw(t, "step")
		room := rapid.OneOf(rapid.Int64Range(0, 1<<20), rapid.Int64Range(0, 1<<53)).Draw(t, "room")
		if rapid.Bool().Draw(t, "at-the-edge") {
			// room where n just binds or just does not.
			if hi, lo := mathbits.Mul64(uint64(n-1), uint64(step)); hi == 0 && lo < 1<<62 {
				room = int64(lo) + rapid.Int64Range(-1, 1).Draw(t, "off")
				room = max(room, 0)
			}
		}
		if got, want := within(n, room, step), min(n, room/step+1); got != want {
			t.Fatalf("within(%d, %d, %d) = %d, want %d", n, room, step, got, want)
		}
	})
}
