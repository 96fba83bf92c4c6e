package trace

import (
	"slices"
	"testing"

	"github.com/bursar-hpc/bursar/policy/policies"
)

// Which jobs bursar leaves unfinished on the excerpt, and why
// (docs/studies.md §3.2, docs/traces.md "The Bursar envelope"). Under
// `shares: groups` a group is entitled to its share of the whole log's
// work; the excerpt is its own whole log, so `groups` and `window` give
// the same entitlements and the same replay. Its members split that
// equally, and two heavy members of three-member groups are metered far
// below their own work:
//
//   - user 9/group 8 did 5,620,909 of its group's 5,712,679 GPU-seconds
//     but gets a third of the group's 2.14 %: R = 0.914 GPU. Its bucket
//     (581,425) and R from its first submit to the horizon pay for
//     4,694,129 GPU-seconds: jobs 38311 (72 GPUs) and 38312 (80) cannot
//     run by the horizon whatever the order.
//   - user 25/group 16 (R = 0.0754 GPU) runs 64-GPU jobs estimated at
//     3,600 s: a prepaid lease needs (64 − R) × 3,600 = 230,129 tokens of
//     its 233,729, a bucket all but full, and its 318,270 GPU-seconds of
//     work take at least 3.7 M s of refill at R from its first job, 45
//     days before the horizon; the bucket sits full while the machine is
//     busy, and jobs 39129, 39274, 39275 and 39331 are left.
//
// The run is flagged (Converged false, 6 unfinished). Under `shares:
// users` (each user its own share of the window's work) every job
// finishes.
func TestExcerptBursarUnfinished(t *testing.T) {
	for _, mode := range []ShareMode{ShareGroups, ShareWindow, ShareUsers} {
		w := loadExcerpt(t, Options{Shares: mode})
		knobs := policies.TraceKnobs()
		knobs.Entitlements = w.Entitlements()
		r := replayPolicy(t, w, "bursar", knobs, ReplayOptions{})
		var left []int64
		for j := range w.Jobs {
			if r.Unfinished != nil && r.Unfinished[j] {
				left = append(left, w.Jobs[j].Number)
				if r.Records[j].State != Unfinished {
					t.Errorf("%s: job %d unfinished but recorded %v", mode, w.Jobs[j].Number, r.Records[j].State)
				}
			}
		}
		if mode == ShareUsers {
			if !r.Converged || r.UnfinishedJobs != 0 || r.Unserved != 0 {
				t.Fatalf("users: converged %v, %d unfinished, %d denied; want every job served", r.Converged, r.UnfinishedJobs, r.Unserved)
			}
			continue
		}
		want := []int64{38311, 38312, 39129, 39274, 39275, 39331}
		if r.Converged || r.UnfinishedJobs != len(want) || !slices.Equal(left, want) {
			t.Fatalf("%s: converged %v, %d unfinished %v; want not converged, %v", mode, r.Converged, r.UnfinishedJobs, left, want)
		}
		// user 9/group 8 cannot pay for its work by the horizon.
		for c := range w.Campaigns {
			if w.Campaigns[c].Name != "user 9/group 8" {
				continue
			}
			env := w.Envelope(c)
			first := int64(-1)
			for _, jb := range w.Jobs {
				if jb.Campaign == c {
					first = jb.Submit
					break
				}
			}
			pay := env.Bucket + env.Sustained*float64(r.Stop-first)
			if got := float64(w.Campaigns[c].GPUSeconds); !(got > pay) || int64(pay) != 4694129 {
				t.Fatalf("%s: user 9/group 8's work %v, its envelope pays %v by the horizon", mode, got, pay)
			}
		}
	}
}
