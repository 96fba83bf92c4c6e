package slurmcheck

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The simulator's knobs are what siteconf/slurmconf reads in the very
// lines slurmctld gets, and those are the settings' own: both sides run
// the same scheduler.
func TestSchedulerFileGivesTheSettingsKnobs(t *testing.T) {
	s := Settings{Nodes: 16, BfResolution: 7, BfWindow: 90, JobTest: 250}
	k, err := Config{Settings: s}.Knobs()
	require.NoError(t, err)
	require.Equal(t, s.Knobs(), k)
	require.Equal(t, 1, k.BfInterval)
	require.Equal(t, 1, k.SchedInterval)
	require.Equal(t, 90*60, k.BfWindow)
}

// A site's file sets the scheduler on both sides; one that brings its own
// nodes is refused with the line, and a key slurmconf cannot model fails
// as slurmconf says.
func TestSchedulerFileFromASite(t *testing.T) {
	c := Config{Scheduler: SchedulerConf{Name: "site.conf", Text: "SchedulerType=sched/backfill\nSchedulerParameters=bf_interval=5,bf_resolution=30\n"}}
	k, err := c.Knobs()
	require.NoError(t, err)
	require.Equal(t, 5, k.BfInterval)
	require.Equal(t, 30, k.BfResolution)
	c.Scheduler.Text += "NodeName=n[1-4] CPUs=8\n"
	_, err = c.Knobs()
	require.ErrorContains(t, err, "site.conf:3: NodeName")
	c.Scheduler.Text = "SchedulerType=sched/builtin\n"
	_, err = c.Knobs()
	require.Error(t, err)
}
