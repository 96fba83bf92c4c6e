package easy

import (
	"math"
	"slices"

	"github.com/bursar-hpc/bursar/platform"
)

// Running is one lease in progress as the EASY pass sees it.
type Running struct {
	GPUs   int
	EstEnd int64 // start + estimate (docs/studies.md §2.1)
}

// Job is one waiting request, in queue order (the caller orders the queue:
// FCFS, or priority order).
type Job struct {
	GPUs     int
	Estimate int64 // estimated run time, seconds
}

// NoReservation is the shadow time of a head that cannot start even when
// every running lease has ended (it asks for more GPUs than free plus
// running hold). Nothing can delay such a head, so every later job that
// fits now may start; callers that skip jobs larger than the pool never
// see it.
const NoReservation = math.MaxInt64

// Scheduler keeps scratch space so that a pass allocates nothing in steady
// state. The zero value is ready.
type Scheduler struct {
	started []int     // the result of the last pass
	ends    []Running // running leases plus heads started in this pass, sorted by EstEnd
	// PassOn's: the running leases' estimated ends, and the heads'.
	leaseEnds, headEnds []int64
	head                [1]Job // Reservation's queue
	// held says that shadow and extra are the reservation of the queue's
	// head as the last Pass or PassAfter left it (its backfills' extra
	// GPUs taken), for PassAfter; false where that pass computed none.
	held   bool
	shadow int64
	extra  int
}

// Pass performs steps (3) and (4) of docs/studies.md §2.1 at time now: start the
// queue's head while it fits in free, then one EASY backfill pass (shadow
// time s and extra GPUs x computed once, from the running leases' estimated
// ends including the heads just started; a later job starts if it fits now
// and either ends by s or fits in x, x decreasing by its size in that case).
// running may be in any order and is not modified. It returns the indices
// into queue of the jobs to start, in start order; the slice is valid until
// the next call.
//
// Jobs ask for at least one GPU; once free reaches zero the scan stops.
func (s *Scheduler) Pass(now int64, free int, running []Running, queue []Job) []int {
	out := s.started[:0]
	// Step (3): the head starts while it fits.
	h := 0
	for h < len(queue) && queue[h].GPUs <= free {
		free -= queue[h].GPUs
		out = append(out, h)
		h++
	}
	if h >= len(queue)-1 || free <= 0 {
		// No head left waiting, or nothing behind it, or nothing can fit:
		// the reservation would constrain nobody.
		s.started, s.held = out, false
		return out
	}
	// Step (4), with no reservation yet.
	return s.backfill(now, free, running, queue, out, h, h+1, 0, 0, false)
}

// backfill is step (4) from queue[from] on: out holds the heads started in
// this pass (the jobs before h that start now), h is the waiting head, and
// shadow and extra are its reservation where reserved. Where not, the
// reservation is computed lazily, at the first job that fits now: most
// passes on a busy machine find none, and the shadow walk is the pass's
// only cost that grows with the running set. It keeps the pass's result
// and reservation for PassAfter.
func (s *Scheduler) backfill(now int64, free int, running []Running, queue []Job, out []int, h, from int, shadow int64, extra int, reserved bool) []int {
	heads := len(out)
	for j := from; j < len(queue) && free > 0; j++ {
		job := queue[j]
		if job.GPUs > free {
			continue
		}
		if !reserved {
			shadow, extra = s.reservation(now, free, running, queue, out[:heads], h)
			reserved = true
		}
		ok := false
		if ok, extra = Backfills(now, shadow, extra, job); !ok {
			continue
		}
		free -= job.GPUs
		out = append(out, j)
	}
	s.started = out
	s.held, s.shadow, s.extra = reserved, shadow, extra
	return out
}

// PassAfter is Pass for a caller that knows the queue's first settled jobs
// were in the queue at this scheduler's last Pass or PassAfter, and that
// nothing changed since but what that pass returned and the jobs appended
// behind them: the caller started the jobs it returned (free less their
// GPUs, running plus their leases, the queue less them, in order), no
// lease ended, and the jobs from settled on arrived since. settled 0
// promises nothing: it is Pass.
//
// Then none of the settled jobs can start, and the head's reservation is
// the one that pass left: the head did not fit and free has not grown; the
// jobs that pass backfilled either end by the shadow time, so that the
// GPUs free by then are the same, or took their GPUs from the extra ones,
// so that the extra left is what the pass left; and a settled job that
// fits now failed both tests at an earlier time (or at this one) with at
// least as many extra GPUs. So only the arrivals are tried, against that
// reservation (or a new one, where that pass computed none), and the
// result is Pass's. In a replay most events are arrivals alone, and
// trying the whole queue at each was most of the pass's time
// (TestPassAfterIsPass).
func (s *Scheduler) PassAfter(now int64, free int, running []Running, queue []Job, settled int) []int {
	if settled <= 0 || settled > len(queue) || queue[0].GPUs <= free {
		return s.Pass(now, free, running, queue)
	}
	// No head starts (queue[0] does not fit), so the head waiting is
	// queue[0] and its reservation, where that pass computed one, is the
	// one it left.
	return s.backfill(now, free, running, queue, s.started[:0], 0, settled, s.shadow, s.extra, s.held)
}

// Backfills is step (4)'s rule for a later job that fits now, given the
// head's shadow time and the extra GPUs left: it may start if it ends by
// the shadow time (the head's GPUs are back by then), or else if it fits
// in the extra GPUs, which it then takes. It returns whether it starts and
// the extra GPUs left after it.
func Backfills(now, shadow int64, extra int, job Job) (bool, int) {
	switch {
	case now+job.Estimate <= shadow:
		return true, extra
	case job.GPUs <= extra:
		return true, extra - job.GPUs
	}
	return false, extra
}

