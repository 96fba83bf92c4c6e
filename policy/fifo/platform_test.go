package fifo_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/platform"
	"github.com/bursar-hpc/bursar/policy"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/fifo"
)

// EASY on nodes (docs/platform.md §4), worked by hand on 2 nodes of 8
// GPUs. A (6 GPUs, 100 s) is seated on node 0, B (4 GPUs, 50 s) on node 1
// (best fit: node 0 has 2 free). At t=2 the free count is 6 (2 on node 0,
// 4 on node 1), so on a pool of 16 the head C (6 GPUs) would start at
// once; no node holds 6, so on nodes it waits. Its shadow time is B's
// end, 51, when node 1 holds 8: C's seat is 6 on node 1, which leaves
// extra 2 on node 0 and 2 on node 1. D (4 GPUs, 1000 s) fits now on
// node 1 but would still run at 51 on the head's GPUs: it waits. E (2
// GPUs, 1000 s) sits on node 0 within its extra: it starts. F (4 GPUs,
// 40 s) ends by the shadow time: it starts on node 1. C starts at 51 on
// node 1; D when a node holds 4 again, at A's end, 101.
func TestEASYOnNodes(t *testing.T) {
	for _, nodes := range []bool{false, true} {
		a, err := fifo.New(bt.Config(16, 60))
		require.NoError(t, err)
		if nodes {
			require.NoError(t, a.SetPlacer(platform.New(platform.Spec{Nodes: 2, GPUsPerNode: 8})))
		}
		j := &bt.Journal{}
		a.SetRecorder(j)
		var c [6]policy.CampaignID
		for i, n := range []string{"a", "b", "c", "d", "e", "f"} {
			c[i], err = a.Register(bt.Env(n, 1, policy.AgentBurst))
			require.NoError(t, err)
		}
		job := func(k, gpus, run int) int {
			id, err := a.RequestRigid(c[k], gpus, run, run, policy.AnyClass, a.Now()+1)
			require.NoError(t, err)
			return id
		}
		la := job(0, 6, 100)
		lb := job(1, 4, 50)
		a.Tick()
		lc := job(2, 6, 200)
		ld := job(3, 4, 1000)
		le := job(4, 2, 1000)
		lf := job(5, 4, 40)
		bt.Ticks(a, 200)
		want := map[int]int{la: 1, lb: 1, lc: 51, ld: 101, le: 2, lf: 2}
		if !nodes {
			// A pool of 16: C takes the 6 free GPUs at once; D starts when
			// B's 4 return, E and F when A's 6 do.
			want = map[int]int{la: 1, lb: 1, lc: 2, ld: 51, le: 101, lf: 101}
		}
		for id, at := range want {
			g, ok := j.Grant(id)
			require.True(t, ok, "nodes %v: lease %d granted", nodes, id)
			require.Equal(t, at, g.T, "nodes %v: lease %d", nodes, id)
		}
	}
}
