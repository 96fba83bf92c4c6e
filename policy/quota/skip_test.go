package quota_test

import (
	"bytes"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/quota"
	"github.com/bursar-hpc/bursar/trace"
)

type journal struct{ buf []byte }

func (j *journal) Record(e policy.Event) { j.buf = append(e.AppendJSON(j.buf), '\n') }

// The skips in a queue's walk (the narrowest width, the prefix of jobs
// known to be too wide), the bound that turns preemption attempts away
// before their search and the Core's pending list in no order
// (baseline.UnorderedPending) only save time: on the SDSC-SP2 excerpt,
// under both queueing strategies, the journal is the same byte for byte
// as a walk of every queue from its start with every attempt searched and
// the list kept in submit order.
func TestSkipsChangeNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("four replays of the excerpt")
	}
	w, err := trace.Load("../../testdata/traces/SDSC-SP2-1998-4.2-cln.days252-280.swf", trace.Options{})
	require.NoError(t, err)
	for _, strategy := range []string{quota.BestEffortFIFO, quota.StrictFIFO} {
		run := func(plain bool) []byte {
			k := quota.FairKnobs()
			k.QueueingStrategy = strategy
			a, err := quota.New(policy.DefaultConfig(w.Pool), k)
			require.NoError(t, err)
			require.NoError(t, a.SetEntitlements(w.Entitlements()))
			if plain {
				quota.Plain(a)
				a.KeepOrder()
			}
			j := &journal{}
			_, err = trace.Replay(w, a, trace.ReplayOptions{Recorder: j})
			require.NoError(t, err)
			return j.buf
		}
		fast, plain := run(false), run(true)
		require.True(t, bytes.Equal(fast, plain), "%s: the skips changed the journal", strategy)
		require.Positive(t, bytes.Count(fast, []byte(`"event": "preempt-notice"`)), strategy)
	}
}

// A workload that leaves from the middle of its queue keeps its place
// until the dead outnumber the live; the compaction then keeps the walk's
// cursor on the same workload. Pool 10; q1's job J holds 1 GPU; q0 files
// H (10 GPUs, cannot start), A1…A4 and B (1 GPU each). In one pass H is
// set aside, A1…A4 start one a round (each leaving a dead place behind
// H), and A4's leaving makes four dead to two live: the list is compacted
// to H, B with the cursor on B, which starts in the same pass. A cursor
// left at A4's old place (4) would pass B by until the next tick.
func TestCompactionKeepsTheCursor(t *testing.T) {
	for _, plain := range []bool{false, true} {
		a, err := quota.New(bt.Config(10, 0), quota.DefaultKnobs())
		require.NoError(t, err)
		if plain {
			quota.Plain(a)
		}
		q0, err := a.Register(bt.Env("q0", 1, policy.AgentBurst))
		require.NoError(t, err)
		q1, err := a.Register(bt.Env("q1", 1, policy.AgentBurst))
		require.NoError(t, err)
		_, err = a.RequestRigid(q1, 1, 1000, 1000, policy.AgentBurst, a.Now()+1)
		require.NoError(t, err)
		a.Tick()
		var b int
		for _, g := range []int{10, 1, 1, 1, 1, 1} {
			b, err = a.RequestRigid(q0, g, 1000, 1000, policy.AgentBurst, a.Now()+1)
			require.NoError(t, err)
		}
		a.Tick()
		pending := a.Pending()
		require.Len(t, pending, 1, "plain %v: only H waits", plain)
		require.NotEqual(t, b, pending[0].ID, "plain %v: B waits", plain)
	}
}
