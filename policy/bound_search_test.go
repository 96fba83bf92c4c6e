package policy

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// An exhaustive search for the best attack on the prepaid bound, on small
// cases (docs/prepaid-bound.md §5). The campaign is alone on an ample pool
// (other campaigns, the pool, classes and preemption can only lower what it
// holds), g = 0, R, B and the burst ceiling integral, leases of 2 … D ticks
// (a lease of 0 or 1 tick is never counted at a refill, and holding it
// during the pass only lowers the headroom of the rest). The search plays
// every sequence of grants the admission rule allows, tick by tick, and
// returns the most GPU-seconds held above R in one busy period, the first
// one after registration (the bucket is then full: T = B). Before the
// period the campaign may hold up to R GPUs on leases of any duration for
// up to D ticks, so leases granted before the period are tried too.
//
// Model of one tick, as the broker runs it (model.md §4–5): at the
// admission pass of tick s the campaign holds D_s GPUs (the refill saw
// exactly them) and may be granted, longest first (the most permissive
// order: the cap only grows as the duration shrinks), any amounts such that
// its holdings after each grant of duration d stay within
// min(burst, R + ⌊τ_s/d⌋); a lease granted at s with duration d is counted
// at the refills of ticks s+1 … s+d−1.
type boundSearch struct {
	R, B, burst, D int
	memo           map[string]int
}

// state is what the future depends on: tokens, and the GPUs of the
// campaign's leases by ticks left (held[r] expire r ticks from now).
func (bs *boundSearch) key(tau int, held []int, busy bool, pre int) string {
	var sb strings.Builder
	sb.WriteString(strconv.Itoa(tau))
	for _, n := range held {
		sb.WriteByte(',')
		sb.WriteString(strconv.Itoa(n))
	}
	fmt.Fprintf(&sb, "|%v|%d", busy, pre)
	return sb.String()
}

// best is the most excess the rest of the period can take from an
// admission pass with tokens tau and leases held.
func (bs *boundSearch) best(tau int, held []int, busy bool, pre int) int {
	k := bs.key(tau, held, busy, pre)
	if v, ok := bs.memo[k]; ok {
		return v
	}
	v := 0
	total := 0
	for _, n := range held {
		total += n
	}
	grants := make([]int, len(held))
	var choose func(d, holding int)
	choose = func(d, holding int) {
		if d < 2 {
			v = max(v, bs.step(tau, held, grants, busy, pre))
			return
		}
		capD := min(bs.burst, bs.R+tau/d)
		for a := 0; holding+a <= capD || a == 0; a++ {
			grants[d] += a
			choose(d-1, holding+a)
			grants[d] -= a
		}
	}
	choose(bs.D, total)
	bs.memo[k] = v
	return v
}

// step runs the next tick after the pass granted grants[d] GPUs for d
// ticks, and continues the search.
func (bs *boundSearch) step(tau int, held, grants []int, busy bool, pre int) int {
	next := make([]int, len(held))
	D := 0
	for r := 2; r < len(held); r++ {
		next[r-1] = held[r] + grants[r]
		D += next[r-1]
	}
	tau = min(max(tau+bs.R-D, 0), bs.B)
	e := D - bs.R
	switch {
	case e > 0:
		return e + bs.best(tau, next, true, pre)
	case busy || pre == 0:
		return 0
	default:
		return bs.best(tau, next, false, pre-1)
	}
}

// staircase is Σ_{k=2}^{D} min(Δ, ⌊T/k⌋), the one-pass harmonic staircase.
func staircase(T, delta, D int) int {
	s := 0
	for k := 2; k <= D; k++ {
		s += min(delta, T/k)
	}
	return s
}

func TestExhaustiveSearchFindsTheStaircase(t *testing.T) {
	if testing.Short() {
		t.Skip("exhaustive search")
	}
	cases := []struct{ R, B, burst, D int }{
		{1, 2, 3, 3}, {1, 3, 4, 3}, {1, 4, 5, 3}, {1, 4, 5, 4}, {1, 5, 6, 4},
		{1, 6, 7, 4}, {1, 6, 3, 4}, {2, 4, 6, 4}, {2, 6, 5, 4}, {1, 4, 2, 5},
		{1, 6, 7, 5}, {1, 5, 6, 5}, {2, 5, 7, 5}, {1, 8, 9, 4},
	}
	for _, c := range cases {
		bs := &boundSearch{R: c.R, B: c.B, burst: c.burst, D: c.D, memo: map[string]int{}}
		got := bs.best(c.B, make([]int, c.D+1), false, c.D)
		want := staircase(c.B, c.burst-c.R, c.D)
		bound := harmonicBound(float64(c.B), float64(c.burst-c.R), c.D)
		t.Logf("R=%d B=%d burst=%d D=%d: best attack %d = staircase %d; bound %.2f (gap %.2f B); %d states",
			c.R, c.B, c.burst, c.D, got, want, bound, (bound-float64(got))/float64(c.B), len(bs.memo))
		require.Equal(t, want, got, "%+v: the one-pass staircase is the best attack", c)
		require.LessOrEqual(t, float64(got), bound)

		// The real broker gives the staircase exactly.
		require.Equal(t, float64(want), runStaircase(t, c.R, c.B, c.burst, c.D), "%+v", c)
	}
}

// runStaircase plays the one-pass staircase on the broker and returns the
// excess of its busy period, checked by the tracker.
func runStaircase(t *testing.T, R, B, burst, D int) float64 {
	b, _ := newBroker(t, 100000)
	c := mustRegister(t, b, env("c", 0, float64(R), burst, float64(B), AgentBurst))
	k := newExcessTracker(b, c)
	held := 0
	for d := D; d >= 2; d-- {
		capD := min(burst, R+B/d)
		if capD > held {
			mustRequest(t, b, c, capD-held, d, AnyClass)
			held = capD
		}
	}
	for range D + 2 {
		b.Tick()
		require.Empty(t, k.afterTick(b))
	}
	total := 0.0
	for _, p := range k.all() {
		total += p.excess
	}
	return total
}
