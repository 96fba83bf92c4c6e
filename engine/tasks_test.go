package engine

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// refMeanTodo is meanIOOf(false) as the prototype computes it: the mean io
// of the first meanIOWindow unfinished tasks of the to-do list, summed left
// to right.
func refMeanTodo(w *workList) float64 {
	n, sum := 0, 0.0
	for _, ti := range w.todo {
		if n == meanIOWindow {
			break
		}
		if !w.done[ti] {
			sum += w.tasks[ti].IO
			n++
		}
	}
	return sum / float64(n)
}

// A work list's to-do mean io is the prototype's, bit for bit, whatever
// mix of starved steps (which finish tasks out of to-do order) and plain
// ones came before; and a list rebuilt from a released one starts as a
// new one does.
func TestMeanIOMatchesPrototype(t *testing.T) {
	ts := newTaskSet(7, 400)
	rapid.Check(t, func(t *rapid.T) {
		adaptive := rapid.Bool().Draw(t, "adaptive")
		if rapid.Bool().Draw(t, "reuse") {
			used := newWorkList(ts, !adaptive)
			used.work(false, 5000)
			releaseWorkLists([]*science{{work: used}})
		}
		w := newWorkList(ts, adaptive)
		fresh := newWorkList(ts, adaptive)
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			if w.empty() {
				break
			}
			if got, want := w.meanIOOf(false), refMeanTodo(w); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("to-do mean io %v, the prototype's %v (head %d)", got, want, w.head)
			}
			starved := adaptive && rapid.Bool().Draw(t, "starved")
			budget := rapid.Float64Range(0, 3000).Draw(t, "budget")
			if k, kf := w.work(starved, budget), fresh.work(starved, budget); k != kf || w.science != fresh.science {
				t.Fatalf("a reused list finished %d tasks (science %v), a new one %d (%v)", k, w.science, kf, fresh.science)
			}
		}
	})
}
