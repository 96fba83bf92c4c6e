package engine

import (
	"math"

	"github.com/bursar-hpc/bursar/internal/metric"
	"github.com/bursar-hpc/bursar/internal/stats"
	"github.com/bursar-hpc/bursar/policy"
)

// StudyMetrics are the metrics of the policy studies (docs/studies.md §4 and
// §6.3–§6.4), measured when the scenario names its policy (Scenario.Policy
// set, even to "bursar"), so that the paper's runs and their golden
// outputs stay exactly as they were. docs/metrics.md defines each one.
type StudyMetrics struct {
	// Expired counts, per agent kind (victim, adaptive, naive, storm),
	// the requests the policy dropped after the request TTL; PendingGPUs
	// the GPUs still pending (asked for, neither granted nor dropped) at
	// the end of the run (§6.3).
	VictimExpired, AdaptiveExpired, NaiveExpired, StormExpired                 int
	VictimPendingGPUs, AdaptivePendingGPUs, NaivePendingGPUs, StormPendingGPUs int
	// VictimP95InCensored is the victim's in-window p95 latency with its
	// unserved requests counted at their censored latency ((expiry or end)
	// − submitted, placed in the window by that time), and
	// VictimViolationsInCensored the in-window latencies above 60 s so
	// counted (§6.3).
	VictimP95InCensored        float64
	VictimViolationsInCensored int
	// Preemptions counts preempt-notice records (any campaign's leases,
	// the backfill's included), AgentPreemptions those of leases of
	// campaigns other than the backfill; PreemptedGPUSeconds is Σ GPUs ×
	// (preemption − grant) over the preempted leases: the GPU-seconds a
	// rigid job on that lease would have lost (§4, §6.7).
	Preemptions, AgentPreemptions int
	PreemptedGPUSeconds           float64
	// JainStorm is Jain's fairness index of x_c = T_c / O_c over the
	// storm window (§6.4); NaN when no campaign had demand.
	JainStorm float64
	// AdaptiveSciencePerCredit and NaiveSciencePerCredit are science ÷
	// credits spent (NaN when nothing was spent).
	AdaptiveSciencePerCredit, NaiveSciencePerCredit float64
}

// StudyMetricTable are the study metrics (docs/metrics.md), in output
// order: metrics.json after the model's, and runs.csv's columns when a
// run names its policy.
var StudyMetricTable = metric.Table[StudyMetrics]{
	metric.Int("victim_expired", "requests", func(m *StudyMetrics) *int { return &m.VictimExpired }),
	metric.Int("adaptive_expired", "requests", func(m *StudyMetrics) *int { return &m.AdaptiveExpired }),
	metric.Int("naive_expired", "requests", func(m *StudyMetrics) *int { return &m.NaiveExpired }),
	metric.Int("storm_expired", "requests", func(m *StudyMetrics) *int { return &m.StormExpired }),
	metric.Int("victim_pending_gpus", "GPUs", func(m *StudyMetrics) *int { return &m.VictimPendingGPUs }),
	metric.Int("adaptive_pending_gpus", "GPUs", func(m *StudyMetrics) *int { return &m.AdaptivePendingGPUs }),
	metric.Int("naive_pending_gpus", "GPUs", func(m *StudyMetrics) *int { return &m.NaivePendingGPUs }),
	metric.Int("storm_pending_gpus", "GPUs", func(m *StudyMetrics) *int { return &m.StormPendingGPUs }),
	metric.Float("victim_p95_in_censored", "s", func(m *StudyMetrics) *float64 { return &m.VictimP95InCensored }),
	metric.Int("victim_violations_in_censored", "requests", func(m *StudyMetrics) *int { return &m.VictimViolationsInCensored }),
	metric.Int("preemptions", "leases", func(m *StudyMetrics) *int { return &m.Preemptions }),
	metric.Int("agent_preemptions", "leases", func(m *StudyMetrics) *int { return &m.AgentPreemptions }),
	metric.Float("preempted_gpu_s", "GPU-s", func(m *StudyMetrics) *float64 { return &m.PreemptedGPUSeconds }),
	metric.Float("jain_storm", "index in (0, 1]", func(m *StudyMetrics) *float64 { return &m.JainStorm }),
	metric.Float("adaptive_science_per_credit", "value / credit", func(m *StudyMetrics) *float64 { return &m.AdaptiveSciencePerCredit }),
	metric.Float("naive_science_per_credit", "value / credit", func(m *StudyMetrics) *float64 { return &m.NaiveSciencePerCredit }),
}

