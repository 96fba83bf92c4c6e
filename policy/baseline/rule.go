package baseline

import (
	"cmp"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
)

// Base gives a Rule the defaults most baselines share: any campaign may
// hold the whole pool, may take any free GPU, files requests in the class
// it asked for, and keeps no usage. Embed it and override what differs.
type Base struct{}

// Limit is the pool.
func (Base) Limit(k *Core, _ policy.CampaignID) int { return k.cfg.Pool }

// Room is the free GPUs nobody has reserved.
func (Base) Room(k *Core, _ policy.CampaignID) int { return max(0, k.FreeGeneral()) }

// ClassFor is the class asked for.
func (Base) ClassFor(_ *Core, _ policy.CampaignID, asked policy.Class) policy.Class { return asked }

// EndTick does nothing.
func (Base) EndTick(*Core) {}

// Queue is the scratch list of pending request ids a rule orders each
// pass; keeping it in the rule means a pass allocates nothing once it has
// grown.
type Queue struct {
	ids    []int
	counts []int
}

// BuildRanked is Build ordered by rank[campaign] (ascending), then submit
// time, then id.
func (q *Queue) BuildRanked(k *Core, rank []int) []int {
	return q.BuildByKey(k, func(r *Request) int { return rank[r.Campaign] }, func(a, b *Request) int {
		if c := cmp.Compare(rank[a.Campaign], rank[b.Campaign]); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Submitted, b.Submitted); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// BuildByKey is Build(k, order) for an order that sorts by key (a small
// int ≥ 0), then submit time, and among equal submit times keeps the
// pending list's order or sorts by id. The pending list is nearly always
// in (submit time, id) order already (a trace's jobs are; requeued ones go
// back to their place), and then that sort is a counting sort by key,
// linear in the queue, where the comparison sort cost most of a trace
// replay; otherwise it sorts with order.
func (q *Queue) BuildByKey(k *Core, key func(*Request) int, order func(a, b *Request) int) []int {
	pend := k.pending
	for i := 1; i < len(pend); i++ {
		if a, b := &pend[i-1], &pend[i]; b.Submitted < a.Submitted || b.Submitted == a.Submitted && b.ID < a.ID {
			return q.Build(k, order)
		}
	}
	top, n := 0, 0
	for i := range pend {
		if r := &pend[i]; !k.camps[r.Campaign].Filler {
			top = max(top, key(r))
			n++
		}
	}
	counts := Ints(q.counts, top+2)
	for i := range pend {
		if r := &pend[i]; !k.camps[r.Campaign].Filler {
			counts[key(r)+1]++
		}
	}
	for r := 1; r < len(counts); r++ {
		counts[r] += counts[r-1]
	}
	ids := q.ids[:0]
	for range n {
		ids = append(ids, 0)
	}
	for i := range pend {
		if r := &pend[i]; !k.camps[r.Campaign].Filler {
			kk := key(r)
			ids[counts[kk]] = r.ID
			counts[kk]++
		}
	}
	q.ids, q.counts = ids, counts
	return ids
}

// Build lists the ids of the pending requests that are not the filler's,
// in submit order, sorted (stably) by cmp over the requests. The list is
// valid until the next Build.
func (q *Queue) Build(k *Core, cmp func(a, b *Request) int) []int {
	ids := q.ids[:0]
	for i := range k.pending {
		if !k.camps[k.pending[i].Campaign].Filler {
			ids = append(ids, i)
		}
	}
	if cmp != nil {
		slices.SortStableFunc(ids, func(a, b int) int { return cmp(&k.pending[a], &k.pending[b]) })
	}
	for j, i := range ids {
		ids[j] = k.pending[i].ID
	}
	q.ids = ids
	return ids
}

// Index is the position of request id in the pending list, -1 if it has
// left it. Grants remove requests, so a rule walking its ordered ids looks
// each one up.
func (k *Core) Index(id int) int { return k.pendingIndex(id) }

// Pend returns pending request i. A rule may set its Key only.
func (k *Core) Pend(i int) *Request { return &k.pending[i] }

// Flags returns buf resized to n and cleared, reusing its storage.
func Flags(buf []bool, n int) []bool {
	if cap(buf) < n {
		buf = make([]bool, n)
	}
	buf = buf[:n]
	clear(buf)
	return buf
}

// Ints returns buf resized to n and cleared, reusing its storage.
func Ints(buf []int, n int) []int {
	if cap(buf) < n {
		buf = make([]int, n)
	}
	buf = buf[:n]
	clear(buf)
	return buf
}
