package trace

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/priority"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// The queues kept between passes (baseline.Waiting, issue 32) decide as
// the queue built from the whole pending list at every pass
// (baseline.Core.SetPlainQueue): on random traces, with jobs of every
// class (priority's tiers, its preemption and requeued jobs), fair
// starts' forks, and ticked or skipped, the same journal and the same
// run.
func TestKeptQueuesDecideAsThePlainOne(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := classedTrace(t, 64, 60, 300, 600)
		name := rapid.SampledFrom([]string{"fifo", "priority"}).Draw(t, "policy")
		knobs := policies.TraceKnobs()
		preempt := rapid.Bool().Draw(t, "preempt")
		priority.Slot.Edit(&knobs).Preempt = &preempt
		keptAndPlain(t, w, name, knobs)
	})
}

// keptAndPlain replays w under policy name twice, ticked or skipped and
// with fair starts or none (drawn), with the queue kept between passes
// and with the queue built from the whole pending list
// (baseline.Core.SetPlainQueue), and fails unless both write the same
// journal and the same run.
func keptAndPlain(t *rapid.T, w *Workload, name string, knobs policies.Knobs) {
	n, submit := len(w.Jobs), w.Jobs[len(w.Jobs)-1].Submit
	opt := ReplayOptions{Horizon: 4000, TickByTick: rapid.Bool().Draw(t, "tick-by-tick")}
	if rapid.Bool().Draw(t, "fair starts") {
		opt.FairStart = FairSample(w, Interval{From: 0, To: submit + 1}, rapid.IntRange(1, n).Draw(t, "sample"), DefaultFairSeed)
		opt.FairSeed = DefaultFairSeed
	}
	replay := func(plain bool) (*Run, []byte) {
		a, err := policies.New(name, policy.DefaultConfig(w.Pool), knobs)
		if err != nil {
			t.Fatal(err)
		}
		a.(*baseline.Core).SetPlainQueue(plain)
		var j journal
		o := opt
		o.Recorder = &j
		r, err := Replay(w, a, o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return r, j.buf
	}
	kept, kj := replay(false)
	plain, pj := replay(true)
	if !bytes.Equal(kj, pj) {
		t.Fatalf("journals differ:\nkept queue:\n%s\nplain:\n%s", kj, pj)
	}
	if !reflect.DeepEqual(kept, plain) {
		t.Fatalf("runs differ:\nkept queue %+v\nplain %+v", kept, plain)
	}
}

// classedTrace is a random trace of 1 to most jobs on 1 to pool GPUs and
// 1 to 4 campaigns with shares, jobs of every trace class, gaps between
// submits of up to gap seconds and estimates over the run of up to over.
func classedTrace(t *rapid.T, pool, most int, gap, over int64) *Workload {
	pool = rapid.IntRange(1, pool).Draw(t, "pool")
	n := rapid.IntRange(1, most).Draw(t, "jobs")
	ncamp := rapid.IntRange(1, 4).Draw(t, "campaigns")
	w := &Workload{Pool: pool}
	for c := range ncamp {
		w.Campaigns = append(w.Campaigns, Campaign{ID: c, Name: fmt.Sprintf("user %d", c), Share: float64(c+1) / float64(ncamp*(ncamp+1)/2)})
	}
	var submit int64
	for i := range n {
		submit += rapid.Int64Range(0, gap).Draw(t, "gap")
		run := rapid.Int64Range(1, 900).Draw(t, "run")
		est := run + rapid.Int64Range(0, over).Draw(t, "over")
		w.Jobs = append(w.Jobs, Job{
			Number: int64(i + 1), Submit: submit, Run: run, Estimate: est,
			GPUs: rapid.IntRange(1, pool).Draw(t, "gpus"), Campaign: rapid.IntRange(0, ncamp-1).Draw(t, "campaign"),
			Class: rapid.SampledFrom([]policy.Class{policy.Interactive, policy.AgentBurst, policy.Opportunistic}).Draw(t, "class"),
		})
	}
	return w
}

// TestKeptQueueAfterAReservedGrant is a case CI's random draws found
// (December 2026), worked by hand: priority with preemption on 53 GPUs,
// times in seconds of the log. At 1 the agent-burst job 3 (39 GPUs) has
// the 14 GPUs of the opportunistic job 2 reserved for it by a notice. At
// 2 the interactive job 5 (40 GPUs) is the blocked head and job 3
// backfills, its grant taking 25 free GPUs and its 14 reserved ones; the
// pass counted 39 free GPUs taken, so it passed over job 4 (1 GPU) for
// want of any, but 14 are free after it. At 3 nothing else has changed,
// and the kept queue must not build on that pass (backfill only the jobs
// filed since): job 4 starts at 3 beside jobs 6 to 8 (all end by job 5's
// shadow time, 4), as the pass over the whole list starts it.
func TestKeptQueueAfterAReservedGrant(t *testing.T) {
	w := &Workload{Pool: 53, Campaigns: []Campaign{{ID: 0, Name: "user 0", Share: 1.0 / 3}, {ID: 1, Name: "user 1", Share: 2.0 / 3}}}
	for i, j := range []struct {
		submit, run int64
		gpus, camp  int
		class       policy.Class
	}{
		{0, 2, 1, 0, policy.Interactive}, {0, 2, 14, 0, policy.Opportunistic}, {1, 2, 39, 1, policy.AgentBurst},
		{2, 1, 1, 0, policy.AgentBurst}, {2, 1, 40, 1, policy.Interactive},
		{3, 1, 1, 0, policy.Interactive}, {3, 1, 1, 0, policy.Interactive}, {3, 1, 1, 0, policy.Interactive},
	} {
		w.Jobs = append(w.Jobs, Job{Number: int64(i + 1), Submit: j.submit, Run: j.run, Estimate: j.run, GPUs: j.gpus, Campaign: j.camp, Class: j.class})
	}
	knobs := policies.TraceKnobs()
	preempt := true
	priority.Slot.Edit(&knobs).Preempt = &preempt
	for _, plain := range []bool{false, true} {
		a, err := policies.New("priority", policy.DefaultConfig(w.Pool), knobs)
		require.NoError(t, err)
		a.(*baseline.Core).SetPlainQueue(plain)
		r, err := Replay(w, a, ReplayOptions{Horizon: 4000})
		require.NoError(t, err)
		started := map[int64][]int64{}
		for i, rec := range r.Records {
			started[w.Jobs[i].Number] = rec.Starts
		}
		assert.Equal(t, map[int64][]int64{1: {0}, 2: {0}, 3: {2}, 4: {3}, 5: {4}, 6: {3}, 7: {3}, 8: {3}}, started, "plain queue %v", plain)
	}
}
