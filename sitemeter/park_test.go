package sitemeter

import (
	"fmt"
	"slices"
	"testing"

	"github.com/bursar-hpc/bursar/policy"
	"pgregory.net/rapid"
)

// plainPark is the park as a plain list in park order: what jobPark
// must behave as. add places a job after every job submitted no later
// (by binary search on the submit time); take walks the whole list.
type plainPark []parkedJob

func (p *plainPark) add(j parkedJob) {
	i, _ := slices.BinarySearchFunc(*p, j.req.Submitted, func(q parkedJob, t int) int {
		if q.req.Submitted <= t {
			return -1
		}
		return 1
	})
	*p = slices.Insert(*p, i, j)
}

func (p *plainPark) take(idle int) []parkedJob {
	var out []parkedJob
	kept := (*p)[:0]
	for _, q := range *p {
		if q.req.GPUs <= idle {
			idle -= q.req.GPUs
			out = append(out, q)
			continue
		}
		kept = append(kept, q)
	}
	*p = kept
	return out
}

// all is every job of p in park order.
func (p *jobPark) all() []parkedJob {
	var out []parkedJob
	for i := range p.widths {
		out = append(out, p.widths[i].live()...)
	}
	slices.SortFunc(out, func(a, b parkedJob) int {
		if before(&a, &b) {
			return -1
		}
		return 1
	})
	return out
}

// roots are the jobs' ids, in order.
func roots(js []parkedJob) []int32 {
	out := make([]int32, len(js))
	for i, j := range js {
		out[i] = j.filing.root
	}
	return out
}

// TestParkTakesWhatAPlainWalkTakes: the park kept by width takes the
// same jobs in the same order as a plain list walked through, and keeps
// the rest in the same order, whatever the jobs parked (many submitted at
// once, many of a width), the jobs taken back (submitted before the
// last), the idle GPUs at each step, and copies made (clone) and written
// on either side.
func TestParkTakesWhatAPlainWalkTakes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		type twin struct {
			park  jobPark
			plain plainPark
		}
		twins := []*twin{{}}
		next := int32(0)
		check := func(tw *twin, what string) {
			if got, want := roots(tw.park.all()), roots(tw.plain); !slices.Equal(got, want) {
				t.Fatalf("after %s: park holds %v, a plain list %v", what, got, want)
			}
			if tw.park.n != len(tw.plain) {
				t.Fatalf("after %s: park counts %d jobs, holds %d", what, tw.park.n, len(tw.plain))
			}
			// The prefix bests kept are those a fresh walk finds.
			for i, b := range tw.park.best {
				want := -1
				for x := range i + 1 {
					w := &tw.park.widths[x]
					if w.head < len(w.jobs) && (want < 0 || before(&w.jobs[w.head], &tw.park.widths[want].jobs[tw.park.widths[want].head])) {
						want = x
					}
				}
				if b != want {
					t.Fatalf("after %s: best[%d] = %d, a fresh walk finds %d", what, i, b, want)
				}
			}
			if tw.park.n > 0 {
				least := slices.MinFunc(tw.plain, func(a, b parkedJob) int { return a.req.GPUs - b.req.GPUs })
				if tw.park.narrowest() != least.req.GPUs {
					t.Fatalf("after %s: narrowest %d, want %d", what, tw.park.narrowest(), least.req.GPUs)
				}
			}
		}
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			tw := twins[rapid.IntRange(0, len(twins)-1).Draw(t, "twin")]
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0, 1, 2, 3, 4:
				j := parkedJob{
					req:    policy.Request{GPUs: rapid.IntRange(1, 8).Draw(t, "gpus"), Submitted: rapid.IntRange(0, 12).Draw(t, "submitted")},
					filing: filing{root: next, stay: true},
				}
				next++
				tw.park.add(j)
				tw.plain.add(j)
				check(tw, "add")
			case 5, 6, 7, 8:
				idle := rapid.IntRange(0, 14).Draw(t, "idle")
				got, _ := tw.park.take(idle, nil)
				want := tw.plain.take(idle)
				if !slices.Equal(roots(got), roots(want)) {
					t.Fatalf("take(%d) took %v, a plain walk %v", idle, roots(got), roots(want))
				}
				check(tw, "take")
			case 9:
				twins = append(twins, &twin{park: tw.park.clone(), plain: slices.Clone(tw.plain)})
			}
		}
		for i, tw := range twins {
			check(tw, fmt.Sprintf("the steps of twin %d", i))
		}
	})
}
