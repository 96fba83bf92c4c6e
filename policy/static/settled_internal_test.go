package static

import (
	"testing"

	"github.com/bursar-hpc/bursar/platform"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
)

// Settled's answer after a real pass, and with each state it must refuse
// set on it in turn. Forks that skip the tick after their grants wrongly
// are caught by the fork tests (settled_test.go) where a fork's grants
// can show it: a partition not quiet (an elastic request waits) and a
// scavenge that granted a queued job. The other refusals have no effect
// there today: aging's next tick is NextEvent's as well; a pass
// reindexes, so partitions are never stale after one, and it sets every
// partition's leases to its owners'; plainAdmit is a test's oracle;
// under an unordered list or lend scavenger (its grants of queued jobs
// mark their partitions not quiet) the fork tests find no pass that
// leaves a decision to the next tick; and no fork test here runs on a
// platform. Each is still a state in which quietAfter's argument was not
// made, or its flags not set.
func TestSettledRefusesEachState(t *testing.T) {
	k, r := quietPass(t, false)
	if !r.Settled(k) {
		t.Fatal("not settled after a quiet pass under lend none")
	}
	// The same pass on nodes (2 of 8 GPUs, the pool): every partition is
	// as quiet, but quietAfter's argument is not made with a platform.
	if pk, pr := quietPass(t, true); pr.Settled(pk) || !pr.quiet[0] || pr.leases[0] != pr.ownersNow[0] {
		t.Errorf("on a platform: settled %v, quiet %v", pr.Settled(pk), pr.quiet)
	}
	for _, tc := range []struct {
		name string
		set  func() (undo func())
	}{
		{"lend scavenger", func() func() {
			r.knobs.Lend = LendScavenger
			return func() { r.knobs.Lend = LendNone }
		}},
		{"plain admission", flag(&r.plainAdmit)},
		{"an unordered list", flag(&r.unordered)},
		{"stale partitions", flag(&r.stale)},
		{"a planned job", flag(&r.aging)},
		{"a partition not quiet", func() func() {
			r.quiet[0] = false
			return func() { r.quiet[0] = true }
		}},
		{"its owners' leases changed", func() func() {
			r.ownersNow[0].n++
			return func() { r.ownersNow[0].n-- }
		}},
	} {
		undo := tc.set()
		if r.Settled(k) {
			t.Errorf("settled with %s", tc.name)
		}
		undo()
		if !r.Settled(k) {
			t.Fatalf("not settled once %s is undone", tc.name)
		}
	}
}

// quietPass is a static Core of 16 GPUs under lend none (on two nodes of
// 8 if placed), one campaign, after a pass that started a rigid job of 8
// GPUs and left one of 12 waiting, too wide for the 8 left: a pass that
// only started rigid jobs with every request rigid (quietAfter).
func quietPass(t *testing.T, placed bool) (*baseline.Core, *Rule) {
	t.Helper()
	k, err := New(policy.DefaultConfig(16), DefaultKnobs())
	if err != nil {
		t.Fatal(err)
	}
	if placed {
		if err := k.SetPlacer(platform.New(platform.Spec{Nodes: 2, GPUsPerNode: 8})); err != nil {
			t.Fatal(err)
		}
	}
	c, err := k.Register(policy.Envelope{Name: "c", Budget: 1e9, Sustained: 1, BurstCeiling: 1 << 20, Bucket: 1e6, Class: policy.AgentBurst})
	if err != nil {
		t.Fatal(err)
	}
	for _, gpus := range []int{8, 12} {
		if _, err := k.RequestRigid(c, gpus, 100, 100, policy.AgentBurst, 1); err != nil {
			t.Fatal(err)
		}
	}
	k.Tick()
	if len(k.Leases()) != 1 || len(k.Pending()) != 1 {
		t.Fatalf("after the pass: %d leases, %d pending, want 1 and 1", len(k.Leases()), len(k.Pending()))
	}
	return k, k.Rule().(*Rule)
}

// flag sets *b and returns what clears it.
func flag(b *bool) func() func() {
	return func() func() {
		*b = true
		return func() { *b = false }
	}
}
