package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bursar-hpc/bursar/policy/quota"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// siteSummary is what the site tests read of summary.json.
type siteSummary struct {
	Trace struct {
		Pool int `json:"pool"`
	} `json:"trace"`
	Runs []struct {
		Policy string `json:"policy"`
	} `json:"runs"`
}

// trace --slurm-conf runs fifo and slurm on the excerpt, slurm at the
// file's knobs, the pool the file's default partition; the manifest
// names the file and what it configured, the console says so.
func TestTraceSlurmConf(t *testing.T) {
	for _, tc := range []struct {
		file string
		pool int
	}{{"../../configs/examples/slurm.conf", 128}, {"../../siteconf/slurmconf/testdata/site.conf", 64}} {
		out := t.TempDir()
		console, err := runSweepApp(t, "trace", "--slurm-conf", tc.file, "--window", "21772800:22000000", "--fair-sample", "0", "--out", out, "--quiet")
		require.NoError(t, err, tc.file)
		assert.Contains(t, console, "slurm configured by "+tc.file+": ")
		var s siteSummary
		readJSONFile(t, filepath.Join(out, "summary.json"), &s)
		assert.Equal(t, tc.pool, s.Trace.Pool, tc.file)
		require.Len(t, s.Runs, 2)
		assert.Equal(t, []string{"fifo", "slurm"}, []string{s.Runs[0].Policy, s.Runs[1].Policy})
		var m struct {
			Inputs []struct {
				Kind       string   `json:"kind"`
				Name       string   `json:"name"`
				Configures string   `json:"configures"`
				Ignored    []string `json:"ignored"`
			} `json:"inputs"`
		}
		readJSONFile(t, filepath.Join(out, "manifest.json"), &m)
		require.Len(t, m.Inputs, 2)
		assert.Equal(t, "slurm-conf", m.Inputs[1].Kind)
		assert.Equal(t, tc.file, m.Inputs[1].Name)
		assert.Contains(t, m.Inputs[1].Configures, "policy slurm's knobs and the pool")
		assert.NotEmpty(t, m.Inputs[1].Ignored)
	}
}

// An unsupported scheduling key fails the command with the file, the
// line and the key; a policy list without the configured policy is
// refused.
func TestTraceSiteConfBadInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.conf")
	require.NoError(t, os.WriteFile(bad, []byte("NodeName=n1 Gres=gpu:8\nPartitionName=p Nodes=n1\nSchedulerParameters=bf_continue,defer\n"), 0o644))
	_, err := runSweepApp(t, "trace", "--slurm-conf", bad, "--out", t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), bad+":3: key SchedulerParameters: option defer is not modelled")
	_, err = runSweepApp(t, "trace", "--slurm-conf", "../../configs/examples/slurm.conf", "--policies", "fifo", "--out", t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "configures policy slurm, which the policies run leave out")
	badYAML := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(badYAML, []byte("apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: a}\nspec:\n  fairSharing: {weight: 3}\n"), 0o644))
	_, err = runSweepApp(t, "trace", "--kueue", badYAML, "--out", t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), badYAML+":5: key spec.fairSharing.weight: fair-sharing weights other than 1 are not modelled")
}

// trace --kueue runs fifo and quota on the excerpt, quota at the
// manifests' knobs, the pool their GPU quota (128); the manifest names
// the file.
func TestTraceKueue(t *testing.T) {
	if !slices.Contains(quota.Policy.KnobKeys(), "reclaim_within_cohort") {
		t.Skip("policy quota has no reclaim_within_cohort knob yet (issue 30 item 3)")
	}
	out := t.TempDir()
	file := "../../configs/examples/kueue.yaml"
	week := []string{"--window", "21772800:22400000", "--fair-sample", "0", "--quiet"}
	console, err := runSweepApp(t, append([]string{"trace", "--kueue", file, "--out", out}, week...)...)
	require.NoError(t, err)
	assert.Contains(t, console, "quota configured by "+file+": queueing_strategy: BestEffortFIFO")
	assert.Contains(t, console, "reclaim_within_cohort: LowerPriority ("+file+":38: ClusterQueue physics spec.preemption.reclaimWithinCohort)")
	var s siteSummary
	readJSONFile(t, filepath.Join(out, "summary.json"), &s)
	assert.Equal(t, 128, s.Trace.Pool)
	require.Len(t, s.Runs, 2)
	assert.Equal(t, "quota", s.Runs[1].Policy)
	// The manifests' knobs reach the replay: quota at Kueue's defaults
	// (no reclaim, no fair sharing) waits otherwise on the same week.
	def := t.TempDir()
	_, err = runSweepApp(t, append([]string{"trace", "--policies", "quota", "--pool", "128", "--out", def}, week...)...)
	require.NoError(t, err)
	var a, b struct {
		Runs []struct {
			MeanWait float64 `json:"mean_wait"`
		} `json:"runs"`
	}
	readJSONFile(t, filepath.Join(out, "summary.json"), &a)
	readJSONFile(t, filepath.Join(def, "summary.json"), &b)
	assert.NotEqual(t, b.Runs[0].MeanWait, a.Runs[1].MeanWait, "reclaimWithinCohort LowerPriority and fair sharing move quota's waits")
}