// StudyKeys lists the study metrics' keys in output order
// (StudyMetricTable).
var StudyKeys = StudyMetricTable.Keys()

// Scalars returns the study metrics in StudyKeys order.
func (m *StudyMetrics) Scalars() []Scalar { return scalars(StudyMetricTable, m) }

// SetScalar sets the study metric key (the inverse of Scalars, for
// decoders); it reports whether key is one.
func (m *StudyMetrics) SetScalar(key string, v float64) bool { return StudyMetricTable.Set(m, key, v) }

// study measures the study metrics during a run.
type study struct {
	m StudyMetrics
	// victimSubmit is each victim campaign's pending request's submit
	// tick (-1: none), indexed by campaign id; victimCensored the
	// censored (latency, time) pairs of its unserved requests.
	victimSubmit   []int
	victimCensored []Grant
	// grantedAt is each live lease's grant tick, by lease id.
	grantedAt map[int]int
	// Jain's index: the share weights, and per campaign Σ held (T) and
	// Σ fair allocation (O) over the storm window; demand and alloc are
	// per-tick scratch.
	weight, held, fair, demand, alloc []float64
}

func newStudy(w *world) *study {
	n := len(w.camps)
	st := &study{victimSubmit: make([]int, n), grantedAt: map[int]int{}}
	f := make([]float64, 5*n)
	st.weight, st.held, st.fair, st.demand, st.alloc = f[:n], f[n:2*n], f[2*n:3*n], f[3*n:4*n], f[4*n:]
	// Shares: R normalised over the campaigns other than the backfill
	// (docs/studies.md §1); equal shares when every R is 0.
	total := 0.0
	for i := range w.camps {
		st.victimSubmit[i] = -1
		if w.camps[i].kind != kindBackfill {
			st.weight[i] = w.b.a.Envelope(policy.CampaignID(i)).Sustained
			total += st.weight[i]
		}
	}
	for i := range w.camps {
		if w.camps[i].kind == kindBackfill {
			continue
		}
		if total > 0 {
			st.weight[i] /= total
		} else {
			st.weight[i] = 1
		}
	}
	return st
}

// requested notes a victim's request, filed at tick t.
func (st *study) requested(id policy.CampaignID, t int) { st.victimSubmit[id] = t }

func (st *study) record(e policy.Event, w *world) {
	kind := w.camps[e.CampaignID].kind
	switch e.Kind {
	case policy.EventGrant:
		st.grantedAt[e.Lease] = e.T
		if kind == kindVictim {
			st.victimSubmit[e.CampaignID] = -1
		}
	case policy.EventRequestExpired:
		switch kind {
		case kindVictim:
			st.m.VictimExpired++
			if t0 := st.victimSubmit[e.CampaignID]; t0 >= 0 {
				st.victimCensored = append(st.victimCensored, Grant{T: e.T, Latency: e.T - t0})
				st.victimSubmit[e.CampaignID] = -1
			}
		case kindAdaptive:
			st.m.AdaptiveExpired++
		case kindNaive:
			st.m.NaiveExpired++
		case kindStorm:
			st.m.StormExpired++
		}
	case policy.EventPreemptNotice:
		st.m.Preemptions++
		if kind != kindBackfill {
			st.m.AgentPreemptions++
		}
	case policy.EventRelease:
		if t0, ok := st.grantedAt[e.Lease]; ok {
			if e.Reason == policy.ReasonPreempted {
				st.m.PreemptedGPUSeconds += float64(e.GPUs * (e.T - t0))
			}
			delete(st.grantedAt, e.Lease)
		}
	}
}

