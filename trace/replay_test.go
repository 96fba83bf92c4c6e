package trace

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// A hand-worked replay on a 10-GPU pool (submit, run, estimate, GPUs):
//
//	J1 (0, 100, 100, 6) starts at 0; 4 GPUs free.
//	J2 (1, 50, 50, 8) is the head at 1: reserved at s = 100 (J1's estimated
//	  end), x = 4 + 6 − 8 = 2.
//	J3 (2, 10, 200, 4) fits the 4 free GPUs at 2 but its estimate ends at
//	  202 > s and it is wider than x: starting it would delay J2. It waits.
//	J4 (3, 500, 500, 2) fits in x: it starts at 3, x = 0, 2 GPUs free.
//	J5 (4, 90, 96, 2) ends by its estimate at 4 + 96 = 100 = s: it starts
//	  at 4 (ties at s count as ending by s) and really ends at 94.
//	At 94 J5 ends: 2 free, J2 still needs 8 and J3 4; nothing starts.
//	At 100 J1 ends: 8 free, J2 starts. At 150 J2 ends: J3 starts.
//
// Waits 0, 99, 148, 0, 0: mean 49.4. Bounded slowdowns 1, 149/50 = 2.98,
// 158/10 = 15.8, 1, 1: mean 4.356. Held GPU-seconds 600 + 400 + 40 + 1000 +
// 180 = 2220 over 10 GPUs × 503 s: utilization 0.44135…
func TestReplayHandWorked(t *testing.T) {
	w := small(10,
		[4]int64{0, 100, 100, 6},
		[4]int64{1, 50, 50, 8},
		[4]int64{2, 10, 200, 4},
		[4]int64{3, 500, 500, 2},
		[4]int64{4, 90, 96, 2},
	)
	start := ReplayEASY(w)
	if want := []int64{0, 100, 150, 3, 4}; !slices.Equal(start, want) {
		t.Fatalf("starts %v, want %v", start, want)
	}
	if tick := tickReplay(w); !slices.Equal(tick, start) {
		t.Fatalf("tick-by-tick starts %v", tick)
	}
	m := Summarize(w, start)
	near := func(name string, got, want float64) {
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	near("mean wait", m.All.MeanWait, 49.4)
	near("mean bsld", m.All.MeanBSLD, 4.356)
	near("p50 wait", m.All.P50Wait, 0)   // sorted 0 0 0 99 148: element trunc(2.5) = 2
	near("p95 wait", m.All.P95Wait, 148) // element trunc(4.75) = 4
	near("p95 bsld", m.All.P95BSLD, 15.8)
	near("utilization", m.Utilization, 2220.0/5030)
	if m.Makespan != 503 || m.All.Jobs != 5 {
		t.Errorf("makespan %d jobs %d", m.Makespan, m.All.Jobs)
	}
}

// Without the reservation rule J3 would have started at 2 and delayed the
// head: a job that fits now but neither ends by s nor fits in x waits even
// when the head is far away, and a later small one may pass it.
func TestReservationNotDelayedByBackfill(t *testing.T) {
	w := small(4,
		[4]int64{0, 100, 100, 3}, // runs 0–100
		[4]int64{1, 10, 10, 4},   // head: s = 100, x = 1 + 3 − 4 = 0
		[4]int64{2, 5, 200, 1},   // would end by 202 > 100 and x = 0: waits
		[4]int64{3, 5, 90, 1},    // 3 + 90 = 93 ≤ 100: backfills
	)
	start := ReplayEASY(w)
	if want := []int64{0, 100, 110, 3}; !slices.Equal(start, want) {
		t.Fatalf("starts %v, want %v", start, want)
	}
}

func TestBoundedSlowdownTau(t *testing.T) {
	j := &Job{Submit: 0, Run: 5}
	if b := BSLD(j, 15); b != 2 { // (15 + 5) / max(5, 10)
		t.Fatalf("bsld %v", b)
	}
	if b := BSLD(j, 0); b != 1 { // (0 + 5) / 10 < 1 → 1
		t.Fatalf("bsld %v", b)
	}
}

// Jain's index, hand-worked: two campaigns with equal shares on a 4-GPU
// pool each submit one 4-GPU, 10 s job at 0. A runs 0–10, B 10–20. Over
// [0, 10) both demand 4: fair 2 each; over [10, 20) only B: fair 4. So
// O_A = 20, O_B = 60, T_A = T_B = 40; x = 2 and 2/3; J = (8/3)² ÷ (2 ·
// 40/9) = 0.8.
func TestJainHandWorked(t *testing.T) {
	w := small(4, [4]int64{0, 10, 10, 4}, [4]int64{0, 10, 10, 4})
	w.Campaigns = []Campaign{{ID: 1, Share: 0.5}, {ID: 2, Share: 0.5}}
	w.Jobs[1].Campaign = 1
	m := Summarize(w, ReplayEASY(w))
	if math.Abs(m.Jain-0.8) > 1e-12 {
		t.Fatalf("Jain %v, want 0.8", m.Jain)
	}
	// Per campaign: A waited 0, B 10 (bounded slowdown 20/10 = 2).
	a, b := m.ByCampaign[0], m.ByCampaign[1]
	if a.Jobs != 1 || a.MeanWait != 0 || b.Jobs != 1 || b.MeanWait != 10 || b.MeanBSLD != 2 {
		t.Fatalf("by campaign %+v %+v", a, b)
	}
}

// The water-filling split, hand-worked: pool 10, shares 0.5/0.3/0.2.
// Demands 2, 10, 10: A is capped at 2 (its level would be 5); 8 left split
// 3:2 → 4.8 and 3.2. Demands 2, 3, 10: A 2, then B is capped at 3 (level 8 ÷
// 0.5 · 0.3 = 4.8 > 3), C gets the remaining 5.
func TestFairSplitHandWorked(t *testing.T) {
	w := &Workload{Campaigns: []Campaign{{Share: 0.5}, {Share: 0.3}, {Share: 0.2}}}
	for _, c := range []struct{ demand, want []float64 }{
		{[]float64{2, 10, 10}, []float64{2, 4.8, 3.2}},
		{[]float64{2, 3, 10}, []float64{2, 3, 5}},
		{[]float64{1, 1, 1}, []float64{1, 1, 1}},
		{[]float64{0, 20, 0}, []float64{0, 10, 0}},
	} {
		var f fairSplit
		f.init(w)
		for i, d := range c.demand {
			f.demand[i] = d
			f.touch(i)
		}
		got := make([]float64, 3)
		f.split(10, 1, got)
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-12 {
				t.Errorf("demand %v: split %v, want %v", c.demand, got, c.want)
				break
			}
		}
	}
}

