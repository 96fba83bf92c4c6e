package trace

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
)

// `bucket: largest-job` by hand (docs/studies.md §3.2, §6.18). Pool 16;
// campaign u1 is entitled to 1/4 (R = 4 GPUs), u2 to 3/4 (R = 12). u1's
// jobs: 8 GPUs for an estimate of 100 s → (8 − 4 + 1) × 100 = 500; 2 GPUs
// for 10,000 s → (2 − 4 + 1) × 10,000 < 0. B = 500, and the broker's cap
// for the 8-GPU job with a full bucket is ⌊4 + 500/100⌋ = 9 ≥ 8. u2's only
// job, 6 GPUs, fits under R: B = 0. With `hours:2` B = R × 7200.
func TestLargestJobBucketByHand(t *testing.T) {
	w := &Workload{Pool: 16, Campaigns: []Campaign{{Name: "u1", Share: 0.25}, {Name: "u2", Share: 0.75}},
		Jobs: []Job{
			{Number: 1, Submit: 0, Run: 50, Estimate: 100, GPUs: 8, Campaign: 0},
			{Number: 2, Submit: 5, Run: 10, Estimate: 10000, GPUs: 2, Campaign: 0},
			{Number: 3, Submit: 9, Run: 10, Estimate: 10, GPUs: 6, Campaign: 1},
		}}
	envs := w.Envelopes()
	for c, want := range []float64{500, 0} {
		if envs[c].Bucket != want || w.Envelope(c).Bucket != want {
			t.Fatalf("%s: B = %v (Envelope %v), want %v", w.Campaigns[c].Name, envs[c].Bucket, w.Envelope(c).Bucket, want)
		}
		if envs[c].Sustained != w.Campaigns[c].Share*16 || envs[c].Guaranteed != 0 || envs[c].BurstCeiling != 16 {
			t.Fatalf("%s: %+v", w.Campaigns[c].Name, envs[c])
		}
	}
	w.BucketHours = 2
	if b := w.Envelopes()[0].Bucket; b != 4*7200 {
		t.Fatalf("hours:2: B = %v", b)
	}
	for _, c := range []struct {
		in    string
		hours float64
	}{{"", 0}, {"largest-job", 0}, {"hours:24", 24}, {"hours:0.5", 0.5}} {
		if h, err := ParseBucket(c.in); err != nil || h != c.hours {
			t.Errorf("ParseBucket(%q) = %v, %v", c.in, h, err)
		}
	}
	for _, bad := range []string{"hours:0", "hours:-1", "hours:x", "hours:Inf", "largest", "24"} {
		if _, err := ParseBucket(bad); err == nil {
			t.Errorf("ParseBucket(%q) accepted", bad)
		}
	}
}

// No job is denied as never fitting under `bucket: largest-job`, over
// random workloads (entitlements down to a tiny fraction of a GPU, jobs as
// wide as the pool, estimates up to days): each job filed with Bursar's
// own broker at its campaign's envelope is admitted to the queue.
func TestLargestJobDeniesNoJob(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.IntRange(1, 512).Draw(t, "pool")
		nc := rapid.IntRange(1, 6).Draw(t, "campaigns")
		w := &Workload{Pool: pool}
		weights := make([]float64, nc)
		sum := 0.0
		for c := range weights {
			weights[c] = math.Pow(10, -rapid.Float64Range(0, 6).Draw(t, "decades"))
			sum += weights[c]
		}
		for c := range nc {
			w.Campaigns = append(w.Campaigns, Campaign{Name: fmt.Sprintf("c%d", c), Share: weights[c] / sum})
		}
		for i := range rapid.IntRange(1, 40).Draw(t, "jobs") {
			run := rapid.Int64Range(1, 300000).Draw(t, "run")
			w.Jobs = append(w.Jobs, Job{Number: int64(i + 1), Submit: int64(i), Run: run,
				Estimate: run + rapid.Int64Range(0, 300000).Draw(t, "over"),
				GPUs:     rapid.IntRange(1, pool).Draw(t, "gpus"), Campaign: rapid.IntRange(0, nc-1).Draw(t, "campaign")})
		}
		b, err := policy.New(policy.DefaultConfig(pool))
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]policy.CampaignID, nc)
		for c, env := range w.Envelopes() {
			if ids[c], err = b.Register(env); err != nil {
				t.Fatal(err)
			}
		}
		for i := range w.Jobs {
			j := &w.Jobs[i]
			if _, err := b.RequestRigid(ids[j.Campaign], j.GPUs, int(j.Estimate), int(j.Run), policy.AgentBurst, 1); err != nil {
				env := w.Envelope(j.Campaign)
				t.Fatalf("job %d (%d GPUs, estimate %d) of R = %v, B = %v: %v", j.Number, j.GPUs, j.Estimate, env.Sustained, env.Bucket, err)
			}
		}
	})
}

// On the excerpt under the whole log's shares (where the largest-job
// bucket is taken over the window's own jobs), revision 1's bucket
// (hours:24) denies 816 of its 2,661 jobs as never fitting; largest-job
// none, and bursar's replay serves or leaves unfinished every job. (Under
// the lookback default the excerpt has no record before it: the buckets
// are empty and the site metering files the wide jobs on the scavengers,
// sitemeter's TestNeverFitsGoesToTheScavenger.)
func TestExcerptBursarDeniesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the excerpt under bursar")
	}
	for _, c := range []struct {
		bucket string
		denied int
	}{{"", 0}, {"hours:24", 816}} {
		w := loadExcerpt(t, Options{Bucket: c.bucket, Shares: ShareGroups})
		b, err := policy.New(policy.DefaultConfig(w.Pool))
		if err != nil {
			t.Fatal(err)
		}
		denied := 0
		ids := make([]policy.CampaignID, len(w.Campaigns))
		for i, env := range w.Envelopes() {
			ids[i], _ = b.Register(env)
		}
		for i := range w.Jobs {
			j := &w.Jobs[i]
			if _, err := b.RequestRigid(ids[j.Campaign], j.GPUs, int(j.Estimate), int(j.Run), j.Class, 1); errors.Is(err, policy.ErrExceedsLimit) {
				denied++
			} else if err != nil {
				t.Fatal(err)
			}
		}
		if denied != c.denied {
			t.Fatalf("bucket %q: %d of %d jobs denied", c.bucket, denied, len(w.Jobs))
		}
		t.Logf("bucket %q: %d of %d jobs denied as never fitting", c.bucket, denied, len(w.Jobs))
	}
	for _, m := range []ShareMode{ShareGroups, ShareWindow} {
		w := loadExcerpt(t, Options{Shares: m})
		b, _ := policy.New(policy.DefaultConfig(w.Pool))
		run, err := Replay(w, b, ReplayOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if run.Unserved != 0 {
			t.Fatalf("shares %s: bursar denied %d jobs", m, run.Unserved)
		}
		t.Logf("bursar on the excerpt, shares %s: %d unfinished at the horizon, converged %v", m, run.UnfinishedJobs, run.Converged)
	}
}
