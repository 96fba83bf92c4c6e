package trace

import (
	"slices"
	"testing"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/policies"
)

// Bursar's reclaim of a rigid job, by hand (docs/traces.md, "A rigid job
// maps to one lease"; policy.Broker.admitRigid). The broker's reclaim
// path (docs/model.md §5) puts opportunistic leases under notice for any
// waiting request that is not opportunistic; an elastic request then takes
// what they free as a partial grant. A trace job is whole or nothing, so
// it reclaims only when that lets it start (docs/studies.md §6.6: "only if
// the request then fits"). Before that rule, a standby job beside a wide
// job waiting for a long one was noticed, requeued, re-granted the GPU it
// had freed and noticed again every grace period for as long as the wide
// job waited: 71,097 preemptions of 41 standby jobs on the excerpt, and 6
// of them never finished.

// reclaimWorkload: pool 4, three campaigns entitled to a third each
// (R = 4/3 GPU; the largest-job buckets let every job start at once as
// far as tokens go).
func reclaimWorkload(jobs ...Job) *Workload {
	return &Workload{Pool: 4, Campaigns: []Campaign{{Name: "u1", Share: 1. / 3}, {Name: "u2", Share: 1. / 3}, {Name: "u3", Share: 1. / 3}}, Jobs: jobs}
}

func replayBursar(t *testing.T, w *Workload) (*Run, eventLog) {
	t.Helper()
	b, err := policies.New("bursar", policy.DefaultConfig(w.Pool), policies.TraceKnobs())
	if err != nil {
		t.Fatal(err)
	}
	var rec eventLog
	r, err := Replay(w, b, ReplayOptions{Recorder: &rec})
	if err != nil {
		t.Fatal(err)
	}
	return r, rec
}

type eventLog []policy.Event

func (l *eventLog) Record(e policy.Event) { *l = append(*l, e) }

func (l eventLog) count(k policy.EventKind) int {
	n := 0
	for _, e := range l {
		if e.Kind == k {
			n++
		}
	}
	return n
}

// A reclaim that cannot seat the job is not made. Job 1 (u2, 2 GPUs,
// 3,000 s) runs from second 0; job 2 (u3, standby, 1 GPU, 300 s) from
// second 0 too; job 3 (u1, 4 GPUs, 100 s) comes at second 10 and needs
// the whole pool. Free 1 GPU + the standby job's 1 = 2 < 4: nothing to
// gain, so no notice; job 2 finishes at 300, job 3 starts when job 1 ends
// at 3,000. (Under the plain reclaim rule job 2 was noticed at 10,
// released at 70, re-granted at 71, noticed again, … 49 times until
// second 3,000, and finished only after job 3.)
func TestRigidReclaimOnlyWhenItSeatsTheJob(t *testing.T) {
	w := reclaimWorkload(
		Job{Number: 1, Submit: 0, Run: 3000, Estimate: 3000, GPUs: 2, Campaign: 1, Class: policy.AgentBurst},
		Job{Number: 2, Submit: 0, Run: 300, Estimate: 300, GPUs: 1, Campaign: 2, Class: policy.Opportunistic},
		Job{Number: 3, Submit: 10, Run: 100, Estimate: 100, GPUs: 4, Campaign: 0, Class: policy.AgentBurst},
	)
	r, log := replayBursar(t, w)
	if r.Preemptions != 0 || log.count(policy.EventPreemptNotice) != 0 {
		t.Fatalf("%d preemptions, %d notices; want none", r.Preemptions, log.count(policy.EventPreemptNotice))
	}
	if want := []int64{0, 0, 3000}; !slices.Equal(r.Start, want) {
		t.Fatalf("starts %v, want %v", r.Start, want)
	}
	if r.Records[1].End != 300 || !r.Converged {
		t.Fatalf("job 2 ends at %d (want 300), converged %v", r.Records[1].End, r.Converged)
	}
}

// A reclaim that seats the job is made, once. Job 1 (u2, standby, 2 GPUs,
// 3,000 s) runs from 0; job 2 (u1, 4 GPUs, 100 s) comes at 10: free 2 +
// reclaimable 2 = 4, so job 1 is noticed at 10 and preempted at 70 (the
// 60-s grace), when job 2 starts in the same tick; job 1 is requeued
// (restart from zero: 2 GPUs × 70 s lost) and starts again at 170, when
// job 2 ends.
func TestRigidReclaimThatSeatsTheJob(t *testing.T) {
	w := reclaimWorkload(
		Job{Number: 1, Submit: 0, Run: 3000, Estimate: 3000, GPUs: 2, Campaign: 1, Class: policy.Opportunistic},
		Job{Number: 2, Submit: 10, Run: 100, Estimate: 100, GPUs: 4, Campaign: 0, Class: policy.AgentBurst},
	)
	r, log := replayBursar(t, w)
	if r.Preemptions != 1 || log.count(policy.EventPreemptNotice) != 1 {
		t.Fatalf("%d preemptions, %d notices; want 1", r.Preemptions, log.count(policy.EventPreemptNotice))
	}
	if want := []int64{170, 70}; !slices.Equal(r.Start, want) {
		t.Fatalf("starts %v, want %v", r.Start, want)
	}
	if want := []int64{0, 170}; !slices.Equal(r.Records[0].Starts, want) || r.LostGPUSeconds != 140 {
		t.Fatalf("job 1 starts %v (want %v), lost %d GPU-s (want 140)", r.Records[0].Starts, want, r.LostGPUSeconds)
	}
}

// On the excerpt: one preemption under bursar (it was 71,097), of the
// standby job 38815 (1 GPU, 4,231 s), whose reclaim seated a wider job.
// Under the whole log's shares and the window's largest-job buckets (the
// mapping this rule was measured on; the lookback default reads no
// record before the excerpt).
func TestExcerptBursarPreemptions(t *testing.T) {
	w := loadExcerpt(t, Options{Shares: ShareGroups})
	knobs := policies.TraceKnobs()
	knobs.Entitlements = w.Entitlements()
	r := replayPolicy(t, w, "bursar", knobs, ReplayOptions{})
	var preempted []int64
	for j := range r.Records {
		if r.Records[j].Preemptions > 0 {
			preempted = append(preempted, w.Jobs[j].Number)
		}
	}
	if r.Preemptions != 1 || !slices.Equal(preempted, []int64{38815}) {
		t.Fatalf("%d preemptions, of jobs %v; want 1, of job 38815", r.Preemptions, preempted)
	}
}
