package hosts

import (
	"fmt"
	"math"
)

// Config is the failure process and the drain rule (docs/hosts.md). Rates
// are per node and per day; times are seconds.
type Config struct {
	// FailPerNodeDay is the rate of hard failures of one node: the node and
	// every job on it stop at once.
	FailPerNodeDay float64 `yaml:"fail_per_node_day" json:"fail_per_node_day"`
	// DegradePerNodeDay is the rate of degradations of one node: the node
	// still runs its jobs but must be drained and repaired.
	DegradePerNodeDay float64 `yaml:"degrade_per_node_day" json:"degrade_per_node_day"`
	// FailRepair and DrainRepair are the mean repair times, in seconds, of
	// a failed node and of a drained one; repair times are lognormal with
	// shape RepairSigma (docs/hosts.md §2).
	FailRepair  int64   `yaml:"fail_repair_s" json:"fail_repair_s"`
	DrainRepair int64   `yaml:"drain_repair_s" json:"drain_repair_s"`
	RepairSigma float64 `yaml:"repair_sigma" json:"repair_sigma"`
	// HumanRepairShare is the share of repairs (of failed and of drained
	// nodes alike) that always need a human, whatever the scheduler does:
	// counted apart from the interventions (Tally.HumanRepairs).
	HumanRepairShare float64 `yaml:"human_repair_share" json:"human_repair_share"`

	// Contract turns the minimum-runtime contract on: a job on a draining
	// node is requeued automatically once it has run MinRuntime seconds.
	Contract   bool  `yaml:"contract" json:"contract"`
	MinRuntime int64 `yaml:"min_runtime_s" json:"min_runtime_s"`
	// Threshold is how long after a drain began an operator waits before
	// ending by hand each job still on the node: one human intervention
	// per job.
	Threshold int64 `yaml:"threshold_s" json:"threshold_s"`
}

// The defaults' sources are in docs/hosts.md §2.
const (
	// llamaFailPerNodeDay: Llama 3's 405B pre-training saw 419 unexpected
	// interruptions in 54 days on 16,384 H100 GPUs (2,048 servers of 8),
	// about 78 % of them attributed to hardware: 419 × 0.78 / (2,048 × 54)
	// ≈ 0.00296 per node-day, one failure per node every ≈ 338 days.
	llamaFailPerNodeDay = 419 * 0.78 / (2048 * 54)
	// llamaHumanShare: significant manual intervention was needed 3 times
	// in those 419 interruptions.
	llamaHumanShare = 3.0 / 419
)

// Default is the process and rule of docs/hosts.md §2: Llama 3's hardware
// failure rate for hard failures and, for want of a published figure, as
// many degradations; repairs of a day (failed) and four hours (drained),
// lognormal with σ = 1; 3 of 419 repairs needing a human; the contract off
// with Meta's research cluster's two hours as its minimum runtime; an
// operator who waits eight hours.
func Default() Config {
	return Config{
		FailPerNodeDay:    llamaFailPerNodeDay,
		DegradePerNodeDay: llamaFailPerNodeDay,
		FailRepair:        86400,
		DrainRepair:       4 * 3600,
		RepairSigma:       1,
		HumanRepairShare:  llamaHumanShare,
		MinRuntime:        2 * 3600,
		Threshold:         8 * 3600,
	}
}

// Validate checks every knob; the error names the field.
func (c Config) Validate() error {
	rate := func(name string, v float64) error {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1000 {
			return fmt.Errorf("%s: %g is not a rate in [0, 1000] per node-day", name, v)
		}
		return nil
	}
	if err := rate("fail_per_node_day", c.FailPerNodeDay); err != nil {
		return err
	}
	if err := rate("degrade_per_node_day", c.DegradePerNodeDay); err != nil {
		return err
	}
	const year = 365 * 86400
	for _, f := range []struct {
		name string
		v    int64
	}{{"fail_repair_s", c.FailRepair}, {"drain_repair_s", c.DrainRepair}, {"threshold_s", c.Threshold}} {
		if f.v < 1 || f.v > year {
			return fmt.Errorf("%s: %d is not in [1, %d] seconds", f.name, f.v, year)
		}
	}
	if c.MinRuntime < 0 || c.MinRuntime > year {
		return fmt.Errorf("min_runtime_s: %d is not in [0, %d] seconds", c.MinRuntime, year)
	}
	if math.IsNaN(c.RepairSigma) || c.RepairSigma < 0 || c.RepairSigma > 4 {
		return fmt.Errorf("repair_sigma: %g is not in [0, 4]", c.RepairSigma)
	}
	if math.IsNaN(c.HumanRepairShare) || c.HumanRepairShare < 0 || c.HumanRepairShare > 1 {
		return fmt.Errorf("human_repair_share: %g is not in [0, 1]", c.HumanRepairShare)
	}
	return nil
}
