package policy

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// tokenLinesRef is tokenLines worked out from scratch each call, as it was
// before the watched pairs kept their crossings: the pending buckets'
// lines, then every watched pair's crossing by halving, the campaigns read
// from the pending list. Its slopes go to a scratch slice of its own.
func tokenLinesRef(b *Broker, toks []int32, runs []pendingKey, watch []int32, limit int) int {
	camps := b.camps
	slope := make([]float64, len(camps))
	k := limit
	lines := b.skipTokLines[:len(toks)]
	for j, i := range toks {
		ln := &lines[j]
		if b.now >= ln.end {
			n, d := b.lineOf(i)
			*ln = bucketLine{from: b.now, end: b.now + n, slope: d}
		}
		slope[i] = ln.slope
		if k = min(k, ln.end-b.now); k < 2 {
			return 0
		}
	}
	for _, w := range watch {
		a, c := b.reqsOf(&runs[w-1])[0].Campaign, b.reqsOf(&runs[w])[0].Campaign
		ta, da, tc, dc := camps[a].tokens, slope[a], camps[c].tokens, slope[c]
		if !(tc+float64(k)*dc > ta+float64(k)*da) {
			continue
		}
		lo, hi := 0, k
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			if tc+float64(mid)*dc > ta+float64(mid)*da {
				hi = mid
			} else {
				lo = mid
			}
		}
		if k = lo; k < 2 {
			return 0
		}
	}
	if k < 2 {
		return 0
	}
	return k
}

// crossingsPair is a broker in a skip's state (its pending list sorted,
// its watched pairs listed, its pending buckets on their lines) and a
// copy of it that takes every step the plain way: tokenLinesRef, and
// reorderRuns with tokenDecided at every change of order.
type crossingsPair struct {
	t               *rapid.T
	b, ref          *Broker
	toks, refToks   []int32
	runs, refRuns   []pendingKey
	watch, refWatch []int32
	deficit         []float64
	crossingsCounts
}

// lines is tokenLines' answer for both brokers, checked equal.
func (p *crossingsPair) lines(limit int) int {
	p.t.Helper()
	want := tokenLinesRef(p.ref, p.refToks, p.refRuns, p.refWatch, limit)
	if len(p.b.skipSlope) < len(p.b.camps) {
		p.b.skipSlope = make([]float64, len(p.b.camps))
	}
	got := p.b.tokenLines(p.b.skipSlope, p.toks, p.runs, p.watch, limit)
	if got != want {
		p.t.Fatalf("tick %d, limit %d: tokenLines %d, recomputed %d", p.b.now, limit, got, want)
	}
	for _, i := range p.toks {
		p.b.skipSlope[i] = 0
	}
	if got > 0 {
		p.cuts++
	}
	return got
}

// through is skipQuiet's jump over the ticks no watched pair crosses
// in, for both brokers: watchThrough, and where it goes through the
// crossing tick the rest of that stepped tick, against tokenLinesRef's k
// ticks of refills, one by one, then a stepped tick of the refill map
// and its order step where watchThrough went through. Every bucket is
// compared after it.
func (p *crossingsPair) through(limit int) int {
	p.t.Helper()
	want := tokenLinesRef(p.ref, p.refToks, p.refRuns, p.refWatch, limit)
	k, through := p.b.watchThrough(p.toks, p.runs, p.watch, limit)
	if through {
		p.toks = p.b.dropStopped(p.toks)
		p.throughs++
	}
	p.b.now += k
	if got := k - map[bool]int{false: 0, true: 1}[through]; got != want {
		p.t.Fatalf("tick %d, limit %d: watchThrough %d (through %v), recomputed %d", p.b.now-k, limit, k, through, want)
	}
	for range want {
		p.ref.now++
		for _, i := range p.refToks {
			cp := &p.ref.camps[i]
			cp.tokens = clamp(cp.tokens+cp.env.Sustained-float64(cp.heldAll), 0, cp.env.Bucket)
		}
	}
	if through {
		// The stepped tick, on the reference only.
		p.refToks = refillStep(p.ref, p.refToks)
		p.refOrder()
		if len(p.toks) > 0 {
			p.runs, p.watch = p.b.orderCrossing(p.runs, p.watch)
		}
	}
	for c := range p.b.camps {
		if p.b.camps[c].tokens != p.ref.camps[c].tokens {
			p.t.Fatalf("tick %d: campaign %d's tokens %v, stepped %v", p.b.now, c, p.b.camps[c].tokens, p.ref.camps[c].tokens)
		}
	}
	if p.b.now != p.ref.now {
		p.t.Fatalf("clocks %d and %d", p.b.now, p.ref.now)
	}
	p.compare("through")
	return k
}

