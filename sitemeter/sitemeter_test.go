package sitemeter

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/swf"
	"github.com/bursar-hpc/bursar/trace"
	"pgregory.net/rapid"
)

// load reads an SWF log from text.
func load(t testing.TB, text string, opt trace.Options) *trace.Workload {
	t.Helper()
	r, err := swf.NewReader(strings.NewReader(text), "t.swf")
	if err != nil {
		t.Fatal(err)
	}
	w, err := trace.Read(r, opt)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// journal keeps every record.
type journal struct{ ev []policy.Event }

func (j *journal) Record(e policy.Event) { j.ev = append(j.ev, e) }

// replay replays w under Bursar as a site meters it.
func replay(t testing.TB, w *trace.Workload, opt trace.ReplayOptions) (*trace.Run, *Broker) {
	t.Helper()
	s := metered(t, w)
	run, err := trace.Replay(w, s, opt)
	if err != nil {
		t.Fatal(err)
	}
	return run, s
}

// metered is Bursar on the default config as a site meters w.
func metered(t testing.TB, w *trace.Workload) *Broker {
	t.Helper()
	b, err := policy.New(policy.DefaultConfig(w.Pool))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(b, w)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// grantsOf are the grant records of lease (request) id.
func grantsOf(j *journal, id int) []policy.Event {
	var out []policy.Event
	for _, e := range j.ev {
		if e.Kind == policy.EventGrant && e.Lease == id {
			out = append(out, e)
		}
	}
	return out
}

// Two groups with equal shares of an 8-GPU pool: R = 4 each. Group 1's
// first job (4 GPUs, 1,000 s, submitted at 100) starts at once and
// holds its R, so its tokens stay at B = (4 − 4 + 1) × 1,000 = 1,000 and
// its cap is ⌊4 + 1,000 ÷ 1,000⌋ = 5: its second job (4 GPUs at 110)
// is held back by the meter, not by the 4 free GPUs. It is moved to the
// group's scavenger after tick 110's admission and starts at 111 (wait
// 1 s) in the opportunistic class, where the metered broker alone would
// hold it until 1,100. (Group 2's one job comes after both end.)
func TestCappedJobRunsOnIdleGPUs(t *testing.T) {
	w := load(t, `; MaxProcs: 8
1 100 -1 1000 4 -1 -1 4 1000 -1 1 1 1 -1 -1 -1 -1 -1
2 110 -1 1000 4 -1 -1 4 1000 -1 1 1 1 -1 -1 -1 -1 -1
3 5000 -1 10 1 -1 -1 1 10 -1 1 2 2 -1 -1 -1 -1 -1
`, trace.Options{Shares: trace.ShareEqualGroups})
	j := &journal{}
	run, s := replay(t, w, trace.ReplayOptions{Recorder: j})
	if got := run.Records[1].Starts; len(got) != 1 || got[0] != 111 {
		t.Fatalf("job 2 starts %v, want [111]: the idle GPUs seat it at the next tick", got)
	}
	g := grantsOf(j, 2) // request ids start at 1: job 2 is request 2
	if len(g) != 1 || g[0].Campaign != "group 1 (scavenger)" || g[0].Class != policy.Opportunistic {
		t.Fatalf("job 2's grants %+v: want one on group 1's scavenger, opportunistic", g)
	}
	if run.Preemptions != 0 || !run.Converged || s.Moved() != 1 {
		t.Fatalf("preemptions %d, converged %v, moved %d: want 0, true, 1", run.Preemptions, run.Converged, s.Moved())
	}
	// Job 1, within its group's R, is never moved: its meter lets it
	// through and the GPUs are free.
	if g := grantsOf(j, 1); len(g) != 1 || g[0].Campaign != "group 1" || run.Records[0].Starts[0] != 100 {
		t.Fatalf("job 1's grants %+v, starts %v: want one on group 1 at 100", g, run.Records[0].Starts)
	}
}

// The same log with a job of group 2 as wide as its R (4 GPUs at 120,
// for 2,000 s): it fits its meter but not the free GPUs (group 1's two
// jobs hold all 8), so the broker reclaims the scavenger lease (notice
// at 120, released at 180, when job 3 starts). Job 2 is requeued with
// its original submit time (110) and filed on group 1's metered campaign
// first: held back there (a throttle record) and no GPU idle, it waits
// until job 1 ends at 1,100, when group 1's cap (5) lets it through, and
// starts metered. Its scavenger lease was never
// promoted: it stayed opportunistic until the preemption, and the
// second lease is a new, metered grant.
func TestPreemptedScavengerLeaseRequeuesMeteredFirst(t *testing.T) {
	w := load(t, `; MaxProcs: 8
1 100 -1 1000 4 -1 -1 4 1000 -1 1 1 1 -1 -1 -1 -1 -1
2 110 -1 1000 4 -1 -1 4 1000 -1 1 1 1 -1 -1 -1 -1 -1
3 120 -1 2000 4 -1 -1 4 2000 -1 1 2 2 -1 -1 -1 -1 -1
`, trace.Options{Shares: trace.ShareEqualGroups})
	j := &journal{}
	run, _ := replay(t, w, trace.ReplayOptions{Recorder: j})
	base := int(w.Jobs[0].Submit - 1)
	throttled := false
	for _, e := range j.ev {
		if e.Kind == policy.EventThrottle && e.Campaign == "group 1" && e.T+base == 181 {
			throttled = true
		}
	}
	if !throttled {
		t.Errorf("no throttle of group 1 at 181 (the tick after its preemption): the requeued job was not filed metered first")
	}
	r := run.Records[1]
	if fmt.Sprint(r.Starts) != "[111 1100]" || fmt.Sprint(r.Aborted()) != "[180]" || r.End != 2100 {
		t.Fatalf("job 2: starts %v, aborted %v, end %d: want [111 1100], [180], 2100", r.Starts, r.Aborted(), r.End)
	}
	if got := run.Records[2].Starts; len(got) != 1 || got[0] != 180 {
		t.Fatalf("job 3 starts %v, want [180] (after the grace)", got)
	}
	var first, second []policy.Event
	for _, e := range j.ev {
		if e.Lease != 2 {
			// The replay filed job 2 as request 2 (ids start at 1); its
			// requeue is a new request.
			continue
		}
		first = append(first, e)
	}
	kinds := ""
	for _, e := range first {
		kinds += fmt.Sprintf("%s/%s/%v ", e.Kind, e.Campaign, e.Class)
	}
	if want := "grant/group 1 (scavenger)/opportunistic preempt-notice/group 1 (scavenger)/opportunistic release/group 1 (scavenger)/opportunistic "; kinds != want {
		t.Fatalf("job 2's first lease: %q, want %q", kinds, want)
	}
	for _, e := range j.ev {
		if e.Kind == policy.EventGrant && e.T+base == 1100 && e.GPUs == 4 {
			second = append(second, e)
		}
	}
	if len(second) != 1 || second[0].Campaign != "group 1" || second[0].Class != policy.AgentBurst {
		t.Fatalf("job 2's second grant %+v: want one on group 1, metered (agent-burst)", second)
	}
	if run.Preemptions != 1 || run.LostGPUSeconds != 4*69 {
		t.Fatalf("preemptions %d, lost %d GPU-s: want 1 and 4 × 69 (its run from 111 to 180)", run.Preemptions, run.LostGPUSeconds)
	}
}

// A group's metered campaign is the group: two users of one group are
// one campaign, with R = the group's entitlement × pool; with meter
// user each is its own, and still one scavenger per group. (Under the
// whole log's shares, whose buckets are taken over the window's jobs.)
func TestTheGroupIsTheMeteredCampaign(t *testing.T) {
	text := `; MaxProcs: 8
1 100 -1 100 2 -1 -1 2 100 -1 1 1 1 -1 -1 -1 -1 -1
2 100 -1 100 2 -1 -1 2 100 -1 1 2 1 -1 -1 -1 -1 -1
3 100 -1 100 4 -1 -1 4 100 -1 1 3 2 -1 -1 -1 -1 -1
`
	for _, tc := range []struct {
		meter string
		want  string
	}{
		{"", "group 1 R=4 B=0, group 1 (scavenger) R=8 B=0, group 2 R=4 B=100, group 2 (scavenger) R=8 B=0"},
		{trace.MeterUser, "user 1/group 1 R=2 B=100, group 1 (scavenger) R=8 B=0, user 2/group 1 R=2 B=100, user 3/group 2 R=4 B=100, group 2 (scavenger) R=8 B=0"},
	} {
		w := load(t, text, trace.Options{Meter: tc.meter, Shares: trace.ShareGroups})
		_, s := replay(t, w, trace.ReplayOptions{})
		var got []string
		for c := range s.NumCampaigns() {
			env := s.Envelope(policy.CampaignID(c))
			got = append(got, fmt.Sprintf("%s R=%g B=%g", env.Name, env.Sustained, env.Bucket))
			if env.Budget != trace.UnboundedBudget || env.Guaranteed != 0 {
				t.Errorf("%s: budget %g, guarantee %d: want out of reach, 0", env.Name, env.Budget, env.Guaranteed)
			}
		}
		if g := strings.Join(got, ", "); g != tc.want {
			t.Errorf("meter %q: campaigns\n%s\nwant\n%s", tc.meter, g, tc.want)
		}
	}
}

// genLog is a random small log: up to 40 jobs on a pool of 4 to 32 GPUs,
// in up to 4 groups of up to 3 users, each job no wider than the pool.
func genLog(t *rapid.T) (string, trace.Options) {
	pool := rapid.IntRange(4, 32).Draw(t, "pool")
	n := rapid.IntRange(1, 40).Draw(t, "jobs")
	var b strings.Builder
	fmt.Fprintf(&b, "; MaxProcs: %d\n", pool)
	submit := 0
	for i := 1; i <= n; i++ {
		submit += rapid.IntRange(0, 2000).Draw(t, "gap")
		run := rapid.IntRange(1, 5000).Draw(t, "run")
		est := run + rapid.IntRange(0, 3000).Draw(t, "slack")
		gpus := rapid.IntRange(1, pool).Draw(t, "gpus")
		group := rapid.IntRange(1, 4).Draw(t, "group")
		user := group*10 + rapid.IntRange(0, 2).Draw(t, "user")
		fmt.Fprintf(&b, "%d %d -1 %d %d -1 -1 %d %d -1 1 %d %d -1 -1 -1 -1 -1\n", i, submit, run, gpus, gpus, est, user, group)
	}
	opt := trace.Options{
		Shares: rapid.SampledFrom(trace.ShareModes).Draw(t, "shares"),
		Meter:  rapid.SampledFrom([]string{trace.MeterGroup, trace.MeterUser}).Draw(t, "meter"),
	}
	return b.String(), opt
}

// On random small logs no job is lost and none that fits the pool is
// denied: every job is served whole (its last run as long as its run)
// by the horizon, and a replay that ticks every second gives the same
// records as one that skips the quiet ticks.
func TestNoJobLostNoneDenied(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		text, opt := genLog(rt)
		w := load(t, text, opt)
		run, _ := replay(t, w, trace.ReplayOptions{})
		if run.Unserved != 0 || run.UnfinishedJobs != 0 || !run.Converged {
			rt.Fatalf("denied %d, unfinished %d, converged %v: want every job served", run.Unserved, run.UnfinishedJobs, run.Converged)
		}
		for i, r := range run.Records {
			jb := &w.Jobs[i]
			if r.State != trace.Served || len(r.Starts) != len(r.Aborted())+1 || r.End-r.Starts[len(r.Starts)-1] != jb.Run {
				rt.Fatalf("job %d: %+v: want served whole (run %d)", jb.Number, r, jb.Run)
			}
			if r.Starts[0] < jb.Submit {
				rt.Fatalf("job %d started at %d before its submit %d", jb.Number, r.Starts[0], jb.Submit)
			}
		}
		exact, _ := replay(t, w, trace.ReplayOptions{TickByTick: true})
		if fmt.Sprint(exact.Records) != fmt.Sprint(run.Records) {
			rt.Fatalf("tick by tick:\n%v\nskipping:\n%v", exact.Records, run.Records)
		}
	})
}

