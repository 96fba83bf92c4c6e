package policy

import "math"

// TokenBucket is the shape of a token bucket (model.md §3): every tick
// its fill T refills to clamp(T + Rate − drain, 0, Depth), drain being
// what was held or drawn in the tick. A campaign's GPU bucket is
// (R, B) with its held GPUs as the drain (Envelope.GPUBucket), a flow
// bucket (rate, bucket) with the flow's use (Flow.bucket); arrive's
// metered agents keep theirs the same way. The refill is written here
// once, so that the tick (Broker.refill), the skip (skipQuiet,
// refillSkipped), the skip's bounds (capSlope) and the agents' meter
// take the very same floating-point steps: a skip is exact only because
// it reproduces the tick's roundings (repeat.go).
//
// The methods take a value and are small enough to inline: the broker's
// tick refills every busy campaign through them.
type TokenBucket struct {
	Rate, Depth float64
}

// Refill is fill t one tick on, with drain held or drawn in the tick:
// the prototype's min(Depth, max(0, t + Rate − drain)), summed left to
// right (t + Rate first), and Python's min and max (pyMin, pyMax).
func (k TokenBucket) Refill(t, drain float64) float64 {
	return pyMin(k.Depth, pyMax(0, t+k.Rate-drain))
}

// AtRest is whether a tick's refill leaves fill t with its very bits:
// a fixed point, so every later tick with the same drain does too.
//
// (Float64bits is sameBits, written out: the extra call would cost the
// broker's atRest tests their inlining.)
func (k TokenBucket) AtRest(t, drain float64) bool {
	return math.Float64bits(k.Refill(t, drain)) == math.Float64bits(t)
}

// Line is the number n ≤ limit of ticks from fill t, with drain fixed,
// over which the fill provably moves by exactly d a tick, the clamp
// included: after j ≤ n ticks it is t + float64(j)*d, bit for bit what
// j Refills give. A fixed point gives limit and 0; n is 0 where no such
// stretch can be shown (at a binade's edge, at a clamp, at a tie; see
// repeat.go).
func (k TokenBucket) Line(t, drain float64, limit int) (n int, d float64) {
	next := k.Refill(t, drain)
	if sameBits(next, t) {
		return limit, 0 // a fixed point: the map is the same every tick
	}
	adds := [2]float64{k.Rate, -drain}
	n, d = repeatRun(t, adds[:], limit)
	switch {
	case d > 0 && n > 0:
		// The clamp at the top: t + n·d ≤ Depth (the sums rise, and the
		// band keeps them above zero, so the clamp does nothing).
		if room := (k.Depth - t) / d; room < float64(n) {
			n = max(int(room)-1, 0)
		}
		for n > 0 && t+float64(n)*d > k.Depth {
			n--
		}
	case d < 0 && t+d > k.Depth:
		n = 0 // above the bucket: the clamp would bite
	case d == 0:
		n = 0 // cannot be: the tick moved the fill
	}
	return n, d
}

// Steps is n Refills of fill t with drain fixed, exactly: along its
// lines (Line) where they can be shown, a tick at a time elsewhere.
func (k TokenBucket) Steps(t, drain float64, n int) float64 {
	for n > 0 {
		j, d := k.Line(t, drain, n)
		switch {
		case d == 0 && j > 0:
			return t
		case j >= 2:
			t += float64(j) * d
			n -= j
		default:
			t = k.Refill(t, drain)
			n--
		}
	}
	return t
}

// GPUBucket is the campaign's GPU bucket: it refills at R up to B, its
// held GPUs the drain.
func (e *Envelope) GPUBucket() TokenBucket { return TokenBucket{Rate: e.Sustained, Depth: e.Bucket} }

// tokenBucket is the flow's bucket: it refills at its rate up to its
// bucket, what was drawn in the tick the drain.
func (f *Flow) tokenBucket() TokenBucket { return TokenBucket{Rate: f.Rate, Depth: f.Bucket} }

// bucketLine is a stretch of ticks over which a campaign's GPU bucket
// moves by a constant, exactly (TokenBucket.Line): from its fill at tick
// from, by slope a tick, up to tick end. It holds while the campaign's
// held GPUs are those it was worked out with (they last changed before
// from): its fill then follows the refill map, whichever way the ticks
// between are taken (one by one, by segments, by watchThrough's jumps),
// and every point of the line is the map's exact value. A point of it is
// a line to the same end, so a line found once serves every later skip
// up to its end, instead of a Line per pending campaign per segment.
type bucketLine struct {
	from, end int
	slope     float64
}

// at is the line seen from tick at: the ticks left of it and its slope,
// ok false where it does not hold there (held GPUs changed at heldAt,
// at or after its start, or at is outside it).
func (ln *bucketLine) at(at, heldAt int) (n int, slope float64, ok bool) {
	if ln.from > heldAt && ln.from <= at && at < ln.end {
		return ln.end - at, ln.slope, true
	}
	return 0, 0, false
}

// lineFrom is the line of bucket k from fill t at tick at with drain
// fixed, up to lineLimit ticks long.
func (k TokenBucket) lineFrom(t, drain float64, at int) bucketLine {
	n, d := k.Line(t, drain, lineLimit)
	return bucketLine{from: at, end: at + n, slope: d}
}

// lineLimit is the longest line asked for: far beyond any trace's ticks,
// so that a line ends where the arithmetic says.
const lineLimit = 1 << 40