// tick is one of skipQuiet's stepped ticks for both brokers: the refill
// of the moving buckets (a bucket that stops leaves the list, its line
// with it), then the order step of the watched pairs; with limit > 0,
// tokenLines is asked between the two, as tokenSegment asks it (a pair
// may be out of order then).
func (p *crossingsPair) tick(limit int) {
	p.toks = refillStep(p.b, p.toks)
	p.refToks = refillStep(p.ref, p.refToks)
	if limit > 0 {
		p.lines(limit)
	}
	camps := p.b.camps
	for w, q := range p.b.skipWatchCamps[:len(p.watch)] {
		if camps[q.c].tokens > camps[q.a].tokens {
			if p.b.swapCrossing(p.runs, p.watch, w) {
				p.swaps++
			} else {
				p.runs = p.b.reorderRuns(p.runs)
				p.watch = p.b.tokenDecided(p.runs, p.watch[:0])
				p.sorts++
			}
			break
		}
	}
	p.refOrder()
	p.compare("tick")
}

// refillStep is a stepped tick's refill of the moving buckets toks: a
// bucket that stops leaves the list, its line with it.
func refillStep(b *Broker, toks []int32) []int32 {
	b.now++
	w := 0
	lines := b.skipTokLines
	for j, i := range toks {
		cp := &b.camps[i]
		before := cp.tokens
		cp.tokens = clamp(cp.tokens+cp.env.Sustained-float64(cp.heldAll), 0, cp.env.Bucket)
		if cp.tokens != before {
			toks[w], lines[w] = i, lines[j]
			w++
		}
	}
	b.skipTokLines = lines[:w]
	return toks[:w]
}

// refOrder is the reference's order step: reorderRuns and tokenDecided
// where a watched pair is out of order.
func (p *crossingsPair) refOrder() {
	rc := p.ref.camps
	for _, i := range p.refWatch {
		if rc[p.ref.reqsOf(&p.refRuns[i])[0].Campaign].tokens > rc[p.ref.reqsOf(&p.refRuns[i-1])[0].Campaign].tokens {
			p.refRuns = p.ref.reorderRuns(p.refRuns)
			p.refWatch = p.ref.tokenDecided(p.refRuns, p.refWatch[:0])
			break
		}
	}
}

// compare checks the two brokers' lists: the pending list, its runs, the
// watched pairs and their campaigns.
func (p *crossingsPair) compare(at string) {
	p.t.Helper()
	if l, r := listOf(p.b, p.runs), listOf(p.ref, p.refRuns); !slices.Equal(l, r) {
		p.t.Fatalf("%s, tick %d: pending list\n%v\nrecomputed\n%v", at, p.b.now, l, r)
	}
	if len(p.runs) != len(p.refRuns) {
		p.t.Fatalf("%s, tick %d: %d runs, recomputed %d", at, p.b.now, len(p.runs), len(p.refRuns))
	}
	for i := range p.runs {
		if p.runs[i].pos != p.refRuns[i].pos || p.runs[i].class != p.refRuns[i].class || p.runs[i].deficit != p.refRuns[i].deficit {
			p.t.Fatalf("%s, tick %d: run %d %+v, recomputed %+v", at, p.b.now, i, p.runs[i], p.refRuns[i])
		}
	}
	if !slices.Equal(p.watch, p.refWatch) {
		p.t.Fatalf("%s, tick %d: watched %v, recomputed %v", at, p.b.now, p.watch, p.refWatch)
	}
	for w, i := range p.watch {
		q := p.b.skipWatchCamps[w]
		if a, c := p.b.reqsOf(&p.runs[i-1])[0].Campaign, p.b.reqsOf(&p.runs[i])[0].Campaign; q.a != int32(a) || q.c != int32(c) {
			p.t.Fatalf("%s, tick %d: pair %d's campaigns %d, %d, the list's %d, %d", at, p.b.now, w, q.a, q.c, a, c)
		}
	}
}

