package slurmcheck

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/bursar-hpc/bursar/policy/slurm"
	"github.com/bursar-hpc/bursar/siteconf/slurmconf"
)

// SchedulerConf is slurm.conf text that sets the scheduler, and the name
// it was read under (a file, or the settings it was written from).
type SchedulerConf struct {
	Name string `json:"name"`
	Text string `json:"-"`
}

// scheduler is the config's scheduler lines: Scheduler, or the Settings'
// own.
func (c Config) scheduler() SchedulerConf {
	if c.Scheduler.Text != "" {
		return c.Scheduler
	}
	return SchedulerConf{Name: "slurm-scheduler.conf, written from the settings", Text: c.Settings.Conf()}
}

// Knobs is policy slurm's knobs as siteconf/slurmconf reads the
// scheduler lines, the very text slurmctld gets. The nodes and
// partitions are validate-slurm's own (Settings.Nodes one-CPU nodes): a
// file that defines any, or includes another, is refused with its line.
func (c Config) Knobs() (slurm.Knobs, error) {
	s := c.scheduler()
	sc := bufio.NewScanner(strings.NewReader(s.Text))
	for n := 1; sc.Scan(); n++ {
		key, _, _ := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		switch k := strings.ToLower(strings.TrimSpace(key)); {
		case k == "nodename" || k == "nodeset" || k == "partitionname" || strings.HasPrefix(k, "include"):
			return slurm.Knobs{}, fmt.Errorf("%s:%d: %s: validate-slurm runs its own nodes and partition (--nodes); give the scheduler's keys only", s.Name, n, key)
		}
	}
	// The cluster's own nodes and partition, as scripts/slurm-local.sh
	// writes them (BURSAR_SLURM_NODES), after the file's lines.
	nodes := max(1, c.Settings.Nodes)
	cluster := fmt.Sprintf("NodeName=b[1-%d] CPUs=1\nPartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n", nodes)
	text := s.Text
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	conf, err := slurmconf.Parse(s.Name, strings.NewReader(text+cluster))
	if err != nil {
		return slurm.Knobs{}, err
	}
	if conf.Pool != nodes {
		return slurm.Knobs{}, fmt.Errorf("%s: slurmconf reads a pool of %d %s, the cluster has %d one-CPU nodes", s.Name, conf.Pool, conf.Unit, nodes)
	}
	return conf.Knobs, nil
}
