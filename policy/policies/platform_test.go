package policies_test

import (
	"slices"
	"testing"

	"github.com/bursar-hpc/bursar/platform"
	"github.com/bursar-hpc/bursar/policy"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// platformsOf are the platforms drawn for each pool drawScenario draws.
var platformsOf = map[int][]platform.Spec{
	16:  {{Nodes: 2, GPUsPerNode: 8}, {Nodes: 4, GPUsPerNode: 4}, {Nodes: 16, GPUsPerNode: 1}},
	64:  {{Nodes: 8, GPUsPerNode: 8}, {Nodes: 16, GPUsPerNode: 4}},
	100: {{Nodes: 25, GPUsPerNode: 4}, {Nodes: 10, GPUsPerNode: 10}},
	512: {{Nodes: 64, GPUsPerNode: 8}, {Nodes: 16, GPUsPerNode: 32}},
}

// On a platform, every policy (the optional ones too), over random
// campaigns, elastic requests and trace jobs, and operations with nodes
// drained, failed and returned to service between them: no node is ever over-committed, every lease is
// seated whole on nodes, and a node that is not up takes no new lease
// (docs/platform.md §2-3).
func TestPlatformEveryPolicy(t *testing.T) {
	for _, name := range policies.Default.Known() {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				sc := drawScenario(t)
				spec := rapid.SampledFrom(platformsOf[sc.cfg.Pool]).Draw(t, "platform")
				runOnNodes(t, name, sc, spec)
			})
		})
	}
}

func runOnNodes(t *rapid.T, name string, sc scenario, spec platform.Spec) {
	a, err := policies.New(name, sc.cfg, sc.knobs)
	require.NoError(t, err)
	placed, ok := a.(policy.Placed)
	if !ok {
		t.Fatalf("%s (%T) cannot schedule on nodes", name, a)
	}
	p := platform.New(spec)
	require.NoError(t, placed.SetPlacer(p))
	j := &bt.Journal{}
	a.SetRecorder(j)
	var ids []policy.CampaignID
	for _, e := range sc.envs {
		id, err := a.Register(e)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	live := map[int]int{} // lease → GPUs, from the journal
	seen := 0
	// closedWith[i] is the leases on node i when it left service.
	closedWith := make([][]int, spec.Nodes)
	check := func() {
		for _, e := range j.Events[seen:] {
			switch e.Kind {
			case policy.EventGrant:
				live[e.Lease] = e.GPUs
			case policy.EventRelease:
				delete(live, e.Lease)
			}
		}
		seen = len(j.Events)
		if p.Seated() != len(live) {
			t.Fatalf("%s: %d leases seated, %d live", name, p.Seated(), len(live))
		}
		for l, g := range live {
			s, ok := p.SeatOf(l)
			if !ok || s.Size() != g {
				t.Fatalf("%s: lease %d of %d GPUs seated as %+v (%v)", name, l, g, s, ok)
			}
		}
		for i := range spec.Nodes {
			n := p.Node(i)
			if n.Used > spec.GPUsPerNode {
				t.Fatalf("%s: node %d over-committed: %d GPUs of %d", name, i, n.Used, spec.GPUsPerNode)
			}
			if n.State != platform.Up {
				for _, l := range p.Leases(i, nil) {
					if !slices.Contains(closedWith[i], l) {
						t.Fatalf("%s: node %d (%s) took lease %d", name, i, n.State, l)
					}
				}
			}
		}
	}
	var leases []int
	for k, o := range sc.ops {
		c := ids[o.c]
		if k%3 == 0 {
			i := rapid.IntRange(0, spec.Nodes-1).Draw(t, "node")
			st := rapid.SampledFrom([]platform.State{platform.Up, platform.Up, platform.Draining, platform.Down}).Draw(t, "state")
			if p.Node(i).State == platform.Up && st != platform.Up {
				closedWith[i] = p.Leases(i, nil)
			}
			p.SetState(i, st)
			placed.NodesChanged()
		}
		switch o.kind {
		case opRequest:
			if rr, ok := a.(policy.RigidRequester); ok && rapid.Bool().Draw(t, "rigid") {
				// A trace job: whole or nothing, EASY's path.
				run := max(1, o.duration)
				est := run + rapid.IntRange(0, 200).Draw(t, "overestimate")
				if id, err := rr.RequestRigid(c, min(o.gpus, spec.GPUs()), est, run, o.class, a.Now()+1); err == nil {
					leases = append(leases, id)
				}
			} else if id, err := a.Request(c, o.gpus, o.duration, o.class); err == nil {
				leases = append(leases, id)
			}
		case opReleaseAll:
			require.NoError(t, a.ReleaseAll(c, o.class))
		case opReleaseLease:
			if len(leases) > 0 {
				_ = a.ReleaseLease(c, leases[o.n%len(leases)])
			}
		case opConsume:
			_, _, err := a.Consume(c, o.io, o.inf)
			require.NoError(t, err)
		case opTick:
			a.Tick()
		case opTicks:
			for range o.n {
				a.Tick()
				check()
			}
		}
		check()
	}
}
