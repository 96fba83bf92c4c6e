package tracestudy

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/priority"
	"github.com/bursar-hpc/bursar/trace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runLog replays every policy of names on the whole of a hand-made log,
// as a study does, and returns the study, its results and the
// degenerate shapes it finds.
func runLog(t *testing.T, log string, opt trace.Options, names ...string) (*Study, []Result, []Degenerate) {
	t.Helper()
	w, err := trace.Read(mustReader(t, log), opt)
	require.NoError(t, err)
	st, err := WholeStudy(w, TraceSpecs(names))
	require.NoError(t, err)
	st.Options = opt
	rs := make([]Result, st.Runs())
	for i := range rs {
		rs[i], err = st.Run(i)
		require.NoError(t, err)
	}
	return st, rs, FindDegenerate(st, rs)
}

// reasons are the degenerate reasons found for label, in order.
func reasons(ds []Degenerate, label string) []string {
	var rs []string
	for _, d := range ds {
		if d.Label == label {
			rs = append(rs, d.Reason)
		}
	}
	return rs
}

// Two groups of equal work, so that no group dominates. No job records a
// queue: every job is normal, priority has one tier and schedules as
// fifo does. Pool 4, no preemption: A (4 GPUs, 100 s) runs first, B and C
// (4 GPUs each) queue behind it in submit order under every policy.
const noQueueLog = `; MaxProcs: 4
; Preemption: No
1 0 -1 100 4 -1 -1 4 100 -1 1 1 1 -1 -1 -1 -1 -1
2 1 -1 100 4 -1 -1 4 100000 -1 1 2 2 -1 -1 -1 -1 -1
3 2 -1 10 4 -1 -1 4 60 -1 1 3 2 -1 -1 -1 -1 -1
4 3 -1 90 4 -1 -1 4 90 -1 1 4 1 -1 -1 -1 -1 -1
`

func TestOneTierIsFlaggedWithWhy(t *testing.T) {
	_, rs, ds := runLog(t, noQueueLog, trace.Options{}, "fifo", "priority")
	assert.Equal(t, []TierJobs{{"normal", 4}}, rs[1].Shape.Tiers)
	assert.True(t, rs[1].Shape.SameAsFifo)
	assert.Equal(t, []string{ReasonOneTier, ReasonSameAsFifo}, reasons(ds, "priority"))
	assert.Contains(t, ds[0].Detail, "no job records a queue")
	assert.Empty(t, reasons(ds, "fifo"), "fifo is the reference, never degenerate")
}

// The same jobs in numbered queues: queue 1's longest time (60 s) is
// shorter than queue 2's (100,000 s), so queue 1 is express and queue 2
// normal. C (queue 1) now jumps B (queue 2) under priority: two tiers, a
// schedule of its own, nothing flagged.
const numberedQueueLog = `; MaxProcs: 4
; Preemption: No
1 0 -1 100 4 -1 -1 4 100 -1 1 1 1 -1 2 -1 -1 -1
2 1 -1 100 4 -1 -1 4 100000 -1 1 2 2 -1 2 -1 -1 -1
3 2 -1 10 4 -1 -1 4 60 -1 1 3 2 -1 1 -1 -1 -1
4 3 -1 90 4 -1 -1 4 90 -1 1 4 1 -1 2 -1 -1 -1
`

func TestNumberedQueuesGivePriorityTiers(t *testing.T) {
	_, rs, ds := runLog(t, numberedQueueLog, trace.Options{}, "fifo", "priority")
	assert.Equal(t, []TierJobs{{"express", 1}, {"normal", 3}}, rs[1].Shape.Tiers)
	assert.False(t, rs[1].Shape.SameAsFifo)
	assert.Empty(t, ds)

	// A config that puts every queue in one tier brings the flag back.
	_, _, ds = runLog(t, numberedQueueLog, trace.Options{Tiers: map[string]string{"1": "normal"}}, "fifo", "priority")
	assert.Equal(t, []string{ReasonOneTier, ReasonSameAsFifo}, reasons(ds, "priority"))
	assert.Contains(t, ds[0].Detail, "1→normal (config)")
}

// One group does 4,000 of 4,090 GPU-seconds (97.8 %): every policy that
// reads shares is flagged, fifo and priority are not.
const oneGroupLog = `; MaxProcs: 4
; Preemption: No
1 0 -1 1000 4 -1 -1 4 1000 -1 1 1 1 -1 -1 -1 -1 -1
2 1 -1 90 1 -1 -1 1 90 -1 1 2 2 -1 -1 -1 -1 -1
`

func TestOneGroupIsFlagged(t *testing.T) {
	st, _, ds := runLog(t, oneGroupLog, trace.Options{}, "fifo", "priority", "static", "quota")
	assert.InDelta(t, 4000.0/4090, ShapeOf(st.Loads[0]).Largest[0].Work, 1e-12)
	for _, p := range []string{"static", "quota"} {
		assert.Contains(t, reasons(ds, p), ReasonOneGroup, p)
	}
	assert.NotContains(t, reasons(ds, "priority"), ReasonOneGroup)
	assert.Empty(t, reasons(ds, "fifo"))

	// Below 90 %: the other group does 500 of 4,500 (11.1 %).
	_, _, ds = runLog(t, `; MaxProcs: 4
; Preemption: No
1 0 -1 1000 4 -1 -1 4 1000 -1 1 1 1 -1 -1 -1 -1 -1
2 1 -1 500 1 -1 -1 1 500 -1 1 2 2 -1 -1 -1 -1 -1
`, trace.Options{}, "fifo", "static")
	assert.NotContains(t, reasons(ds, "static"), ReasonOneGroup)
}

