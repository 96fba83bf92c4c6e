package engine

import (
	"math"

	"github.com/bursar-hpc/bursar/policy"
)

// Event skipping (docs/model-choices.md, "Event skipping in the engine").
// A tick in which no agent does anything and the policy's Tick only does
// its per-tick bookkeeping (the clock, credits, token buckets, flows) can
// be handed to the policy's SkipTo in a batch instead of being stepped.
// The agents say when they next act (quietAgent); the policy says when its
// state next changes (policy.EventSkipper.NextChange); the sampling and
// the storm-window study are replayed exactly over the skipped ticks.

// quietAgent is the optional part of the Agent contract that event
// skipping reads. nextAct(t) is the first tick ≥ t at which Step may do
// more than read the allocator's Held, Outstanding or free GPUs: call
// anything else (Request, Consume, ReleaseAll, …), draw a random number,
// or change the agent's own state. It may assume that from the last Tick
// until then nobody calls the allocator and its Ticks do only their
// per-tick bookkeeping, so that what Held, Outstanding, Free and Supply
// return stays as it is now; math.MaxInt means "not before the allocator
// changes". An agent that is unsure answers t. Every agent kind implements
// it but adaptive-sci, which meters its inference on every tick, with or
// without work (model.md §7), and so never has a quiet tick: a cast with
// one is stepped tick by tick.
type quietAgent interface {
	Agent
	nextAct(t int) int
}

var (
	_ quietAgent = (*victim)(nil)
	_ quietAgent = (*naive)(nil)
	_ quietAgent = (*storm)(nil)
	_ quietAgent = (*probe)(nil)
	_ quietAgent = (*backfill)(nil)
)

// nextMultiple is the first multiple of period at or after t (t ≥ 0,
// period ≥ 1): a periodic agent's next period tick.
func nextMultiple(t, period int) int {
	return (t + period - 1) / period * period
}

// nextAct: the victim acts on its period ticks, and then only if it has
// nothing outstanding; while it has, it waits for the allocator.
func (v *victim) nextAct(t int) int {
	if v.b.Outstanding(v.id, policy.AnyClass) > 0 {
		return math.MaxInt
	}
	return nextMultiple(t, v.period)
}

// nextAct: naive-sci works (and meters its io) on every tick it holds
// GPUs and asks again whenever its agent-burst GPUs outstanding fall below
// its target; with its work done it releases everything on every tick,
// which is nothing once nothing is left.
func (n *naive) nextAct(t int) int {
	if n.work.empty() {
		if n.b.Outstanding(n.id, policy.AnyClass) > 0 {
			return t
		}
		return math.MaxInt
	}
	if n.b.Held(n.id, policy.AnyClass) > 0 || n.b.Outstanding(n.id, policy.AgentBurst) < n.target {
		return t
	}
	return math.MaxInt
}

// nextAct: a storm meters its inference on every tick of its window
// [lo, hi) and releases everything at hi; outside it does nothing.
func (s *storm) nextAct(t int) int {
	switch {
	case t > s.hi:
		return math.MaxInt
	case t >= s.lo:
		return t
	}
	return min(s.lo, s.hi)
}

// nextAct: an idle probe starts a measurement on its period ticks; a
// measuring one ends it when it holds its GPUs or has waited too long,
// and asks again when its outstanding GPUs fall short.
func (p *probe) nextAct(t int) int {
	if !p.measuring {
		return nextMultiple(t, p.period)
	}
	if p.b.Held(p.id, policy.AnyClass) >= p.gpus || p.b.Outstanding(p.id, policy.AnyClass) < p.gpus {
		return t
	}
	return max(t, p.t0+p.giveUp+1)
}

// nextAct: the backfill asks when the free GPUs beyond its headroom
// exceed its smallest request and nothing of its own is pending; neither
// moves while the allocator does not.
func (f *backfill) nextAct(t int) int {
	free, held, out := f.b.Free(f.id), f.b.Held(f.id, policy.AnyClass), f.b.Outstanding(f.id, policy.AnyClass)
	if free-f.headroom > f.minRequest && out-held == 0 {
		return t
	}
	return math.MaxInt
}

