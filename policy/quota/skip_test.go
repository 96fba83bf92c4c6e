package quota_test

import (
	"bytes"
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
