package arrive

import (
	"fmt"
	"math"

	"github.com/bursar-hpc/bursar/engine"
)

// PaperPool is the pool the paper's agents were sized for (model.md §6).
const PaperPool = 512

// Mix is the order in which agent campaigns arrive: the k-th agent
// (k = 1, 2, …) is Mix[(k−1) mod 3], so that k = 3 is one of each and
// every k ≥ 1 has a storm.
var Mix = [3]string{engine.AgentStorm, engine.AgentNaive, engine.AgentAdaptive}

// ScaleGPUs scales a GPU quantity of the paper's agents to a pool
// (docs/studies.md §6.14): q × pool / 512 × scale (`agent_scale`)
// rounded down, at least 1 (exact at scale 1: the division is by a power
// of two).
func ScaleGPUs(q, pool int, scale float64) int {
	return max(1, int(math.Floor(float64(q)*float64(pool)/PaperPool*scale)))
}

// ScaleRate is ScaleGPUs for a rate (R, GPUs) or a bucket (B,
// GPU-seconds): rounded down to a whole number, at least 1.
func ScaleRate(x float64, pool int, scale float64) float64 {
	return max(1, math.Floor(x*float64(pool)/PaperPool*scale))
}

// DefaultAgentPhi is φ by default: the agents' envelopes add up to
// their group's entitlement (docs/studies.md §3.3, §6.14).
const DefaultAgentPhi = 1.0

// MaxAgentPhi bounds agent_phi: far past it the agents' rates alone
// exceed any pool.
const MaxAgentPhi = 64

// Envelop sizes the cast's envelopes from the agents' entitlement
// (docs/studies.md §6.14, revision 3): φ = Σ max(R, g) ÷ (share × pool),
// the agents' envelopes against what their group is entitled to, is
// made phi by scaling every agent's R, and its guarantee g with it
// (rounded down), by one factor. It returns the φ reached, phi but for
// the rounding of g where an agent's g exceeds its R; a burst ceiling
// below the scaled g is raised to it. Without it the
// paper's envelopes, scaled to the pool, gave eight agents R summing to
// 208 GPUs on a pool of 128 whose agents' group was entitled to 12.8: φ
// = 16, and "the meter no longer bites" followed from that.
func Envelop(cast []engine.Campaign, share, phi float64, pool int) float64 {
	target := phi * share * float64(pool)
	sum := 0.0
	for i := range cast {
		sum += max(cast[i].Sustained, float64(cast[i].Guaranteed))
	}
	if len(cast) == 0 || sum <= 0 {
		return 0
	}
	f := target / sum
	got := 0.0
	for i := range cast {
		c := &cast[i]
		c.Sustained *= f
		c.Guaranteed = int(math.Floor(float64(c.Guaranteed) * f))
		// An envelope's burst ceiling is at least its guarantee: a
		// guarantee scaled past it raises it.
		c.BurstCeiling = max(c.BurstCeiling, c.Guaranteed)
		got += max(c.Sustained, float64(c.Guaranteed))
	}
	return got / (share * float64(pool))
}

// Cast is the k agent campaigns that arrive on a pool, active for active
// seconds, sized by scale (`agent_scale`, 1 the paper's agents): the paper's storm, naive-sci and adaptive-sci (model.md §6,
// §7; engine.PaperCast at the published knobs) taken in Mix order and
// named storm-1, naive-sci-1, adaptive-sci-1, storm-2, …. Their GPU
// quantities — requests and targets, guarantees, R, burst ceilings, B —
// scale by pool/512 × scale (§6.14). Two things are not GPU quantities and are
// set for the longer stay instead: a storm storms for the whole stay
// (its window is [1, active)), and budgets grow by active / 7200 (the
// paper's run), so that an agent can keep its paper behaviour for the
// whole stay. Each science campaign draws its own task list (Stream =
// its index in the cast). Flow envelopes are the paper's.
func Cast(k, pool, active int, scale float64) ([]engine.Campaign, error) {
	if k < 0 || pool < 1 || active < 2 || !(scale > 0) || math.IsInf(scale, 0) {
		return nil, fmt.Errorf("agents cast: k %d, pool %d, stay %d s, agent_scale %v: want k ≥ 0, pool ≥ 1, stay ≥ 2 s, 0 < agent_scale < ∞", k, pool, active, scale)
	}
	s := engine.DefaultScenario()
	paper := engine.PaperCast(&s)
	template := func(kind string) engine.Campaign {
		for i := range paper {
			if paper[i].Agent == kind {
				return paper[i]
			}
		}
		panic("arrive: the paper cast has no " + kind)
	}
	budgetScale := float64(active) / float64(s.Ticks)
	cast := make([]engine.Campaign, 0, k)
	guaranteed := 0
	for i := range k {
		kind := Mix[i%len(Mix)]
		c := template(kind)
		base := map[string]string{engine.AgentStorm: "storm", engine.AgentNaive: "naive-sci", engine.AgentAdaptive: "adaptive-sci"}[kind]
		c.Name = fmt.Sprintf("%s-%d", base, i/len(Mix)+1)
		c.Group = ""
		c.Guaranteed = ScaleGPUs(c.Guaranteed, pool, scale)
		c.Sustained = ScaleRate(c.Sustained, pool, scale)
		c.BurstCeiling = ScaleGPUs(c.BurstCeiling, pool, scale)
		c.Bucket = ScaleRate(c.Bucket, pool, scale)
		c.GPUs = ScaleGPUs(c.GPUs, pool, scale)
		c.Budget *= budgetScale
		switch kind {
		case engine.AgentStorm:
			c.Window = engine.Window{Start: 1, End: active}
		case engine.AgentAdaptive:
			c.MinGPUs = ScaleGPUs(c.MinGPUs, pool, scale)
			c.StarvedGPUs = ScaleGPUs(c.StarvedGPUs, pool, scale)
			c.OpportunisticMax = ScaleGPUs(c.OpportunisticMax, pool, scale)
			c.OpportunisticKeep = ScaleGPUs(c.OpportunisticKeep, pool, scale)
		}
		if kind != engine.AgentStorm {
			c.Stream = i
		}
		cast = append(cast, c)
		guaranteed += c.Guaranteed
	}
	// The broker and every baseline refuse guarantees above the pool
	// (model.md §5): say which knob did it.
	if guaranteed > pool {
		return nil, fmt.Errorf("agents cast: %d agents at agent_scale %v guarantee %d GPUs, more than the pool of %d", k, scale, guaranteed, pool)
	}
	return cast, nil
}
