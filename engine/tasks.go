package engine

import (
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
//
// The to-do list is todo[head:] without the finished tasks: a finished task
// is only flagged, and head moves past the flagged ones at the front. Tasks
// finish in processing order, which is the to-do list itself or the starved
// window (a subset of its first starvedWindow tasks), so flagged tasks never
// lie beyond winEnd and the list never needs compacting.
type workList struct {
	tasks     []Task
	remaining []float64
	done      []bool
	todo      []int32
	head      int // todo[head] is the first unfinished task (or head = len)
	left      int // unfinished tasks

	// win is the first starvedWindow unfinished to-do tasks ordered by
	// value per GB (highest first, ties in to-do order), kept up to date as
	// tasks finish so that a starved step does not sort 200 tasks again;
	// todo[winEnd:] holds the tasks not yet in it.
	win    []int32
	winEnd int
	rank   []int32 // a task's position in the initial to-do order
	// ioRank is a task's position in the window's order over all tasks
	// (value per GB descending, then rank): the window is sorted by it.
	ioRank []int32
	// adaptive: the list is in density order and keeps win and hot up to
	// date (only the adaptive campaign needs them).
	adaptive bool
	hot      hotIndex

	science   float64
	completed int
	finished  []int32 // scratch: the tasks one spend finished
	// doneAhead counts the finished tasks in todo[head:] (a starved
	// step finishes tasks out of to-do order); while it is 0 the to-do
	// list's mean io is todoMean[head].
	doneAhead int
	todoMean  []float64

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
	tasks    []Task
	sizes    []float64 // every task's size: a new list's remaining work
	genOrder []int32   // 0, 1, …: the naive to-do order
	// genMean and densityMean are meanIOOf(false) of a list in that
	// to-do order with head h and no task finished past it, by h.
	genMean, densityMean []float64
	byDensity            []int32 // the adaptive to-do order
	rank                 []int32 // a task's position in byDensity
	ioRank               []int32 // a task's position in the starved window's order
	hot                  hotIndex
	win                  []int32 // the starved window before any work
}

func newTaskSet(seed int64, n int) *taskSet {
	tasks := GenerateTasks(seed, n)
	ts := &taskSet{tasks: tasks, byDensity: make([]int32, n), rank: make([]int32, n),
		sizes: make([]float64, n), genOrder: make([]int32, n)}
	for i := range tasks {
		ts.sizes[i], ts.genOrder[i] = tasks[i].Size, int32(i)
	}
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
	ts.genMean, ts.densityMean = leadingMeans(tasks, ts.genOrder), leadingMeans(tasks, ts.byDensity)
	ts.ioRank = ioRanks(tasks, ts.rank)
	w := &workList{tasks: tasks, rank: ts.rank, ioRank: ts.ioRank, win: make([]int32, 0, starvedWindow)}
	for _, ti := range ts.byDensity[:min(starvedWindow, n)] {
		w.insertWin(ti)
	}
	ts.win = w.win
	return ts
}

// leadingMeans is, for every head h, the mean io of the first
// meanIOWindow tasks of order[h:], summed as meanIOOf sums them (left to
// right from zero), so that it is the same float.
func leadingMeans(tasks []Task, order []int32) []float64 {
	means := make([]float64, len(order))
	for h := range order {
		n, sum := 0, 0.0
		for _, ti := range order[h:min(h+meanIOWindow, len(order))] {
			sum += tasks[ti].IO
			n++
		}
		means[h] = sum / float64(n)
	}
	return means
}

// ioRanks is every task's position in the starved window's order: value
// per GB descending, then density rank (a total order: ranks differ).
// The window's searches compare these, not the two keys.
func ioRanks(tasks []Task, rank []int32) []int32 {
	order := make([]int32, len(tasks))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		ka, kb := tasks[a].ioValue, tasks[b].ioValue
		switch {
		case ka > kb:
			return -1
		case ka < kb:
			return 1
		}
		return int(rank[a] - rank[b])
	})
	ioRank := make([]int32, len(tasks))
	for pos, ti := range order {
		ioRank[ti] = int32(pos)
	}
	return ioRank
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
// the adaptive campaign in density order (highest first, stable). Its
// buffers come from a list a finished run gave back (releaseWorkLists)
// when there is one: a run's work lists were two fifths of its allocated
// bytes (BenchmarkScenario), and every slice is written over here, so a
// reused one starts exactly as a new one.
func newWorkList(ts *taskSet, adaptive bool) *workList {
	n := len(ts.tasks)
	w, _ := workPool.Get().(*workList)
	if w == nil || cap(w.remaining) < n {
		w = &workList{
			remaining: make([]float64, n),
			done:      make([]bool, n),
			todo:      make([]int32, n),
			win:       make([]int32, 0, starvedWindow),
			hot:       hotIndex{fixed: make([]int64, n)},
		}
	}
	*w = workList{
		tasks:     ts.tasks,
		remaining: w.remaining[:n],
		done:      w.done[:n],
		todo:      w.todo[:n],
		left:      n,
		adaptive:  adaptive,
		finished:  w.finished[:0],
		meanTodo:  -1,
		meanWin:   -1,
		win:       w.win[:0],
		hot:       hotIndex{fixed: w.hot.fixed[:0], levels: w.hot.levels[:0]},
	}
	copy(w.remaining, ts.sizes)
	clear(w.done)
	if !adaptive {
		copy(w.todo, ts.genOrder)
		w.todoMean = ts.genMean
		return w
	}
	copy(w.todo, ts.byDensity)
	w.todoMean = ts.densityMean
	w.rank, w.ioRank = ts.rank, ts.ioRank
	w.hot.cloneFrom(&ts.hot)
	w.win = append(w.win, ts.win...)
	w.winEnd = len(w.win)
	return w
}

