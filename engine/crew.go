package engine

import (
	"fmt"

	"github.com/bursar-hpc/bursar/policy"
)

// Crew is a set of the paper's agents (storm, naive-sci, adaptive-sci)
// driven by an outside loop on a policy the caller owns: the
// agents-arrive study (docs/studies.md §3.3) puts them on a machine that is
// replaying a real trace. The crew registers its campaigns on the
// allocator it is given and steps them; the caller ticks the allocator.
// Victims, probes and backfills are the paper scenario's measuring
// instruments and are not crew members.
type Crew struct {
	agents []Agent
	ids    []policy.CampaignID
	kinds  []string
	sci    []*science // indexed like agents; nil for a storm
}

// NewCrew registers cast (storm, naive or adaptive campaigns; envelopes
// at pool) on a, in order, and builds their agents as a run would. A
// science campaign's tasks are drawn from seed + its Stream, as in Run.
// Registration errors name the campaign.
func NewCrew(a policy.Allocator, cast []Campaign, pool int, seed int64) (*Crew, error) {
	b := newAlloc(a)
	cr := &Crew{}
	for i := range cast {
		c := &cast[i]
		env := c.Envelope(pool)
		id, err := a.Register(env)
		if err != nil {
			return nil, fmt.Errorf("crew campaign %s: %w", c.Name, err)
		}
		bs := base{name: c.Name, b: b, id: id}
		var ag Agent
		var sc *science
		switch c.Agent {
		case AgentStorm:
			ag = &storm{base: bs, lo: c.Window.Start, hi: c.Window.End,
				target: c.GPUs, period: c.Period, lease: c.Lease, inference: c.InferenceDemand}
		case AgentNaive:
			n := &naive{science: science{bs, newWorkList(taskSetFor(seed+int64(c.Stream), c.Tasks), false)}, target: c.GPUs, lease: c.Lease}
			ag, sc = n, &n.science
		case AgentAdaptive:
			ad := &adaptive{science: science{bs, newWorkList(taskSetFor(seed+int64(c.Stream), c.Tasks), true)}, env: env,
				maxWant: c.GPUs, minWant: c.MinGPUs, starvedMin: c.StarvedGPUs, hotHorizon: c.HotHorizon, lease: c.Lease,
				oppMax: c.OpportunisticMax, oppKeep: c.OpportunisticKeep, oppLease: c.OpportunisticLease,
				hotEnough: float64((c.GPUs + 1) * c.HotHorizon)}
			ag, sc = ad, &ad.science
		default:
			return nil, fmt.Errorf("crew campaign %s: agent %q cannot join a crew (want storm, naive or adaptive)", c.Name, c.Agent)
		}
		cr.agents = append(cr.agents, ag)
		cr.ids = append(cr.ids, id)
		cr.kinds = append(cr.kinds, c.Agent)
		cr.sci = append(cr.sci, sc)
	}
	return cr, nil
}

// Step runs every agent's step for tick t (1-based, the agents' own
// clock), in cast order.
func (cr *Crew) Step(t int) {
	for _, a := range cr.agents {
		a.Step(t)
	}
}

// IDs are the crew's campaign ids, in cast order.
func (cr *Crew) IDs() []policy.CampaignID { return cr.ids }

// Science is member i's science so far and its completed tasks (0 for a
// storm).
func (cr *Crew) Science(i int) (science float64, completed int) {
	if s := cr.sci[i]; s != nil {
		return s.work.science, s.work.completed
	}
	return 0, 0
}