// skipperFor is the policy's EventSkipper when the run may skip: not tick by
// tick, a policy that can skip, and a cast whose every agent can be quiet.
func (w *world) skipperFor(opt Options) (policy.EventSkipper, []quietAgent) {
	if opt.TickByTick {
		if t, ok := w.b.a.(policy.TickByTicker); ok {
			t.SetTickByTick(true)
		}
		return nil, nil
	}
	sk, ok := w.b.a.(policy.EventSkipper)
	if !ok {
		return nil, nil
	}
	// Checked before anything is allocated: the paper's cast (adaptive-sci)
	// never skips and should cost nothing for it.
	for _, a := range w.agents {
		if _, ok := a.(quietAgent); !ok {
			return nil, nil
		}
	}
	quiet := make([]quietAgent, len(w.agents))
	for i, a := range w.agents {
		quiet[i] = a.(quietAgent)
	}
	return sk, quiet
}

// runEvents is the tick loop with the quiet stretches skipped: before
// tick t, if every agent is quiet until some tick n > t and the policy's
// state does not change before n, the ticks t … n−1 are skipped (skip) and
// tick n is stepped as usual.
func (w *world) runEvents(sk policy.EventSkipper) {
	s := &w.s
	for t := 1; t <= s.Ticks; {
		if n := w.quietUntil(t); n > t {
			if n = min(n, sk.NextChange(), s.Ticks+1); n > t {
				w.skip(sk, t, n-1)
				t = n
				continue
			}
		}
		w.step(t)
		t++
	}
}

// quietUntil is the first tick ≥ t at which some agent may act. The agent
// that was last busy is asked first: it usually still is.
func (w *world) quietUntil(t int) int {
	q := w.quiet
	if q[w.lastBusy].nextAct(t) <= t {
		return t
	}
	n := math.MaxInt
	for i, a := range q {
		x := a.nextAct(t)
		if x <= t {
			w.lastBusy = i
			return t
		}
		n = min(n, x)
	}
	return n
}

// skip does ticks from … to, in which no agent acts and the policy's Tick
// changes nothing but its bookkeeping, with the effect of stepping them.
// What a sample reads for the metrics (held GPUs, last-tick flows: none,
// as nobody consumes) is the same at every sample tick of the stretch, so
// a run that keeps no series reads it once and adds it once per sample
// tick; one that keeps the series (bucket fill and spending move every
// tick) has the policy jump to each sample tick and samples it there
// (SkipTo is exact). The storm-window study adds its constant per-tick
// terms once per skipped tick in the window.
func (w *world) skip(sk policy.EventSkipper, from, to int) {
	s := &w.s
	w.res.TicksSkipped += to - from + 1
	first := nextMultiple(from, s.SampleEvery)
	if !w.keepSeries {
		w.advance(sk, from-1, to)
		if first <= to {
			var productive, stormHeld int
			if bk := w.b.bk; bk != nil {
				productive, stormHeld = w.sampleGroupsBroker(bk)
			} else {
				productive, stormHeld = w.sampleGroups(w.b.a)
			}
			for m := first; m <= to; m += s.SampleEvery {
				w.accumulate(m, productive, stormHeld)
			}
		}
		return
	}
	done := from - 1
	for m := first; m <= to; m += s.SampleEvery {
		w.advance(sk, done, m)
		w.sample(m)
		done = m
	}
	if done < to {
		w.advance(sk, done, to)
	}
}

// advance skips the ticks done+1 … to (to > done) and replays the study's
// ticks among them.
func (w *world) advance(sk policy.EventSkipper, done, to int) {
	sk.SkipTo(to)
	if w.study == nil {
		return
	}
	s := &w.s
	if k := min(to+1, s.StormEnd) - max(done+1, s.StormStart); k > 0 {
		w.study.ticks(w, k)
	}
}
