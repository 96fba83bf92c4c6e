package configs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bursar-hpc/bursar/engine"
)

// Point is one grid point of one series: the scenario that every seed
// runs.
type Point struct {
	Series string
	// Swept are the point's grid values in axis order, the top-level axes
	// first.
	Swept []Setting
	// Scenario has every knob of the point set; its Seed is the plan's
	// first seed (Plan.Scenario sets each run's).
	Scenario engine.Scenario
}

// Label describes the point for messages: series "grace", grace=30.
func (pt *Point) Label() string {
	var b strings.Builder
	fmt.Fprintf(&b, "series %q", pt.Series)
	for _, s := range pt.Swept {
		b.WriteString(", ")
		b.WriteString(s.Knob.Name)
		b.WriteByte('=')
		b.WriteString(s.Knob.Format(&pt.Scenario))
	}
	return b.String()
}

// Plan is a config expanded for one mode (full or --quick): every grid
// point of every series, each run once per seed. Run i is point i/len(Seeds)
// with seed i%len(Seeds), so the runs of one point are adjacent and in seed
// order.
type Plan struct {
	Experiment string
	File       string
	Quick      bool
	Seeds      []int64
	Points     []Point
	// Bootstrap is the config's resampling for the intervals of pooled
	// percentiles.
	Bootstrap Bootstrap
}

// NumRuns is the number of runs of the plan.
func (p *Plan) NumRuns() int { return len(p.Points) * len(p.Seeds) }

// Run returns the grid point and the scenario of run i.
func (p *Plan) Run(i int) (*Point, engine.Scenario) {
	pt := &p.Points[i/len(p.Seeds)]
	s := pt.Scenario
	s.Seed = p.Seeds[i%len(p.Seeds)]
	return pt, s
}

// CheckSeeds refuses a seed list a plan cannot use: empty, negative or
// repeated seeds (a repeated seed would count one run twice in every mean
// and pooled percentile).
func CheckSeeds(seeds []int64) error {
	if len(seeds) == 0 {
		return fmt.Errorf("no seeds")
	}
	for i, s := range seeds {
		if s < 0 {
			return fmt.Errorf("seed %d is negative", s)
		}
		if slices.Contains(seeds[:i], s) {
			return fmt.Errorf("seed %d is listed twice", s)
		}
	}
	return nil
}

// TooManySeedsError is a plan refused for the seeds its caller gave
// (--seeds, --nseeds): the config's grid fits, the product does not. The
// command names its flag in front.
type TooManySeedsError struct {
	File          string // the config
	Seeds, Points int
}

func (e *TooManySeedsError) Error() string {
	return fmt.Sprintf("%d seeds × the %d grid points of %s = %d runs, more than the %d one command may run; give at most %d seeds",
		e.Seeds, e.Points, e.File, e.Seeds*e.Points, MaxRuns, MaxRuns/e.Points)
}

