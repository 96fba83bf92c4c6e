package static

import (
	"math/bits"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
)

// firstPassing is find's definition, by a walk of the list: the first
// place from on of a live job no wider than free, and no wider than extra
// or no longer than limit (-1: none).
func firstPassing(qu *partQueue, from, free, extra, limit int) int {
	if free < 1 {
		return -1
	}
	for x := max(from, 0); x < len(qu.list); x++ {
		e := &qu.list[x]
		if l := e.least(); !e.dead && l <= free && (l <= extra || e.est <= limit) {
			return x
		}
	}
	return -1
}

// TestFindIsTheFirstJobThatPasses: a partition queue's search by its tree
// (find), whose bands count widths in the unit of the live jobs' greatest
// common divisor, finds what a walk of the list finds, after every join,
// leave and compaction, for any bounds: widths drawn as multiples of a
// unit (727 GPUs, as the resampled 300k-job log's) and now and then of
// any width, which the unit then divides no longer, rigid jobs and
// elastic requests (least 1), some filed in the past (a requeued job).
// The unit divides every live job's least after every step.
func TestFindIsTheFirstJobThatPasses(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.SampledFrom([]int{16, 128, 1024, 93056}).Draw(t, "pool")
		k, err := New(policy.DefaultConfig(pool), DefaultKnobs())
		if err != nil {
			t.Fatal(err)
		}
		unit := rapid.SampledFrom([]int{1, 2, 3, 8, 727}).Draw(t, "unit")
		unit = min(unit, pool)
		var qu partQueue
		if rapid.Bool().Draw(t, "partition") {
			// Bands up to a partition's size; searches for more too.
			qu.most = rapid.IntRange(1, pool).Draw(t, "most")
		}
		qu.build(k)
		next := 0
		for step := range rapid.IntRange(1, 120).Draw(t, "steps") {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0, 1: // a job joins
				gpus := unit * rapid.IntRange(1, pool/unit).Draw(t, "units")
				if rapid.IntRange(0, 9).Draw(t, "odd") == 0 {
					gpus = rapid.IntRange(1, pool).Draw(t, "gpus")
				}
				e := waiting{submitted: next / 2, id: next, gpus: gpus, est: rapid.IntRange(1, 1e5).Draw(t, "est"),
					rigid: rapid.IntRange(0, 9).Draw(t, "elastic") > 0}
				if len(qu.list) > 0 && rapid.IntRange(0, 9).Draw(t, "requeued") == 0 {
					e.submitted = qu.list[rapid.IntRange(0, len(qu.list)-1).Draw(t, "behind")].submitted
				}
				next++
				qu.add(k, e)
			case 2: // a job leaves
				if len(qu.list) == 0 {
					continue
				}
				e := qu.list[rapid.IntRange(0, len(qu.list)-1).Draw(t, "leaves")]
				qu.remove(k, e.submitted, e.id)
			case 3:
				qu.compact(k)
			}
			for _, e := range qu.list {
				if !e.dead && e.least()%qu.unit != 0 {
					t.Fatalf("step %d: unit %d does not divide job %+v", step, qu.unit, e)
				}
			}
			for q := range 8 {
				from := rapid.IntRange(0, len(qu.list)).Draw(t, "from")
				free := rapid.IntRange(0, pool).Draw(t, "free")
				extra := rapid.IntRange(0, free).Draw(t, "extra")
				limit := rapid.IntRange(-1, 1e5+1).Draw(t, "limit")
				if got, want := qu.find(k, from, free, extra, limit), firstPassing(&qu, from, free, extra, limit); got != want {
					t.Fatalf("step %d, query %d: find(from %d, free %d, extra %d, limit %d) = %d, the walk finds %d (unit %d)\n%+v",
						step, q, from, free, extra, limit, got, want, qu.unit, qu.list)
				}
			}
		}
	})
}

// stepsOf is the tree's nodes a find reads (its work counted walked).
func stepsOf(k *baseline.Core, qu *partQueue, from, free, extra, limit int) (at, steps int) {
	before := k.Work().Walked
	at = qu.find(k, from, free, extra, limit)
	return at, int(k.Work().Walked - before)
}

