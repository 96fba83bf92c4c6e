package engine

import (
	"cmp"
	"slices"
)

// Task is one unit of science work of a science campaign.
type Task struct {
	// Value is the science it yields when finished.
	Value float64
	// Size is its work in GPU-seconds.
	Size float64
	// IO is the filesystem traffic it needs, GB per GPU-second.
	IO float64
	// Density is value per GPU-hour.
	Density float64
	// ioValue is value per GB of traffic, the order an io-starved agent
	// works in.
	ioValue float64
}

// GenerateTasks draws n tasks from a Python-compatible source seeded with
// seed: value ~ lognormal(0, 1), size ~ uniform(200, 2000), io ~
// uniform(0.01, 0.09), drawn in that order per task.
func GenerateTasks(seed int64, n int) []Task {
	r := NewPyRand(seed)
	tasks := make([]Task, n)
	for i := range tasks {
		value := r.LogNormal(0, 1)
		size := r.Uniform(200, 2000)
		io := r.Uniform(0.01, 0.09)
		tasks[i] = Task{
			Value: value, Size: size, IO: io,
			Density: value / (size / 3600),
			ioValue: value / (float64(io*size) + 1e-9),
		}
	}
	return tasks
}

// meanIOWindow is how many leading tasks of the processing order set an
// agent's expected io per GPU-second.
const meanIOWindow = 20

// starvedWindow is how many leading to-do tasks an io-starved agent
// reorders by value per GB.
const starvedWindow = 200

// workList is one science campaign's to-do list and progress. The task
// definitions are shared between campaigns; remaining sizes are its own.
type workList struct {
	tasks     []Task
	remaining []float64
	done      []bool
	todo      []int32

	// win is todo[:starvedWindow] ordered by value per GB (highest first,
	// ties in to-do order). It is kept up to date as tasks finish, so that
	// a starved step does not sort 200 tasks again.
	win  []int32
	rank []int32 // a task's position in the initial to-do order
	// keepWin: maintain win (only the adaptive campaign needs it).
	keepWin bool

	science   float64
	completed int
}

func newWorkList(tasks []Task, byDensity, keepWin bool) *workList {
	w := &workList{
		tasks:     tasks,
		remaining: make([]float64, len(tasks)),
		done:      make([]bool, len(tasks)),
		todo:      make([]int32, len(tasks)),
		keepWin:   keepWin,
	}
	for i := range tasks {
		w.remaining[i] = tasks[i].Size
		w.todo[i] = int32(i)
	}
	if byDensity {
		slices.SortStableFunc(w.todo, func(a, b int32) int { return cmp.Compare(tasks[b].Density, tasks[a].Density) })
	}
	if keepWin {
		w.rank = make([]int32, len(tasks))
		for pos, ti := range w.todo {
			w.rank[ti] = int32(pos)
		}
		w.win = make([]int32, 0, starvedWindow)
		for _, ti := range w.todo[:min(starvedWindow, len(w.todo))] {
			w.insertWin(ti)
		}
	}
	return w
}

// winBefore orders the starved window: value per GB descending, then to-do
// order (a stable sort of the to-do prefix).
func (w *workList) winBefore(a, b int32) bool {
	ka, kb := w.tasks[a].ioValue, w.tasks[b].ioValue
	if ka != kb {
		return ka > kb
	}
	return w.rank[a] < w.rank[b]
}

func (w *workList) insertWin(ti int32) {
	i, _ := slices.BinarySearchFunc(w.win, ti, func(e, t int32) int {
		if w.winBefore(e, t) {
			return -1
		}
		return 1
	})
	w.win = slices.Insert(w.win, i, ti)
}

// meanIO is the mean io of the first tasks of a processing order, summed in
// order.
func (w *workList) meanIO(order []int32) float64 {
	n := min(meanIOWindow, len(order))
	sum := 0.0
	for _, ti := range order[:n] {
		sum += w.tasks[ti].IO
	}
	return sum / float64(n)
}

// spend works budget GPU-seconds through the tasks in order and returns how
// many it finished; those are always the first ones of order.
func (w *workList) spend(order []int32, budget float64) int {
	k := 0
	for _, ti := range order {
		if budget <= 0 {
			break
		}
		take := min(budget, w.remaining[ti])
		w.remaining[ti] -= take
		budget -= take
		if w.remaining[ti] <= 0 {
			w.science += w.tasks[ti].Value
			w.completed++
			w.done[ti] = true
			k++
		}
	}
	return k
}

// removeDone takes the k finished tasks, which lead the processing order,
// off the to-do list (and the starved window). fromWin says the order was
// the starved window rather than the to-do list itself.
func (w *workList) removeDone(k int, fromWin bool) {
	if k == 0 {
		return
	}
	if !fromWin {
		// Finished tasks lead the to-do list.
		w.todo = w.todo[k:]
	} else {
		// Finished tasks sit among the first starvedWindow of the to-do
		// list: compact that prefix towards its end, keeping order.
		region := w.todo[:min(starvedWindow, len(w.todo))]
		dst := len(region)
		for i := len(region) - 1; i >= 0; i-- {
			if !w.done[region[i]] {
				dst--
				region[dst] = region[i]
			}
		}
		w.todo = w.todo[dst:]
	}
	if !w.keepWin {
		return
	}
	if fromWin {
		w.win = slices.Delete(w.win, 0, k)
	} else {
		w.win = slices.DeleteFunc(w.win, func(ti int32) bool { return w.done[ti] })
	}
	end := min(starvedWindow, len(w.todo))
	for _, ti := range w.todo[len(w.win):end] {
		w.insertWin(ti)
	}
}