// Plan expands the config for a full run or for --quick. seeds, when not
// nil, replaces the config's seed list. Every expanded scenario is checked
// with Scenario.Validate; a failure names the grid point and, when one
// value is to blame, its line and key.
func (c *Config) Plan(quick bool, seeds []int64) (*Plan, error) {
	pick := func(a *Axis) []Value {
		if quick {
			return a.Quick
		}
		return a.Full
	}
	listKey := func(a *Axis) string {
		if quick {
			return a.QuickKey
		}
		return a.FullKey
	}
	given := seeds != nil
	if seeds == nil {
		for _, v := range pick(&c.Seeds) {
			seeds = append(seeds, int64(v.V))
		}
	}
	if err := CheckSeeds(seeds); err != nil {
		return nil, fmt.Errorf("%s: seeds: %w", c.File, err)
	}
	plan := &Plan{Experiment: c.Experiment, File: c.File, Quick: quick, Seeds: slices.Clone(seeds), Bootstrap: c.Bootstrap}

	// Count before expanding, so that a runaway grid costs nothing.
	total := 0
	for si := range c.Series {
		n := 1
		for _, a := range c.axes(si) {
			if n *= len(pick(a)); n > MaxRuns {
				break
			}
		}
		if total += n; total > MaxRuns {
			break
		}
	}
	if total*len(seeds) > MaxRuns {
		// Seeds from the command line that a grid which fits alone
		// cannot take are the command line's fault, not the file's.
		if given && total <= MaxRuns {
			return nil, &TooManySeedsError{File: c.File, Seeds: len(seeds), Points: total}
		}
		return nil, &Error{File: c.File, Key: "grid", Msg: fmt.Sprintf("the grid expands to more than %d runs; split the experiment", MaxRuns)}
	}
	plan.Points = make([]Point, 0, total)

	def := c.Base()
	for si := range c.Series {
		sr := &c.Series[si]
		base := def
		for _, pc := range []*Policy{c.Policy, sr.Policy} {
			if pc != nil {
				pc.Apply(&base)
			}
		}
		var fixed []Setting
		for _, list := range [][]Setting{c.Fixed, sr.Fixed} {
			for _, f := range list {
				// Values were checked by Set when parsed.
				_ = f.Knob.Set(&base, f.Value)
				fixed = append(fixed, f)
			}
		}
		axes := c.axes(si)
		// Each value's key path, built once per axis rather than per point.
		keys := make([][]string, len(axes))
		for ai, a := range axes {
			for i := range pick(a) {
				keys[ai] = append(keys[ai], listKey(a)+"["+strconv.Itoa(i)+"]")
			}
		}
		idx := make([]int, len(axes))
		for {
			pt := Point{Series: sr.Name, Scenario: base, Swept: make([]Setting, 0, len(axes))}
			for ai, a := range axes {
				v := pick(a)[idx[ai]]
				_ = a.Knob.Set(&pt.Scenario, v.V)
				pt.Swept = append(pt.Swept, Setting{Knob: a.Knob, Value: v.V, Key: keys[ai][idx[ai]], Line: v.Line})
			}
			for _, seed := range seeds {
				s := pt.Scenario
				s.Seed = seed
				if err := s.Validate(); err != nil {
					return nil, c.blame(sr, &pt, s, append(slices.Clone(fixed), pt.Swept...), err)
				}
			}
			pt.Scenario.Seed = seeds[0]
			plan.Points = append(plan.Points, pt)
			// Odometer: the last axis turns fastest.
			ai := len(axes) - 1
			for ; ai >= 0; ai-- {
				idx[ai]++
				if idx[ai] < len(pick(axes[ai])) {
					break
				}
				idx[ai] = 0
			}
			if ai < 0 {
				break
			}
		}
	}
	return plan, nil
}

// axes are series si's grid axes: the top-level ones, then its own.
func (c *Config) axes(si int) []*Axis {
	var out []*Axis
	for i := range c.Grid {
		out = append(out, &c.Grid[i])
	}
	for i := range c.Series[si].Grid {
		out = append(out, &c.Series[si].Grid[i])
	}
	return out
}

// blame locates an invalid scenario: the most specific value the config
// sets whose reverting to the base scenario's value makes the scenario valid
// is the one reported. When no single value is (a combination is wrong),
// the error names the series and the grid point.
func (c *Config) blame(sr *Series, pt *Point, s engine.Scenario, sources []Setting, verr error) error {
	def := c.Base()
	where := fmt.Sprintf("at the grid point %s, seed %d", pt.Label(), s.Seed)
	for i := len(sources) - 1; i >= 0; i-- {
		src := sources[i]
		trial := s
		_ = src.Knob.Set(&trial, src.Knob.Get(&def))
		if trial.Validate() == nil {
			return &Error{File: c.File, Line: src.Line, Key: src.Key, Err: verr,
				Msg: fmt.Sprintf("%s = %s is out of range %s: %v", src.Knob.Name, src.Knob.Format(&s), where, verr)}
		}
	}
	return &Error{File: c.File, Line: sr.Line, Key: sr.Key, Err: verr,
		Msg: fmt.Sprintf("invalid scenario %s: %v", where, verr)}
}
