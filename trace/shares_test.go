package trace

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/swf"
)

// sharesLog is the four-job log of TestSharesWholeLogAndWindow.
const sharesLog = `; MaxProcs: 8
1 0 -1 50 2 -1 -1 2 60 -1 1 7 1 -1 3 -1 -1 -1
2 10 -1 50 2 -1 -1 2 60 -1 1 8 1 -1 3 -1 -1 -1
3 10 -1 100 3 -1 -1 3 100 -1 1 9 2 -1 3 -1 -1 -1
4 20 -1 50 2 -1 -1 2 60 -1 1 5 -1 -1 3 -1 -1 -1
`

// `shares: groups` takes each group's fraction of the whole log, jobs
// outside the window included; `window` only the window's. Group 1 runs
// 100 GPU-s before the window and 100 in it, group 2 300 in it; user 5
// has no group (it stands as its own group). Whole log: 200, 300 and 100
// of 600; window [10, ∞): 100, 300 and 100 of 500.
func TestSharesWholeLogAndWindow(t *testing.T) {
	text := sharesLog
	groups, err := read(t, text, Options{From: 10, Shares: ShareGroups})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, g := range groups.Groups {
		names = append(names, fmt.Sprintf("%s:%v", g.Name, g.Share))
	}
	if got := strings.Join(names, " "); got != fmt.Sprint("group 1:", 200.0/600, " group 2:", 300.0/600, " user 5:", 100.0/600) {
		t.Fatalf("groups: %s", got)
	}
	window, _ := read(t, text, Options{From: 10, Shares: ShareWindow})
	for g, want := range []float64{100.0 / 500, 300.0 / 500, 100.0 / 500} {
		if window.Groups[g].Share != want {
			t.Fatalf("window: group %s %v, want %v", window.Groups[g].Name, window.Groups[g].Share, want)
		}
	}
	// User 8 is group 1's only member in the window: it takes the whole
	// group's entitlement. User 5's campaign is named for the user.
	if c := groups.Campaigns[0]; c.Name != "user 5" || c.Share != 100.0/600 {
		t.Fatalf("campaign 0: %+v", c)
	}
	if c := groups.Campaigns[1]; c.Name != "user 8/group 1" || c.Share != 200.0/600 {
		t.Fatalf("campaign 1: %+v", c)
	}
	if _, err := read(t, text, Options{Shares: "fair"}); err == nil || !strings.Contains(err.Error(), `shares "fair": want one of lookback, groups, window, users, equal-groups, equal-users`) {
		t.Fatalf("bad mode: %v", err)
	}
}

// The default, lookback shares, by hand (docs/studies.md §1: no default
// reads the future). On the log of TestSharesWholeLogAndWindow (and a
// fifth job, group 2's, after the window) with the
// window from second 10, the lookback holds job 1 alone (group 1, 2 GPUs
// × 50 s): group 1 is entitled to the whole pool, group 2 and user 5 to
// nothing, whatever they do in the window or after it; Bursar's buckets
// are taken over job 1 (group 1: (2 − 8 + 1) × 60 < 0, so 0; the others
// none). From second 0 no record precedes the window: every group gets a
// third. With a lookback of 5 s from second 10 job 1 (at 0) is out of it.
func TestLookbackShares(t *testing.T) {
	text := sharesLog + "5 30 -1 99999 8 -1 -1 8 99999 -1 1 9 2 -1 3 -1 -1 -1\n"
	shares := func(w *Workload) string {
		var s []string
		for _, g := range w.Groups {
			s = append(s, fmt.Sprintf("%s:%.4g", g.Name, g.Share))
		}
		return strings.Join(s, " ")
	}
	w, err := read(t, text, Options{From: 10, Until: 25})
	if err != nil {
		t.Fatal(err)
	}
	if got := shares(w); got != "group 1:1 group 2:0 user 5:0" || w.Shares != ShareLookback || w.LookbackJobs != 1 || w.LookbackFrom != 0 {
		t.Fatalf("lookback from 10: %s, rule %q, %d jobs from %d", got, w.Shares, w.LookbackJobs, w.LookbackFrom)
	}
	for _, env := range w.GroupEnvelopes() {
		if env.Bucket != 0 {
			t.Errorf("%s: bucket %g, want 0", env.Name, env.Bucket)
		}
	}
	// Job 5 (group 2, after the window) weighs nothing; whole-log shares
	// see it.
	oracle, _ := read(t, text, Options{From: 10, Until: 25, Shares: ShareGroups})
	if oracle.Groups[1].Share <= 0.5 {
		t.Fatalf("whole-log shares: group 2 %v, want above a half (job 5)", oracle.Groups[1].Share)
	}
	w, _ = read(t, text, Options{})
	if got := shares(w); got != "group 1:0.3333 group 2:0.3333 user 5:0.3333" || w.LookbackJobs != 0 {
		t.Fatalf("no record before the window: %s, %d jobs", got, w.LookbackJobs)
	}
	w, _ = read(t, text, Options{From: 10, Until: 25, Lookback: 5})
	if got := shares(w); got != "group 1:0.3333 group 2:0.3333 user 5:0.3333" || w.LookbackFrom != 5 {
		t.Fatalf("a 5-s lookback from 10: %s, from %d", got, w.LookbackFrom)
	}
}

