package tracestudy

import (
	"fmt"
	"testing"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/budget"
	"github.com/bursar-hpc/bursar/trace"
)

// notice is one preemption notice under budget, with what the contract
// judged (docs/studies.md §2, §6.11) at the level where the paths of the
// preemptor P and the victim V split: hp what P's node held, hv what V's
// node held with this lease and the search's earlier victims noticed
// (leases under notice left out), n the head's GPUs, gpus the lease's.
type notice struct {
	t, age       int
	p, v         policy.CampaignID
	class        policy.Class
	head         int // the blocked request the lease's GPUs are reserved for
	hp, hv       int
	n, gpus      int
	pNode, vNode string
}

// noticeScan records every notice from the Core, as it is journaled.
type noticeScan struct {
	core *baseline.Core
	got  []notice
	err  error
}

// node names c's node at the level where the paths of p and v split: the
// group when their groups differ, else the campaign.
func (s *noticeScan) node(c, p, v policy.CampaignID) string {
	if s.core.Campaign(p).Group != s.core.Campaign(v).Group {
		return fmt.Sprintf("group %d", s.core.Campaign(c).Group)
	}
	return s.core.Envelope(c).Name
}

func (s *noticeScan) holds(node string, p, v policy.CampaignID) int {
	h := 0
	for _, l := range s.core.Leases() {
		if !l.UnderNotice && !s.core.IsFiller(&l) && s.node(l.Campaign, p, v) == node {
			h += l.GPUs
		}
	}
	return h
}

func (s *noticeScan) Record(e policy.Event) {
	if e.Kind != policy.EventPreemptNotice || s.err != nil {
		return
	}
	for _, l := range s.core.Leases() {
		if l.ID != e.Lease {
			continue
		}
		i := s.core.Index(l.ReservedFor)
		if i < 0 {
			s.err = fmt.Errorf("t=%d: lease %d noticed for request %d, not waiting", e.T, l.ID, l.ReservedFor)
			return
		}
		head := s.core.Pend(i)
		p, v := head.Campaign, l.Campaign
		pn, vn := s.node(p, p, v), s.node(v, p, v)
		s.got = append(s.got, notice{t: e.T, age: e.T - l.Granted, p: p, v: v, class: l.Class, head: head.ID,
			hp: s.holds(pn, p, v), hv: s.holds(vn, p, v), n: head.GPUs, gpus: l.GPUs, pNode: pn, vNode: vn})
		return
	}
	s.err = fmt.Errorf("t=%d: noticed lease %d not in the table", e.T, e.Lease)
}

// replayBudgetAsStudied replays window k of st under its first spec
// (budget) exactly as Study.Run does, with the allocator RunWindow builds
// (Allocator: the trace studies' knobs, the entitlements and their
// groups, the log's usage before the window preloaded), and returns the
// run and its notices.
func replayBudgetAsStudied(t *testing.T, st *Study, k int) (*trace.Run, []notice) {
	t.Helper()
	w := st.Loads[k]
	a, err := Allocator(nil, w, st.Specs[0], st.windowHistory(0, k))
	if err != nil {
		t.Fatal(err)
	}
	scan := &noticeScan{core: a.(*baseline.Core)}
	run, err := trace.Replay(w, a, trace.ReplayOptions{Recorder: scan})
	if err != nil {
		t.Fatal(err)
	}
	if scan.err != nil {
		t.Fatal(scan.err)
	}
	return run, scan.got
}

// reversal is a notice b of a campaign A by a campaign B that A had
// itself preempted (notice a) less than W before: the pair preempting
// each other in both directions within W.
type reversal struct {
	a, b int // indices into the notices
}

// reversals are the notices answered the other way within window
// seconds, one per search of b and victim campaign (a search is the
// notices one blocked head caused in one tick).
func reversals(ns []notice, window int) []reversal {
	var rs []reversal
	for j, b := range ns {
		if j > 0 && ns[j-1].t == b.t && ns[j-1].head == b.head && ns[j-1].v == b.v {
			continue
		}
		for i := j - 1; i >= 0 && b.t-ns[i].t < window; i-- {
			if a := ns[i]; b.p == a.v && b.v == a.p {
				rs = append(rs, reversal{i, j})
				break
			}
		}
	}
	return rs
}

// holdingsMoved reports why reversal r was allowed. Just after a, A's
// node held hp_a + n_a and B's node what a's search left it, with
// q_A ≤ q_B (the final-share check); b needs q_B > 1 > q_A at the same
// level. So between them A's node must have grown beyond hp_a + n_a (its
// jobs started in GPUs others left: a borrow) or B's shrunk below what it
// was left (its jobs ended); if neither, the contract was broken.
func holdingsMoved(ns []notice, r reversal) (grew, shrank bool) {
	a, b := ns[r.a], ns[r.b]
	same := func(x, y notice) bool { return x.t == y.t && x.head == y.head }
	after := a.hv
	for k := range ns {
		if same(ns[k], a) && ns[k].vNode == a.vNode {
			after = min(after, ns[k].hv)
		}
	}
	before := b.hv + b.gpus
	for k := range ns {
		if same(ns[k], b) && ns[k].vNode == b.vNode {
			before = ns[k].hv + ns[k].gpus
			break
		}
	}
	return before > a.hp+a.n, b.hp < after
}

