package slurmconf_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/bursar-hpc/bursar/policy/slurm"
	"github.com/bursar-hpc/bursar/siteconf/slurmconf"
	"github.com/stretchr/testify/require"
)

// noInclude is an Opener for files that must not Include.
func noInclude(path string) (io.ReadCloser, error) {
	return nil, errors.New("no Include here: " + path)
}

func parse(t *testing.T, text string) (*slurmconf.Conf, error) {
	t.Helper()
	return slurmconf.ParseWith("site.conf", strings.NewReader(text), noInclude)
}

// Hand-worked: each scheduling key lands on its knob in the policy's
// units (bf_window minutes × 60, PriorityCalcPeriod minutes × 60, times
// as days-hr), the rest stay Slurm 22.05's defaults, and the pool is the
// default partition's GPUs: 2 nodes × 4 + 3 nodes × 8 = 32 (a1, listed
// twice, counted once), the other partitions not at all.
func TestMappingHandWorked(t *testing.T) {
	c, err := parse(t, `
SCHEDULERTYPE=sched/backfill   # keys in any case
SchedulerParameters=bf_window=90,bf_interval=15,bf_max_job_test=7,sched_interval=20,default_queue_depth=9,bf_resolution=30
PriorityType=priority/multifactor
PriorityWeightAge=100 PriorityWeightFairshare=2000
PriorityWeightJobSize=3
PriorityWeightPartition=4
PriorityWeightQOS=5
PriorityMaxAge=1-12
PriorityDecayHalfLife=2-00:30:00
PriorityCalcPeriod=2
PriorityFlags=NO_FAIR_TREE
NodeName=a[1-2] Gres=gpu:4 CPUs=32
NodeName=b[01-03] Gres=gpu:v100:8,mps:100
NodeName=c1 CPUs=128
PartitionName=main Nodes=a[1-2],b[01-03],a1 Default=YES MaxTime=1-0
PartitionName=debug Nodes=a1
PartitionName=cpu Nodes=c1
`)
	require.NoError(t, err)
	want := slurm.DefaultKnobs()
	want.BfWindow, want.BfInterval, want.BfMaxJobTest = 90*60, 15, 7
	want.SchedInterval, want.DefaultQueueDepth, want.BfResolution = 20, 9, 30
	want.WAge, want.WFairshare, want.WJobSize, want.WPartition, want.WQOS = 100, 2000, 3, 4, 5
	want.MaxAge = 36 * 3600
	want.HalfLife = 2*86400 + 1800
	want.CalcPeriod = 120
	want.NoFairTree = true
	k, pool := c.Policy()
	require.Equal(t, want, k)
	require.Equal(t, 32, pool)
	require.Equal(t, "gpu", c.Unit)
	require.Equal(t, "main", c.Partition)
	require.Equal(t, 5, c.Nodes)
	require.Equal(t, int64(86400), c.MaxTime)
}

// A file with no scheduling key is Slurm's defaults, and a partition of
// nodes without GPUs is counted in CPUs (Sockets × CoresPerSocket ×
// ThreadsPerCore where CPUs is not given; NodeName=DEFAULT applies to
// the lines after it).
func TestDefaultsAndCPUs(t *testing.T) {
	c, err := parse(t, `ClusterName=x
NodeName=DEFAULT Sockets=2 CoresPerSocket=8 ThreadsPerCore=2
NodeName=n[1-3]
NodeName=n4 CPUs=4
PartitionName=all Nodes=ALL
`)
	require.NoError(t, err)
	require.Equal(t, slurm.DefaultKnobs(), c.Knobs)
	require.Equal(t, 3*32+4, c.Pool)
	require.Equal(t, "cpu", c.Unit)
}