// newSkip is a skip's start for both brokers, as skipQuiet makes it: the
// moving pending buckets, their lines not yet read, and the watched pairs
// of the sorted list (a new list, the pairs of the last one checked
// against their campaigns' held GPUs).
func (p *crossingsPair) newSkip() {
	for _, x := range []struct {
		b     *Broker
		toks  *[]int32
		runs  *[]pendingKey
		watch *[]int32
	}{{p.b, &p.toks, &p.runs, &p.watch}, {p.ref, &p.refToks, &p.refRuns, &p.refWatch}} {
		b := x.b
		*x.toks = (*x.toks)[:0]
		for i := range b.camps {
			cp := &b.camps[i]
			if clamp(cp.tokens+cp.env.Sustained-float64(cp.heldAll), 0, cp.env.Bucket) != cp.tokens {
				*x.toks = append(*x.toks, int32(i))
			}
		}
		b.skipTokLines = make([]bucketLine, len(*x.toks))
		b.skipWatchHeld, b.skipPairsN = true, -1
		for i := range *x.runs {
			r := &(*x.runs)[i]
			c := b.reqsOf(r)[0].Campaign
			r.deficit, r.tokens = p.deficit[c], b.camps[c].tokens
		}
		*x.runs = b.sortRuns(*x.runs)
		*x.watch = b.tokenDecided(*x.runs, (*x.watch)[:0])
	}
	p.compare("a skip's start")
}

// The watched pairs' crossings kept from call to call (watchPair,
// watchedCrossings, kept across a skip's start where the campaigns' held
// GPUs stay) and the swap of a pair that crosses alone (swapCrossing)
// against the plain recomputation: tokenLines' k from scratch each call,
// and reorderRuns with tokenDecided at every change of order. Buckets of
// a few rates, drains and depths cross each other, stop at their tops and
// at zero, and change lines at binade edges; deficits from two values tie
// runs into chains; between skips a campaign's held GPUs may change.
func TestKeptCrossingsMatchRecomputation(t *testing.T) {
	var n crossingsCounts
	rapid.Check(t, func(t *rapid.T) {
		// Several brokers a check: the paths that catch a slip (three
		// tied runs with the middle one crossing, a pair out of order
		// when asked) are rare in any one.
		for range 8 {
			crossingsScenario(t, &n)
		}
	})
	t.Logf("%+v", n)
	if n.swaps == 0 || n.sorts == 0 || n.cuts == 0 || n.throughs == 0 {
		t.Fatalf("%+v: a path is never taken", n)
	}
}

// crossingsCounts counts the paths a test took.
type crossingsCounts struct{ swaps, sorts, cuts, throughs int }