// budget's contract, literally as issue 19 states it, on the excerpt, on
// the four 14-day windows of the full SDSC-SP2 log and on the whole log,
// each replayed as `bursar-sweep trace` replays it (budget's defaults at
// the trace studies' knobs, the entitlements of docs/studies.md §1, the
// log's usage preloaded, §6.16):
//
//   - no job is preempted twice within m: two preemptions of one job
//     (SWF job, across its requeues) are at least its class's m apart,
//     and every noticed lease had run at least m;
//   - no pair of campaigns preempts each other in both directions within
//     W. This does not hold literally, and the contract does not ask it
//     to (docs/policies.md, budget, **choice**): §2 and §6.11 judge
//     preemption on what campaigns hold now, as Kueue judges quota, and W
//     enters only the order. So the test counts the pairs that do, pins
//     the count (a change in it is a change in what the policy does), and
//     requires each to come after the holdings moved (holdingsMoved):
//     never while they stand, which is the ping-pong the final-share
//     check rules out;
//   - the work it loses is under 5 % of its useful work, over the replay
//     and over the measured interval;
//   - it converges.
//
// About 3 s of CPU, and 2.5 s more for the whole log (skipped with
// -short). The whole log was trace's own contract test (its replay built
// budget's groups through the groups knob, with no entitlements): here
// it is replayed as the study does.
func TestBudgetContractOnTheWindows(t *testing.T) {
	if raceDetector {
		t.Skip("single-goroutine replays: run without -race")
	}
	specs := TraceSpecs([]string{budget.Name})
	knobs := budget.Slot.Get(specs[0].Knobs)
	excerpt, err := Load(BuiltinExcerpt, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	whole, err := WholeStudy(excerpt, specs)
	if err != nil {
		t.Fatal(err)
	}
	full, ws, loads := sdscWindows(t, trace.Options{})
	recorded, err := ReadRecorded(BuiltinFull, full.Pool)
	if err != nil {
		t.Fatal(err)
	}
	windows := &Study{Specs: specs, Windows: ws, Loads: loads, Recorded: recorded}
	// The whole log, as `trace --trace sdsc-sp2` replays it: one window,
	// the default warm-up and cool-down unmeasured.
	wholeWin, err := WholeWindow(full, trace.Options{}, DefaultWarmup, DefaultCooldown)
	if err != nil {
		t.Fatal(err)
	}
	wholeLog := &Study{Specs: specs, Windows: []Window{wholeWin}, Loads: []*trace.Workload{full}, Recorded: recorded}
	cases := []struct {
		name string
		st   *Study
		// reversals are the pairs preempting each other within W, one per
		// search of the second preemption, pinned.
		reversals []int
		long      bool
	}{
		// Under the lookback shares (issue 31 item 2: the excerpt and the
		// whole log have no record before them, every group the same
		// share; the four windows after the log's first 90 days); under
		// the whole log's shares they were 2, {0, 0, 0, 1} on the
		// earlier windows, and 26.
		{"excerpt", whole, []int{3}, false},
		{"sdsc-sp2 4x14d", windows, []int{1, 0, 1, 0}, false},
		{"sdsc-sp2 whole", wholeLog, []int{68}, true},
	}
	for _, c := range cases {
		if c.long && testing.Short() {
			t.Logf("%s: skipped with -short", c.name)
			continue
		}
		for k := range c.st.Windows {
			run, ns := replayBudgetAsStudied(t, c.st, k)
			label := fmt.Sprintf("%s window %d", c.name, k)
			// A noticed job may end by itself inside its grace period: a
			// notice without a preemption.
			if len(ns) < run.Preemptions {
				t.Errorf("%s: %d notices, %d preemptions", label, len(ns), run.Preemptions)
			}
			for _, n := range ns {
				if m := knobs.MinRuntime[n.class]; m < 0 || n.age < m {
					t.Errorf("%s: t=%d: a %s lease %d s old noticed (m = %d)", label, n.t, n.class, n.age, m)
				}
			}
			twice := 0
			for j, rec := range run.Records {
				m := int64(knobs.MinRuntime[c.st.Loads[k].Jobs[j].Class])
				for i := 1; i < len(rec.Aborted()); i++ {
					if rec.Aborted()[i]-rec.Aborted()[i-1] < m {
						twice++
						t.Errorf("%s: job %d preempted at %d and again at %d, within m = %d s", label, c.st.Loads[k].Jobs[j].Number, rec.Aborted()[i-1], rec.Aborted()[i], m)
					}
				}
			}
			rs := reversals(ns, knobs.Window)
			grew, shrank, soonest := 0, 0, -1
			for _, r := range rs {
				g, s := holdingsMoved(ns, r)
				a, b := ns[r.a], ns[r.b]
				t.Logf("%s: t=%d %s preempted %s (it then held %d GPUs); t=%d %s preempted %s back, %d s later, %s holding %d",
					label, a.t, a.pNode, a.vNode, a.hp+a.n, b.t, b.pNode, b.vNode, b.t-a.t, b.vNode, b.hv+b.gpus)
				switch {
				case g:
					grew++
				case s:
					shrank++
				default:
					t.Errorf("%s: t=%d: %s preempted %s back while the holdings stood (the other way at t=%d)", label, b.t, b.pNode, b.vNode, a.t)
				}
				if gap := b.t - a.t; soonest < 0 || gap < soonest {
					soonest = gap
				}
			}
			useful := run.HeldGPUSeconds - run.LostGPUSeconds
			frac := float64(run.LostGPUSeconds) / float64(useful)
			sum, err := trace.Measure(c.st.Loads[k], run, trace.Interval{From: c.st.Windows[k].MeasureFrom, To: c.st.Windows[k].MeasureUntil})
			if err != nil {
				t.Fatal(err)
			}
			measured := sum.Lost / sum.Useful
			t.Logf("%s: %d notices, %d jobs preempted twice within m, %d pairs preempting each other within W (%d after the former preemptor grew, %d after the former victim shrank, the soonest %d s apart); lost %.0f GPU-h of %.0f useful (%.2f %%; measured interval %.2f %%), converged %v",
				label, len(ns), twice, len(rs), grew, shrank, soonest, float64(run.LostGPUSeconds)/3600, float64(useful)/3600, 100*frac, 100*measured, run.Converged)
			if len(rs) != c.reversals[k] {
				t.Errorf("%s: %d pairs preempting each other within W, pinned at %d", label, len(rs), c.reversals[k])
			}
			if frac >= 0.05 || measured >= 0.05 {
				t.Errorf("%s: lost work %.2f %% of the useful work (%.2f %% over the measured interval), the target is < 5 %%", label, 100*frac, 100*measured)
			}
			if !run.Converged {
				t.Errorf("%s: not converged, %d jobs unfinished", label, run.UnfinishedJobs)
			}
		}
	}
}

// The contract test's replay is the study's: on the excerpt's two 7-day
// windows (the second starts from the usage the excerpt records before
// it) under every share rule, replayBudgetAsStudied gives the run
// Study.Run measures, preemption for preemption. Trace's former contract
// test built budget's groups through its groups knob and never set the
// entitlements or the history, so under a share rule other than groups,
// or with usage to preload, it replayed another policy.
func TestBudgetContractReplaysAsTheStudy(t *testing.T) {
	for _, shares := range []trace.ShareMode{trace.ShareGroups, trace.ShareUsers, trace.ShareEqualUsers} {
		opt := trace.Options{Shares: shares}
		excerpt, err := LoadRange(BuiltinExcerpt, opt)
		if err != nil {
			t.Fatal(err)
		}
		ws, err := Windows(excerpt.Jobs[0].Submit, excerpt.Jobs[len(excerpt.Jobs)-1].Submit, 2, 7*Day, Day, Day)
		if err != nil {
			t.Fatal(err)
		}
		loads, err := LoadWindows(BuiltinExcerpt, opt, ws)
		if err != nil {
			t.Fatal(err)
		}
		recorded, err := ReadRecorded(BuiltinExcerpt, excerpt.Pool)
		if err != nil {
			t.Fatal(err)
		}
		st := &Study{Specs: TraceSpecs([]string{budget.Name}), Windows: ws, Loads: loads, Recorded: recorded, Options: opt}
		for k := range ws {
			want, err := st.Run(k)
			if err != nil {
				t.Fatal(err)
			}
			run, _ := replayBudgetAsStudied(t, st, k)
			got := [3]int64{int64(run.Preemptions), run.LostGPUSeconds, int64(run.Ticks)}
			if w := [3]int64{int64(want.Preemptions), want.LostGPUSeconds, int64(want.Ticks)}; got != w {
				t.Errorf("shares %s, window %d: the contract test's replay gives (preemptions, lost GPU-s, ticks) %v, the study %v", shares, k, got, w)
			}
			if k == 1 && want.PreloadedUsage == 0 {
				t.Errorf("shares %s: the second window preloaded no usage; the test does not exercise the history", shares)
			}
			t.Logf("shares %s, window %d: %d preemptions, %d GPU-s lost, %d preloaded jobs", shares, k, run.Preemptions, run.LostGPUSeconds, want.PreloadedUsage)
		}
	}
}
