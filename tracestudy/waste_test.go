package tracestudy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bursar-hpc/bursar/policy/static"
	"github.com/bursar-hpc/bursar/trace"
)

// committedRun is one run of a committed summary.json, the fields the
// waste and denial checks read.
type committedRun struct {
	Policy     string  `json:"policy"`
	Window     int     `json:"window"`
	Idle       float64 `json:"idle_while_waiting"`
	Denied     int     `json:"denied"`
	Unfinished int     `json:"unfinished"`
	Converged  bool    `json:"converged"`
	ServedWork float64 `json:"served_work"`
	All        struct {
		LowerBounds []string `json:"lower_bounds"`
	} `json:"all"`
}

func committedRuns(t *testing.T, folder string) []committedRun {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "results", "trace", folder, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Runs []committedRun `json:"runs"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s.Runs
}

// What the baselines waste and refuse, run by run, in the committed trace
// studies: the excerpt (results/trace) and the twelve 14-day windows of
// the full SDSC-SP2 and KTH-SP2 logs (`trace --windows 14d`), every policy
// at its defaults (docs/studies.md §2, §4). Issue 19's targets:
//
//   - quota's and priority's idle-while-waiting (GPUs idle while a queued
//     job would fit, a fraction of the pool over the measured interval) is
//     at most fifo's on the same window + 0.02. It holds for both on every
//     log's mean over windows, but not in four runs, pinned here: priority
//     on the excerpt (0.1079 against fifo's 0.0838) and on SDSC-SP2's
//     window 5 (0.1080 against 0.0744), quota-fair on SDSC-SP2's window
//     0 (0.0594 against 0.0293) and KTH-SP2's window 4 (0.1229 against
//     0.0387), with each window's lead-in (docs/studies.md §4.5). Priority
//     gives the EASY reservation to the oldest job of the highest tier
//     waiting (§6.12), so a wide job of a high tier drains the machine the
//     moment it arrives: on the four-window run of revision 2, job 37847
//     (127 of the 128 GPUs, queue high, estimate 600 s) held it for 16.6 h
//     of drain, 0.032 of the pool idle while jobs that would fit waited
//     (0.004 under fifo); on the excerpt the same job and the low queue's
//     wide jobs, which get the reservation only when no higher tier waits,
//     do (docs/policies.md, priority). The twelve-window exceptions were
//     not traced job by job;
//   - no policy denies a job (every replayed job fits the pool) but static
//     and static-share with lend none, which deny the jobs wider than
//     their partition, and count them;
//   - static and static-share with lend none show the seed story's cost:
//     in every run each denies jobs and leaves more of the pool idle while
//     a job would fit than fifo — at least 0.06 more in every run (static
//     on KTH-SP2's window 9: 0.0887 against 0.0270), at least 0.3 more
//     on each input's mean (the figure plots both: the counts panel and
//     the utilization panel);
//   - every run converges or is flagged: a run that stopped at its horizon
//     with measured jobs unfinished has its waits marked as lower bounds
//     (a run that stops with only unmeasured jobs unfinished has exact
//     measured waits: none in the committed runs since the lead-in).
//
// static with lend scavenger is not among the committed runs:
// TestStaticScavengerIdleOnTheWindows replays it.
func TestCommittedIdleAndDenials(t *testing.T) {
	type key struct {
		folder, policy string
		window         int
	}
	over := map[key]bool{{"", "priority", 0}: true, {"sdsc-sp2-12x14d", "priority", 5}: true,
		{"sdsc-sp2-12x14d", "quota-fair", 0}: true, {"kth-sp2-12x14d", "quota-fair", 4}: true}
	// The runs that stop at the horizon with no measured job unfinished.
	stoppedUnmeasured := map[key]bool{}
	for _, folder := range []string{"", "sdsc-sp2-12x14d", "kth-sp2-12x14d"} {
		runs := committedRuns(t, folder)
		fifo := map[int]float64{}
		for _, r := range runs {
			if r.Policy == "fifo" {
				fifo[r.Window] = r.Idle
			}
		}
		mean := map[string]float64{}
		for _, r := range runs {
			f, ok := fifo[r.Window]
			if !ok {
				t.Fatalf("%s: no fifo run in window %d", folder, r.Window)
			}
			label := folder + " " + r.Policy
			mean[r.Policy] += r.Idle / float64(len(fifo))
			switch r.Policy {
			case "quota", "quota-fair", "priority":
				if exceeds := r.Idle > f+0.02; exceeds != over[key{folder, r.Policy, r.Window}] {
					t.Errorf("%s window %d: idle while waiting %.4f, fifo's %.4f: above fifo's + 0.02 %v, pinned %v", label, r.Window, r.Idle, f, exceeds, !exceeds)
				}
			case "static", "static-share":
				if r.Denied == 0 || r.Idle-f < 0.06 {
					t.Errorf("%s window %d: %d denied, idle while waiting %.4f against fifo's %.4f", label, r.Window, r.Denied, r.Idle, f)
				}
			}
			if r.Policy != "static" && r.Policy != "static-share" && r.Denied != 0 {
				t.Errorf("%s window %d: %d jobs denied", label, r.Window, r.Denied)
			}
			if !r.Converged && (r.Unfinished == 0) != stoppedUnmeasured[key{folder, r.Policy, r.Window}] {
				t.Errorf("%s window %d: not converged, %d measured jobs unfinished", label, r.Window, r.Unfinished)
			}
			if !r.Converged && r.Unfinished > 0 && !slices.Contains(r.All.LowerBounds, "mean_wait") {
				t.Errorf("%s window %d: not converged, %d unfinished, lower bounds %v", label, r.Window, r.Unfinished, r.All.LowerBounds)
			}
			if r.Converged && r.Unfinished != 0 {
				t.Errorf("%s window %d: converged with %d unfinished", label, r.Window, r.Unfinished)
			}
		}
		for _, p := range []string{"quota", "quota-fair", "priority"} {
			if m, ok := mean[p]; ok && len(fifo) > 1 && m > mean["fifo"]+0.02 {
				t.Errorf("%s %s: mean idle while waiting %.4f, fifo's %.4f", folder, p, m, mean["fifo"])
			}
		}
		if m := mean["static"]; m-mean["fifo"] < 0.3 {
			t.Errorf("%s static: mean idle while waiting %.4f, fifo's %.4f", folder, m, mean["fifo"])
		}
	}
}

// static with lend scavenger (docs/studies.md §2, rule 19) on the excerpt
// and SDSC-SP2's four 14-day windows, replayed as `trace` replays them:
// its idle-while-waiting is at most fifo's + 0.02 of the pool, it denies
// no job (a job wider than its partition runs as a scavenger), and it
// converges. About 2 s of CPU.
func TestStaticScavengerIdleOnTheWindows(t *testing.T) {
	if raceDetector {
		t.Skip("single-goroutine replays: run without -race")
	}
	specs := TraceSpecs([]string{"fifo", static.Name})
	static.Slot.Edit(&specs[1].Knobs).Lend = static.LendScavenger
	excerpt, err := Load(BuiltinExcerpt, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	from, until := excerpt.SubmitSpan()
	win := Window{From: from, Until: until}
	if err := win.Measure(DefaultWarmup, DefaultCooldown); err != nil {
		t.Fatal(err)
	}
	_, ws, loads := sdscWindows(t, trace.Options{})
	loads, ws = append([]*trace.Workload{excerpt}, loads...), append([]Window{win}, ws...)
	for k, w := range loads {
		label := "excerpt"
		if k > 0 {
			label = "sdsc-sp2 " + ws[k].Label()
		}
		var idle [2]float64
		for s, spec := range specs {
			r, _, err := RunWindow(w, ws[k], spec, RunOptions{Exact: true})
			if err != nil {
				t.Fatal(err)
			}
			idle[s] = r.Summary.IdleWhileWaiting
			if r.Summary.Denied != 0 || !r.Summary.Converged {
				t.Errorf("%s %s: %d denied, converged %v", label, spec.Label(), r.Summary.Denied, r.Summary.Converged)
			}
			if s == 1 {
				t.Logf("%s: static lend scavenger idle while waiting %.4f (fifo %.4f), %d preemptions, lost %.4f of the pool",
					label, idle[1], idle[0], r.Preemptions, r.Summary.Lost)
			}
		}
		if idle[1] > idle[0]+0.02 {
			t.Errorf("%s: static lend scavenger idle while waiting %.4f > fifo's %.4f + 0.02", label, idle[1], idle[0])
		}
	}
}
