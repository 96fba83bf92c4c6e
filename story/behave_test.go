package story

import (
	"testing"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/budget"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/priority"
	"github.com/bursar-hpc/bursar/trace"
)

// tinyLab is one team with one project whose jobs are given: kinds[i]
// the kind of job i, submitted at submits[i], 8 GPUs for 10 h (training
// and eval) or 1 GPU for 10 minutes (debug).
func tinyLab(t *testing.T, kinds []Kind, submits []int64) *Workload {
	t.Helper()
	w := &Workload{Workload: &trace.Workload{Name: "tiny", Pool: 128,
		Campaigns: []trace.Campaign{{Name: "A1", ID: 1, Share: 1}},
		Groups:    []trace.Group{{ID: 1, Name: "A", Members: []int{0}, Share: 1}}},
		Team: []int{0}, Phase: []float64{0}}
	for i, k := range kinds {
		jb := trace.Job{Number: int64(i + 1), Submit: submits[i], Run: 10 * 3600, Estimate: 10 * 3600, GPUs: 8, Class: policy.AgentBurst, Queue: -1, LogWait: -1}
		if k == Debug {
			jb.Run, jb.Estimate, jb.GPUs, jb.Class = 600, 600, 1, policy.Interactive
		}
		w.Jobs = append(w.Jobs, jb)
		w.Kind = append(w.Kind, k)
	}
	return w
}

// rigid files parks and counts them.
type rigid struct{ filed []int }

func (r *rigid) RequestRigid(c policy.CampaignID, gpus, estimate, run int, cls policy.Class, submitted int) (int, error) {
	r.filed = append(r.filed, submitted)
	return 1000 + len(r.filed), nil
}

func TestRulesByHand(t *testing.T) {
	// ν_w = 1; the own class waits 4 h more than the top tier; the
	// project's jobs over the memory hold 80 GPUs for 10 h each.
	gpus := 80.0
	// Priority charges nothing: raising pays as soon as the top is faster.
	if !Raises(1, 4, gpus, 0) || Raises(1, 0, gpus, 0) || Raises(1, -1, gpus, 0) {
		t.Fatal("priority: raise iff the top tier waits less")
	}
	// Bursar: deadline costs 4/3 of agent-burst, 1/3 credit more per
	// GPU-hour: 80 × 10 h × 1/3 = 266.7 credits against 4 h × 80 = 320.
	extra := gpus * 10 * (Price(policies.Bursar, policy.Deadline) - Price(policies.Bursar, policy.AgentBurst))
	if !Raises(1, 4, gpus, extra) || Raises(1, 3, gpus, extra) {
		t.Fatalf("bursar: a 4 h gap pays for %v credits, a 3 h gap (240) does not", extra)
	}
	// Squatting: one debug job per 6 h park, 5 h of latency at ν_l = 8
	// saves 40 credits; the park costs 8 GPUs × 6 h × the price.
	if !Squats(8, 5, 1.0/6, 1, 8*6*Price(priority.Name, policy.Interactive)) {
		t.Fatal("priority: a free park is taken when latency exceeds the tolerance")
	}
	if Squats(8, 0.1, 1.0/6, 1, 0) {
		t.Fatal("latency under the tolerance: no park")
	}
	if bur := 8 * 6 * Price(policies.Bursar, policy.Interactive); !Squats(8, 5, 1.0/6, 1, bur) || Squats(8, 3, 1.0/6, 1, bur) {
		t.Fatalf("bursar: the park costs %v credits: 40 saved pays, 24 does not", bur)
	}
	if bud := 8 * 6 * Price(budget.Name, policy.Interactive); Squats(8, 5, 1.0/6, 1, bud) {
		t.Fatalf("budget: the park costs %v credits, more than 40 saved", bud)
	}
}

// start reports a start of job j after wait hours.
func start(u *users, j int, wait float64) {
	jb := &u.w.Jobs[j]
	u.Started(jb, jb.Submit+int64(wait*3600))
}

