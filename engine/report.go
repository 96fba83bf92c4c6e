package engine

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/bursar-hpc/bursar/internal/stats"
	"github.com/bursar-hpc/bursar/policy"
)

// pyFloat formats like Python's format(x, ".Nf"), including "nan".
func pyFloat(x float64, width, prec int) string {
	if math.IsNaN(x) {
		return fmt.Sprintf("%*s", width, "nan")
	}
	return fmt.Sprintf("%*.*f", width, prec, x)
}

// shortFloat formats a knob the way Python prints a number: integral values
// without a fraction.
func shortFloat(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// WriteReport prints the single-run report of model.md §9.
func WriteReport(w io.Writer, r *Result) error {
	s := &r.Scenario
	p := &printer{w: w}
	if errors.Is(r.OverbookRefusal, policy.ErrOverbooked) {
		p.f("[invariant ok] rejected overbooked campaign: %s: guarantees are never overbooked (Sec. 10)\n", policy.ErrOverbooked)
	} else {
		p.f("[invariant VIOLATED] an overbooked campaign was not refused (%v)\n", r.OverbookRefusal)
	}
	// Under a baseline the report names it and makes no claim about
	// Bursar's bucket or warm headroom: the run is the same workload under
	// another admission rule (docs/policies.md).
	baseline := s.Baseline()
	if baseline == "" {
		p.f("\n=== Bursar — %d-GPU pool, %ds simulated ===\n\n", s.Pool, s.Ticks)
	} else {
		p.f("\n=== %s (a baseline admission policy, docs/policies.md) — %d-GPU pool, %ds simulated ===\n\n", baseline, s.Pool, s.Ticks)
	}

	var byPath [policy.NumPaths][]int
	for _, g := range r.Grants {
		byPath[g.Path] = append(byPath[g.Path], g.Latency)
	}
	for path := range policy.Path(policy.NumPaths) {
		lat := byPath[path]
		mx := math.NaN()
		if len(lat) > 0 {
			mx = float64(slices.Max(lat))
		}
		p.f("grants via %-7s: n=%4d  p50=%ss  p95=%ss  max=%ss\n", path, len(lat),
			pyFloat(stats.Percentile(lat, 50), 4, 0), pyFloat(stats.Percentile(lat, 95), 4, 0), pyFloat(mx, 4, 0))
	}
	p.f("\n")

	lo, hi := s.StormStart, s.StormEnd
	var vIn, vOut []int
	for _, g := range r.Grants {
		if r.Cast[g.Campaign].Agent != AgentVictim {
			continue
		}
		if g.T >= lo && g.T < hi+60 {
			vIn = append(vIn, g.Latency)
		} else {
			vOut = append(vOut, g.Latency)
		}
	}
	p.f("[isolation] victim grant latency outside storm: p50=%ss p95=%ss (n=%d)\n", pyFloat(stats.Percentile(vOut, 50), 0, 0), pyFloat(stats.Percentile(vOut, 95), 0, 0), len(vOut))
	p.f("[isolation] victim grant latency during  storm: p50=%ss p95=%ss (n=%d)\n\n", pyFloat(stats.Percentile(vIn, 50), 0, 0), pyFloat(stats.Percentile(vIn, 95), 0, 0), len(vIn))

	m := &r.Metrics
	if len(r.Storms) == 0 {
		// The prototype registers a storm even with storms 0; this port
		// registers none (docs/scenarios.md).
		p.f("[back pressure] no storm campaign in this scenario\n\n")
	}
	for i := range r.Storms {
		st := &r.Storms[i]
		if baseline != "" {
			p.f("[back pressure] %s throttle events: %d; %s held during window: peak=%d GPUs, mean=%s GPUs (its envelope: ceiling %d, sustained R=%s; admitted by %s's rules, not Bursar's bucket)\n",
				st.Name, st.Throttles, st.Name, st.PeakHeld, pyFloat(st.MeanHeld, 0, 0), st.BurstCeiling, shortFloat(st.Sustained), baseline)
		} else {
			p.f("[back pressure] %s throttle events: %d; %s held during window: peak=%d GPUs, mean=%s GPUs (ceiling %d, sustained R=%s — bucket forces reversion)\n",
				st.Name, st.Throttles, st.Name, st.PeakHeld, pyFloat(st.MeanHeld, 0, 0), st.BurstCeiling, shortFloat(st.Sustained))
		}
		if i == len(r.Storms)-1 {
			p.f("\n")
		}
	}

	p.f("[adaptivity]  %-14s%9s%7s%10s%17s\n", "campaign", "science", "tasks", "credits", "credits/science")
	for i := range r.Science {
		c := &r.Science[i]
		per := math.NaN()
		if c.Science != 0 {
			per = c.Spent / c.Science
		}
		p.f("              %-14s%9s%7d%10s%17s\n", c.Name, pyFloat(c.Science, 0, 1), c.Completed, pyFloat(c.Spent, 0, 1), pyFloat(per, 0, 2))
	}
	p.f("\n")

	p.f("[envelope dims] %-14s%10s%14s%12s%15s\n", "campaign", "mean GB/s", "io-throttled", "mean tok/s", "inf-throttled")
	rows := make([]*CampaignReport, 0, len(r.Science)+len(r.Storms))
	for i := range r.Science {
		rows = append(rows, &r.Science[i])
	}
	for i := range r.Storms {
		rows = append(rows, &r.Storms[i].CampaignReport)
	}
	for _, c := range rows {
		p.f("                %-14s%10s%13ds%12s%14ds\n", c.Name, pyFloat(c.MeanIO, 0, 1), c.IOThrottled, pyFloat(c.MeanInference, 0, 0), c.InferenceThrottled)
	}
	p.f("\n")

	if baseline != "" {
		p.f("[utilization] mean pool utilization: %s%% under %s\n\n", pyFloat(100*m.Utilization, 0, 1), baseline)
	} else {
		p.f("[utilization] mean pool utilization: %s%% (warm headroom + preemption grace are the cost of latency)\n\n", pyFloat(100*m.Utilization, 0, 1))
	}

	p.f("[governance] sample journal records (full log in journal.jsonl):\n")
	for _, e := range []*policy.Event{&r.FirstVictimGrant, &r.FirstThrottle, &r.FirstPreemptNotice} {
		if e.Kind != 0 {
			p.f("  %s\n", e.AppendJSON(nil))
		}
	}
	return p.err
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, a ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, a...)
	}
}
