package slurm

import (
	"testing"

	"pgregory.net/rapid"
)

// TestFreeMapIsTheStepFunction: a free map built from random lease ends
// and then taken from as a pass takes (at the start earliest finds, to
// a later end) holds, second by second, what a plain table of the free
// GPUs per second holds after the same takes, and earliest finds the
// first start that table allows, with the index of its breakpoint. A
// take that began at the wrong breakpoint, ended one step early or
// late, or split the end's step with the wrong count, differs here.
func TestFreeMapIsTheStepFunction(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const horizon = 2000 // every time here is below it (at most 20 + 6·20 + 12·40)
		now := rapid.IntRange(0, 20).Draw(t, "now")
		free := rapid.IntRange(0, 8).Draw(t, "free")
		var m freeMap
		m.reset(now, free)
		// plain[t-now] is the GPUs free in second t.
		plain := make([]int, horizon-now)
		for i := range plain {
			plain[i] = free
		}
		at := now
		for range rapid.IntRange(0, 6).Draw(t, "ends") {
			at += rapid.IntRange(1, 20).Draw(t, "gap")
			n := rapid.IntRange(1, 4).Draw(t, "gpus")
			m.grow(at, n)
			for i := at - now; i < len(plain); i++ {
				plain[i] += n
			}
		}
		for range rapid.IntRange(0, 12).Draw(t, "takes") {
			n := rapid.IntRange(1, 12).Draw(t, "want")
			d := rapid.IntRange(1, 30).Draw(t, "duration")
			s, js := m.earliest(n, d)
			want := -1
			for c := now; c+d < horizon-100 && want < 0; c++ {
				// The first second at which n are free through c+d
				// (inclusive), among the breakpoints as earliest's
				// candidates, which a plain table marks by a change.
				if c > now && plain[c-now] == plain[c-now-1] && !isBreak(&m, c) {
					continue
				}
				ok := true
				for x := c; x <= c+d; x++ {
					ok = ok && plain[x-now] >= n
				}
				if ok {
					want = c
				}
			}
			if want >= 0 && s != want {
				t.Fatalf("earliest(%d, %d) = %d, the table's first start %d; map %v %v", n, d, s, want, m.at, m.free)
			}
			if s < 0 {
				continue
			}
			if m.at[js] != s {
				t.Fatalf("earliest(%d, %d) = %d at index %d, where the map has %d", n, d, s, js, m.at[js])
			}
			to := s + rapid.IntRange(1, 40).Draw(t, "length")
			m.takeFrom(js, to, n)
			for x := s; x < to; x++ {
				plain[x-now] -= n
			}
			for x := now; x < horizon; x++ {
				if got := stepAt(&m, x); got != plain[x-now] {
					t.Fatalf("after taking %d over [%d, %d): %d free at %d, the table %d; map %v %v", n, s, to, got, x, plain[x-now], m.at, m.free)
				}
			}
			for j := 1; j < len(m.at); j++ {
				if m.at[j] <= m.at[j-1] {
					t.Fatalf("breakpoints out of order: %v", m.at)
				}
			}
		}
	})
}

// stepAt is the map's free GPUs in second x (≥ at[0]).
func stepAt(m *freeMap, x int) int {
	j := 0
	for j+1 < len(m.at) && m.at[j+1] <= x {
		j++
	}
	return m.free[j]
}

// isBreak reports whether x is one of the map's breakpoints.
func isBreak(m *freeMap, x int) bool {
	for _, a := range m.at {
		if a == x {
			return true
		}
	}
	return false
}