// Bad input: one error naming the file, the line and the key.
func TestUnsupportedFailsWithFileLineKey(t *testing.T) {
	base := "NodeName=n1 Gres=gpu:8\nPartitionName=p Nodes=n1\n"
	for _, tc := range []struct{ text, want string }{
		{"ClusterName=x\nSchedulerType=sched/builtin\n", "site.conf:2: key SchedulerType=sched/builtin: strict priority order"},
		{"SchedulerParameters=bf_continue,defer\n", "site.conf:1: key SchedulerParameters: option defer is not modelled"},
		{"SchedulerParameters=bf_max_job_user=10\n", "site.conf:1: key SchedulerParameters: option bf_max_job_user is not modelled"},
		{"SchedulerParameters=bf_window=0\n", "site.conf:1: key SchedulerParameters: option bf_window: want a whole number ≥ 1"},
		{"\n\nPriorityWeightFairShares=10\n", "site.conf:3: key PriorityWeightFairShares: an unknown scheduling key"},
		{"PriorityWeightAssoc=10\n", "site.conf:1: key PriorityWeightAssoc=10: the association factor is not modelled"},
		{"PriorityWeightTRES=CPU=1,GRES/gpu=0\n", "site.conf:1: key PriorityWeightTRES=CPU=1,GRES/gpu=0: TRES weights"},
		{"PriorityFlags=SMALL_RELATIVE_TO_TIME\n", "site.conf:1: key PriorityFlags=SMALL_RELATIVE_TO_TIME: flag SMALL_RELATIVE_TO_TIME is not modelled"},
		{"PriorityDecayHalfLife=0\n", "site.conf:1: key PriorityDecayHalfLife=0: want a time > 0"},
		{"PriorityCalcPeriod=0:30\n", "site.conf:1: key PriorityCalcPeriod=0:30: want whole minutes"},
		{"PriorityWeightAge=-1\n", "site.conf:1: key PriorityWeightAge=-1: want a whole number"},
		{"PreemptType=preempt/qos\nPreemptMode=REQUEUE\n", "site.conf:1: key PreemptType=preempt/qos: preemption between jobs"},
		{"SelectType=select/linear\n", "site.conf:1: key SelectType=select/linear: whole-node allocation"},
		{"PriorityWeightJobSize=10\nPriorityFavorSmall=YES\n", "site.conf:2: key PriorityFavorSmall=YES: a job-size factor favouring small jobs"},
		{"SchedulerType=sched/backfill junk\n", `site.conf:1: "junk" is not key=value`},
		{"Include other.conf\n", "site.conf:1: key Include: no Include here: other.conf"},
		{"ClusterName=\"x\n", "site.conf:1: key ClusterName: the quoted value is not closed"},
	} {
		_, err := parse(t, tc.text+base)
		require.Error(t, err, tc.text)
		require.Contains(t, err.Error(), tc.want, tc.text)
		require.True(t, strings.HasPrefix(err.Error(), tc.want[:strings.Index(tc.want, ": ")+2]), err.Error())
	}
	for _, tc := range []struct{ text, want string }{
		{"NodeName=n[1-2] Gres=gpu:8\nPartitionName=p Nodes=n[1-3]\n", `site.conf:2: key Nodes: node "n3" of partition p has no NodeName line`},
		{"NodeName=n[1-2\n", `site.conf:1: key NodeName: hostlist "n[1-2": "n[1-2": a [ without ]`},
		{"NodeName=n1 Gres=gpu:a:x\n", `site.conf:1: key Gres=gpu:a:x: "gpu:a:x": "x" is not a count`},
		{"NodeName=n1\nPartitionName=p Nodes=n1\nPartitionName=q Nodes=n1\n", "site.conf:3: several partitions and none Default=YES"},
		{"NodeName=n1\nPartitionName=p Nodes=n1 OverSubscribe=FORCE:4\n", "site.conf:2: key OverSubscribe=FORCE:4: sharing"},
		{"NodeName=n1\nPartitionName=p Nodes=n1 MaxTime=soon\n", `site.conf:2: key MaxTime: "soon" is not a time`},
		{"NodeName=n1 State=FUTURE\nPartitionName=p Nodes=n1\n", "site.conf:2: partition p: no node that is not FUTURE"},
		{"ClusterName=x\n", "site.conf:0: no PartitionName line"},
	} {
		_, err := parse(t, tc.text)
		require.Error(t, err, tc.text)
		require.Contains(t, err.Error(), tc.want, tc.text)
	}
}