// Under `restart: checkpoint:60` a reclaimed scavenger lease keeps its
// run to the last checkpoint before the notice. Job 2 (group 1's second,
// held back by its meter) starts on the scavenger at 111; group 2's job
// reclaims it at 300 (notice), released at 360: it ran 189 s to the
// notice, so its checkpoints kept 180 s, and it lost 4 × (249 − 180)
// GPU-seconds. Requeued with what is left (820 s), it starts metered when
// job 1 ends at 1,100 and ends at 1,920.
func TestCheckpointKeepsTheScavengerRun(t *testing.T) {
	w := load(t, `; MaxProcs: 8
1 100 -1 1000 4 -1 -1 4 1000 -1 1 1 1 -1 -1 -1 -1 -1
2 110 -1 1000 4 -1 -1 4 1000 -1 1 1 1 -1 -1 -1 -1 -1
3 300 -1 2000 4 -1 -1 4 2000 -1 1 2 2 -1 -1 -1 -1 -1
`, trace.Options{Shares: trace.ShareEqualGroups})
	b, err := policy.New(policy.DefaultConfig(w.Pool))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(b, w)
	if err != nil {
		t.Fatal(err)
	}
	s.SetRestart(baseline.Restart{Checkpoint: 60})
	run, err := trace.Replay(w, s, trace.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := run.Records[1]
	if fmt.Sprint(r.Starts, r.Aborted(), r.Kept(), r.End) != "[111 1100] [360] [180] 1920" || run.LostGPUSeconds != 4*(249-180) {
		t.Fatalf("job 2: starts %v, aborted %v, kept %v, end %d, lost %d: want [111 1100] [360] [180] 1920, %d",
			r.Starts, r.Aborted(), r.Kept(), r.End, run.LostGPUSeconds, 4*(249-180))
	}
}

// A job its metered campaign can never hold runs on the scavenger, never
// denied (docs/traces.md "Bursar as a site meters it"). Under the default
// lookback shares, from second 200 the record before the window holds
// job 1 alone (group 1): group 1 is entitled to the pool (R = 8, B =
// max(0, (1 − 8 + 1) × 100) = 0) and group 2 to nothing (R = 0, B = 0, a
// cap of 0 GPUs for ever). Group 2's job 2 (4 GPUs, 50 s at 200) waits
// in the park, not on any campaign; the step after tick 200's admission
// finds 8 GPUs idle and files it on group 2's scavenger, in the
// opportunistic class, and it starts at 201 (a held-back job's tick
// later) and ends at 251; nothing is denied. Job 3 (group 1, 8 GPUs at
// 300) fits its cap of 8 and runs metered.
func TestNeverFitsGoesToTheScavenger(t *testing.T) {
	w := load(t, `; MaxProcs: 8
1 0 -1 100 1 -1 -1 1 100 -1 1 1 1 -1 -1 -1 -1 -1
2 200 -1 50 4 -1 -1 4 50 -1 1 2 2 -1 -1 -1 -1 -1
3 300 -1 50 8 -1 -1 8 50 -1 1 1 1 -1 -1 -1 -1 -1
`, trace.Options{From: 200})
	if g := w.GroupEnvelopes(); g[0].Sustained != 8 || g[0].Bucket != 0 || g[1].Sustained != 0 || g[1].Bucket != 0 {
		t.Fatalf("envelopes %+v: want group 1 R 8 B 0, group 2 R 0 B 0", g)
	}
	j := &journal{}
	run, s := replay(t, w, trace.ReplayOptions{Recorder: j})
	for _, e := range j.ev {
		if e.Kind == policy.EventDeny {
			t.Fatalf("denied: %+v", e)
		}
	}
	if run.Unserved != 0 || !run.Converged || s.Moved() != 1 {
		t.Fatalf("%d unserved, converged %v, %d moved: want 0, true, 1", run.Unserved, run.Converged, s.Moved())
	}
	base := w.Jobs[0].Submit - 1
	var got []string
	for _, e := range j.ev {
		if e.Kind == policy.EventGrant {
			got = append(got, fmt.Sprintf("%d %s %v %d", int64(e.T)+base, e.Campaign, e.Class, e.GPUs))
		}
	}
	if g := strings.Join(got, "; "); g != "201 group 2 (scavenger) opportunistic 4; 300 group 1 agent-burst 8" {
		t.Fatalf("grants %q", g)
	}
}

// A wide metered job reclaims the scavengers in its way, and the GPUs
// that free before all it needs is free stay its own: a job its group's
// meter can never hold waits in the park meanwhile, not on its
// scavenger, where the broker would grant it those GPUs and the metered
// job would reclaim them again (the livelock of docs/traces.md, "Bursar
// as a site meters it"). Pool 8; from second 200 group 1 is entitled to
// the pool and group 2 to nothing, so every group 2 job can only
// scavenge. A (4 GPUs) and B (4 GPUs) of group 2 scavenge from 201; C (4
// GPUs, at 260) waits. M (group 1, 8 GPUs, at 300) reclaims A and B at
// 300 with the grace G; A ends by itself at 300 + G − 1, a tick before
// B's notice is up. Its 4 GPUs are M's claim, so C stays parked, and M
// starts at 300 + G when B's notice ends; C and B (again, from zero)
// run after M. Filed on its scavenger, as before this rule, C took A's
// GPUs at 300 + G − 1 and M reclaimed them, again and again: the replay
// did not converge.
func TestReclaimedGPUsAreNotScavengedAgain(t *testing.T) {
	g := policy.DefaultGrace
	w := load(t, fmt.Sprintf(`; MaxProcs: 8
1 0 -1 100 1 -1 -1 1 100 -1 1 1 1 -1 -1 -1 -1 -1
2 200 -1 %d 4 -1 -1 4 5000 -1 1 2 2 -1 -1 -1 -1 -1
3 200 -1 5000 4 -1 -1 4 5000 -1 1 2 2 -1 -1 -1 -1 -1
4 260 -1 100 4 -1 -1 4 100 -1 1 2 2 -1 -1 -1 -1 -1
5 300 -1 100 8 -1 -1 8 100 -1 1 1 1 -1 -1 -1 -1 -1
`, 100+g-1-1), trace.Options{From: 200})
	j := &journal{}
	run, _ := replay(t, w, trace.ReplayOptions{Recorder: j})
	if !run.Converged || run.Unserved != 0 {
		t.Fatalf("converged %v, %d unserved", run.Converged, run.Unserved)
	}
	base := w.Jobs[0].Submit - 1
	var got []string
	for _, e := range j.ev {
		switch e.Kind {
		case policy.EventGrant:
			got = append(got, fmt.Sprintf("%d grant %s %d", int64(e.T)+base, e.Campaign, e.GPUs))
		case policy.EventRelease:
			got = append(got, fmt.Sprintf("%d %s %s %d", int64(e.T)+base, e.Reason, e.Campaign, e.GPUs))
		}
	}
	want := []string{
		"201 grant group 2 (scavenger) 4",                                  // A
		"201 grant group 2 (scavenger) 4",                                  // B
		fmt.Sprintf("%d released-by-agent group 2 (scavenger) 4", 300+g-1), // A ends under notice
		fmt.Sprintf("%d preempted group 2 (scavenger) 4", 300+g),           // B's notice is up
		fmt.Sprintf("%d grant group 1 8", 300+g),                           // M
		fmt.Sprintf("%d released-by-agent group 1 8", 400+g),
		fmt.Sprintf("%d grant group 2 (scavenger) 4", 401+g), // B again, from zero, and C
		fmt.Sprintf("%d grant group 2 (scavenger) 4", 401+g),
		fmt.Sprintf("%d released-by-agent group 2 (scavenger) 4", 501+g),
		fmt.Sprintf("%d released-by-agent group 2 (scavenger) 4", 5401+g),
	}
	if g := strings.Join(got, "\n"); g != strings.Join(want, "\n") {
		t.Fatalf("journal:\n%s\nwant:\n%s", g, strings.Join(want, "\n"))
	}
}

// A fair start's fork of the metered replay (Clone) reads the filings
// the replay noted before it and keeps those it files itself apart: with
// a fork at every submit the replay is what it is without forks, and
// every fair start is what forks that copy every filing give.
func TestForksKeepTheirOwnFilings(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		text, opt := genLog(rt)
		w := load(t, text, opt)
		plain, _ := replay(t, w, trace.ReplayOptions{})
		sample := make([]int, len(w.Jobs))
		for i := range sample {
			sample[i] = i
		}
		fair := trace.ReplayOptions{FairStart: sample, Horizon: 1 << 20}
		run, _ := replay(t, w, fair)
		if fmt.Sprint(plain.Records) != fmt.Sprint(run.Records) {
			rt.Fatalf("with forks:\n%v\nwithout:\n%v", run.Records, plain.Records)
		}
		whole, err := trace.Replay(w, copyingAll{metered(t, w)}, fair)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(whole.FairStart) != fmt.Sprint(run.FairStart) {
			rt.Fatalf("fair starts %v, with forks that copy every filing %v", run.FairStart, whole.FairStart)
		}
	})
}

// copyingAll is the broker whose copies own every filing, the replay's
// included (the oracle of TestForksKeepTheirOwnFilings).
type copyingAll struct{ *Broker }

func (c copyingAll) Clone() (policy.Allocator, error) {
	a, err := c.Broker.Clone()
	if err != nil {
		return nil, err
	}
	cp := a.(*Broker)
	cp.reqs, cp.shared = append(slices.Clone(cp.shared), cp.reqs...), nil
	return copyingAll{cp}, nil
}
