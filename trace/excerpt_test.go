package trace

import (
	"math"

	"github.com/bursar-hpc/bursar/internal/testlong"
	"github.com/bursar-hpc/bursar/policy"
	"slices"
	"testing"
)

const excerpt = "../testdata/traces/SDSC-SP2-1998-4.2-cln.days252-280.swf"

func loadExcerpt(t testing.TB, opt Options) *Workload {
	t.Helper()
	w, err := Load(excerpt, opt)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestExcerptReplayMatchesTickByTick(t *testing.T) {
	testlong.Skip(t, "tick by tick over the 28-day excerpt")
	if testing.Short() {
		t.Skip("tick-by-tick over 28 days")
	}
	w := loadExcerpt(t, Options{})
	got, want := ReplayEASY(w), tickReplay(w)
	if !slices.Equal(got, want) {
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("job %d: event-driven start %d, tick-by-tick %d", w.Jobs[i].Number, got[i], want[i])
			}
		}
	}
	checkFeasible(t, w, got)
	a := Summarize(w, got)
	wait, bsld := naiveMeans(w, want)
	if a.All.MeanWait != wait || a.All.MeanBSLD != bsld {
		t.Fatalf("means %v %v, tick-by-tick %v %v", a.All.MeanWait, a.All.MeanBSLD, wait, bsld)
	}
	t.Logf("%+v", a)
}

func TestExcerptWorkload(t *testing.T) {
	w := loadExcerpt(t, Options{})
	if w.Pool != 128 || w.Records != 2837 || len(w.Jobs) != 2661 || w.Skipped.NoRunTime != 176 || w.Skipped.Total() != 176 {
		t.Fatalf("pool %d records %d jobs %d skipped %v", w.Pool, w.Records, len(w.Jobs), w.Skipped)
	}
	// 87 users submitted in the window, 81 of them a job that ran, in 45
	// groups; two of the 81 ran jobs under two groups each, so there are
	// 83 (user, group) campaigns.
	if len(w.Campaigns) != 83 || len(w.Groups) != 45 {
		t.Fatalf("%d campaigns, %d groups", len(w.Campaigns), len(w.Groups))
	}
	var sum float64
	members := 0
	envs := w.Envelopes()
	for c := range w.Campaigns {
		cp := &w.Campaigns[c]
		sum += cp.Share
		if c > 0 && w.Campaigns[c-1].ID > cp.ID {
			t.Fatal("campaigns not in user order")
		}
		env := w.Envelope(c)
		if err := env.Validate(); err != nil {
			t.Fatal(err)
		}
		if env.Guaranteed != 0 || env.BurstCeiling != 128 || math.Abs(env.Sustained-cp.Share*128) > 1e-9 || env.Bucket < 0 {
			t.Fatalf("envelope %+v", env)
		}
		if envs[c] != env {
			t.Fatalf("Envelopes()[%d] %+v, Envelope(%d) %+v", c, envs[c], c, env)
		}
	}
	for _, g := range w.Groups {
		members += len(g.Members)
	}
	if math.Abs(sum-1) > 1e-9 || members != 83 {
		t.Fatalf("shares sum to %v, %d members", sum, members)
	}
	for i := 1; i < len(w.Jobs); i++ {
		a, b := &w.Jobs[i-1], &w.Jobs[i]
		if a.Submit > b.Submit || (a.Submit == b.Submit && a.Number > b.Number) {
			t.Fatal("jobs not in submit order")
		}
	}
	// Queues: 0 interactive, 1 express → interactive; 5 standby →
	// opportunistic; 2 high, 3 normal, 4 low, 6 No_Class → burst.
	for i := range w.Jobs {
		j := &w.Jobs[i]
		want := policy.AgentBurst
		switch j.Queue {
		case 0, 1:
			want = policy.Interactive
		case 5:
			want = policy.Opportunistic
		}
		if j.Class != want {
			t.Fatalf("job %d in queue %d: class %v", j.Number, j.Queue, j.Class)
		}
	}
}

func TestExcerptKnobs(t *testing.T) {
	byGroup := loadExcerpt(t, Options{ByGroup: true, Shares: ShareEqualUsers})
	if len(byGroup.Campaigns) != len(byGroup.Groups) || len(byGroup.Campaigns) != 45 {
		t.Fatalf("by group: %d campaigns, %d groups", len(byGroup.Campaigns), len(byGroup.Groups))
	}
	for _, c := range byGroup.Campaigns {
		if c.Share != 1/float64(len(byGroup.Campaigns)) {
			t.Fatalf("equal shares: %v", c.Share)
		}
	}
	narrow := loadExcerpt(t, Options{Pool: 32})
	if narrow.Skipped.TooWide == 0 || narrow.Records != 2837 {
		t.Fatalf("pool 32: %v", narrow.Skipped)
	}
	for _, j := range narrow.Jobs {
		if j.GPUs > 32 {
			t.Fatal("a job wider than the pool in use was kept")
		}
	}
	day := int64(86400)
	win := loadExcerpt(t, Options{From: 21772800 + 7*day, Until: 21772800 + 14*day})
	for _, j := range win.Jobs {
		if j.Submit < 21772800+7*day || j.Submit >= 21772800+14*day {
			t.Fatal("job outside the window")
		}
	}
	if win.Records == 0 || win.Records >= 2837 {
		t.Fatalf("window: %d records", win.Records)
	}
	std := loadExcerpt(t, Options{Classes: map[string]policy.Class{"standby": policy.AgentBurst, "high": policy.Interactive}})
	for _, j := range std.Jobs {
		if (j.Queue == 5 && j.Class != policy.AgentBurst) || (j.Queue == 2 && j.Class != policy.Interactive) {
			t.Fatalf("override ignored: queue %d class %v", j.Queue, j.Class)
		}
	}
	if _, err := Load(excerpt, Options{Classes: map[string]policy.Class{"high": policy.Deadline}}); err == nil {
		t.Fatal("a trace job cannot be of the deadline class")
	}
	if _, err := Load(excerpt, Options{From: 10, Until: 5}); err == nil {
		t.Fatal("an empty window must be an error")
	}
}

// The committed excerpt's numbers under FCFS + EASY. They were cross-checked
// by the tick-by-tick oracle (TestExcerptReplayMatchesTickByTick); a change
// here is a change of the rule, not of rounding.
func TestExcerptGolden(t *testing.T) {
	w := loadExcerpt(t, Options{Shares: ShareGroups})
	m := Summarize(w, ReplayEASY(w))
	if m.All.Jobs != 2661 || m.All.MeanWait != 14470.197294250282 || m.All.MeanBSLD != 85.0636956088633 ||
		m.All.P50Wait != 2442 || m.All.P95Wait != 59272 || m.Makespan != 2526360 {
		t.Fatalf("%+v", m)
	}
	jobs := 0
	for _, s := range m.ByCampaign {
		jobs += s.Jobs
	}
	if jobs != 2661 || m.ByClass[0].Jobs+m.ByClass[1].Jobs+m.ByClass[2].Jobs != 2661 {
		t.Fatalf("per-campaign jobs %d, per-class %+v", jobs, m.ByClass)
	}
	// Jain's index sums floating-point allocations: pinned to 1e-12. It
	// reads the entitlements, here `shares: groups` of docs/studies.md §1,
	// the whole log's (the default before lookback shares; 0.1003 under
	// revision 1's per-user shares).
	if math.Abs(m.Jain-0.08622013215704563) > 1e-12 || math.Abs(m.Utilization-0.8247056288494118) > 1e-12 {
		t.Fatalf("Jain %v utilization %v", m.Jain, m.Utilization)
	}
}
