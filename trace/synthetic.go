package trace

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/bursar-hpc/bursar/policy"
)

// Synthetic describes a generated facility-scale trace. Generation is
// deterministic: the same fields give the same workload, job for job.
type Synthetic struct {
	Pool      int     // GPUs
	Campaigns int     // users, in groups of 10
	Days      int     // submit window
	Load      float64 // offered GPU-seconds ÷ (pool × window)
	Seed      uint64
}

// FacilityScale is the speed target of issue 11: 100,000 GPUs, 1,000
// campaigns, 30 days at offered load 0.9 (about 105,000 jobs).
var FacilityScale = Synthetic{Pool: 100_000, Campaigns: 1000, Days: 30, Load: 0.9, Seed: 1}

// Generate builds the workload. The model, chosen to look like the PWA
// logs at a larger scale:
//   - arrivals are a Poisson process over the window (exponential gaps,
//     floored to whole seconds), the rate set so that the expected offered
//     load is Load;
//   - a job's width is 2^k GPUs, k uniform on 0…10 (mean ≈ 186);
//   - its run time is log-uniform on [60 s, 24 h] (mean ≈ 3.3 h), and its
//     estimate the run time times a factor uniform on [1, 4], rounded up
//     (users overestimate);
//   - its campaign is drawn with Zipf-like weights 1/(c+1)^0.8, so a few
//     campaigns dominate as in real logs; campaign c is in group c/10;
//   - its class is interactive with probability 0.05, opportunistic 0.10,
//     burst otherwise.
//
// Shares are the campaigns' fractions of GPU-seconds, as for a real trace.
func (s Synthetic) Generate() (*Workload, error) {
	if s.Pool < 1024 || s.Campaigns < 1 || s.Days < 1 || !(s.Load > 0) {
		return nil, fmt.Errorf("synthetic trace %+v: need pool ≥ 1024 (the widest job), campaigns ≥ 1, days ≥ 1, load > 0", s)
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x5eed_b0a5))
	const minRun, maxRun = 60.0, 86400.0
	meanWidth := float64(1<<11-1) / 11
	meanRun := (maxRun - minRun) / math.Log(maxRun/minRun)
	window := float64(s.Days) * 86400
	jobs := s.Load * float64(s.Pool) * window / (meanWidth * meanRun)
	gap := window / jobs
	cum := make([]float64, s.Campaigns)
	var tot float64
	for c := range cum {
		tot += 1 / math.Pow(float64(c+1), 0.8)
		cum[c] = tot
	}
	w := &Workload{
		Name: fmt.Sprintf("synthetic(pool=%d,campaigns=%d,days=%d,load=%g,seed=%d)", s.Pool, s.Campaigns, s.Days, s.Load, s.Seed),
		Pool: s.Pool,
	}
	var own []owner
	t := 0.0
	for n := int64(1); ; n++ {
		t += rng.ExpFloat64() * gap
		if t >= window {
			break
		}
		run := int64(math.Round(minRun * math.Exp(rng.Float64()*math.Log(maxRun/minRun))))
		est := int64(math.Ceil(float64(run) * (1 + 3*rng.Float64())))
		c := 0
		for x := rng.Float64() * tot; cum[c] < x; c++ {
		}
		cls := policy.AgentBurst
		switch u := rng.Float64(); {
		case u < 0.05:
			cls = policy.Interactive
		case u < 0.15:
			cls = policy.Opportunistic
		}
		w.Jobs = append(w.Jobs, Job{
			Number: n, Submit: int64(t), Run: run, Estimate: est,
			GPUs: 1 << rng.IntN(11), Class: cls, Queue: -1,
			User: c, Group: c / 10, LogWait: -1,
		})
		own = append(own, owner{user: c, group: c / 10})
	}
	w.Records = len(w.Jobs)
	if err := w.buildCampaigns(own, Options{Shares: ShareGroups}, nil, nil); err != nil {
		return nil, err
	}
	return w, nil
}