// crossingsScenario is one broker of TestKeptCrossingsMatchRecomputation,
// its counts added to n.
func crossingsScenario(t *rapid.T, n *crossingsCounts) {
	b := bareBroker(t, 64)
	nc := rapid.IntRange(2, 10).Draw(t, "campaigns")
	deficit := make([]float64, nc)
	for i := range nc {
		bucket := rapid.SampledFrom([]float64{300, 4096, 20000, 100000}).Draw(t, "bucket")
		e := Envelope{Name: fmt.Sprintf("c%d", i), Budget: 1e9, BurstCeiling: 64, Bucket: bucket, Class: AgentBurst,
			Sustained: rapid.SampledFrom([]float64{0.25, 0.375, 0.5, 1, 3, 7.5, 0.1, 0.3, 2.7}).Draw(t, "rate")}
		if _, err := b.Register(e); err != nil {
			t.Fatal(err)
		}
		cp := &b.camps[i]
		cp.heldAll = rapid.SampledFrom([]int{0, 0, 0, 0, 1, 2, 8}).Draw(t, "held")
		cp.tokens = float64(rapid.IntRange(0, int(bucket)/rapid.SampledFrom([]int{1, 20}).Draw(t, "low")).Draw(t, "tokens")) +
			rapid.SampledFrom([]float64{0, 0.5, 0.125}).Draw(t, "fraction")
		if rapid.Bool().Draw(t, "tied tokens") {
			// Runs of tied tokens keep their places in the list, so
			// that a campaign's runs stand apart until one crosses.
			cp.tokens = rapid.SampledFrom([]float64{0, 100, 256}).Draw(t, "tied")
		}
		cp.tokens = min(cp.tokens, bucket)
		deficit[i] = rapid.SampledFrom([]float64{0, 0, -1}).Draw(t, "deficit")
	}
	var list []Request
	for i := range rapid.IntRange(2, 40).Draw(t, "requests") {
		c := CampaignID(rapid.IntRange(0, nc-1).Draw(t, "campaign"))
		cls := rapid.SampledFrom([]Class{AgentBurst, AgentBurst, AgentBurst, Interactive}).Draw(t, "class")
		list = append(list, Request{ID: i + 1, Campaign: c, GPUs: 1, Class: cls})
	}
	setPending(b, list)
	b.now = 10
	ref, err := b.Clone()
	if err != nil {
		t.Fatal(err)
	}
	p := &crossingsPair{t: t, b: b, ref: ref.(*Broker), deficit: deficit}
	p.runs, p.refRuns = b.runs, p.ref.runs
	p.newSkip()
	for range rapid.IntRange(1, 80).Draw(t, "steps") {
		switch rapid.IntRange(0, 8).Draw(t, "step") {
		case 0:
			// A new skip, after a change of held GPUs or none.
			if rapid.Bool().Draw(t, "held changes") {
				c := rapid.IntRange(0, nc-1).Draw(t, "campaign held")
				h := rapid.SampledFrom([]int{0, 1, 2, 8}).Draw(t, "new held")
				for _, x := range []*Broker{p.b, p.ref} {
					x.camps[c].heldAll, x.camps[c].heldAt = h, x.now
				}
			}
			p.tick(0) // the real tick that starts a skip
			p.newSkip()
		case 2, 3:
			// The jumps of a skip after the windows stopped sliding.
			limit := rapid.SampledFrom([]int{3, 50, 2000}).Draw(t, "limit")
			for range rapid.IntRange(1, 30).Draw(t, "jumps") {
				if p.through(limit) == 0 {
					p.tick(0) // no jump shown: a stepped tick
				}
			}
		case 1:
			// Ticks with tokenLines asked before each order step.
			limit := rapid.SampledFrom([]int{2, 50, 5000}).Draw(t, "limit")
			for range rapid.IntRange(1, 100).Draw(t, "ticks") {
				p.tick(limit)
			}
		default:
			limit := rapid.SampledFrom([]int{1, 2, 3, 50, 5000, 1 << 20}).Draw(t, "limit")
			got := p.lines(limit)
			// The ticks it covers, stepped, and the one after it.
			for range min(got, 300) + 1 {
				p.tick(0)
			}
		}
	}
	n.swaps, n.sorts, n.cuts, n.throughs = n.swaps+p.swaps, n.sorts+p.sorts, n.cuts+p.cuts, n.throughs+p.throughs
}

