package policy

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"
)

// The credits are charged lazily (account, settle): a campaign takes the
// ticks it owes when its credits are read or the book changes. Two
// brokers get the same random operations; the eager one settles every
// campaign after every tick, so that it takes each tick's charges one
// tick at a time, as the books did before; the lazy one is read only
// now and then, one campaign at a time, so that its campaigns owe long
// stretches of ticks, taken in closed form (sumSteps), and other
// campaigns' reads, grants, releases, expiries, inference charges and
// changes of multiplier fall inside them. Every read agrees bit for bit.
//
// Mutations caught (each tried): settle not moving chargedTo (ticks
// charged twice) and dropBook dropping without settling (ticks lost at a
// grant or release) by this test; consumeInference not settling first
// (the inference charge then comes before the ticks' charges) by this
// test at -rapid.checks=1000 and by TestLazyCreditsByHand; fillBook not
// resetting chargedTo (a new book's campaign owes ticks of the old one)
// and account's eager groups not moving chargedTo by
// TestLazyCreditsByHand; Request not settling before its budget test (a
// budget spent by owed ticks still grants) at -rapid.checks=1000 and by
// TestLazyCreditsDenyWhenSpent.
func TestLazyCreditsMatchEager(t *testing.T) {
	settledLong := 0
	rapid.Check(t, func(t *rapid.T) {
		cfg := drawConfig(t, []int{64, 16, 1, 128}, true)
		eager, _ := New(cfg)
		lazy, _ := New(cfg)
		var ej, lj journal
		eager.SetRecorder(&ej)
		lazy.SetRecorder(&lj)
		both := func(f func(b *Broker) (int, error)) {
			i1, e1 := f(eager)
			i2, e2 := f(lazy)
			if i1 != i2 || (e1 == nil) != (e2 == nil) || (e1 != nil && e1.Error() != e2.Error()) {
				t.Fatalf("t=%d: eager gives %d, %v; lazy %d, %v", eager.now, i1, e1, i2, e2)
			}
		}
		register := func(e Envelope) {
			// Small budgets, so that some run out and Request's budget
			// test reads owed credits.
			e.Budget = rapid.SampledFrom([]float64{1e9, 50, 5, 0.3, 0.26}).Draw(t, "budget")
			both(func(b *Broker) (int, error) { c, err := b.Register(e); return int(c), err })
		}
		for i := range rapid.IntRange(1, 5).Draw(t, "campaigns") {
			register(drawEnvelope(t, fmt.Sprintf("c%d", i), cfg.Pool/2, false))
		}
		read := func(c CampaignID, after string) {
			a, b := eager.Credits(c), lazy.Credits(c)
			if math.Float64bits(a) != math.Float64bits(b) {
				t.Fatalf("t=%d after %s: campaign %d credits eager %v (%x), lazy %v (%x)",
					eager.now, after, c, a, math.Float64bits(a), b, math.Float64bits(b))
			}
		}
		late := 0
		for range rapid.IntRange(20, 120).Draw(t, "op-count") {
			o := drawSkipOp(t)
			c := CampaignID(o.c % eager.NumCampaigns())
			switch o.kind {
			case skipRequest:
				both(func(b *Broker) (int, error) { return b.Request(c, o.gpus, o.dur, o.class) })
			case skipRigid:
				sub := eager.now
				if o.next {
					sub++
				}
				both(func(b *Broker) (int, error) { return b.RequestRigid(c, o.gpus, o.dur, o.run, o.class, sub) })
			case skipReleaseAll:
				both(func(b *Broker) (int, error) { return 0, b.ReleaseAll(c, o.class) })
			case skipReleaseLease:
				if n := len(eager.leases); n > 0 {
					l := eager.leases[o.n%n]
					both(func(b *Broker) (int, error) { return 0, b.ReleaseLease(l.Campaign, l.ID) })
				}
			case skipConsume:
				both(func(b *Broker) (int, error) {
					io, inf, err := b.Consume(c, o.io, o.inf*50)
					if errors.Is(err, ErrUnknownCampaign) {
						return 0, err
					}
					return int(math.Float64bits(io) ^ math.Float64bits(inf)), err
				})
			case skipWait:
				// Mostly with campaign c paying for inference after
				// every tick, as the agent scenario's adaptive agent
				// does; the amount changes and a tick goes without now
				// and then.
				amount := rapid.SampledFrom([]float64{0, 0, 40, 1814, 333.3}).Draw(t, "inference-every-tick")
				gap := rapid.SampledFrom([]int{0, 0, 5, 97}).Draw(t, "inference-gap")
				change := rapid.SampledFrom([]int{0, 0, 13}).Draw(t, "inference-change")
				for i := range min(o.n, 3000) {
					eager.Tick()
					eager.settleAll()
					lazy.Tick()
					if amount == 0 || (gap > 0 && i%gap == gap-1) {
						continue
					}
					if change > 0 && i%change == change-1 {
						amount++
					}
					both(func(b *Broker) (int, error) {
						return int(math.Float64bits(b.ConsumeInference(c, amount))), nil
					})
				}
			case skipRegister:
				late++
				register(drawEnvelope(t, fmt.Sprintf("late%d", late), cfg.Pool, false))
			}
			if lazy.bookOK && lazy.accounted-lazy.camps[c].chargedTo > chargeStepsMax {
				settledLong++
			}
			if rapid.IntRange(0, 3).Draw(t, "read") == 0 {
				read(c, fmt.Sprintf("op %+v", o))
			}
		}
		for c := range eager.NumCampaigns() {
			read(CampaignID(c), "the end")
		}
		if string(ej.buf) != string(lj.buf) {
			t.Fatalf("journals differ\n%s\n%s", ej.buf, lj.buf)
		}
	})
	t.Logf("%d reads settled a stretch in closed form", settledLong)
	if settledLong == 0 {
		t.Fatal("no read settled a stretch in closed form")
	}
}

