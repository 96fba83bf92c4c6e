package slurm

import (
	"cmp"
	"slices"

	"github.com/bursar-hpc/bursar/policy/baseline"
)

// freeMap is the backfill's map of the pool over time (Slurm's node_space
// map, backfill.c, with GPUs for nodes): a step function kept as sorted
// breakpoints, free[j] GPUs free over [at[j], at[j+1]), the last step for
// ever. at[0] is the pass's now. Its size is the running leases plus two
// per reservation, whatever the times, so a pass costs the jobs it tests
// times the steps, not the seconds it looks ahead.
type freeMap struct {
	at   []int
	free []int
}

// reset starts the map at now with free GPUs.
func (m *freeMap) reset(now, free int) {
	m.at = append(m.at[:0], now)
	m.free = append(m.free[:0], free)
}

// grow adds n GPUs from t on (t ≥ every breakpoint): a lease ending.
func (m *freeMap) grow(t, n int) {
	last := len(m.at) - 1
	if m.at[last] == t {
		m.free[last] += n
		return
	}
	m.at = append(m.at, t)
	m.free = append(m.free, m.free[last]+n)
}

// takeFrom removes n GPUs over [at[j], to), to > at[j]: a pass takes
// from the start earliest found, which is a breakpoint whose index it
// returns, so that only the end is searched for, and only past j (two
// searches of the whole map were a fifth of a pass on SDSC-SP2).
func (m *freeMap) takeFrom(j, to, n int) {
	x, found := slices.BinarySearch(m.at[j+1:], to)
	b := j + 1 + x
	if !found {
		m.at = slices.Insert(m.at, b, to)
		m.free = slices.Insert(m.free, b, m.free[b-1])
	}
	for i := j; i < b; i++ {
		m.free[i] -= n
	}
}

// earliest is the first time s ≥ at[0] at which n GPUs are free over
// [s, s+d], and the index j of the breakpoint at[j] = s, or −1, −1 if
// none is: the job's expected start on the map, as
// Slurm's will-run test finds it on the running jobs' ends and the
// reservations. The candidates are the breakpoints, where the free GPUs
// change. The end is inclusive, as in Slurm: a step that begins at the
// job's end counts (backfill.c, _attempt_backfill, slurm-22-05-8-1: a
// node_space record is taken out of the job's nodes when
// `node_space[j].begin_time <= end_time`), so a job may not end exactly
// when a reservation begins on the GPUs it would hold. Measured by
// bursar-sweep validate-slurm: a 6-GPU job with a 1-minute limit that
// would end the second an 11-GPU reservation began did not backfill in
// slurmctld, 3 runs of 3 (docs/validate-slurm.md).
func (m *freeMap) earliest(n, d int) (s, js int) {
	// The steps in locals, of one length: the walk is most of a pass.
	// The walk keeps s alone (a second variable cost more in the walk
	// than the search it spares); s's index is found back from the
	// step where the fit ends, a few steps at most.
	at, free := m.at, m.free[:len(m.at)]
	s = -1
	for j := range at {
		if free[j] < n {
			s = -1
			continue
		}
		if s < 0 {
			s = at[j]
		}
		if j+1 == len(at) || at[j+1] > s+d {
			for at[j] != s {
				j--
			}
			return s, j
		}
	}
	return -1, -1
}

// backfill is one pass's scratch: the map, the running leases' ends, the
// jobs tested and the fewest GPUs any job from each on could start with.
type backfill struct {
	m     freeMap
	ends  []leaseEnd
	jobs  []int
	least []int
	// reserved records the last pass's reservations, and passAt its tick,
	// when record is set (tests read them).
	reserved []Reservation
	record   bool
	passAt   int
}

// leaseEnd is when GPUs come back, as the map believes it.
type leaseEnd struct{ at, gpus int }

// Reservation is one job's place in the future that a backfill pass
// protected: GPUs over [Start, End), for request ID.
type Reservation struct {
	ID, GPUs, Start, End int
}

