package priority_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/priority"
)

// The tiers by queue name (docs/studies.md §2): interactive > express >
// high > normal > low > standby, any other name normal; a request in no
// queue by its class: interactive > burst (normal) > opportunistic
// (standby).
func TestTierOfQueueAndClass(t *testing.T) {
	for name, want := range map[string]priority.Tier{
		"interactive": priority.TierInteractive, " Express ": priority.TierExpress, "HIGH": priority.TierHigh,
		"normal": priority.TierNormal, "low": priority.TierLow, "standby": priority.TierStandby,
		"No_Class": priority.TierNormal, "": priority.TierNormal, "batch": priority.TierNormal,
	} {
		require.Equal(t, want, priority.TierOfQueue(name), name)
	}
	require.Equal(t, priority.TierInteractive, priority.TierOfClass(policy.Interactive))
	require.Equal(t, priority.TierInteractive, priority.TierOfClass(policy.Deadline))
	require.Equal(t, priority.TierNormal, priority.TierOfClass(policy.AgentBurst))
	require.Equal(t, priority.TierStandby, priority.TierOfClass(policy.Opportunistic))
}

// tiered files five trace jobs, one campaign each, on 10 GPUs with a
// grace of 10 s: A (normal, 6 GPUs, 100 s) at tick 1; at tick 2, in job
// order, B (low, 3 GPUs, 500 s), C (high, 8 GPUs, 100 s), D (standby, 2
// GPUs, 50 s), E (normal, 1 GPU, 500 s). Estimates are exact.
func tiered(t *testing.T, knobs priority.Knobs) (*baseline.Core, *bt.Journal, map[string]int) {
	t.Helper()
	a, err := priority.New(bt.Config(10, 10), knobs)
	require.NoError(t, err)
	j := &bt.Journal{}
	a.SetRecorder(j)
	jobs := []struct {
		name, queue string
		gpus, run   int
	}{{"A", "normal", 6, 100}, {"B", "low", 3, 500}, {"C", "high", 8, 100}, {"D", "standby", 2, 50}, {"E", "normal", 1, 500}}
	ids := map[string]int{}
	camp := map[string]policy.CampaignID{}
	for _, jb := range jobs {
		c, err := a.Register(bt.Env(jb.name, 1, policy.AgentBurst))
		require.NoError(t, err)
		camp[jb.name] = c
	}
	file := func(name string) {
		for _, jb := range jobs {
			if jb.name == name {
				id, err := a.RequestRigidQueued(camp[name], jb.gpus, jb.run, jb.run, policy.AgentBurst, a.Now()+1, jb.queue)
				require.NoError(t, err)
				ids[name] = id
			}
		}
	}
	file("A")
	a.Tick() // t=1
	for _, n := range []string{"B", "C", "D", "E"} {
		file(n)
	}
	a.Tick() // t=2
	return a, j, ids
}

func grantAt(t *testing.T, j *bt.Journal, id int) int {
	t.Helper()
	g, ok := j.Grant(id)
	if !ok {
		return -1
	}
	return g.T
}

// EASY backfilling in tier order, worked by hand as Slurm documents it:
// the scheduler evaluates jobs of a partition with a higher PriorityTier
// before those of a lower one (slurm.conf, PriorityTier), and the
// backfill scheduler starts a lower-priority job only if that does not
// delay the expected start of any higher-priority job
// (https://slurm.schedmd.com/sched_config.html, "backfill"; studies.md
// §2.1 states the EASY form: one reservation, for the first waiting job).
// With the log's `Preemption: No` (preempt off):
//
//   - t=2: the order is C (high), E (normal), B (low), D (standby). C
//     does not fit in the 4 free GPUs: it holds the reservation, shadow
//     time s = 101 (A's end), extra GPUs x = 10 − 8 = 2.
//   - E (1 GPU, ends at 502 > s) fits in x: it starts, x = 1.
//   - B (3 GPUs) fits in the 3 free GPUs, but ends after s and exceeds
//     x: starting it would delay C. It waits, though it was submitted
//     first — under FCFS it would have been the head and started.
//   - D (2 GPUs, ends at 52 ≤ s) starts.
//   - t=101: A ends; C starts. t=201: C ends; B starts.
func TestTieredEASYByHand(t *testing.T) {
	off := false
	_, j, ids := tiered(t, priority.Knobs{Preempt: &off})
	require.Equal(t, 1, grantAt(t, j, ids["A"]))
	require.Equal(t, 2, grantAt(t, j, ids["E"]))
	require.Equal(t, 2, grantAt(t, j, ids["D"]))
	require.Equal(t, -1, grantAt(t, j, ids["C"]))
	require.Equal(t, -1, grantAt(t, j, ids["B"]))
	a, j, ids := tiered(t, priority.Knobs{Preempt: &off})
	bt.Ticks(a, 199) // t=201
	require.Equal(t, 101, grantAt(t, j, ids["C"]))
	require.Equal(t, 201, grantAt(t, j, ids["B"]))
	require.Empty(t, j.Of(policy.EventPreemptNotice))
}