// Over random logs, windows and modes: the groups' shares sum to 1, and so
// do the campaigns'; each group's members sum to the group's share; in
// every mode but the per-user ones a member holds its group's share ÷ its
// members; Bursar's rates (Rate) add up to the group's share × pool, and
// are the members' shares × pool in every mode but window, where each is
// its part of the group's work in the window (under window, as under
// users, a campaign's rate is its own share of the window's work); the
// entitlements handed to the policies validate and say the same.
func TestSharesProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 60).Draw(t, "jobs")
		var b strings.Builder
		b.WriteString("; MaxProcs: 16\n")
		for i := range n {
			user := rapid.IntRange(1, 8).Draw(t, "user")
			group := rapid.IntRange(-1, 4).Draw(t, "group")
			gpus := rapid.IntRange(1, 16).Draw(t, "gpus")
			run := rapid.IntRange(1, 5000).Draw(t, "run")
			fmt.Fprintf(&b, "%d %d -1 %d %d -1 -1 %d %d -1 1 %d %d -1 1 -1 -1 -1\n", i+1, i*10, run, gpus, gpus, run, user, group)
		}
		opt := Options{
			Shares:  rapid.SampledFrom(ShareModes).Draw(t, "shares"),
			ByGroup: rapid.Bool().Draw(t, "by-group"),
			From:    int64(rapid.IntRange(0, n/2).Draw(t, "from") * 10),
		}
		r, err := swf.NewReader(strings.NewReader(b.String()), "t.swf")
		if err != nil {
			t.Fatal(err)
		}
		w, err := Read(r, opt)
		if err != nil {
			t.Fatal(err)
		}
		var total int64
		for _, c := range w.Campaigns {
			total += c.GPUSeconds
		}
		gsum, csum := 0.0, 0.0
		for _, g := range w.Groups {
			gsum += g.Share
			msum, rsum := 0.0, 0.0
			for _, c := range g.Members {
				cp := w.Campaigns[c]
				msum += cp.Share
				rate := w.Rate(c)
				rsum += rate
				want := cp.Share * 16
				if opt.Shares == ShareWindow {
					want = 16 * float64(cp.GPUSeconds) / float64(total)
				}
				if math.Abs(rate-want) > 1e-9 {
					t.Fatalf("%s (%s): R = %v, want %v", cp.Name, opt.Shares, rate, want)
				}
				if opt.Shares != ShareUsers && opt.Shares != ShareEqualUsers && cp.Share != g.Share/float64(len(g.Members)) {
					t.Fatalf("%s in %s: %v, not %v ÷ %d", cp.Name, g.Name, cp.Share, g.Share, len(g.Members))
				}
				if cp.Group < 0 || w.Groups[cp.Group].Name != g.Name {
					t.Fatalf("%s: group %d", cp.Name, cp.Group)
				}
			}
			if math.Abs(msum-g.Share) > 1e-12 {
				t.Fatalf("%s: members sum to %v, share %v", g.Name, msum, g.Share)
			}
			if math.Abs(rsum-16*g.Share) > 1e-9 {
				t.Fatalf("%s: members' rates sum to %v, share × pool %v", g.Name, rsum, 16*g.Share)
			}
		}
		for _, c := range w.Campaigns {
			csum += c.Share
		}
		if math.Abs(gsum-1) > 1e-12 || math.Abs(csum-1) > 1e-12 {
			t.Fatalf("groups sum to %v, campaigns to %v", gsum, csum)
		}
		e := w.Entitlements()
		if err := e.Validate(); err != nil {
			t.Fatal(err)
		}
		for g, gs := range e.Groups {
			if gs.Share != w.Groups[g].Share || len(gs.Members) != len(w.Groups[g].Members) {
				t.Fatalf("entitlements group %d: %+v", g, gs)
			}
		}
	})
}
