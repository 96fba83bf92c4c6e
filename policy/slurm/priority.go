package slurm

import (
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/priority"
)

// priorities is multifactor priority (priority/multifactor,
// priority_multifactor.c, _get_priority_internal and
// priority_p_set_assoc_usage's factors; https://slurm.schedmd.com/priority_multifactor.html):
//
//	priority = W_age·age + W_fs·fs + W_js·size + W_part·partition + W_qos·qos
//
// every factor in [0, 1], computed once per PriorityCalcPeriod (at the
// period's first tick, as fairshare's):
//
//   - age: the time since submit ÷ PriorityMaxAge, at most 1;
//   - fs: Fair Tree's rank factor (fairtree.go), or classic
//     2^(−U/S) under NO_FAIR_TREE, from usage decayed with
//     PriorityDecayHalfLife (fairshare's books, the history preloaded);
//   - size: GPUs ÷ the pool. Slurm's default (PriorityFavorSmall=NO)
//     averages nodes ÷ nodes and CPUs ÷ CPUs; with one GPU standing for
//     one node the two are equal (**choice**);
//   - partition: the partition's PriorityJobFactor ÷ the largest; one
//     partition here, so 1;
//   - qos: the QOS priority ÷ the largest. A site's queues stand for its
//     QOS, ranked as policy/priority ranks them (interactive 5 … standby
//     0; a request in no queue by its class), so qos = (5 − tier) ÷ 5
//     (**choice**: Slurm's own QOS normal has priority 0).
type priorities struct {
	stale   bool
	at      int // the period computed for (-1: none)
	epoch   uint64
	gen     int
	fs      []float64
	tree    fairTree
	pool    float64
	tierMax float64
	// owed: the generation's fair-share factors are not computed yet.
	// They are computed at its first priority (of), in the admission
	// that began it or a later one of the same period, which reads the
	// same usage (fairshare's books change at a period's boundary only):
	// a generation whose queue holds no job asks for none.
	owed bool
}

// update starts a generation of the priorities at a new period, a
// registration, or new shares, and returns the generation (it counts
// them, from 1).
func (p *priorities) update(k *baseline.Core, r *Rule) int {
	at := r.period(k.Now())
	if p.gen > 0 && !p.stale && p.at == at && p.epoch == k.SharesEpoch() {
		return p.gen
	}
	p.gen++
	p.stale, p.at, p.epoch = false, at, k.SharesEpoch()
	p.pool = float64(k.Config().Pool)
	p.tierMax = float64(priority.Tiers - 1)
	p.owed = r.usage != nil
	return p.gen
}

// factors computes the generation's fair-share factors: classic fair
// share's for every campaign, or Fair Tree's ranking begun (its factors
// are worked out per campaign as asked, fairTree.factor).
func (p *priorities) factors(k *baseline.Core, r *Rule) {
	p.owed = false
	usage, _ := r.usage.PeriodUsage(k)
	if r.knobs.NoFairTree {
		p.fs = baseline.Cleared(p.fs, k.NumCampaigns())
		classicFactors(k, usage, p.fs)
	} else {
		p.tree.begin(k, usage, r.usage.Live())
	}
}

// of is request q's priority as of the period's start.
func (p *priorities) of(k *baseline.Core, r *Rule, q *baseline.Request) float64 {
	w := &r.knobs
	v := w.WPartition
	if w.WAge > 0 {
		v += w.WAge * ageFactor(p.at, q.Submitted, w.MaxAge)
	}
	if w.WFairshare > 0 {
		if p.owed {
			p.factors(k, r)
		}
		if r.knobs.NoFairTree {
			v += w.WFairshare * p.fs[q.Campaign]
		} else {
			v += w.WFairshare * p.tree.factor(int(q.Campaign))
		}
	}
	if w.WJobSize > 0 {
		v += w.WJobSize * min(float64(q.GPUs)/p.pool, 1)
	}
	if w.WQOS > 0 {
		t := priority.TierOfClass(q.Asked)
		if q.Queue != 0 {
			t = priority.TierOfQueue(k.QueueName(q.Queue))
		}
		v += w.WQOS * (p.tierMax - float64(t)) / p.tierMax
	}
	return v
}

// ageFactor is the age factor at period start at of a job submitted at
// submitted, min(max(at − submitted, 0) ÷ maxAge, 1) for maxAge > 0,
// without the division for a job as old as maxAge or older: there
// a ≥ maxAge gives a ÷ maxAge ≥ 1 (a correctly rounded division is
// monotone, and maxAge ÷ maxAge is 1), which the min makes 1, the same
// bits. Every waiting job's priority is computed again at each period,
// and the division was most of a priority's own cost on the 300k-job log
// (pprof); sparing it for the old jobs spared 1.3 % of a replay's
// instructions on SDSC-SP2.
func ageFactor(at, submitted int, maxAge float64) float64 {
	a := float64(at - submitted)
	if a >= maxAge {
		return 1
	}
	return min(max(a, 0)/maxAge, 1)
}
