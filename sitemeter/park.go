package sitemeter

import (
	"slices"
	"sort"

	"github.com/bursar-hpc/bursar/policy"
)

// parkedJob is a job in the park: its request as the broker had it (the
// GPUs, the estimate as Duration, the submit time), its filing, and the
// order it entered the park in (seq).
type parkedJob struct {
	req    policy.Request
	filing filing
	seq    int64
}

// before is whether parked job a comes before b in the park's order:
// submit order, and among jobs submitted at once the order they entered
// the park in. A job taken back thus goes after every job submitted no
// later, as a plain list would place it by binary search.
func before(a, b *parkedJob) bool {
	if a.req.Submitted != b.req.Submitted {
		return a.req.Submitted < b.req.Submitted
	}
	return a.seq < b.seq
}

// jobPark is the site's park (Broker.parked), kept by width: each width's
// jobs in park order. The scavenge step seats parked jobs in park order,
// each that the GPUs still idle can seat; since the idle GPUs only shrink
// as it seats them, a width it can seat at some job it could seat at
// every earlier one, so every job of that width before the step's last
// pick was picked. The next pick is therefore the earliest of the heads of
// the widths the idle GPUs can seat, and the step reads those heads only:
// on a long log the park holds a few hundred jobs of a dozen or two
// widths, and the idle GPUs can seat one or two of them (docs/traces.md,
// "Work per job"). A plain list walked through at every such step read
// the whole park.
type jobPark struct {
	// widths are the park's widths with a job, narrowest first.
	widths []parkWidth
	n      int   // jobs parked
	seq    int64 // the next job's seq
	// best[i] is the index of the earliest head of widths[:i+1] (−1:
	// none), for i below len(best): the comparisons take made, kept
	// until a head they read changes (stale).
	best []int
}

// parkWidth is the parked jobs of one width, jobs[head:] in park order
// (a queue: the step takes from its head).
type parkWidth struct {
	gpus int
	jobs []parkedJob
	head int
	// shared marks jobs as shared with a copy of the park (clone): it is
	// copied before it is written.
	shared bool
}

// live is w's jobs in park order.
func (w *parkWidth) live() []parkedJob { return w.jobs[w.head:] }

// own makes w's jobs its own to write (a copy's shares them until then).
func (w *parkWidth) own() {
	if w.shared {
		// A free place before the head, where a job parked again
		// ahead of the rest (one the park gave out and gets back) goes
		// without shifting them, and room after it for the later jobs
		// appended. Owned tight at the head, as a fork's copy often
		// first writes its widths, the width shifted its whole queue at
		// the first such job, and compacted it at the next append
		// (4,206 jobs moved instead of 11,603 over 64 weeks of SDSC-SP2
		// with 1,000 fair starts).
		live := w.live()
		jobs := make([]parkedJob, 1+len(live), 2+2*len(live))
		copy(jobs[1:], live)
		w.jobs, w.head, w.shared = jobs, 1, false
	}
}

// add parks job j in its place (before). It returns the work done: the
// width looked up (one run read), the place found by binary search (one
// job walked) and the jobs shifted to make room (moved).
func (p *jobPark) add(j parkedJob) policy.Work {
	j.seq = p.seq
	p.seq++
	p.n++
	i, found := slices.BinarySearchFunc(p.widths, j.req.GPUs, func(w parkWidth, g int) int { return w.gpus - g })
	if !found {
		p.widths = slices.Insert(p.widths, i, parkWidth{gpus: j.req.GPUs})
		p.stale(i)
	}
	w := &p.widths[i]
	w.own()
	live := w.live()
	k := sort.Search(len(live), func(x int) bool { return before(&j, &live[x]) })
	work := policy.Work{RunsRead: 1, Walked: 1}
	if k == 0 {
		p.stale(i) // a new head
	}
	switch {
	case w.head > 0 && k < len(live)-k:
		// Nearer the head: the jobs before it move one place up.
		copy(w.jobs[w.head-1:], live[:k])
		w.head--
		w.jobs[w.head+k] = j
		work.Moved = int64(k)
	case k == len(live) && w.head > 0 && len(w.jobs) == cap(w.jobs):
		// The queue's array is full with room at its head: move the
		// live jobs down rather than grow it.
		n := copy(w.jobs, live)
		clear(w.jobs[n:])
		w.jobs, w.head = append(w.jobs[:n], j), 0
		work.Moved = int64(n)
	default:
		w.jobs = slices.Insert(w.jobs, w.head+k, j)
		work.Moved = int64(len(live) - k)
	}
	return work
}

// narrowest is the fewest GPUs a parked job asks for (the park must
// hold one).
func (p *jobPark) narrowest() int { return p.widths[0].gpus }

// take takes out of the park, in park order, every job the idle GPUs
// left can seat (each seated takes its GPUs from them), appends them to
// out in that order and returns it, with the work: each width's head
// compared for a pick counted walked, the search for the widths the idle
// GPUs can seat one run read.
//
// A pick is the earliest head of a prefix of the widths (those within
// the idle GPUs), read from the park's prefix bests (best): only the
// heads of the widths at and above the lowest one changed since they
// were last compared are compared again. On a long log with fair starts
// the park is taken from at nearly every busy tick (45,084 times over 64
// weeks of SDSC-SP2 with 1,000 fair starts, one job each), between which
// one or two heads change: comparing every head within reach at every
// pick compared 120,000 heads there, this 70,000.
func (p *jobPark) take(idle int, out []parkedJob) ([]parkedJob, policy.Work) {
	// The widths the idle GPUs can seat, widths[:k], found by binary
	// search: one run read.
	k, _ := slices.BinarySearchFunc(p.widths, idle+1, func(w parkWidth, g int) int { return w.gpus - g })
	work := policy.Work{RunsRead: 1}
	for idle > 0 {
		for k > 0 && p.widths[k-1].gpus > idle {
			k--
		}
		for i := len(p.best); i < k; i++ {
			b := -1
			if i > 0 {
				b = p.best[i-1]
			}
			if w := &p.widths[i]; w.head < len(w.jobs) {
				work.Walked++
				if b < 0 || before(&w.jobs[w.head], &p.widths[b].jobs[p.widths[b].head]) {
					b = i
				}
			}
			p.best = append(p.best, b)
		}
		if k == 0 || p.best[k-1] < 0 {
			break
		}
		b := p.best[k-1]
		w := &p.widths[b]
		w.own()
		out = append(out, w.jobs[w.head])
		w.jobs[w.head] = parkedJob{}
		w.head++
		idle -= w.gpus
		p.n--
		p.stale(b)
	}
	// Drop the widths emptied (each was picked from, so that best
	// already ends below it); a width's array is reused from its start
	// once empty.
	if i := slices.IndexFunc(p.widths, func(w parkWidth) bool { return w.head == len(w.jobs) }); i >= 0 {
		p.stale(i)
		p.widths = slices.DeleteFunc(p.widths, func(w parkWidth) bool { return w.head == len(w.jobs) })
	}
	return out, work
}

// stale drops the prefix bests from width i's on: its head changed, or
// the widths from it on moved.
func (p *jobPark) stale(i int) {
	if len(p.best) > i {
		p.best = p.best[:i]
	}
}

// clone is a copy of the park that shares its jobs with p until either
// writes them (both copy a width's jobs before writing it).
func (p *jobPark) clone() jobPark {
	for i := range p.widths {
		p.widths[i].shared = true
	}
	c := *p
	c.widths, c.best = slices.Clone(p.widths), slices.Clone(p.best)
	return c
}
