package engine

import (
	"fmt"
	"strconv"
)

// Warnings name what in a valid scenario makes a comparison void without
// failing it (issue 34 §7–8): a campaign whose every request is larger
// than the pool (a policy that grants whole requests denies them all, and
// the campaign's metrics read 0), an envelope that contradicts itself (a guarantee above the sustained
// rate: the campaign is owed more than it may hold on average, and its
// excess over the rate is counted at every bucket size), and a knob
// outside the range where it acts (a backfill headroom above the pool:
// the backfill never fills, as in the prototype, which runs it). The
// runs go on as written; the warnings are printed where the scenario is
// loaded and recorded in metrics.json and the manifest. The paper's
// scenarios have none. docs/scenarios.md lists them.
func (s *Scenario) Warnings() []string {
	var w []string
	cast := s.cast()
	for i := range cast {
		c := &cast[i]
		env := c.Envelope(s.Pool)
		switch c.Agent {
		case AgentVictim, AgentProbe, AgentStorm:
			// Their requests are of c.GPUs (the storm's first one, and
			// every one after a full release).
			what := fmt.Sprintf("requests of %d GPUs are", c.GPUs)
			if c.Agent == AgentStorm {
				what = fmt.Sprintf("target of %d outstanding GPUs is", c.GPUs)
			}
			// (Above its own burst ceiling is not flagged: the broker
			// grants up to the ceiling, and a storm that asks for more
			// than it may hold is a storm.)
			if c.GPUs > s.Pool {
				w = append(w, fmt.Sprintf("campaign %s: its %s above the pool of %d GPUs: a policy that grants whole requests (fifo, the static split) denies every one, and its metrics read 0", c.Name, what, s.Pool))
			}
		case AgentBackfill:
			if c.Headroom > s.Pool {
				w = append(w, fmt.Sprintf("campaign %s: headroom %d GPUs is above the pool of %d: the backfill never fills (the prototype runs it so)", c.Name, c.Headroom, s.Pool))
			}
		}
		if float64(env.Guaranteed) > env.Sustained {
			w = append(w, fmt.Sprintf("campaign %s: guaranteed %d GPUs is above its sustained rate of %s GPUs: the envelope contradicts itself (it is owed more than it may hold on average; its excess over the rate grows with every tick it holds the guarantee)", c.Name, env.Guaranteed, strconv.FormatFloat(env.Sustained, 'g', -1, 64)))
		}
	}
	return w
}
