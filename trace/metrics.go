package trace

import (
	"math"
	"slices"

	"github.com/bursar-hpc/bursar/internal/stats"
)

// BSLDTau is the bounded slowdown's threshold τ in seconds (§2.1).
const BSLDTau = 10

// Classes are the service classes a trace job can have, in the order of
// Metrics.ByClass.
var Classes = traceClasses

// Metrics are the §4 metrics of one trace replay.
type Metrics struct {
	All     Stats    `json:"all"`
	ByClass [3]Stats `json:"by_class"` // Classes order
	// ByCampaign is indexed like Workload.Campaigns: the trace's own users.
	ByCampaign []Stats `json:"by_campaign"`
	// Utilization is the GPU-seconds held ÷ (pool × (last end − first
	// submit)).
	Utilization float64 `json:"utilization"`
	// Jain is Jain's index of x_c = T_c ÷ O_c over the campaigns that had
	// demand (§6.4): T_c the GPU-seconds c held, O_c its fair allocation —
	// at every instant, the share-weighted max–min split of the pool among
	// the campaigns, each capped by its demand (GPUs held plus pending) —
	// both summed over the whole replay.
	Jain     float64 `json:"jain"`
	Makespan int64   `json:"makespan"` // last end − first submit, seconds
}

// Wait is job i's wait given its start time.
func Wait(j *Job, start int64) int64 { return start - j.Submit }

// BSLD is the bounded slowdown max(1, (wait + run) ÷ max(run, τ)).
func BSLD(j *Job, start int64) float64 {
	return max(1, float64(start-j.Submit+j.Run)/float64(max(j.Run, BSLDTau)))
}

// jobStats summarizes the jobs whose indices are given, in that order.
func jobStats(w *Workload, start []int64, jobs []int32, waits, bslds []float64) Stats {
	waits, bslds = waits[:0], bslds[:0]
	var sw, sb float64
	for _, i := range jobs {
		j := &w.Jobs[i]
		wt := float64(Wait(j, start[i]))
		b := BSLD(j, start[i])
		waits = append(waits, wt)
		bslds = append(bslds, b)
		sw += wt
		sb += b
	}
	s := Stats{Jobs: len(waits)}
	if s.Jobs == 0 {
		nan := math.NaN()
		s.MeanWait, s.P50Wait, s.P95Wait, s.MeanBSLD, s.P95BSLD = nan, nan, nan, nan, nan
		return s
	}
	n := float64(s.Jobs)
	s.MeanWait, s.MeanBSLD = sw/n, sb/n
	s.P50Wait = stats.Percentile(waits, 50)
	s.P95Wait = stats.Percentile(waits, 95)
	s.P95BSLD = stats.Percentile(bslds, 95)
	return s
}

// partition lists the job indices of each key in job order (a counting
// sort), so that every group's statistics cost its own size.
func partition(n, keys int, key func(i int) int) [][]int32 {
	count := make([]int, keys)
	for i := range n {
		count[key(i)]++
	}
	flat := make([]int32, n)
	out := make([][]int32, keys)
	off := 0
	for k := range out {
		out[k] = flat[off : off : off+count[k]]
		off += count[k]
	}
	for i := range n {
		k := key(i)
		out[k] = append(out[k], int32(i))
	}
	return out
}

// Summarize computes the metrics of a replay from each job's start time
// (a job that ran more than once, §6.7, is given its final start).
func Summarize(w *Workload, start []int64) Metrics {
	var m Metrics
	if len(w.Jobs) == 0 {
		nan := math.NaN()
		m.Utilization, m.Jain = nan, nan
		return m
	}
	n := len(w.Jobs)
	waits, bslds := make([]float64, 0, n), make([]float64, 0, n)
	all := make([]int32, n)
	for i := range all {
		all[i] = int32(i)
	}
	m.All = jobStats(w, start, all, waits, bslds)
	byClass := partition(n, len(Classes), func(i int) int {
		for k, c := range Classes {
			if w.Jobs[i].Class == c {
				return k
			}
		}
		return 1 // unreachable: Read admits no other class
	})
	for k := range Classes {
		m.ByClass[k] = jobStats(w, start, byClass[k], waits, bslds)
	}
	byCampaign := partition(n, len(w.Campaigns), func(i int) int { return w.Jobs[i].Campaign })
	m.ByCampaign = make([]Stats, len(w.Campaigns))
	for c := range w.Campaigns {
		m.ByCampaign[c] = jobStats(w, start, byCampaign[c], waits, bslds)
	}
	first, last := w.Jobs[0].Submit, int64(0)
	var held float64
	for i := range w.Jobs {
		j := &w.Jobs[i]
		last = max(last, start[i]+j.Run)
		held += float64(j.GPUs) * float64(j.Run)
	}
	m.Makespan = last - first
	if m.Makespan > 0 {
		m.Utilization = held / (float64(w.Pool) * float64(m.Makespan))
	}
	m.Jain = Jain(jainX(w, start))
	return m
}