// ticks accumulates Jain's T_c and O_c after k ticks of the storm window
// over which the held and outstanding GPUs did not change (k = 1 after a
// stepped tick, more after skipped ones): O_c is the share-weighted
// max–min split of the pool among the campaigns other than the backfill,
// each capped by its demand (held + pending). Each tick's terms are added
// one by one, so that k skipped ticks sum exactly as k stepped ones.
func (st *study) ticks(w *world, k int) {
	remaining := float64(w.s.Pool)
	for i := range w.camps {
		st.alloc[i], st.demand[i] = 0, 0
		if w.camps[i].kind == kindBackfill {
			continue
		}
		id := policy.CampaignID(i)
		held := float64(w.b.Held(id, policy.AnyClass))
		for range k {
			st.held[i] += held
		}
		st.demand[i] = float64(w.b.Outstanding(id, policy.AnyClass))
	}
	maxMinSplit(remaining, st.weight, st.demand, st.alloc)
	for i := range st.alloc {
		for range k {
			st.fair[i] += st.alloc[i]
		}
	}
}

// maxMinSplit writes into alloc the share-weighted max–min split of pool
// among campaigns, each capped by its demand (docs/studies.md §6.4): every
// campaign with unmet demand and a positive weight gets its weighted part
// of what is left; those whose demand that covers are capped and leave,
// and the rest is split again, until nobody is capped. Campaigns of weight
// 0 get nothing.
func maxMinSplit(pool float64, weight, demand, alloc []float64) {
	const eps = 1e-9
	clear(alloc)
	remaining := pool
	for remaining > eps {
		wsum := 0.0
		for i := range alloc {
			if demand[i]-alloc[i] > eps {
				wsum += weight[i]
			}
		}
		if wsum == 0 {
			return
		}
		capped, given := false, 0.0
		for i := range alloc {
			if need := demand[i] - alloc[i]; need > eps && weight[i] > 0 && remaining*weight[i]/wsum >= need {
				alloc[i] += need
				given += need
				capped = true
			}
		}
		if !capped {
			for i := range alloc {
				if demand[i]-alloc[i] > eps {
					alloc[i] += remaining * weight[i] / wsum
				}
			}
			return
		}
		remaining -= given
	}
}

// jain is Jain's fairness index (Σx)² / (n Σx²) of x_c = held_c / fair_c
// over the campaigns with fair_c > 0 (Jain, Chiu & Hawe, DEC-TR-301,
// 1984); NaN when there is none.
func jain(held, fair []float64) float64 {
	sum, sq, n := 0.0, 0.0, 0
	for i := range fair {
		if fair[i] > 0 {
			x := held[i] / fair[i]
			sum += x
			sq += x * x
			n++
		}
	}
	if n == 0 || sq == 0 {
		return math.NaN()
	}
	return sum * sum / (float64(n) * sq)
}

func (st *study) finish(w *world, m *Metrics, vIn []int) StudyMetrics {
	s := &w.s
	lo, hi := s.StormStart, s.StormEnd
	for i := range w.camps {
		id := policy.CampaignID(i)
		pending := w.b.Outstanding(id, policy.AnyClass) - w.b.Held(id, policy.AnyClass)
		switch w.camps[i].kind {
		case kindVictim:
			st.m.VictimPendingGPUs += pending
			if t0 := st.victimSubmit[i]; t0 >= 0 {
				st.victimCensored = append(st.victimCensored, Grant{T: s.Ticks, Latency: s.Ticks - t0})
			}
		case kindAdaptive:
			st.m.AdaptivePendingGPUs += pending
		case kindNaive:
			st.m.NaivePendingGPUs += pending
		case kindStorm:
			st.m.StormPendingGPUs += pending
		}
	}
	lats := append([]int(nil), vIn...)
	st.m.VictimViolationsInCensored = m.VictimViolationsIn
	for _, g := range st.victimCensored {
		if g.T >= lo && g.T < hi+60 {
			lats = append(lats, g.Latency)
			if g.Latency > 60 {
				st.m.VictimViolationsInCensored++
			}
		}
	}
	st.m.VictimP95InCensored = stats.Percentile(lats, 95)

	st.m.JainStorm = jain(st.held, st.fair)
	st.m.AdaptiveSciencePerCredit = perCredit(m.AdaptiveScience, m.AdaptiveSpent)
	st.m.NaiveSciencePerCredit = perCredit(m.NaiveScience, m.NaiveSpent)
	return st.m
}

func perCredit(science, spent float64) float64 {
	if spent <= 0 {
		return math.NaN()
	}
	return science / spent
}