// Reservation is the shadow time and extra GPUs of a blocked head of
// head GPUs, with free GPUs free now and running the running leases, as
// Pass reserves for the head it stops at when no head started before it
// in the pass: a rule that finds the jobs Pass would backfill by an index
// of its own, rather than by walking its whole queue, asks for it and
// applies Pass's test to each candidate itself.
func (s *Scheduler) Reservation(now int64, free int, running []Running, head int) (shadow int64, extra int) {
	s.head[0] = Job{GPUs: head}
	return s.reservation(now, free, running, s.head[:], nil, 0)
}

// ReservationSorted is Reservation for running leases given in
// ascending order of their estimated ends: the same shadow time and
// extra GPUs, by one walk of them. A caller that keeps its leases in
// that order (static's forecast of a fair start's grants) spares the
// heap Reservation builds at every call, most of the reservation's cost
// over a handful of leases.
func ReservationSorted(free int, running []Running, head int) (shadow int64, extra int) {
	avail := free
	for i := 0; i < len(running); {
		t := running[i].EstEnd
		for ; i < len(running) && running[i].EstEnd == t; i++ {
			avail += running[i].GPUs
		}
		if avail >= head {
			return t, avail - head
		}
	}
	return NoReservation, 0
}

// reservation returns the head's shadow time and extra GPUs: walking the
// estimated ends in ascending order (the running leases and the heads
// started in this pass), the first end at which the GPUs free by then reach
// the head's size, every lease ending at that same second included; the
// extra GPUs are those free at the shadow time beyond the head's size.
//
// The walk usually stops long before the last end, so the ends are put in a
// binary min-heap (built in linear time) and popped only as far as needed,
// rather than sorted whole.
func (s *Scheduler) reservation(now int64, free int, running []Running, queue []Job, started []int, head int) (int64, int) {
	ends := append(s.ends[:0], running...)
	for _, i := range started {
		ends = append(ends, Running{GPUs: queue[i].GPUs, EstEnd: now + queue[i].Estimate})
	}
	s.ends = ends
	for i := len(ends)/2 - 1; i >= 0; i-- {
		siftDown(ends, i)
	}
	need := queue[head].GPUs
	avail := free
	for len(ends) > 0 {
		t := ends[0].EstEnd
		for len(ends) > 0 && ends[0].EstEnd == t {
			avail += ends[0].GPUs
			last := len(ends) - 1
			ends[0] = ends[last]
			ends = ends[:last]
			siftDown(ends, 0)
		}
		if avail >= need {
			return t, avail - need
		}
	}
	return NoReservation, 0
}

// siftDown restores the min-heap order on EstEnd below position i.
func siftDown(h []Running, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].EstEnd < h[l].EstEnd {
			m = r
		}
		if h[m].EstEnd >= h[i].EstEnd {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// PassOn is Pass on a platform's nodes (docs/platform.md §4): a job starts
// only if free holds it and the placement rule seats it on the board
// (reset by the caller to the placer's nodes), and the reservation counts
// GPUs per node: the shadow time is the first end at which the head can
// be seated, and a job that would still run then must fit, node by node,
// in the GPUs the head's seat leaves free (Board.TakeBeside). leases are
// the running leases' ids in the placer, in the order of running. The
// board holds the planned seats, in start order: seating the returned
// jobs in that order gives them.
func (s *Scheduler) PassOn(now int64, free int, b *platform.Board, running []Running, leases []int, queue []Job) []int {
	s.held = false // PassAfter reads only Pass's reservations
	out := s.started[:0]
	h := 0
	for h < len(queue) && queue[h].GPUs <= free && b.Take(queue[h].GPUs) {
		free -= queue[h].GPUs
		out = append(out, h)
		h++
	}
	if h >= len(queue)-1 || free <= 0 {
		s.started = out
		return out
	}
	var shadow int64
	reserved := false
	for j := h + 1; j < len(queue) && free > 0; j++ {
		job := queue[j]
		if job.GPUs > free || !b.Fits(job.GPUs) {
			continue
		}
		if !reserved {
			shadow = s.reserveOn(now, b, running, leases, queue, out, h)
			reserved = true
		}
		if now+job.Estimate <= shadow {
			b.Take(job.GPUs)
		} else if !b.TakeBeside(job.GPUs) {
			continue
		}
		free -= job.GPUs
		out = append(out, j)
	}
	s.started = out
	return out
}

// reserveOn is the head's reservation on the board: the running leases'
// and the started heads' estimated ends handed to Board.Reserve.
func (s *Scheduler) reserveOn(now int64, b *platform.Board, running []Running, leases []int, queue []Job, started []int, head int) int64 {
	s.leaseEnds = s.leaseEnds[:0]
	for _, r := range running {
		s.leaseEnds = append(s.leaseEnds, r.EstEnd)
	}
	s.headEnds = s.headEnds[:0]
	for _, i := range started {
		s.headEnds = append(s.headEnds, now+queue[i].Estimate)
	}
	return b.Reserve(queue[head].GPUs, leases, s.leaseEnds, s.headEnds)
}

// Clone is a copy of the scheduler that shares no buffer with it (a
// policy's copy, baseline.Core.Clone).
func (s *Scheduler) Clone() Scheduler {
	return Scheduler{started: slices.Clone(s.started), ends: slices.Clone(s.ends),
		leaseEnds: slices.Clone(s.leaseEnds), headEnds: slices.Clone(s.headEnds), head: s.head,
		held: s.held, shadow: s.shadow, extra: s.extra}
}