// The same jobs with preempt on (the agent scenario's default, Slurm's
// PreemptType=preempt/partition_prio with PreemptMode=CANCEL and GraceTime,
// https://slurm.schedmd.com/preempt.html): at t=2 the blocked C (high)
// preempts A (normal, strictly lower) with the 10-s grace; A's GPUs are
// reserved for C, which starts at 12. The pass at t=2 takes the shadow
// time from A's preemption, s = 12, x = 10 − 8 = 2: E (1 GPU) starts,
// x = 1; B (3) and D (2, ends at 52 > 12) would delay C and wait. At
// t=12 C starts, 1 GPU is free; B (low) now heads the queue, with shadow
// 112 (C's end): D fits in no free GPU. At 112 both start.
func TestTieredPreemptionByHand(t *testing.T) {
	a, j, ids := tiered(t, priority.Knobs{})
	notices := j.Of(policy.EventPreemptNotice)
	require.Len(t, notices, 1)
	require.Equal(t, ids["A"], notices[0].Lease)
	require.Equal(t, 2, grantAt(t, j, ids["E"]))
	require.Equal(t, -1, grantAt(t, j, ids["D"]))
	bt.Ticks(a, 110) // t=112
	require.Equal(t, 12, grantAt(t, j, ids["C"]))
	require.Equal(t, 112, grantAt(t, j, ids["B"]))
	require.Equal(t, 112, grantAt(t, j, ids["D"]))
	require.Len(t, j.Of(policy.EventPreemptNotice), 1)
}

// A blocked head never preempts its own tier or a higher one: victims
// are of strictly lower tiers, the lowest first (then the newest).
func TestPreemptsLowestTierFirst(t *testing.T) {
	a, err := priority.New(bt.Config(10, 0), priority.Knobs{})
	require.NoError(t, err)
	j := &bt.Journal{}
	a.SetRecorder(j)
	var c [4]policy.CampaignID
	for i := range c {
		c[i], _ = a.Register(bt.Env(string(rune('p'+i)), 1, policy.AgentBurst))
	}
	_, _ = a.RequestRigidQueued(c[0], 4, 100, 100, policy.AgentBurst, 1, "low")
	_, _ = a.RequestRigidQueued(c[1], 3, 100, 100, policy.AgentBurst, 1, "high")
	std, _ := a.RequestRigidQueued(c[2], 3, 100, 100, policy.AgentBurst, 1, "standby")
	a.Tick()
	require.Equal(t, 0, a.Free())
	// A high request of 3: standby (3 GPUs) suffices; low is never needed.
	_, _ = a.RequestRigidQueued(c[3], 3, 10, 10, policy.AgentBurst, 2, "high")
	a.Tick()
	n := j.Of(policy.EventPreemptNotice)
	require.Len(t, n, 1)
	require.Equal(t, std, n[0].Lease)
	// By t=3 the standby lease has ended and c[3] holds 3 GPUs. An
	// express request of 8 from c[3]: the other campaigns' leases of
	// strictly lower tiers (high 3, low 4) hold 7 < 8, so nothing is
	// noticed — a preemption happens only if the request then fits.
	a.Tick()
	require.Equal(t, 3, a.Held(c[3], policy.AnyClass))
	_, _ = a.RequestRigidQueued(c[3], 8, 10, 10, policy.AgentBurst, 4, "express")
	a.Tick()
	require.Len(t, j.Of(policy.EventPreemptNotice), 1)
}