// workPool holds the work lists of finished runs, for newWorkList.
var workPool sync.Pool

// releaseWorkLists gives the work lists of a finished run back to
// newWorkList; nothing may read them after.
func releaseWorkLists(sciences []*science) {
	for _, sc := range sciences {
		workPool.Put(sc.work)
		sc.work = nil
	}
}

// empty reports whether every task is finished.
func (w *workList) empty() bool { return w.left == 0 }

// first is the first unfinished to-do task; the list must not be empty.
func (w *workList) first() int32 { return w.todo[w.head] }

// winPos is the number of window tasks before task ti in the window's
// order (value per GB descending, then to-do order: a stable sort of the
// to-do prefix), which is ti's index if it is in the window.
func (w *workList) winPos(ti int32) int {
	key, ioRank, win := w.ioRank[ti], w.ioRank, w.win
	lo, hi := 0, len(win)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ioRank[win[m]] < key {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (w *workList) insertWin(ti int32) {
	w.win = slices.Insert(w.win, w.winPos(ti), ti)
}

// removeWin takes one task out of the window, found by its sort key.
func (w *workList) removeWin(ti int32) {
	i := w.winPos(ti)
	w.win = slices.Delete(w.win, i, i+1)
}

// meanIOOf is the mean io of the leading tasks of the processing order: the
// starved window, or the to-do list.
func (w *workList) meanIOOf(starved bool) float64 {
	if starved {
		if w.meanWin < 0 {
			n := min(meanIOWindow, len(w.win))
			sum := 0.0
			for _, ti := range w.win[:n] {
				sum += w.tasks[ti].IO
			}
			w.meanWin = sum / float64(n)
		}
		return w.meanWin
	}
	if w.meanTodo < 0 {
		if w.doneAhead == 0 && w.head < len(w.todoMean) {
			w.meanTodo = w.todoMean[w.head]
			return w.meanTodo
		}
		n, sum := 0, 0.0
		for _, ti := range w.todo[w.head:] {
			if n == meanIOWindow {
				break
			}
			if !w.done[ti] {
				sum += w.tasks[ti].IO
				n++
			}
		}
		w.meanTodo = sum / float64(n)
	}
	return w.meanTodo
}

// work spends budget GPU-seconds on the tasks in processing order, takes
// the finished ones off the list, and returns how many finished.
func (w *workList) work(starved bool, budget float64) int {
	w.finished = w.finished[:0]
	if starved {
		for _, ti := range w.win {
			if budget <= 0 {
				break
			}
			budget = w.spend(ti, budget)
		}
	} else {
		for _, ti := range w.todo[w.head:] {
			if budget <= 0 {
				break
			}
			if !w.done[ti] {
				budget = w.spend(ti, budget)
			}
		}
	}
	k := len(w.finished)
	if k > 0 {
		w.removeFinished(starved)
	}
	return k
}

// spend works on one task and returns the budget left.
func (w *workList) spend(ti int32, budget float64) float64 {
	take := budget
	if w.remaining[ti] < take {
		take = w.remaining[ti]
	}
	w.remaining[ti] -= take
	budget -= take
	if w.adaptive {
		w.hot.set(int(w.rank[ti]), w.remaining[ti])
	}
	if w.remaining[ti] <= 0 {
		w.science += w.tasks[ti].Value
		w.completed++
		w.done[ti] = true
		w.doneAhead++
		w.finished = append(w.finished, ti)
	}
	return budget
}

// removeFinished takes the tasks the last spend finished off the to-do list
// and the starved window, and refills the window.
func (w *workList) removeFinished(starved bool) {
	w.meanTodo, w.meanWin = -1, -1
	w.left -= len(w.finished)
	for w.head < len(w.todo) && w.done[w.todo[w.head]] {
		w.head++
		w.doneAhead--
	}
	if !w.adaptive {
		return
	}
	if starved {
		// They lead the window.
		w.win = slices.Delete(w.win, 0, len(w.finished))
	} else {
		for _, ti := range w.finished {
			w.removeWin(ti)
		}
	}
	for len(w.win) < starvedWindow && w.winEnd < len(w.todo) {
		if ti := w.todo[w.winEnd]; !w.done[ti] {
			w.insertWin(ti)
		}
		w.winEnd++
	}
}

// hotIndex answers "how much work is left in tasks at least this dense"
// without walking the to-do list. The price the agent compares densities to
// is 3 × the congestion multiplier, which takes only four values, so the
// index keeps, per price seen, the number k of tasks (by density rank) at
// least that dense and the sum of their remaining sizes; a task's change
// updates the few sums whose prefix holds it. Sizes are kept in fixed point
// (2^-24 GPU-s) so the sums are exact integers and the only error is each
// size's rounding, far below slack.
type hotIndex struct {
	fixed   []int64   // remaining size per rank, fixed point
	density []float64 // density per rank, descending
	levels  []hotLevel
	last    int // the level level found last
	// common is part of every level's sum: a change at a rank below
	// every level's k (minK), the usual one (the agent works on its
	// densest tasks), is added here once instead of to each level.
	common int64
	minK   int
	// slack bounds the difference between work() and the prototype's
	// left-to-right float sum of the same sizes: each size is truncated by less
	// than 2^-24, and a float sum of n terms is off by at most about n·ε
	// times their total. It is set with a wide margin over both.
	slack float64
}

type hotLevel struct {
	price float64
	k     int   // ranks [0, k) are at least price dense
	sum   int64 // Σ fixed[0:k] − common
}

const hotScale = 1 << 24

// toFixed truncates a size to the fixed-point grid (error < 2^-24, inside
// the slack); truncation is cheaper than rounding and just as exact for
// sums of integers.
func toFixed(v float64) int64 { return int64(v * hotScale) }

func (h *hotIndex) init(tasks []Task, order []int32) {
	n := len(order)
	h.fixed = make([]int64, n)
	h.density = make([]float64, n)
	total := 0.0
	for r, ti := range order {
		h.density[r] = tasks[ti].Density
		h.fixed[r] = toFixed(tasks[ti].Size)
		total += tasks[ti].Size
	}
	h.slack = 4 * float64(n) * (1.0/hotScale + 2.3e-16*total)
	h.minK = n
	// The four prices of the congestion table, ready before any work.
	for _, m := range []float64{1.0, 1.5, 2.25, 3.0} {
		h.level(3.0 * m)
	}
}

// cloneFrom makes h a copy of src in h's own buffers: the mutable parts
// copied, densities shared read-only.
func (h *hotIndex) cloneFrom(src *hotIndex) {
	fixed, levels := h.fixed, h.levels
	*h = *src
	h.fixed = append(fixed[:0], src.fixed...)
	h.levels = append(levels[:0], src.levels...)
}

func (h *hotIndex) set(rank int, v float64) {
	nv := toFixed(v)
	d := nv - h.fixed[rank]
	h.fixed[rank] = nv
	if rank < h.minK {
		h.common += d
		return
	}
	for i := range h.levels {
		if rank < h.levels[i].k {
			h.levels[i].sum += d
		}
	}
}

// level finds (or adds) the sums for price. The price moves with the
// congestion multiplier, rarely: the level found last is tried first.
func (h *hotIndex) level(price float64) *hotLevel {
	if l := h.last; l < len(h.levels) && h.levels[l].price == price {
		return &h.levels[l]
	}
	for i := range h.levels {
		if h.levels[i].price == price {
			h.last = i
			return &h.levels[i]
		}
	}
	k := sort.Search(len(h.density), func(i int) bool { return h.density[i] < price })
	var sum int64
	for _, f := range h.fixed[:k] {
		sum += f
	}
	h.levels = append(h.levels, hotLevel{price: price, k: k, sum: sum - h.common})
	h.minK = min(h.minK, k)
	h.last = len(h.levels) - 1
	return &h.levels[h.last]
}

// work is the remaining work, in GPU-seconds, of the tasks whose density is
// at least price, within slack of the prototype's float sum.
func (h *hotIndex) work(price float64) float64 {
	return float64(h.level(price).sum+h.common) / hotScale
}
