package engine

import (
	"math"
	"slices"
	"sort"
	"sync"
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
	// adaptive: the list is in density order and keeps win and hot up to
	// date (only the adaptive campaign needs them).
	adaptive bool
	hot      hotIndex

	science   float64
	completed int

	// The mean io of the leading tasks of the to-do list and of the
	// starved window, cached until a task finishes (-1: not computed).
	meanTodo, meanWin float64
}

type densityKey struct {
	density float64
	index   int32
}

// taskSet is everything about one seed's task list that no run changes:
// the tasks, the adaptive campaign's density order and the starting state
// of its indexes. Runs share it read-only.
type taskSet struct {
	tasks     []Task
	byDensity []int32 // the adaptive to-do order
	rank      []int32 // a task's position in byDensity
	hot       hotIndex
	win       []int32 // the starved window before any work
}

func newTaskSet(seed int64, n int) *taskSet {
	tasks := GenerateTasks(seed, n)
	ts := &taskSet{tasks: tasks, byDensity: make([]int32, n), rank: make([]int32, n)}
	// Sorted through (density, index) keys, ties broken by generation
	// order: the result of a stable sort, at the cost of an unstable one on
	// flat keys.
	keys := make([]densityKey, n)
	for i := range tasks {
		keys[i] = densityKey{tasks[i].Density, int32(i)}
	}
	slices.SortFunc(keys, func(a, b densityKey) int {
		switch {
		case a.density > b.density:
			return -1
		case a.density < b.density:
			return 1
		}
		return int(a.index - b.index)
	})
	for pos, k := range keys {
		ts.byDensity[pos] = k.index
		ts.rank[k.index] = int32(pos)
	}
	ts.hot.init(tasks, ts.byDensity)
	w := &workList{tasks: tasks, rank: ts.rank, win: make([]int32, 0, starvedWindow)}
	for _, ti := range ts.byDensity[:min(starvedWindow, n)] {
		w.insertWin(ti)
	}
	ts.win = w.win
	return ts
}

// taskCache keeps the task sets of the last few seeds: a sweep runs every
// grid point on the same seeds, and building a set (drawing 3000 tasks and
// sorting them) is a sixth of a run.
var taskCache struct {
	sync.Mutex
	sets []*taskSet // most recent first
	keys []taskKey
}

type taskKey struct {
	seed int64
	n    int
}

const taskCacheSize = 8

func taskSetFor(seed int64, n int) *taskSet {
	key := taskKey{seed, n}
	taskCache.Lock()
	for i, k := range taskCache.keys {
		if k == key {
			ts := taskCache.sets[i]
			taskCache.Unlock()
			return ts
		}
	}
	taskCache.Unlock()
	// Built outside the lock: two workers may build the same set at once,
	// which costs time but never changes a result.
	ts := newTaskSet(seed, n)
	taskCache.Lock()
	taskCache.keys = append([]taskKey{key}, taskCache.keys[:min(len(taskCache.keys), taskCacheSize-1)]...)
	taskCache.sets = append([]*taskSet{ts}, taskCache.sets[:min(len(taskCache.sets), taskCacheSize-1)]...)
	taskCache.Unlock()
	return ts
}

// newWorkList makes a campaign's to-do list: in generation order, or for
// the adaptive campaign in density order (highest first, stable).
func newWorkList(ts *taskSet, adaptive bool) *workList {
	n := len(ts.tasks)
	w := &workList{
		tasks:     ts.tasks,
		remaining: make([]float64, n),
		done:      make([]bool, n),
		todo:      make([]int32, n),
		adaptive:  adaptive,
		meanTodo:  -1,
		meanWin:   -1,
	}
	for i := range ts.tasks {
		w.remaining[i] = ts.tasks[i].Size
	}
	if !adaptive {
		for i := range w.todo {
			w.todo[i] = int32(i)
		}
		return w
	}
	copy(w.todo, ts.byDensity)
	w.rank = ts.rank
	w.hot = ts.hot.clone()
	w.win = append(make([]int32, 0, starvedWindow), ts.win...)
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

// orderMeanIO is the processing order (the starved window or the to-do
// list) and the mean io of its leading tasks.
func (w *workList) orderMeanIO(starved bool) ([]int32, float64) {
	if starved {
		if w.meanWin < 0 {
			w.meanWin = w.meanIO(w.win)
		}
		return w.win, w.meanWin
	}
	if w.meanTodo < 0 {
		w.meanTodo = w.meanIO(w.todo)
	}
	return w.todo, w.meanTodo
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
		if w.adaptive {
			w.hot.set(int(w.rank[ti]), w.remaining[ti])
		}
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
	w.meanTodo, w.meanWin = -1, -1
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
	if !w.adaptive {
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

// hotIndex answers "how much work is left in tasks at least this dense"
// without walking the to-do list: a Fenwick tree over the initial density
// ranks holds each task's remaining size in fixed point (finished tasks
// hold 0). Integer sums are exact, so the only error is the rounding of
// each size to 2^-24, far below hotSlack.
type hotIndex struct {
	tree    []int64   // 1-based Fenwick tree
	fixed   []int64   // remaining size per rank, fixed point
	density []float64 // density per rank, descending
	// slack bounds the difference between work() and the prototype's
	// left-to-right float sum of the same sizes: each size is rounded by at
	// most 2^-25, and a float sum of n terms is off by at most about n·ε
	// times their total. It is set with a wide margin over both.
	slack float64
}

const hotScale = 1 << 24

func (h *hotIndex) init(tasks []Task, order []int32) {
	n := len(order)
	h.tree = make([]int64, n+1)
	h.fixed = make([]int64, n)
	h.density = make([]float64, n)
	total := 0.0
	for r, ti := range order {
		h.density[r] = tasks[ti].Density
		h.set(r, tasks[ti].Size)
		total += tasks[ti].Size
	}
	h.slack = 4 * float64(n) * (1.0/hotScale + 2.3e-16*total)
}

// clone copies the mutable parts; densities are shared read-only.
func (h *hotIndex) clone() hotIndex {
	c := *h
	c.tree = slices.Clone(h.tree)
	c.fixed = slices.Clone(h.fixed)
	return c
}

func (h *hotIndex) set(rank int, v float64) {
	nv := int64(math.Round(v * hotScale))
	d := nv - h.fixed[rank]
	h.fixed[rank] = nv
	for i := rank + 1; i < len(h.tree); i += i & -i {
		h.tree[i] += d
	}
}

// work is the remaining work, in GPU-seconds, of the tasks whose density is
// at least price, within slack of the prototype's float sum.
func (h *hotIndex) work(price float64) float64 {
	k := sort.Search(len(h.density), func(i int) bool { return h.density[i] < price })
	var s int64
	for i := k; i > 0; i -= i & -i {
		s += h.tree[i]
	}
	return float64(s) / hotScale
}