// TestProjectInflatesThenLowers: a project under priority sees the top
// tier's jobs start 1 h after submit and the own-class jobs 5 h after:
// at its first review it raises and its next job is filed deadline. A
// week later the top tier is the slow one (6 h against 1 h): at its next
// review it lowers, and its jobs are filed at their own class again.
func TestProjectInflatesThenLowers(t *testing.T) {
	const n = 40
	kinds := make([]Kind, n)
	submits := make([]int64, n)
	for i := range submits {
		submits[i] = int64(1 + i*3600*8) // every 8 h, 13 days
	}
	w := tinyLab(t, kinds, submits)
	// Jobs 0–9 urgent (the top tier, filed deadline by honest users).
	for j := range 10 {
		w.Jobs[j].Class = policy.Deadline
	}
	rules := DefaultRules()
	rules.Squat = false
	u := newUsers(w, rules, priority.Name, 1)
	u.Registered([]policy.CampaignID{0})
	u.proj[0].period = 7 * Day
	u.proj[0].review = submits[20]
	for j := range 20 {
		u.Declare(&w.Jobs[j])
		wait := 5.0
		if j < 10 {
			wait = 1
		}
		start(u, j, wait)
	}
	u.Act(int(submits[20] - u.base))
	if len(u.Levels) != 1 || !u.Levels[0].Raised || u.Levels[0].T != submits[20] {
		t.Fatalf("first review: changes %+v, want one raise at %d", u.Levels, submits[20])
	}
	if c := u.Declare(&w.Jobs[20]); c != policy.Deadline {
		t.Fatalf("a raised project files its training job %v, want deadline", c)
	}
	// The next week: the raised jobs (deadline) wait 6 h, the urgent
	// ones too; the few own-class jobs of others 1 h (here: requeued
	// copies of jobs 10–19 counted again would be refused; use new ones).
	for j := 20; j < 39; j++ {
		u.Declare(&w.Jobs[j])
		start(u, j, 6)
	}
	// Own-class starts: jobs of another project seen in the queue; make
	// five of job 39's kind by hand.
	for k := range 5 {
		u.hist = append(u.hist, submits[38]+6*3600+int64(k))
		for tier := range numTiers {
			s, c := u.histSum[tier][len(u.histSum[tier])-1], u.histN[tier][len(u.histN[tier])-1]
			if tier == tierOwn {
				s, c = s+1, c+1
			}
			u.histSum[tier] = append(u.histSum[tier], s)
			u.histN[tier] = append(u.histN[tier], c)
		}
	}
	at := submits[20] + 7*Day
	u.Act(int(at - u.base))
	if len(u.Levels) != 2 || u.Levels[1].Raised {
		t.Fatalf("second review: changes %+v, want a raise then a lowering", u.Levels)
	}
	if c := u.Declare(&w.Jobs[39]); c != policy.AgentBurst {
		t.Fatalf("a lowered project files its training job %v, want agent-burst", c)
	}
	// A job declared while raised keeps its declaration when requeued.
	if c := u.Declare(&w.Jobs[20]); c != policy.Deadline {
		t.Fatalf("requeued job 20 filed %v, want deadline as first declared", c)
	}
}

// TestProjectStopsSquattingWhenCharged: a project files 28 debug jobs a
// week (one per 6 h park). While the queue's debug jobs wait 5 h, a park
// saves 8 × 5 = 40 credits: under Bursar (32 credits a park) and under
// priority (free) it parks. When the latency falls to 3 h — still far
// above its 10-minute tolerance — the park saves 24 credits: under
// Bursar it stops parking, charged more than it saves; under priority it
// keeps parking.
func TestProjectStopsSquattingWhenCharged(t *testing.T) {
	for _, tc := range []struct {
		policy string
		parks  int
	}{{policies.Bursar, 1}, {priority.Name, 2}} {
		t.Run(tc.policy, func(t *testing.T) {
			var kinds []Kind
			var submits []int64
			for i := range 2 * 28 {
				kinds = append(kinds, Debug)
				submits = append(submits, int64(1+i*6*3600))
			}
			w := tinyLab(t, kinds, submits)
			rules := DefaultRules()
			rules.Inflate = false
			u := newUsers(w, rules, tc.policy, 1)
			u.Registered([]policy.CampaignID{0})
			rr := &rigid{}
			u.rr = rr
			for j := range 28 {
				u.Declare(&w.Jobs[j])
				start(u, j, 5)
			}
			now := submits[28] - 1
			u.proj[0].squatReview = now
			u.Act(int(now - u.base))
			if len(rr.filed) != 1 {
				t.Fatalf("latency 5 h: %d parks filed, want 1", len(rr.filed))
			}
			// The park is granted at once and held 6 h; a debug job
			// submitted inside it runs there.
			u.Record(policy.Event{Kind: policy.EventGrant, T: int(now - u.base), Lease: 1001, CampaignID: 0})
			if !u.Denies(&w.Jobs[28]) || !u.absorbed[28] {
				t.Fatal("a debug job submitted in the held park was not absorbed")
			}
			u.Record(policy.Event{Kind: policy.EventRelease, T: int(now - u.base + 6*3600), Lease: 1001, CampaignID: 0})
			// A week on, the latency is 3 h.
			for j := 29; j < 56; j++ {
				u.Declare(&w.Jobs[j])
				start(u, j, 3)
			}
			later := submits[55] + 1
			u.proj[0].squatReview = later
			u.Act(int(later - u.base))
			if len(rr.filed) != tc.parks {
				t.Fatalf("latency 3 h: %d parks filed in all, want %d", len(rr.filed), tc.parks)
			}
		})
	}
}