// A watched pair out of order when tokenLines is asked, whose later run
// falls behind again (crossOutOfOrder): its bound depends on the bound
// the pairs before it left, and kept crossings must give what the plain
// recomputation gives with the pair first and with it last. c1 leads a1
// by 10 tokens and loses 2 a tick (ahead for 4 more ticks); c2 trails a2
// by 10 and gains 3 a tick (ahead from the 4th tick): after c2's pair
// the bound is 3, which c1's pair cuts to 0; before it, c1's pair is
// behind by the lines' end and leaves the bound be.
func TestKeptCrossingsOutOfOrderPair(t *testing.T) {
	for _, c1First := range []bool{false, true} {
		b := bareBroker(t, 64)
		type camp struct {
			tokens, rate float64
			held         int
		}
		// a2, c2, a1, c1
		for i, c := range []camp{{200, 1, 0}, {190, 4, 0}, {100, 1, 0}, {110, 1, 2}} {
			if _, err := b.Register(Envelope{Name: fmt.Sprintf("c%d", i), Budget: 1e9, BurstCeiling: 64, Bucket: 1000, Sustained: c.rate, Class: AgentBurst}); err != nil {
				t.Fatal(err)
			}
			b.camps[i].tokens, b.camps[i].heldAll = c.tokens, c.held
		}
		first, second := Interactive, AgentBurst
		if c1First {
			first, second = AgentBurst, Interactive
		}
		var list []Request
		for i, cls := range []Class{first, first, second, second} {
			list = append(list, Request{ID: i + 1, Campaign: CampaignID(i), GPUs: 1, Class: cls})
		}
		if c1First {
			list[0], list[1], list[2], list[3] = list[2], list[3], list[0], list[1]
		}
		b.now = 10
		runs := setPending(b, list)
		watch := b.tokenDecided(runs, nil)
		toks := []int32{0, 1, 2, 3}
		b.skipTokLines = make([]bucketLine, len(toks))
		b.skipSlope = make([]float64, len(b.camps))
		want := tokenLinesRef(b, toks, runs, watch, 50)
		got := b.tokenLines(b.skipSlope, toks, runs, watch, 50)
		if wantPlain := map[bool]int{false: 0, true: 3}[c1First]; want != wantPlain {
			t.Fatalf("c1's pair first %v: the recomputation gives %d, not %d", c1First, want, wantPlain)
		}
		if got != want {
			t.Fatalf("c1's pair first %v: tokenLines %d, recomputed %d", c1First, got, want)
		}
	}
}

// SkipTo ends on every tick of a stretch in which pending trace jobs wait
// for tokens and their runs cross (TestSkipToReordersCrossingRuns with
// more campaigns, at random), long after the usage windows stopped
// sliding: the pending list, and every bucket, at the skip's last tick
// are the ticking broker's, whether or not a crossing falls on that tick
// (watchThrough jumps through a crossing and does its order step).
func TestSkipToEveryTickOfCrossings(t *testing.T) {
	ends, crossed := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		tick, skip := bareBroker(t, 128), bareBroker(t, 128)
		tick.SetTickByTick(true)
		both := func(f func(b *Broker) error) {
			for _, b := range []*Broker{tick, skip} {
				if err := f(b); err != nil {
					t.Fatal(err)
				}
			}
		}
		nc := rapid.IntRange(3, 10).Draw(t, "campaigns")
		wide, longest := make([]int, nc), make([]int, nc)
		for i := range nc {
			// Rates that are not binary fractions round differently in
			// each binade: a bucket's line ends at every power of two.
			r := rapid.SampledFrom([]float64{0.25, 0.5, 0.75, 1, 1.5, 2, 3, 0.1, 0.3, 1.1, 2.7}).Draw(t, "R")
			wide[i] = rapid.IntRange(8, 24).Draw(t, "G")
			longest[i] = rapid.IntRange(500, 2000).Draw(t, "E")
			e := Envelope{Name: fmt.Sprintf("c%d", i), Budget: 1e9, Sustained: r, BurstCeiling: 64,
				Bucket: (float64(wide[i]) - r + 1) * float64(longest[i]), Class: AgentBurst}
			// A bucket part full, as a past job left it.
			level := rapid.Float64Range(0, 0.9).Draw(t, "level")
			both(func(b *Broker) error {
				c, err := b.Register(e)
				b.camps[c].tokens = float64(int(level * e.Bucket))
				return err
			})
		}
		for i := range nc {
			for range rapid.IntRange(1, 2).Draw(t, "jobs") {
				// Estimated at the bucket's E: it waits for a full
				// bucket, and the buckets refill past each other.
				est := longest[i]
				both(func(b *Broker) error {
					_, err := b.RequestRigid(CampaignID(i), wide[i], est, est, AgentBurst, b.now+1)
					if errors.Is(err, ErrExceedsLimit) {
						return nil
					}
					return err
				})
			}
		}
		// Past the windows' slide, tick by tick on both; then, as a
		// fair-start fork, no books, so that a skip's first ticks do
		// not fill the congestion window and watchThrough runs from its
		// start.
		sliding := func() bool {
			for c := range nc {
				if skip.camps[c].heldAt+FairShareWindow >= skip.now {
					return true
				}
			}
			return false
		}
		for sliding() && tick.now < 20000 {
			tick.Tick()
			skip.Tick()
		}
		tick.GrantsOnly(0)
		skip.GrantsOnly(0)
		next := skip.NextChange()
		for n := 0; tick.now+1 < next && n < 2500; n++ {
			tick.Tick()
			x, err := skip.Clone()
			if err != nil {
				t.Fatal(err)
			}
			s := x.(*Broker)
			s.SkipTo(tick.now)
			ends++
			if !slices.Equal(tick.Pending(), s.Pending()) {
				t.Fatalf("t=%d: pending\n%v\nskipping to it\n%v", tick.now, tick.Pending(), s.Pending())
			}
			for c := range nc {
				if tick.camps[c].tokens != s.camps[c].tokens {
					t.Fatalf("t=%d: campaign %d's tokens %v, skipping to it %v", tick.now, c, tick.camps[c].tokens, s.camps[c].tokens)
				}
			}
			if n > 0 && !slices.Equal(tick.Pending(), skip.Pending()) {
				crossed++
			}
		}
	})
	t.Logf("%d skips' ends, %d after a change of order", ends, crossed)
	if crossed == 0 {
		t.Fatal("no change of order")
	}
}