// pass is Slurm's backfill (backfill.c, _attempt_backfill) over the queue
// ids in priority order, on the GPUs free now:
//
//   - the map starts from the running leases, each holding its GPUs until
//     its estimated end (its time limit: a trace job's estimate, an agent
//     lease's expiry, earlier under notice) and the GPUs a preemption
//     reserved for a request, held until that request would end if it
//     started now;
//   - the first bf_max_job_test jobs of the queue are tested in order;
//     each gets its earliest start on the map for its estimate; a job that
//     can start now starts (whole) and holds its GPUs until its estimated
//     end; a job that cannot is reserved if that start lies within
//     bf_window of now (backfill.c: "Starts too far in the future to worry
//     about" otherwise), its reservation from its start to its start plus
//     estimate, the end rounded down to a multiple of bf_resolution and
//     at least to the end of the start's bf_resolution slot (backfill.c,
//     before _add_reservation and in it). Later jobs are placed on the map
//     with those reservations taken out, so none can delay them (to the
//     rounding of the end). **Choice**: Slurm rounds the start down too,
//     but its map holds nodes: the nodes it then masks early are mostly
//     the ones the job waits for, busy until its start anyway. Counted in
//     GPUs the same rounding takes the job's GPUs twice (held by the
//     lease that frees them, and reserved) from the start of the slot,
//     often from now, and backfills nothing: on the SDSC-SP2 excerpt the
//     jobs' mean wait was 22,934 s with it, 15,653 s at bf_resolution 1;
//     so the start stays exact;
//   - once fewer GPUs are free now than any job left could start with,
//     nothing more can start and the pass ends (reservations live for one
//     pass only, so the ones it would still make change nothing).
func (b *backfill) pass(k *baseline.Core, kn Knobs, ids []int, r *Rule) {
	b.reserved = b.reserved[:0]
	now, free := k.Now(), k.FreeGeneral()
	b.passAt = now
	if free <= 0 {
		return
	}
	b.jobs, b.least = r.tested(k, ids, kn.BfMaxJobTest, b.jobs[:0], b.least[:0])
	least := int(^uint(0) >> 1)
	for x := len(b.least) - 1; x >= 0; x-- {
		least = min(least, b.least[x])
		b.least[x] = least
	}
	if len(b.jobs) == 0 || b.least[0] > free {
		return
	}
	b.build(k, now, free)
	res, window := kn.BfResolution, kn.BfWindow
	for x, id := range b.jobs {
		if b.m.free[0] < b.least[x] {
			break
		}
		i := k.Index(id)
		q := k.Pend(i)
		var want int
		if q.Rigid && !r.plain {
			// The Core's Want of a rigid job under the rule's limit,
			// Base's (the pool): its size, without the call through
			// the rule's Limit that made Want a tenth of a pass on the
			// 300k-job log. Counted as Want counts it.
			want = q.GPUs
			k.CountWalked(1)
		} else if want = k.Want(i); want == 0 {
			continue
		}
		d := max(1, q.Duration)
		s, js := b.m.earliest(want, d)
		switch {
		case s == now && want <= k.FreeGeneral() && k.Seats(want):
			k.Grant(i, want)
			b.m.takeFrom(js, now+d, want)
		case s > now && s <= now+window:
			end := max((s+d)/res*res, s/res*res+res)
			b.m.takeFrom(js, end, want)
			if b.record {
				b.reserved = append(b.reserved, Reservation{ID: id, GPUs: want, Start: s, End: s + d})
			}
		}
	}
}

// build lays the map out from the running leases' estimated ends and the
// GPUs reserved for preempting requests.
func (b *backfill) build(k *baseline.Core, now, free int) {
	b.ends = b.ends[:0]
	leases := k.Leases()
	for j := range leases {
		l := &leases[j]
		b.ends = append(b.ends, leaseEnd{at: max(l.Estimated(), now+1), gpus: l.GPUs})
	}
	pend := k.Pending()
	for j := range pend {
		if q := &pend[j]; q.Reserved > 0 {
			b.ends = append(b.ends, leaseEnd{at: now + max(1, q.Duration), gpus: q.Reserved})
		}
	}
	slices.SortFunc(b.ends, func(x, y leaseEnd) int { return cmp.Compare(x.at, y.at) })
	b.m.reset(now, free)
	for _, e := range b.ends {
		b.m.grow(e.at, e.gpus)
	}
}
