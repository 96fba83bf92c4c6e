package tracestudy

import (
	"fmt"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/budget"
	"github.com/bursar-hpc/bursar/swf"
	"github.com/bursar-hpc/bursar/trace"
)

// ApplyMapping sets the trace mapping knobs of m (docs/studies.md §1, §3;
// docs/traces.md) on the options a log is read with and on every spec's
// policy knobs. A knob m leaves unset keeps its default.
func ApplyMapping(m configs.TraceMapping, opt *trace.Options, specs []Spec) error {
	// "user": one campaign per (user, group) pair, as a Slurm association
	// is (the default); "group": one per group.
	switch m.By {
	case "group":
		opt.ByGroup = true
	case "user", "":
	default:
		return fmt.Errorf("by %q: want user or group", m.By)
	}
	if m.Classes != nil {
		opt.Classes = m.Classes
	}
	if m.Tiers != nil {
		opt.Tiers = m.Tiers
	}
	if m.Shares != "" {
		opt.Shares = trace.ShareMode(m.Shares)
	}
	if m.Lookback != nil {
		opt.Lookback = *m.Lookback
	}
	if m.Bucket != "" {
		if _, err := trace.ParseBucket(m.Bucket); err != nil {
			return err
		}
		opt.Bucket = m.Bucket
	}
	if m.Meter != "" {
		opt.Meter = m.Meter
	}
	// One restart rule for every policy of the study (docs/studies.md
	// §6.7): the mapping's, else zero, the rule on an SWF log (its jobs
	// did not checkpoint). A spec that brings its own (budget-knobs'
	// restarts) keeps it unless the mapping names one.
	var r baseline.Restart
	if m.Restart != "" {
		var err error
		if r, err = baseline.ParseRestart(m.Restart); err != nil {
			return err
		}
		opt.Restart = r.String()
	}
	for i := range specs {
		if specs[i].Knobs.Restart != nil && m.Restart == "" {
			continue
		}
		ri := r
		specs[i].Knobs.Restart = &ri
		budget.Slot.Edit(&specs[i].Knobs).Restart = r
		if specs[i].Restart != "" {
			specs[i].Restart = r.String()
		}
	}
	return nil
}

// Header reads the header of the log at path (a built-in name, "" the
// embedded excerpt, or a file).
func Header(path string) (*swf.Header, error) {
	r, c, err := open(path)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return r.Header(), nil
}