// By hand: one campaign, one 3-GPU burst lease (3 × 3.0 / 3600 = 0.0025
// credits a tick at multiplier 1) and a budget of 0.3. The lease is
// granted at the first tick and charged from the second; ten ticks
// later the campaign owes them all, and its first read takes them in
// order. An inference charge of 1,814 tokens (0.03628 credits) at the
// 6th of them must come after the five before it: taken first, the
// credits end at 0.23872 where the books, in order, give
// 0.23871999999999996 (the sums cross 0.25, where the rounding changes).
// A campaign that pays the same for inference after every tick owes
// it with each tick (tail), after the tick's charges.
func TestLazyCreditsByHand(t *testing.T) {
	cfg := DefaultConfig(8)
	for _, tc := range []struct {
		inferAt int
		every   bool
		want    float64
	}{{0, false, 0.275}, {6, false, 0.23871999999999996}, {0, true, 0.275 - 11*1e-3}} {
		b, _ := New(cfg)
		e := Envelope{Name: "a", Budget: 0.3, Sustained: 8, BurstCeiling: 8, Bucket: 1e6, Class: AgentBurst,
			Inference: &Flow{Rate: 5000, Ceiling: 5000, Bucket: 5000}}
		c, err := b.Register(e)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Request(c, 3, 100, AgentBurst); err != nil {
			t.Fatal(err)
		}
		b.Tick() // granted; charged from the next tick on
		charge := float64(3*basePrice[AgentBurst]*1.0) / 3600
		want := 0.3
		if tc.every {
			b.ConsumeInference(c, 50)
			want -= 50 * InferencePrice / 1000
		}
		for tick := 1; tick <= 10; tick++ {
			b.Tick()
			want -= charge
			if tc.every {
				b.ConsumeInference(c, 50)
				want -= 50 * InferencePrice / 1000
			}
			if tick == tc.inferAt {
				if got := b.ConsumeInference(c, 1814); got != 1814 {
					t.Fatalf("inference allowed %v", got)
				}
				want -= 1814 * InferencePrice / 1000
			}
		}
		if cp := &b.camps[c]; tc.inferAt == 0 && (b.accounted-cp.chargedTo != 10 || tc.every != (cp.tailTo-cp.chargedTo == 10)) {
			t.Fatalf("owes %d ticks, %d with inference; want 10", b.accounted-cp.chargedTo, cp.tailTo-cp.chargedTo)
		}
		if got := b.Credits(c); math.Float64bits(got) != math.Float64bits(want) || math.Abs(want-tc.want) > 1e-14 {
			t.Fatalf("inference at %d: credits %v, want %v (%v by hand)", tc.inferAt, got, want, tc.want)
		}
	}
}

// By hand: a budget of 0.01 and a 3-GPU burst lease (0.0025 a tick) is
// spent after four charged ticks; six ticks later, owed and not yet
// taken, the next Request for a class that pays is denied for the
// budget, as with the books kept tick by tick.
func TestLazyCreditsDenyWhenSpent(t *testing.T) {
	b, _ := New(DefaultConfig(8))
	c, err := b.Register(Envelope{Name: "a", Budget: 0.01, Sustained: 8, BurstCeiling: 8, Bucket: 1e6, Class: AgentBurst})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Request(c, 3, 100, AgentBurst); err != nil {
		t.Fatal(err)
	}
	for range 7 {
		b.Tick()
	}
	if b.accounted-b.camps[c].chargedTo != 6 {
		t.Fatalf("owes %d ticks, want 6", b.accounted-b.camps[c].chargedTo)
	}
	if _, err := b.Request(c, 1, 100, AgentBurst); !errors.Is(err, ErrBudgetExhausted) {
		t.Fatalf("Request after the budget is spent: %v, want ErrBudgetExhausted", err)
	}
}
