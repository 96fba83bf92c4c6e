package service

import "github.com/bursar-hpc/bursar/policy"

// entry is one retained journal record and its sequence number in the ring
// that holds it.
type entry struct {
	seq int64
	ev  policy.Event
	// wall is when the operation that made the record was applied, UTC
	// Unix milliseconds (0: a journal written before wall times).
	wall int64
	// job is, for a slurm-job record (the service's own, not the
	// broker's: slurmjob.go), the Slurm job id; ev then holds its time,
	// lease and campaign.
	job string
}

// ring keeps the newest max records of an unbounded stream, numbered 1, 2,
// … in arrival order. A long-running service cannot keep every record in
// memory; the journal files (with --data-dir) hold the history since the
// last two snapshots, and the rings, kept in every snapshot, are what the
// API can page through. Sequence numbers in a ring
// are contiguous, so a page is an index computation, not a search.
type ring struct {
	buf  []entry
	head int // index of the oldest record once buf is full
	max  int
	last int64 // seq of the newest record; also the number ever pushed
}

func newRing(max int) ring { return ring{max: max} }

func (r *ring) push(ev policy.Event, wall int64) int64 { return r.pushEntry(entry{ev: ev, wall: wall}) }

// pushJob adds a slurm-job record.
func (r *ring) pushJob(ev policy.Event, job string, wall int64) int64 {
	return r.pushEntry(entry{ev: ev, wall: wall, job: job})
}

func (r *ring) pushEntry(e entry) int64 {
	r.last++
	e.seq = r.last
	if len(r.buf) < r.max {
		r.buf = append(r.buf, e)
		return r.last
	}
	r.buf[r.head] = e
	r.head++
	if r.head == r.max {
		r.head = 0
	}
	return r.last
}

// at is the i-th oldest retained record.
func (r *ring) at(i int) *entry {
	j := r.head + i
	if j >= len(r.buf) {
		j -= len(r.buf)
	}
	return &r.buf[j]
}

// oldest is the seq of the oldest retained record, 0 when there is none.
func (r *ring) oldest() int64 {
	if len(r.buf) == 0 {
		return 0
	}
	return r.at(0).seq
}

// page returns up to limit records: with after < 0 the newest ones,
// otherwise those with seq > after, oldest first. truncated reports that
// records after `after` were already dropped. next is the cursor to pass
// as after to read on.
func (r *ring) page(after int64, limit int) (out []*entry, next int64, truncated bool) {
	n := len(r.buf)
	if n == 0 {
		return nil, max(after, r.last), after >= 0 && after < r.last
	}
	first := r.oldest()
	var start int // index into the retained records
	if after < 0 {
		start = max(0, n-limit)
	} else {
		// after-first+1 cannot overflow (first ≥ 1); after+1 did, for
		// after = MaxInt64, and read as "everything" (issue 22).
		if after < first-1 {
			truncated = true
			start = 0
		} else {
			start = int(min(after-first+1, int64(n)))
		}
	}
	end := min(n, start+limit)
	out = make([]*entry, 0, end-start)
	for i := start; i < end; i++ {
		out = append(out, r.at(i))
	}
	next = after
	if len(out) > 0 {
		next = out[len(out)-1].seq
	} else if after < 0 {
		next = r.last
	}
	return out, next, truncated
}