// slurm with its default weights (all 0, as Slurm's own defaults) orders
// its queue by submit time: flagged.
func TestZeroWeightsAreFlagged(t *testing.T) {
	_, rs, ds := runLog(t, numberedQueueLog, trace.Options{}, "fifo", "slurm")
	assert.Len(t, rs[1].Shape.Weights, 5)
	assert.Contains(t, reasons(ds, "slurm"), ReasonZeroWeights)
}

// static's partitions are recorded against their owners' widest job, and
// a study writes every flag into summary.json, warns on stderr and marks
// the figure's labels.
func TestDegenerateReachesEveryOutput(t *testing.T) {
	st, rs, ds := runLog(t, noQueueLog, trace.Options{}, "fifo", "priority", "static")
	require.NotEmpty(t, rs[2].Shape.Partitions)
	widest := 0
	for _, p := range rs[2].Shape.Partitions {
		widest = max(widest, p.Widest)
	}
	assert.Equal(t, 4, widest)

	sum := Summary{Experiment: "trace", Study: st, Runs: rs}
	b, err := marshal(sum)
	require.NoError(t, err)
	var out struct {
		Degenerate []struct {
			Label, Reason string
			Windows       []int
		}
		Runs []struct {
			Shape map[string]any
		}
	}
	require.NoError(t, json.Unmarshal(b, &out))
	require.Len(t, out.Degenerate, len(ds))
	assert.Equal(t, "priority", out.Degenerate[0].Label)
	assert.Equal(t, ReasonOneTier, out.Degenerate[0].Reason)
	assert.Equal(t, []int{0}, out.Degenerate[0].Windows)
	assert.Equal(t, true, out.Runs[1].Shape["same_as_fifo"])

	var warn bytes.Buffer
	WarnDegenerate(&warn, "trace", ds, 1)
	assert.Contains(t, warn.String(), "trace: warning: priority is degenerate (one tier) in 1 of 1 windows [0]: every job is normal")

	labels, _ := specLabels(sum)
	assert.Equal(t, "fifo", labels[0])
	assert.Equal(t, "priority ‡", labels[1])
}

// A spec with a replay that stopped at its horizon prints no fairness
// figure: the mark † in every fairness column, and a line that says why.
func TestNoFairnessFigureForAStoppedRun(t *testing.T) {
	st, rs, _ := runLog(t, numberedQueueLog, trace.Options{}, "fifo", "priority")
	rs[1].Summary.Converged = false
	var b bytes.Buffer
	require.NoError(t, PrintTable(&b, Summary{Experiment: "trace", Study: st, Runs: rs}))
	lines := strings.Split(b.String(), "\n")
	assert.Equal(t, 0, strings.Count(lines[1], "†"), "fifo converged: %s", lines[1])
	assert.Equal(t, 4, strings.Count(lines[2], "†"), "priority stopped: late, late (last start), NUWT CV, share Jain: %s", lines[2])
	assert.Contains(t, b.String(), "† in a fairness column: a replay stopped at its horizon")
}

// jobTiers, which finds each (queue, class) pair's tier once, counts what
// finding every job's tier gives: on the excerpt, with a third of its jobs
// moved to no queue (their class's tier) under a class of their own.
func TestJobTiersCountsEveryJobsTier(t *testing.T) {
	w, err := Load(BuiltinExcerpt, trace.Options{})
	require.NoError(t, err)
	classes := []policy.Class{policy.Interactive, policy.AgentBurst, policy.Opportunistic}
	for i := range w.Jobs {
		if i%3 == 0 {
			w.Jobs[i].Queue, w.Jobs[i].Class = -1, classes[(i/3)%len(classes)]
		}
	}
	eachJobsTier := func() []TierJobs {
		var n [priority.Tiers]int
		for i := range w.Jobs {
			j := &w.Jobs[i]
			tier := priority.TierOfClass(j.Class)
			if q := w.SiteQueue(j); q != "" {
				tier = priority.TierOfQueue(q)
			}
			n[tier]++
		}
		var want []TierJobs
		for tier, c := range n {
			if c > 0 {
				want = append(want, TierJobs{Tier: priority.Tier(tier).String(), Jobs: c})
			}
		}
		return want
	}
	want := eachJobsTier()
	require.Greater(t, len(want), 1)
	assert.Equal(t, want, jobTiers(w))
	// More pairs than jobTiers keeps in its list: the rest in its map.
	for i := range w.Jobs {
		if i%3 == 1 {
			w.Jobs[i].Queue = i % 40
		}
	}
	assert.Equal(t, eachJobsTier(), jobTiers(w))
}
