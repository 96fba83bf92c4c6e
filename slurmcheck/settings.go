package slurmcheck

import (
	"fmt"
	"strings"

	"github.com/bursar-hpc/bursar/policy/slurm"
)

// Settings are the scheduler's settings, written once and given to both
// sides: slurm.conf lines for slurmctld (Conf) and policy slurm's knobs
// (Knobs). The fixed ones make Slurm as deterministic as it can be
// (issue 30): both passes every second (bf_interval=1, sched_interval=1),
// no batch_sched_delay, no defer, priorities recalculated every minute
// (PriorityCalcPeriod=1, its least) with every PriorityWeight* at its
// default 0, so that the queue is in submit order on both sides.
type Settings struct {
	// Nodes is the pool: that many one-CPU nodes (scripts/slurm-local.sh
	// BURSAR_SLURM_NODES), each standing for a GPU. Slurm's backfill
	// reserves whole nodes (backfill.c, _attempt_backfill: a reservation
	// is taken out of node_space's avail_bitmap), so one-CPU nodes are
	// what policy slurm's map of interchangeable GPUs counts.
	Nodes int `json:"nodes"`
	// BfResolution is bf_resolution in seconds, the same on both sides.
	BfResolution int `json:"bf_resolution_s"`
	// BfWindow is bf_window in minutes (Slurm's unit): at least the
	// replay's horizon.
	BfWindow int `json:"bf_window_min"`
	// JobTest is bf_max_job_test and default_queue_depth: at least the
	// job count, so that neither pass stops short.
	JobTest int `json:"bf_max_job_test"`
}

// Validate checks the settings; the error names the field.
func (s Settings) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"nodes", s.Nodes}, {"bf_resolution", s.BfResolution}, {"bf_window", s.BfWindow}, {"bf_max_job_test", s.JobTest}} {
		if f.v < 1 {
			return fmt.Errorf("slurmcheck: %s must be at least 1, got %d", f.name, f.v)
		}
	}
	if s.BfResolution > 3600 {
		return fmt.Errorf("slurmcheck: bf_resolution must be at most 3600 (Slurm's bound), got %d", s.BfResolution)
	}
	return nil
}

// Conf is the slurm.conf lines that set the scheduler: the file both
// sides read (Config.Scheduler).
func (s Settings) Conf() string {
	var b strings.Builder
	fmt.Fprintf(&b, "SchedulerType=sched/backfill\n")
	fmt.Fprintf(&b, "SchedulerParameters=bf_interval=1,bf_resolution=%d,bf_window=%d,bf_max_job_test=%d,default_queue_depth=%d,sched_interval=1,batch_sched_delay=0\n",
		s.BfResolution, s.BfWindow, s.JobTest, s.JobTest)
	fmt.Fprintf(&b, "PriorityType=priority/multifactor\nPriorityCalcPeriod=1\n")
	for _, w := range []string{"Age", "FairShare", "JobSize", "Partition", "QOS"} {
		fmt.Fprintf(&b, "PriorityWeight%s=0\n", w)
	}
	return b.String()
}

// Knobs is policy slurm's knobs for the same settings (times in
// seconds; PriorityCalcPeriod's minute is 60 ticks): what
// siteconf/slurmconf reads in Conf, which the tests hold it to.
func (s Settings) Knobs() slurm.Knobs {
	k := slurm.DefaultKnobs()
	k.SchedInterval, k.BfInterval = 1, 1
	k.DefaultQueueDepth, k.BfMaxJobTest = s.JobTest, s.JobTest
	k.BfResolution = s.BfResolution
	k.BfWindow = s.BfWindow * 60
	k.CalcPeriod = 60
	return k
}