// TestSearchPassesOverJobsTooWide: a stretch of long jobs narrow enough
// and short ones just too wide for the free GPUs is passed over whole, at
// the root: the band the search reads holds no job wider than the free
// GPUs where the log's widths are powers of two of a unit. Each queue
// alternates a narrow job of a long estimate with a wide one of a short
// estimate, 512 of each, no job passes, and a search from the first place
// reads the root alone. A band that holds the wide jobs too makes the
// search descend into every stretch: a thousand nodes and more.
func TestSearchPassesOverJobsTooWide(t *testing.T) {
	for _, tc := range []struct {
		name               string
		pool, narrow, wide int
		free               int
		odd                int // a job of this width first, long (0: none), which sets the unit
		first              int // jobs of this width and short first, the wide ones (0: none)
		unit               int
	}{
		// SDSC-SP2's widths in GPUs: a band of 8 for 7 GPUs free held
		// every job of 8, one of 16 for 15 every job of 16.
		{name: "7 of 128 GPUs free", pool: 128, narrow: 4, wide: 8, free: 7, odd: 1, unit: 1},
		{name: "15 of 128 GPUs free", pool: 128, narrow: 8, wide: 16, free: 15, odd: 3, unit: 1},
		// The resampled log's, in units of 727 GPUs: counted in GPUs,
		// the band of 1,536 for 1,400 free held every job of 1,454, and
		// the band of 6,144 for 5,000 every job of 5,816.
		{name: "1,400 of 93,056 GPUs free", pool: 93056, narrow: 727, wide: 1454, free: 1400, unit: 727},
		{name: "5,000 of 93,056 GPUs free", pool: 93056, narrow: 2908, wide: 5816, free: 5000, odd: 727, unit: 727},
		// The unit made finer when a narrower job joins (add builds the
		// tree again): in units of 2,908 the band for 2,000 GPUs free
		// would hold every job of 2,908.
		{name: "a finer unit joins", pool: 93056, narrow: 727, free: 2000, first: 2908, unit: 727},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := New(policy.DefaultConfig(tc.pool), DefaultKnobs())
			if err != nil {
				t.Fatal(err)
			}
			k.CountWork(true)
			var qu partQueue
			qu.build(k)
			id := 0
			file := func(gpus, est int) {
				qu.add(k, waiting{submitted: id, id: id, gpus: gpus, est: est, rigid: true})
				id++
			}
			if tc.odd > 0 {
				file(tc.odd, 100_000)
			}
			if tc.first > 0 {
				for range 512 {
					file(tc.first, 10)
				}
				if qu.unit != tc.first {
					t.Fatalf("unit %d of jobs of %d GPUs", qu.unit, tc.first)
				}
			}
			for range 512 {
				file(tc.narrow, 100_000)
				if tc.wide > 0 {
					file(tc.wide, 10)
				}
			}
			if qu.unit != tc.unit {
				t.Fatalf("unit %d, want %d", qu.unit, tc.unit)
			}
			at, steps := stepsOf(k, &qu, 0, tc.free, 0, 1000)
			if want := firstPassing(&qu, 0, tc.free, 0, 1000); at != want || at != -1 {
				t.Fatalf("found %d, the walk %d, want none", at, want)
			}
			if steps > 1 {
				t.Errorf("the search read %d nodes of a tree of %d leaves, want the root alone", steps, qu.leaves)
			}
			// A narrow job short enough behind them all is found, by a
			// climb and a descent: twice the tree's height and a few.
			file(tc.narrow, 10)
			at, steps = stepsOf(k, &qu, 0, tc.free, 0, 1000)
			if at != len(qu.list)-1 {
				t.Fatalf("found %d, want the last place %d", at, len(qu.list)-1)
			}
			if h := bits.Len(uint(qu.leaves)); steps > 2*h+2 {
				t.Errorf("the search read %d nodes to the last place, more than twice the height %d and 2", steps, h)
			}
		})
	}
}