// A realistic site's full slurm.conf (testdata/site.conf, written for
// this test, with its nodes in an Include) is accepted: every key that
// does not bear on scheduling is listed as ignored, once, where written;
// the scheduling keys are read, the continued SchedulerParameters line
// included; the pool is the default partition's node sets' GPUs less the
// FUTURE nodes: 12 × 4 A100 + 2 × 8 H100 = 64.
func TestRealisticSiteAccepted(t *testing.T) {
	c, err := slurmconf.ParseFile("testdata/site.conf")
	require.NoError(t, err)
	require.Equal(t, 64, c.Pool)
	require.Equal(t, "gpu", c.Partition)
	require.Equal(t, 14, c.Nodes)
	require.Equal(t, int64(2*86400), c.MaxTime)
	k := c.Knobs
	require.Equal(t, []int{60, 2000, 10080 * 60, 300, 1500, 60}, []int{k.BfInterval, k.BfMaxJobTest, k.BfWindow, k.BfResolution, k.DefaultQueueDepth, k.SchedInterval})
	require.Equal(t, []float64{3000, 20000, 500, 1000, 2000}, []float64{k.WAge, k.WFairshare, k.WJobSize, k.WPartition, k.WQOS})
	require.Equal(t, 14*86400.0, k.HalfLife)
	require.Equal(t, 300, k.CalcPeriod)
	require.False(t, k.NoFairTree)
	keys := map[string]string{}
	for _, i := range c.Ignored {
		_, dup := keys[i.Key]
		require.False(t, dup, "%s listed twice", i.Key)
		keys[i.Key] = i.Pos.String()
	}
	require.Equal(t, "testdata/site.conf:6", keys["ClusterName"])
	require.Equal(t, "testdata/nodes.conf:2", keys["RealMemory"])
	require.Equal(t, "testdata/site.conf:64", keys["SchedulerParameters bf_continue"])
	require.Equal(t, "testdata/nodes.conf:12", keys["PartitionName=cpu"])
	require.Greater(t, len(c.Ignored), 60)
	require.Equal(t, "testdata/site.conf:6", c.Ignored[0].Pos.String(), "listed in file order")
}

// The example the docs and the CLI use: 16 nodes of 8 GPUs, the excerpt's
// 128.
func TestExampleConf(t *testing.T) {
	c, err := slurmconf.ParseFile("../../configs/examples/slurm.conf")
	require.NoError(t, err)
	require.Equal(t, 128, c.Pool)
	require.Equal(t, 2880*60, c.Knobs.BfWindow)
	require.Equal(t, 10000.0, c.Knobs.WFairshare)
}

// priority/basic reads no weight: the queue is in submit order.
func TestPriorityBasicIgnoresWeights(t *testing.T) {
	c, err := parse(t, "PriorityWeightAge=100\nPriorityType=priority/basic\nNodeName=n1 Gres=gpu:1\nPartitionName=p Nodes=n1\n")
	require.NoError(t, err)
	require.Equal(t, slurm.DefaultKnobs(), c.Knobs)
	require.Equal(t, "PriorityWeightAge", c.Ignored[0].Key)
}

// The last of a key given twice wins (Slurm: "latest value used").
func TestLatestValueUsed(t *testing.T) {
	c, err := parse(t, "PriorityWeightAge=1\nPriorityWeightAge=7\nNodeName=n1 Gres=gpu:1\nPartitionName=p Nodes=n1\n")
	require.NoError(t, err)
	require.Equal(t, 7.0, c.Knobs.WAge)
}
