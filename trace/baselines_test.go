package trace

import (
	"testing"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/quota"
	"github.com/bursar-hpc/bursar/policy/static"
)

// The baselines as the real systems run them (docs/studies.md §2), on the
// SDSC-SP2 excerpt: who is denied, and the GPUs left idle while a queued
// job would have fit in them.

// idleWhileAJobFits replays name on w and returns its run and its
// idle_while_waiting over the whole trace (docs/studies.md §4.2: the
// GPU-seconds in which GPUs stood idle while a queued job would have fit
// in them, as a fraction of pool × span; Measure).
func idleWhileAJobFits(t *testing.T, w *Workload, name string, knobs policies.Knobs) (*Run, float64) {
	t.Helper()
	a, err := policies.New(name, policy.DefaultConfig(w.Pool), knobs)
	if err != nil {
		t.Fatal(err)
	}
	run, err := Replay(w, a, ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	from, until := w.SubmitSpan()
	iv, err := MeasureInterval(from, until, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Measure(w, run, iv)
	if err != nil {
		t.Fatal(err)
	}
	return run, s.IdleWhileWaiting
}

func TestBaselinesOnTheExcerpt(t *testing.T) {
	if testing.Short() {
		t.Skip("four replays of the excerpt")
	}
	w := loadExcerpt(t, Options{})
	knobs := policies.TraceKnobs()
	knobs.Entitlements = w.Entitlements() // shares: groups (docs/studies.md §1)
	fifoRun, fifoIdle := idleWhileAJobFits(t, w, "fifo", knobs)
	require0(t, "fifo denied", fifoRun.Unserved)
	t.Logf("fifo: idle while a job fits %.4f of capacity", fifoIdle)

	// static, lend none: only the jobs wider than their partition are
	// denied.
	al, err := policies.New(static.Name, policy.DefaultConfig(w.Pool), knobs)
	if err != nil {
		t.Fatal(err)
	}
	a := al.(*baseline.Core)
	none, noneIdle := idleWhileAJobFits(t, w, static.Name, knobs)
	for c := range w.Campaigns {
		if _, err := a.Register(w.Envelope(c)); err != nil {
			t.Fatal(err)
		}
	}
	rule := a.Rule().(*static.Rule)
	wider := 0
	for j := range w.Jobs {
		_, size := rule.Partition(policy.CampaignID(w.Jobs[j].Campaign))
		if isWider := w.Jobs[j].GPUs > size; isWider != none.Denied[j] {
			t.Fatalf("static none: job %d (%d GPUs, partition %d): denied %v", w.Jobs[j].Number, w.Jobs[j].GPUs, size, none.Denied[j])
		} else if isWider {
			wider++
		}
	}
	t.Logf("static none: partitions %v; %d of %d jobs denied (wider than their partition); idle while a job fits %.4f", rule.Sizes(), wider, len(w.Jobs), noneIdle)

	static.Slot.Edit(&knobs).Lend = static.LendScavenger
	scav, scavIdle := idleWhileAJobFits(t, w, static.Name, knobs)
	require0(t, "static scavenger denied", scav.Unserved)
	t.Logf("static scavenger: idle while a job fits %.4f, %d preemptions, %d unfinished", scavIdle, scav.Preemptions, scav.UnfinishedJobs)
	if scavIdle > fifoIdle+0.02 {
		t.Errorf("static scavenger: idle while a job fits %.4f > fifo's %.4f + 0.02", scavIdle, fifoIdle)
	}

	q, qIdle := idleWhileAJobFits(t, w, quota.Name, knobs)
	require0(t, "quota denied", q.Unserved)
	t.Logf("quota: idle while a job fits %.4f, %d preemptions, %d unfinished", qIdle, q.Preemptions, q.UnfinishedJobs)
	if qIdle > fifoIdle+0.02 {
		t.Errorf("quota: idle while a job fits %.4f > fifo's %.4f + 0.02", qIdle, fifoIdle)
	}
}

func require0(t *testing.T, what string, n int) {
	t.Helper()
	if n != 0 {
		t.Fatalf("%s: %d, want 0", what, n)
	}
}
