package slurmcheck

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Job is one job of the replayed log, in real seconds: Slurm runs it as
// `sleep Run` with a time limit of Limit whole minutes.
type Job struct {
	ID     int     `json:"id"` // 1…n, in submit order
	Submit float64 `json:"submit_s"`
	Run    float64 `json:"run_s"`
	Limit  int     `json:"limit_min"`
	CPUs   int     `json:"cpus"`
}

// LogSpec draws a log: Jobs jobs on Nodes one-CPU nodes whose offered
// load (Σ CPUs × run ÷ (Nodes × the submit span)) is about Load. Times
// are drawn in the log's seconds and divided by Scale (log seconds per
// real second: 60 makes one log hour one real minute), so that the time
// limits, whole minutes in Slurm, keep their meaning.
type LogSpec struct {
	Jobs  int     `json:"jobs"`
	Nodes int     `json:"nodes"`
	Load  float64 `json:"load"`
	Scale float64 `json:"scale"`
	// RunMin and RunMax bound the run times in log seconds (log-uniform
	// between them).
	RunMin float64 `json:"run_min_log_s"`
	RunMax float64 `json:"run_max_log_s"`
	Seed   uint64  `json:"seed"`
	// Overask is the fraction of jobs whose limit is 3 to 10 times their
	// run rather than 1.2 to 3 (the users who ask for far more than they
	// use: their long limits are what every-job reservations and EASY's
	// one reservation treat differently). 0 draws no such job.
	Overask float64 `json:"overask"`
}

// Validate checks the spec; the error names the field.
func (s LogSpec) Validate() error {
	switch {
	case s.Jobs < 2:
		return fmt.Errorf("slurmcheck: jobs must be at least 2, got %d", s.Jobs)
	case s.Nodes < 1:
		return fmt.Errorf("slurmcheck: nodes must be at least 1, got %d", s.Nodes)
	case !(s.Load > 0 && s.Load <= 10):
		return fmt.Errorf("slurmcheck: load must be in (0, 10], got %v", s.Load)
	case !(s.Scale > 0 && s.Scale <= 3600):
		return fmt.Errorf("slurmcheck: scale must be in (0, 3600], got %v", s.Scale)
	case !(s.RunMin > 0 && s.RunMax >= s.RunMin):
		return fmt.Errorf("slurmcheck: run times need 0 < run-min ≤ run-max, got %v and %v", s.RunMin, s.RunMax)
	case !(s.Overask >= 0 && s.Overask <= 1):
		return fmt.Errorf("slurmcheck: overask must be in [0, 1], got %v", s.Overask)
	case s.RunMin/s.Scale < 1:
		return fmt.Errorf("slurmcheck: run-min %v log seconds is under one real second at scale %v", s.RunMin, s.Scale)
	}
	return nil
}

// Generate draws the log, the same for the same spec. Sizes: half the
// jobs take 1 or 2 CPUs, three in ten up to half the nodes, the rest more
// than half and up to all of them (the wide jobs that make backfill
// matter). Each job's limit is its run times a factor uniform in [1.2, 3]
// (users overestimate), or in [3, 10] for a fraction Overask of them,
// rounded up to whole real minutes. Arrivals are a
// Poisson stream's gaps, stretched to the span that gives the load from
// the jobs' own work; the first job comes at 0.
func Generate(s LogSpec) []Job {
	rng := rand.New(rand.NewPCG(s.Seed, 0x5e1f))
	jobs := make([]Job, s.Jobs)
	work := 0.0
	for i := range jobs {
		j := &jobs[i]
		j.ID = i + 1
		u := rng.Float64()
		half := max(1, s.Nodes/2)
		switch {
		case u < 0.5:
			j.CPUs = min(s.Nodes, 1+rng.IntN(2))
		case u < 0.8:
			j.CPUs = 1 + rng.IntN(half)
		default:
			j.CPUs = min(s.Nodes, half+1+rng.IntN(max(1, s.Nodes-half)))
		}
		logRun := s.RunMin * math.Exp(rng.Float64()*math.Log(s.RunMax/s.RunMin))
		j.Run = math.Round(logRun/s.Scale*10) / 10
		factor := 1.2 + 1.8*rng.Float64()
		if s.Overask > 0 && rng.Float64() < s.Overask {
			factor = 3 + 7*rng.Float64()
		}
		est := j.Run * factor
		j.Limit = max(1, int(math.Ceil(est/60)))
		work += float64(j.CPUs) * j.Run
	}
	// The gaps are drawn, then stretched so that the span from the first
	// submit to the last is exactly the one the load asks for: a short
	// log's own span strays far from its expectation.
	gaps := make([]float64, len(jobs))
	total := 0.0
	for i := 1; i < len(jobs); i++ {
		gaps[i] = rng.ExpFloat64()
		total += gaps[i]
	}
	span := work / (float64(s.Nodes) * s.Load)
	t := 0.0
	for i := 1; i < len(jobs); i++ {
		t += gaps[i] * span / total
		jobs[i].Submit = math.Round(t*10) / 10
	}
	return jobs
}

// OfferedLoad is Σ CPUs × run ÷ (nodes × the span from the first submit
// to the last).
func OfferedLoad(jobs []Job, nodes int) float64 {
	work := 0.0
	for _, j := range jobs {
		work += float64(j.CPUs) * j.Run
	}
	span := jobs[len(jobs)-1].Submit - jobs[0].Submit
	if span <= 0 {
		return math.Inf(1)
	}
	return work / (float64(nodes) * span)
}
