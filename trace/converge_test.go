package trace

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/bursar-hpc/bursar/policy/policies"
)

// Which jobs bursar leaves unfinished on the excerpt, and why
// (docs/studies.md §3.2, docs/traces.md "The Bursar envelope"). Under
// `shares: groups` a group is entitled to its share of the whole log's
// work (the excerpt is its own whole log, so the same as its share of the
// window's). Its members split that equally, and two heavy members of
// three-member groups are metered far below their own work:
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
// window` the same group entitlements give Bursar's R split by the
// members' work in the window (Workload.Rate), under `users` each user's
// own share of it: every job finishes under both.
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
		if mode != ShareGroups {
			if !r.Converged || r.UnfinishedJobs != 0 || r.Unserved != 0 {
				t.Fatalf("%s: converged %v, %d unfinished, %d denied; want every job served", mode, r.Converged, r.UnfinishedJobs, r.Unserved)
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

// Why an equal split of a group's entitlement cannot be Bursar's R under
// `shares: window`, worked by hand (docs/studies.md §3.2, docs/traces.md
// "The Bursar envelope"). Pool 8, one group of four users. User 1 submits
// a job of 8 GPUs for 43,200 s (estimate the same) every 43,200 s from 0
// to 561,600: 14 jobs, 4,838,400 GPU-seconds, enough to fill the pool for
// a week. Users 2, 3 and 4 submit one job each of 1 GPU for 600 s at 0.
// The group did all the window's work, so it is entitled to the whole
// pool; the horizon is the last submit + max(span, 7 days) = 561,600 +
// 604,800 = 1,166,400 (docs/studies.md §4.3).
//
// Split equally, user 1 gets R = 8 ÷ 4 = 2 and B = (8 − 2 + 1) × 43,200 =
// 302,400; by the horizon that pays for 302,400 + 2 × 1,166,400 =
// 2,635,200 GPU-seconds, 54 % of its work, on an empty machine. Each job
// needs (8 − 2) × 43,200 = 259,200 tokens to start: job 1 at 0 leaves
// about 43,200, the refill at 2 a second seats job 2 at about 151,200,
// and each later job 172,800 s after the one before (43,200 s of run,
// 129,600 of refill): job 7 ends at about 1,058,400, job 8 could start at
// about 1,188,000, past the horizon. 7 jobs are left. `equal-groups`
// gives this one group the same entitlement and the same split as
// `window`, so it shows the old mapping.
//
// Split by the window's work (Workload.Rate), user 1 gets R = 8 ×
// 4,838,400 ÷ 4,840,200 = 7.997: its jobs run back to back, the small
// ones after them, and the replay converges long before the horizon. The
// members' rates still sum to the group's 8, and every other
// per-campaign rule keeps the equal split (Campaign.Share).
func TestWindowRateSplitByWork(t *testing.T) {
	text := "; MaxProcs: 8\n"
	for k := range 14 {
		text += fmt.Sprintf("%d %d -1 43200 8 -1 -1 8 43200 -1 1 1 1 -1 -1 -1 -1 -1\n", k+1, k*43200)
	}
	for u := 2; u <= 4; u++ {
		text += fmt.Sprintf("%d 0 -1 600 1 -1 -1 1 600 -1 1 %d 1 -1 -1 -1 -1 -1\n", 13+u, u)
	}
	replay := func(mode ShareMode) (*Workload, *Run) {
		w, err := read(t, text, Options{Shares: mode})
		if err != nil {
			t.Fatal(err)
		}
		knobs := policies.TraceKnobs()
		knobs.Entitlements = w.Entitlements()
		return w, replayPolicy(t, w, "bursar", knobs, ReplayOptions{})
	}

	w, r := replay(ShareWindow)
	if len(w.Groups) != 1 || len(w.Campaigns) != 4 || w.Campaigns[0].Name != "user 1/group 1" || w.Campaigns[0].GPUSeconds != 4838400 {
		t.Fatalf("workload: %+v", w.Campaigns)
	}
	envs := w.Envelopes()
	sum := 0.0
	for c := range w.Campaigns {
		// The member entitlement stays the equal split.
		if w.Campaigns[c].Share != 0.25 {
			t.Errorf("%s: share %v, want 1/4", w.Campaigns[c].Name, w.Campaigns[c].Share)
		}
		want := 8 * float64(w.Campaigns[c].GPUSeconds) / 4840200
		if math.Abs(envs[c].Sustained-want) > 1e-12 || w.Rate(c) != envs[c].Sustained {
			t.Errorf("%s: R = %v (Rate %v), want %v", w.Campaigns[c].Name, envs[c].Sustained, w.Rate(c), want)
		}
		sum += envs[c].Sustained
	}
	if math.Abs(sum-8) > 1e-12 {
		t.Errorf("the members' rates sum to %v, not the group's 8", sum)
	}
	if !r.Converged || r.UnfinishedJobs != 0 || r.Unserved != 0 || r.End >= 1166400 {
		t.Fatalf("window: converged %v, %d unfinished, %d denied, end %d", r.Converged, r.UnfinishedJobs, r.Unserved, r.End)
	}

	w, r = replay(ShareEqualGroups)
	env := w.Envelope(0)
	if env.Sustained != 2 || env.Bucket != 302400 {
		t.Fatalf("equal split: R = %v, B = %v; want 2, 302,400", env.Sustained, env.Bucket)
	}
	if pay := env.Bucket + env.Sustained*float64(r.Stop); r.Stop != 1166400 || pay != 2635200 {
		t.Fatalf("equal split: stop %d, the envelope pays %v by it", r.Stop, pay)
	}
	var left []int64
	for j := range w.Jobs {
		if r.Unfinished != nil && r.Unfinished[j] {
			left = append(left, w.Jobs[j].Number)
		}
	}
	if r.Converged || !slices.Equal(left, []int64{8, 9, 10, 11, 12, 13, 14}) {
		t.Fatalf("equal split: converged %v, unfinished %v; want user 1's jobs 8–14", r.Converged, left)
	}
	// Jobs 2 to 7 start about 151,200 + (k − 2) × 172,800.
	for j := range w.Jobs {
		if k := w.Jobs[j].Number; k >= 2 && k <= 7 {
			t.Logf("job %d starts at %d", k, r.Start[j])
			if want := 151200 + (k-2)*172800; r.Start[j] < want-100 || r.Start[j] > want+100 {
				t.Errorf("equal split: job %d starts at %d, want about %d", k, r.Start[j], want)
			}
		}
	}
}
