package quota

import (
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
)

// A queue's head is its best request by (class, submit time), the first
// in the pending list among equals. Among requests of the same submit
// time the pending list is in filing order (RequestRigid files a job
// behind every request submitted no later, Request files at the end, and
// nothing reorders), and ids grow with filing, so the head is the least
// (class, submit time, id). Each campaign keeps its requests in a min-heap
// by that key, told of them by the Core (baseline.Watcher): finding the
// heads by a pass over the whole pending list every round cost most of a
// replay of the full SDSC-SP2 log, whose queue runs to thousands of jobs.
//
// active marks the campaigns with a request in their queue, so that a
// round visits only those (in campaign order, as the plain pass did: Want
// journals).
//
// Requests that leave are forgotten lazily: live says which ids are still
// pending, and a heap drops its dead entries when they reach the top (or
// all of them once they outnumber the live ones).

type queued struct {
	class     policy.Class
	submitted int
	id        int
}

func (a queued) less(b queued) bool {
	if a.class != b.class {
		return a.class < b.class
	}
	if a.submitted != b.submitted {
		return a.submitted < b.submitted
	}
	return a.id < b.id
}

type queue struct {
	heap []queued
	live int // entries of heap still pending
}

// Filed adds a campaign's request to its queue (baseline.Watcher). The
// filler's requests are the Core's to admit.
func (r *Rule) Filed(k *baseline.Core, q *baseline.Request) {
	if k.Campaign(q.Campaign).Filler {
		return
	}
	for len(r.queues) <= int(q.Campaign) {
		r.queues = append(r.queues, queue{})
	}
	for len(r.live) <= q.ID {
		r.live = append(r.live, false)
	}
	r.live[q.ID] = true
	qu := &r.queues[q.Campaign]
	qu.live++
	for len(r.active) <= int(q.Campaign)/64 {
		r.active = append(r.active, 0)
	}
	r.active[q.Campaign/64] |= 1 << (q.Campaign % 64)
	qu.push(queued{q.Class, q.Submitted, q.ID})
}

// Left forgets a request (baseline.Watcher).
func (r *Rule) Left(_ *baseline.Core, q baseline.Request) {
	if q.ID >= len(r.live) || !r.live[q.ID] {
		return // the filler's
	}
	r.live[q.ID] = false
	qu := &r.queues[q.Campaign]
	qu.live--
	if qu.live == 0 {
		r.active[q.Campaign/64] &^= 1 << (q.Campaign % 64)
	}
	if len(qu.heap) > 2*qu.live+32 {
		w := 0
		for _, e := range qu.heap {
			if r.live[e.id] {
				qu.heap[w] = e
				w++
			}
		}
		qu.heap = qu.heap[:w]
		for i := w/2 - 1; i >= 0; i-- {
			qu.down(i)
		}
	}
}

// head is the id and submit time of campaign c's head; id -1 if it has no
// pending request.
func (r *Rule) head(c int) (id, submitted int) {
	if c >= len(r.queues) {
		return -1, 0
	}
	qu := &r.queues[c]
	for len(qu.heap) > 0 {
		if e := qu.heap[0]; r.live[e.id] {
			return e.id, e.submitted
		}
		qu.pop()
	}
	return -1, 0
}

func (qu *queue) push(e queued) {
	qu.heap = append(qu.heap, e)
	h := qu.heap
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (qu *queue) pop() {
	last := len(qu.heap) - 1
	qu.heap[0] = qu.heap[last]
	qu.heap = qu.heap[:last]
	qu.down(0)
}

func (qu *queue) down(i int) {
	h := qu.heap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].less(h[l]) {
			m = r
		}
		if !h[m].less(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