// TestFindAfterTheHeadsStarted: a head the heads' walk starts under lend
// none keeps its bounds in the tree (remove, headStart), and a search
// that starts after it, as every later search does, still finds what a
// walk of the list finds, whatever else joins (behind the list's end, or
// before it: a requeued job, which makes the tree again) or leaves. It
// fails if remove leaves the bounds of any other job that leaves (case 2)
// as they were.
func TestFindAfterTheHeadsStarted(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.SampledFrom([]int{16, 128, 93056}).Draw(t, "pool")
		k, err := New(policy.DefaultConfig(pool), DefaultKnobs())
		if err != nil {
			t.Fatal(err)
		}
		var qu partQueue
		qu.hint = -1
		qu.build(k)
		next, front := 0, 0 // the searches start at front or after it
		for step := range rapid.IntRange(1, 150).Draw(t, "steps") {
			switch rapid.IntRange(0, 4).Draw(t, "op") {
			case 0, 1: // a job joins
				e := waiting{submitted: next / 2, id: next, gpus: rapid.IntRange(1, pool).Draw(t, "gpus"),
					est: rapid.IntRange(1, 1e5).Draw(t, "est"), rigid: true}
				if len(qu.list) > 0 && rapid.IntRange(0, 19).Draw(t, "requeued") == 0 {
					e.submitted = qu.list[rapid.IntRange(0, len(qu.list)-1).Draw(t, "behind")].submitted
				}
				if len(qu.list) > 0 && e.before(&qu.list[len(qu.list)-1]) {
					front = 0 // filed before the end: the tree is made again
				}
				next++
				qu.add(k, e)
			case 2: // a job leaves otherwise (a backfill's start)
				if len(qu.list) == 0 {
					continue
				}
				e := qu.list[rapid.IntRange(0, len(qu.list)-1).Draw(t, "leaves")]
				qu.remove(k, e.submitted, e.id)
			case 3, 4: // the first job waiting starts as a head
				x := 0
				for x < len(qu.list) && qu.list[x].dead {
					x++
				}
				if x == len(qu.list) {
					continue
				}
				qu.hint, qu.headStart = x, true
				qu.remove(k, qu.list[x].submitted, qu.list[x].id)
				qu.hint, qu.headStart = -1, false
				front = x + 1
			}
			for q := range 8 {
				from := rapid.IntRange(front, max(front, len(qu.list))).Draw(t, "from")
				free := rapid.IntRange(0, pool).Draw(t, "free")
				extra := rapid.IntRange(0, free).Draw(t, "extra")
				limit := rapid.IntRange(-1, 1e5+1).Draw(t, "limit")
				if got, want := qu.find(k, from, free, extra, limit), firstPassing(&qu, from, free, extra, limit); got != want {
					t.Fatalf("step %d, query %d: find(from %d, free %d, extra %d, limit %d) = %d, the walk finds %d\n%+v",
						step, q, from, free, extra, limit, got, want, qu.list)
				}
			}
		}
	})
}

// TestTreeHoldsEachStretchsBounds: after every join and leave, each
// node of a partition queue's tree holds its stretch's bounds: a leaf its
// job's (none once it left), a node above the least of its children's,
// the least and every band. set's climb joins only the bounds that
// changed at the level below: one that dropped a band from the mask
// (a band whose bound moved but is not joined above), or stopped
// carrying the least, leaves a node's bound stale, which this finds where
// a search (TestFindIsTheFirstJobThatPasses) may not. Widths are drawn in
// a few units and any, so that a leaving job's bands start anywhere, and
// estimates from a few values, so that a job is often not the only
// shortest of its stretch.
func TestTreeHoldsEachStretchsBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.SampledFrom([]int{16, 128, 93056}).Draw(t, "pool")
		k, err := New(policy.DefaultConfig(pool), DefaultKnobs())
		if err != nil {
			t.Fatal(err)
		}
		unit := min(rapid.SampledFrom([]int{1, 2, 727}).Draw(t, "unit"), pool)
		var qu partQueue
		qu.hint = -1
		qu.build(k)
		next := 0
		for step := range rapid.IntRange(1, 150).Draw(t, "steps") {
			if rapid.IntRange(0, 2).Draw(t, "op") < 2 || qu.live == 0 {
				gpus := unit * rapid.IntRange(1, pool/unit).Draw(t, "units")
				if rapid.IntRange(0, 9).Draw(t, "odd") == 0 {
					gpus = rapid.IntRange(1, pool).Draw(t, "gpus")
				}
				qu.add(k, waiting{submitted: next, id: next, gpus: gpus,
					est: rapid.SampledFrom([]int{5, 60, 3600, 86400, 1e9}).Draw(t, "est"), rigid: rapid.IntRange(0, 9).Draw(t, "elastic") > 0})
				next++
			} else {
				e := qu.list[rapid.IntRange(0, len(qu.list)-1).Draw(t, "leaves")]
				qu.remove(k, e.submitted, e.id)
			}
			// What each node should hold, from the leaves up.
			var want partQueue
			want.leaves, want.bands, want.unit = qu.leaves, qu.bands, qu.unit
			want.least = make([]int32, 2*qu.leaves)
			want.short = make([]int32, 2*qu.leaves*qu.bands)
			for i := range qu.leaves {
				var e *waiting
				if i < len(qu.list) {
					e = &qu.list[i]
				}
				want.leaf(qu.leaves+i, e)
			}
			for n := qu.leaves - 1; n > 0; n-- {
				want.join(n)
			}
			for n := 1; n < 2*qu.leaves; n++ {
				if qu.least[n] != want.least[n] {
					t.Fatalf("step %d: node %d's least %d, its stretch's %d", step, n, qu.least[n], want.least[n])
				}
				for b := range qu.bands {
					if got, w := qu.short[n*qu.bands+b], want.short[n*qu.bands+b]; got != w {
						t.Fatalf("step %d: node %d's band %d (≤ %d units of %d) holds %d, its stretch's shortest %d",
							step, n, b, bandWidth(b), qu.unit, got, w)
					}
				}
			}
		}
	})
}
