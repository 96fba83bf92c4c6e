package trace

import (
	"slices"
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

// idleWatch is a Recorder that follows the GPUs held, lease by lease, so
// that idleWhileAJobFits can sweep them against the queue.
type idleWatch struct {
	gpus map[int]int // lease → GPUs
	ev   []idleChange
}

// idleChange at policy tick t: GPUs taken (−) or freed (+), and a job of
// width joining (+) or leaving (−) the queue.
type idleChange struct {
	t           int64
	free, width int
}

func (w *idleWatch) Record(e policy.Event) {
	switch {
	case e.Kind == policy.EventGrant:
		w.gpus[e.Lease] = e.GPUs
		w.ev = append(w.ev, idleChange{t: int64(e.T), free: -e.GPUs, width: -e.GPUs})
	case e.Kind == policy.EventRelease:
		g := w.gpus[e.Lease]
		delete(w.gpus, e.Lease)
		c := idleChange{t: int64(e.T), free: g}
		if e.Reason == policy.ReasonPreempted {
			c.width = g // requeued (docs/studies.md §6.7)
		}
		w.ev = append(w.ev, c)
	}
}

// idleWhileAJobFits replays name on w and returns its run and the
// GPU-seconds, over [first submit, last submit], in which GPUs stood idle
// while a queued job would have fit in them: at each moment min(free, Σ
// widths of the queued jobs no wider than free) (docs/studies.md §4.2's
// idle_while_waiting), as a fraction of pool × span.
func idleWhileAJobFits(t *testing.T, w *Workload, name string, knobs policies.Knobs) (*Run, float64) {
	t.Helper()
	a, err := policies.New(name, policy.DefaultConfig(w.Pool), knobs)
	if err != nil {
		t.Fatal(err)
	}
	watch := &idleWatch{gpus: map[int]int{}}
	run, err := Replay(w, a, ReplayOptions{Recorder: watch})
	if err != nil {
		t.Fatal(err)
	}
	base := w.Jobs[0].Submit - 1
	ev := watch.ev
	for j := range w.Jobs {
		if !run.Denied[j] {
			ev = append(ev, idleChange{t: w.Jobs[j].Submit - base, width: w.Jobs[j].GPUs})
		}
	}
	// Submits of tick t join before tick t's grants; stable sort keeps the
	// journal's order within a tick.
	slices.SortStableFunc(ev, func(x, y idleChange) int { return cmpInt(x.t, y.t) })
	lo, hi := w.Jobs[0].Submit-base, w.Jobs[len(w.Jobs)-1].Submit-base
	queued := make([]int64, w.Pool+1) // Σ widths queued, by width
	free := w.Pool
	idle := 0.0
	for k := 0; k < len(ev); {
		now := ev[k].t
		for ; k < len(ev) && ev[k].t == now; k++ {
			free += ev[k].free
			if x := ev[k].width; x > 0 {
				queued[x] += int64(x)
			} else if x < 0 {
				queued[-x] += int64(x)
			}
		}
		next := hi
		if k < len(ev) {
			next = min(ev[k].t, hi)
		}
		from := max(now, lo)
		if next <= from || free <= 0 {
			continue
		}
		var fit int64
		for x := 1; x <= free; x++ {
			fit += queued[x]
		}
		idle += float64(min(int64(free), fit)) * float64(next-from)
	}
	return run, idle / (float64(w.Pool) * float64(hi-lo))
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

	knobs.Static.Lend = static.LendScavenger
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