// trace --slurm-conf --sshare: slurm's entitlements are the dump's
// shares (the example weighs fair share, so slurm's waits move; fifo's do
// not), the dump is a manifest input; --sshare alone is refused.
func TestTraceSshare(t *testing.T) {
	conf, dump := "../../configs/examples/slurm.conf", "../../siteconf/slurmconf/testdata/sshare.txt"
	type summary struct {
		Runs []struct {
			Policy   string  `json:"policy"`
			MeanWait float64 `json:"mean_wait"`
		} `json:"runs"`
	}
	var runs [2]summary
	for i, extra := range [][]string{nil, {"--sshare", dump}} {
		out := t.TempDir()
		args := append([]string{"trace", "--slurm-conf", conf, "--window", "21772800:22400000", "--fair-sample", "0", "--out", out, "--quiet"}, extra...)
		console, err := runSweepApp(t, args...)
		require.NoError(t, err)
		readJSONFile(t, filepath.Join(out, "summary.json"), &runs[i])
		if extra != nil {
			assert.Contains(t, console, "; entitlements from "+dump)
			var m struct {
				Inputs []struct {
					Kind string `json:"kind"`
				} `json:"inputs"`
			}
			readJSONFile(t, filepath.Join(out, "manifest.json"), &m)
			require.Len(t, m.Inputs, 3)
			assert.Equal(t, "sshare", m.Inputs[2].Kind)
		}
	}
	require.Equal(t, runs[0].Runs[0], runs[1].Runs[0], "fifo does not read the tree")
	require.NotEqual(t, runs[0].Runs[1].MeanWait, runs[1].Runs[1].MeanWait, "slurm's Fair Tree reads the dump's shares")
	_, err := runSweepApp(t, "trace", "--sshare", dump, "--out", t.TempDir())
	require.ErrorContains(t, err, "--sshare gives policy slurm's account tree: give --slurm-conf too")
}

// A trace config may name the site's files (slurm_conf, relative to the
// config's folder): the same runs as the flag; an error in the file
// names the config's key.
func TestTraceConfigNamesSlurmConf(t *testing.T) {
	dir := t.TempDir()
	conf, err := os.ReadFile("../../configs/examples/slurm.conf")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "slurm.conf"), conf, 0o644))
	cfg := filepath.Join(dir, "trace.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("experiment: trace\nwindow: {from: 21772800, until: 22000000}\nslurm_conf: slurm.conf\n"), 0o644))
	out := t.TempDir()
	console, err := runSweepApp(t, "trace", "--config", cfg, "--fair-sample", "0", "--out", out, "--quiet")
	require.NoError(t, err)
	assert.Contains(t, console, "slurm configured by "+filepath.Join(dir, "slurm.conf"))
	var s siteSummary
	readJSONFile(t, filepath.Join(out, "summary.json"), &s)
	assert.Equal(t, 128, s.Trace.Pool)
	require.Len(t, s.Runs, 2)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "slurm.conf"), append(conf, "SchedulerType=sched/builtin\n"...), 0o644))
	_, err = runSweepApp(t, "trace", "--config", cfg, "--out", t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), cfg+": slurm_conf: "+filepath.Join(dir, "slurm.conf")+":40: key SchedulerType=sched/builtin")
}
