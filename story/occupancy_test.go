package story

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/trace"
)

// By hand: a pool of 4, teams A and B entitled to 2 GPUs each. A's job of
// 1 GPU runs from 0 to 1 h; B's job of 4 GPUs, submitted at 0, waits
// until A's ends and runs from 1 h to 2 h. Over 3 h: 5 GPU-hours held (A
// 1, B 4); while B waited 3 GPUs were free (idle while waiting: 3 GPU-h)
// and A left 1 GPU of its entitlement unused while B waited (owners'
// idle: 1 GPU-h).
func TestOccupancyByHand(t *testing.T) {
	const h = 3600
	w := &Workload{Workload: &trace.Workload{Name: "hand", Pool: 4,
		Campaigns: []trace.Campaign{{Name: "A1", Group: 0, Share: 0.5}, {Name: "B1", Group: 1, Share: 0.5}},
		Groups:    []trace.Group{{Name: "A", Members: []int{0}, Share: 0.5}, {Name: "B", Members: []int{1}, Share: 0.5}},
		Jobs: []trace.Job{
			{Number: 1, Submit: 0, Run: h, Estimate: h, GPUs: 1, Campaign: 0, Class: policy.AgentBurst},
			{Number: 2, Submit: 0, Run: h, Estimate: h, GPUs: 4, Campaign: 1, Class: policy.AgentBurst},
		}},
		Kind: []Kind{Training, Training}, Team: []int{0, 1}}
	run := &trace.Run{Stop: 3 * h, Records: []trace.JobRecord{
		{Starts: []int64{0}, End: h, State: trace.Served},
		{Starts: []int64{h}, End: 2 * h, State: trace.Served},
	}}
	u := &users{absorbed: make([]bool, 2)}
	o := occupancy(w, run, u, 3*h)
	require.InDelta(t, 5, o.held, 1e-9)
	require.InDelta(t, 3, o.idleWaiting, 1e-9)
	require.InDelta(t, 1, o.ownersIdle, 1e-9)
	require.InDeltaSlice(t, []float64{1, 4}, o.team, 1e-9)
	// Preempted at 1.5 h and restarted at 2 h: B waits again for 0.5 h
	// with the whole pool free.
	run.Records[1] = trace.JobRecord{Starts: []int64{h, 2 * h}, End: 3 * h, State: trace.Served}
	run.Records[1].Abort(h+h/2, 0)
	o = occupancy(w, run, u, 3*h)
	require.InDelta(t, 3+2, o.idleWaiting, 1e-9) // + min(4 free, 4 asked) × 0.5 h
	require.InDelta(t, 1+4*1.5, o.held, 1e-9)
}