// The split against a bisection on the water level λ: Σ min(d_c, λ s_c) =
// min(pool, Σ d_c).
func TestFairSplitMatchesBisection(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.IntRange(1, 6).Draw(t, "campaigns")
		w := &Workload{}
		var f fairSplit
		shares := make([]float64, k)
		var tot float64
		for i := range shares {
			shares[i] = float64(rapid.IntRange(1, 10).Draw(t, "weight"))
			tot += shares[i]
		}
		for i := range shares {
			w.Campaigns = append(w.Campaigns, Campaign{Share: shares[i] / tot})
		}
		f.init(w)
		// Rounds of demand changes, some to and from 0, as a sweep makes
		// them; the split after each round against a bisection.
		for range rapid.IntRange(1, 6).Draw(t, "rounds") {
			for range rapid.IntRange(1, 2*k).Draw(t, "changes") {
				i := rapid.IntRange(0, k-1).Draw(t, "campaign")
				f.demand[i] = float64(rapid.IntRange(0, 20).Draw(t, "demand"))
				f.touch(i)
			}
			var dsum float64
			for i := range f.demand {
				dsum += f.demand[i]
			}
			pool := float64(rapid.IntRange(1, 40).Draw(t, "pool"))
			got := make([]float64, k)
			f.split(pool, 1, got)
			target := math.Min(pool, dsum)
			lo, hi := 0.0, 1e6
			for range 200 {
				mid := (lo + hi) / 2
				var s float64
				for i := range f.demand {
					s += math.Min(f.demand[i], mid*f.share[i])
				}
				if s < target {
					lo = mid
				} else {
					hi = mid
				}
			}
			for i := range got {
				want := math.Min(f.demand[i], hi*f.share[i])
				if math.Abs(got[i]-want) > 1e-6 {
					t.Fatalf("campaign %d: split %v, bisection %v (demand %v, pool %v)", i, got[i], want, f.demand, pool)
				}
			}
			// The busy part is sorted by demand ÷ share, the idle part
			// holds exactly the campaigns without demand.
			for p, c := range f.order {
				if (p < f.idle) != (f.demand[c] == 0) || f.pos[c] != int32(p) {
					t.Fatalf("order %v idle %d demand %v", f.order, f.idle, f.demand)
				}
				if p > f.idle && f.before(c, f.order[p-1]) {
					t.Fatalf("busy part unsorted: order %v idle %d demand %v", f.order, f.idle, f.demand)
				}
			}
		}
	})
}

// splitFor gives the campaigns it is asked for what split gives them, bit
// for bit, after rounds of demand changes (some to and from 0) and for any
// subset asked. Giving the campaign at the level's first place nothing
// (> rather than >= above) fails it, as does giving the capped ones a
// second allocation (> idle).
func TestSplitForIsSplit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.IntRange(1, 8).Draw(t, "campaigns")
		w := &Workload{}
		for range k {
			w.Campaigns = append(w.Campaigns, Campaign{Share: float64(rapid.IntRange(1, 10).Draw(t, "weight")) / 7})
		}
		var f fairSplit
		f.init(w)
		all, some := make([]float64, k), make([]float64, k)
		for range rapid.IntRange(1, 8).Draw(t, "rounds") {
			for range rapid.IntRange(1, 2*k).Draw(t, "changes") {
				i := rapid.IntRange(0, k-1).Draw(t, "campaign")
				f.demand[i] = float64(rapid.IntRange(0, 20).Draw(t, "demand"))
				f.touch(i)
			}
			var want []int32
			for c := range k {
				if rapid.Bool().Draw(t, "want") {
					want = append(want, int32(c))
				}
			}
			pool := float64(rapid.IntRange(1, 40).Draw(t, "pool"))
			dt := float64(rapid.IntRange(1, 1000).Draw(t, "dt")) / 3
			f.split(pool, dt, all)
			f.splitFor(pool, dt, some, want)
			for _, c := range want {
				if math.Float64bits(all[c]) != math.Float64bits(some[c]) {
					t.Fatalf("campaign %d: splitFor %v, split %v (demand %v, pool %v)", c, some[c], all[c], f.demand, pool)
				}
				// The next round adds to the same sums, as a day's row.
			}
			for c := range k {
				if !slices.Contains(want, int32(c)) {
					some[c] = all[c]
				}
			}
		}
	})
}