// jainX returns x_c = T_c ÷ O_c for every campaign with demand, in
// campaign order. It sweeps the replay's submits, starts and ends in time order; between
// two consecutive event times every campaign's demand is constant, so its
// fair allocation there is the water-filling split of the pool times the
// interval's length.
func jainX(w *Workload, start []int64) []float64 {
	type change struct {
		t        int64
		campaign int32
		demand   int32 // GPUs added to (or removed from) the campaign's demand
	}
	n := len(w.Jobs)
	ch := make([]change, 0, 2*n)
	held := make([]float64, len(w.Campaigns))
	for i := range w.Jobs {
		j := &w.Jobs[i]
		c := int32(j.Campaign)
		ch = append(ch, change{j.Submit, c, int32(j.GPUs)}, change{start[i] + j.Run, c, -int32(j.GPUs)})
		held[j.Campaign] += float64(j.GPUs) * float64(j.Run)
	}
	slices.SortFunc(ch, func(a, b change) int { return cmpInt(a.t, b.t) })
	var f fairSplit
	f.init(w)
	fair := make([]float64, len(w.Campaigns))
	for k := 0; k < len(ch); {
		t := ch[k].t
		for k < len(ch) && ch[k].t == t {
			f.demand[ch[k].campaign] += float64(ch[k].demand)
			f.touch(int(ch[k].campaign))
			k++
		}
		if k == len(ch) {
			break
		}
		f.split(float64(w.Pool), float64(ch[k].t-t), fair)
	}
	var xs []float64
	for c := range w.Campaigns {
		if fair[c] > 0 {
			xs = append(xs, held[c]/fair[c])
		}
	}
	return xs
}

// Jain is Jain's fairness index (Σx)² ÷ (n Σx²), NaN when xs is empty
// (Jain, Chiu & Hawe, DEC-TR-301, 1984).
func Jain(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if len(xs) == 0 {
		return math.NaN()
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// fairSplit is the share-weighted max–min (water-filling) split of the pool
// capped by demand. order keeps the campaigns sorted by demand ÷ share (ties
// by index), so the campaigns without demand come first and the split walks
// only those with demand; a change of one campaign's demand moves it to its
// new place, and at an event only a few campaigns change.
type fairSplit struct {
	demand []float64
	share  []float64
	ratio  []float64 // demand ÷ share
	order  []int32
	pos    []int32 // campaign → index in order
	idle   int     // campaigns with no demand: order[:idle]
}

func (f *fairSplit) init(w *Workload) {
	k := len(w.Campaigns)
	f.demand = make([]float64, k)
	f.share = make([]float64, k)
	f.ratio = make([]float64, k)
	f.order = make([]int32, k)
	f.pos = make([]int32, k)
	f.idle = k
	for c := range w.Campaigns {
		f.share[c] = w.Campaigns[c].Share
		f.order[c] = int32(c)
		f.pos[c] = int32(c)
	}
}

func (f *fairSplit) before(a, b int32) bool {
	return f.ratio[a] < f.ratio[b] || (f.ratio[a] == f.ratio[b] && a < b)
}

// touch records that campaign c's demand changed and moves it to its place.
// Only the campaigns with demand (order[idle:]) are kept sorted; the idle
// ones are in any order, so that a campaign that becomes busy or idle moves
// past the busy ones only, not past every idle campaign.
func (f *fairSplit) touch(c int) {
	o, x := f.order, int32(c)
	f.ratio[c] = f.demand[c] / f.share[c]
	isIdle := f.ratio[c] == 0
	i := f.pos[c]
	wasIdle := int(i) < f.idle
	switch {
	case wasIdle && isIdle:
		return
	case wasIdle:
		// To the boundary, then into the busy part.
		last := int32(f.idle - 1)
		o[i], o[last] = o[last], o[i]
		f.pos[o[i]] = i
		i = last
		f.idle--
	case isIdle:
		// To the front of the busy part, then out of it.
		for int(i) > f.idle {
			o[i] = o[i-1]
			f.pos[o[i]] = i
			i--
		}
		o[i] = x
		f.pos[c] = i
		f.idle++
		return
	}
	for int(i) > f.idle && f.before(x, o[i-1]) {
		o[i] = o[i-1]
		f.pos[o[i]] = i
		i--
	}
	for int(i) < len(o)-1 && f.before(o[i+1], x) {
		o[i] = o[i+1]
		f.pos[o[i]] = i
		i++
	}
	o[i] = x
	f.pos[c] = i
}

// split adds each campaign's fair allocation times dt to acc.
func (f *fairSplit) split(pool, dt float64, acc []float64) {
	above, level, ok := f.capped(pool, dt, acc)
	if !ok {
		return
	}
	// Every campaign from order[above] on is above the level: it gets its
	// share of what is left.
	for _, c := range f.order[above:] {
		acc[c] += level * f.share[c] * dt
	}
}

// capped adds to acc the allocation of the busy campaigns capped by their
// demand, below the water level, in order, and returns where in order the
// campaigns above the level begin and the level (what is left per share);
// ok is false where every busy campaign is capped. split and splitFor
// share it so that both walk the capped campaigns with the same terms in
// the same order, bit for bit.
func (f *fairSplit) capped(pool, dt float64, acc []float64) (above int, level float64, ok bool) {
	active := f.order[f.idle:]
	left, weight := pool, 0.0
	for _, c := range active {
		weight += f.share[c]
	}
	for i, c := range active {
		d := f.demand[c]
		if d*weight <= left*f.share[c] {
			acc[c] += d * dt
			left -= d
			weight -= f.share[c]
			continue
		}
		return f.idle + i, left / weight, true
	}
	return 0, 0, false
}

// splitFor is split for a caller that reads only the campaigns in want
// afterwards: the capped campaigns are walked as split walks them (the
// water level depends on each), but of those above the level only want's
// get their allocation, the same sum of the same terms, bit for bit. Shares
// reads only a day's control campaigns, about 11 of the 29 with demand at
// a change of the 300k-job log, where adding to every one above the level
// was half of the split.
func (f *fairSplit) splitFor(pool, dt float64, acc []float64, want []int32) {
	above, level, ok := f.capped(pool, dt, acc)
	if !ok {
		return
	}
	// The campaigns from order[above] on are above the level; one without
	// demand is before the busy part, one capped before above.
	for _, c := range want {
		if f.pos[c] >= int32(above) {
			acc[c] += level * f.share[c] * dt
		}
	}
}