// watchThrough goes through a crossing only where every moving bucket is
// still on its line at the crossing tick: here z's line (a rate of 0.1,
// which rounds differently in the next binade) ends n ticks on, the tick
// before c overtakes a (a at its fixed point, full; c rising by 1 a
// tick), so watchThrough stops at the line's end, and its buckets are
// the ticking ones.
func TestWatchThroughStopsAtALineEnd(t *testing.T) {
	// A fill below 512 whose line ends n ticks on, and whose next tick
	// leaves the line.
	z0, n := -1.0, 0
	for m := 3; m < 1000 && z0 < 0; m++ {
		z := 512 - 0.1*float64(m)
		k, d := TokenBucket{Rate: 0.1, Depth: 1000}.Line(z, 0, lineLimit)
		if next := (TokenBucket{Rate: 0.1, Depth: 1000}).Steps(z, 0, k+1); k >= 2 && next != z+float64(k+1)*d {
			z0, n = z, k
		}
	}
	if z0 < 0 {
		t.Fatal("no fill found whose line's next tick leaves it")
	}
	b := bareBroker(t, 64)
	for i, c := range []struct{ tokens, rate, bucket float64 }{{100, 1, 100}, {100 - float64(n), 1, 1000}, {z0, 0.1, 1000}} {
		if _, err := b.Register(Envelope{Name: fmt.Sprintf("c%d", i), Budget: 1e9, BurstCeiling: 64, Bucket: c.bucket, Sustained: c.rate, Class: AgentBurst}); err != nil {
			t.Fatal(err)
		}
		b.camps[i].tokens = c.tokens
	}
	// a and c tie on class and deficit; z stands apart in its class.
	var list []Request
	for i, cls := range []Class{AgentBurst, AgentBurst, Interactive} {
		list = append(list, Request{ID: i + 1, Campaign: CampaignID(i), GPUs: 1, Class: cls})
	}
	list[0], list[2] = list[2], list[0] // z, c, a
	list[1], list[2] = list[2], list[1] // z, a, c
	b.now = 10
	runs := setPending(b, list)
	watch := b.tokenDecided(runs, nil)
	if len(watch) != 1 {
		t.Fatalf("watched %v", watch)
	}
	toks := []int32{1, 2}
	b.skipTokLines = make([]bucketLine, len(toks))
	want := []float64{100, b.camps[1].tokens, b.camps[2].tokens}
	k, through := b.watchThrough(toks, runs, watch, 1000)
	for range k {
		want[1] = clamp(want[1]+1, 0, 1000)
		want[2] = clamp(want[2]+0.1, 0, 1000)
	}
	if k != n || through {
		t.Fatalf("watchThrough jumps %d ticks (through %v), not %d to the line's end", k, through, n)
	}
	for c, w := range want {
		if b.camps[c].tokens != w {
			t.Fatalf("campaign %d: tokens %v after %d ticks, ticking %v", c, b.camps[c].tokens, k, w)
		}
	}
}
