package tracestudy

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/bursar-hpc/bursar/internal/testlong"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/slurm"
	"github.com/bursar-hpc/bursar/siteconf/slurmconf"
	"github.com/bursar-hpc/bursar/swf"
	"github.com/bursar-hpc/bursar/trace"
)

// Scaling (issue 32 item 6): a policy's work per job must not grow with
// the log. The windows are the first 1 to 64 weeks of the embedded
// SDSC-SP2 log, and a 300k-job log resampled from it (resampledLog); the
// work is the deterministic count of policy.Work, so that the test
// measures the algorithm, not the machine it runs on.

// scalingWeeks are BenchmarkScaling's windows, in weeks from the log's
// first submit.
var scalingWeeks = []int{1, 2, 4, 8, 16, 32, 64}

// maxWorkGrowth is the most a policy's work per job may grow from the
// 8-week to the 64-week window (issue 32 item 6).
const maxWorkGrowth = 1.5

// sdscWeeks is the embedded SDSC-SP2 log's first weeks of submits under
// the default mapping.
func sdscWeeks(tb testing.TB, weeks int) *trace.Workload {
	tb.Helper()
	full, err := Load(BuiltinFull, trace.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	first := full.Jobs[0].Submit
	w, err := Load(BuiltinFull, trace.Options{From: first, Until: first + int64(weeks)*7*Day})
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

// resampledLog is a log of n jobs drawn from the embedded SDSC-SP2 log's
// statistics, so that nothing needs a download: each job is a job of the
// log drawn at random (its run, estimate, user, group and queue), its
// width scaled by pool / 128 (SDSC-SP2's processors) and at most pool,
// submitted a gap after the last one, the gap drawn from the log's gaps
// between submits. The load and the queue per job are the log's; only
// the length grows. Its header keeps the log's queues and its
// Preemption line. The same n, pool and seed give the same log.
func resampledLog(tb testing.TB, n, pool int, seed uint64) *trace.Workload {
	tb.Helper()
	sr, err := swf.NewReader(bytes.NewReader(resampledSWF(tb, n, pool, seed)), "resampled")
	if err != nil {
		tb.Fatal(err)
	}
	wl, err := trace.Read(sr, trace.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return wl
}

// resampledSWF is resampledLog's log as SWF text.
func resampledSWF(tb testing.TB, n, pool int, seed uint64) []byte {
	tb.Helper()
	r, c, err := open(BuiltinFull)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	var jobs []swf.Job
	for {
		j, err := r.Next()
		if err != nil {
			break
		}
		if swf.Check(&j, 128) == swf.Keep {
			jobs = append(jobs, j)
		}
	}
	if len(jobs) < 2 {
		tb.Fatal("the embedded log has no jobs")
	}
	gaps := make([]int64, 0, len(jobs)-1)
	for i := 1; i < len(jobs); i++ {
		gaps = append(gaps, jobs[i].Submit-jobs[i-1].Submit)
	}
	scale := pool / 128
	rng := rand.New(rand.NewPCG(seed, 0x5ca1e))
	var buf bytes.Buffer
	out := bufio.NewWriter(&buf)
	fmt.Fprintf(out, "; MaxProcs: %d\n", pool)
	if v, ok := r.Header().Field("Preemption"); ok {
		// The log's own (No): priority preempts only where it says so.
		fmt.Fprintf(out, "; Preemption: %s\n", v)
	}
	for _, q := range r.Header().Queues {
		fmt.Fprintf(out, "; Queue: %d %s\n", q.Number, q.Name)
	}
	t := int64(0)
	for i := range n {
		j := jobs[rng.IntN(len(jobs))]
		t += gaps[rng.IntN(len(gaps))]
		w := min(j.Procs()*scale, pool)
		fmt.Fprintf(out, "%d %d -1 %d %d -1 -1 %d %d -1 1 %d %d -1 %d -1 -1 -1\n",
			i+1, t, j.Run, w, w, j.Estimate(), j.User, j.Group, j.Queue)
	}
	if err := out.Flush(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// TestWriteResampledLog writes the 300k-job log of BenchmarkScaling
// (resampledLog(300,000 jobs, 93,056 processors, seed 1)) as an SWF
// file to the path in BURSAR_RESAMPLED_SWF, so that a whole process
// (`bursar-sweep trace --trace FILE`, scripts/fcfs_easy.py) can replay
// the very log the benchmark does (docs/traces.md); without the variable
// it is skipped.
func TestWriteResampledLog(t *testing.T) {
	path := os.Getenv("BURSAR_RESAMPLED_SWF")
	if path == "" {
		t.Skip("BURSAR_RESAMPLED_SWF names no file to write")
	}
	if err := os.WriteFile(path, resampledSWF(t, 300_000, 128*727, 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

// slurmSite is the scaling test's and benchmark's name for policy slurm
// with the example site's knobs (configs/examples/slurm.conf, as
// `trace --slurm-conf` reads it: Fair Tree at 10,000, age at 1,000,
// bf_max_job_test 1,000 …). slurm is optional, in no default list, and
// at Slurm's defaults (every weight 0) it orders nothing; a site's
// weights are what its cost hangs on.
const slurmSite = "slurm-site"

// scalingNames are the policies the scaling test and benchmark measure:
// every default policy, then slurm with the example site's knobs.
var scalingNames = append(slices.Clone(policies.Names), slurmSite)

// scalingSpec is the spec of one of scalingNames at the trace studies'
// knobs (slurmSite: the example site's slurm knobs over them; the pool
// stays the log's).
func scalingSpec(tb testing.TB, name string) Spec {
	tb.Helper()
	if name != slurmSite {
		return TraceSpecs([]string{name})[0]
	}
	f, err := os.Open("../configs/examples/slurm.conf")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	c, err := slurmconf.Parse("slurm.conf", f)
	if err != nil {
		tb.Fatal(err)
	}
	s := TraceSpecs([]string{slurm.Name})[0]
	knobs, _ := c.Policy()
	slurm.Slot.Set(&s.Knobs, knobs)
	return s
}

// replayWork replays w under the named policy at the trace studies'
// knobs, with fair starts for fair sampled jobs of the whole window
// (none for 0), and returns the policy's work.
func replayWork(tb testing.TB, w *trace.Workload, name string, fair int) (policy.Work, *trace.Run) {
	tb.Helper()
	a, err := Allocator(nil, w, scalingSpec(tb, name), nil)
	if err != nil {
		tb.Fatal(err)
	}
	if _, ok := a.(policy.WorkCounter); !ok {
		tb.Fatalf("policy %s (%T) counts no work", name, a)
	}
	var work policy.Work
	run, err := trace.Replay(w, a, trace.ReplayOptions{FairStart: fairSample(w, fair), FairSeed: trace.DefaultFairSeed, Work: &work})
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return work, run
}

// replayTimed is replayWork without counting: what BenchmarkScaling
// times.
func replayTimed(b *testing.B, w *trace.Workload, name string, fair int) {
	a, err := Allocator(nil, w, scalingSpec(b, name), nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := trace.Replay(w, a, trace.ReplayOptions{FairStart: fairSample(w, fair), FairSeed: trace.DefaultFairSeed}); err != nil {
		b.Fatalf("%s: %v", name, err)
	}
}

// fairSample is the default seed's sample of n jobs of w's whole
// window (none for 0).
func fairSample(w *trace.Workload, n int) []int {
	if n == 0 {
		return nil
	}
	from, until := w.SubmitSpan()
	return trace.FairSample(w, trace.Interval{From: from, To: until}, n, trace.DefaultFairSeed)
}

// perJob is the work's total per job of w.
func perJob(work policy.Work, w *trace.Workload) float64 {
	return float64(work.Total()) / float64(len(w.Jobs))
}

// TestWorkPerJobScales: for every policy (and slurm with the example
// site's knobs, slurmSite), the work per job (policy.Work's
// total: requests walked, runs read, requests moved, forks' ticks) on the
// first 64 weeks of SDSC-SP2 is at most maxWorkGrowth times that on the
// first 8 weeks, without fair starts and with a sample of 1,000 (issue 32
// item 6). The counts are deterministic: this fails on an algorithm whose
// work grows with the log, on any machine.
func TestWorkPerJobScales(t *testing.T) {
	testlong.Skip(t, "64 weeks of SDSC-SP2 under every policy")
	short, long := sdscWeeks(t, 8), sdscWeeks(t, 64)
	for _, name := range scalingNames {
		for _, fair := range []int{0, trace.DefaultFairSample} {
			t.Run(fmt.Sprintf("%s/fair=%d", name, fair), func(t *testing.T) {
				if reason, known := knownWorkGrowth[fmt.Sprintf("%s/fair=%d", name, fair)]; known {
					t.Skip(reason)
				}
				ws, _ := replayWork(t, short, name, fair)
				wl, _ := replayWork(t, long, name, fair)
				a, b := perJob(ws, short), perJob(wl, long)
				// Logged for every cell, so that -v gives the table the
				// README and docs/traces.md quote ("Work per job").
				t.Logf("work per job %.2f on 8 weeks, %.2f on 64 weeks: %.2f×", a, b, b/a)
				if g := b / a; g > maxWorkGrowth {
					t.Errorf("work per job %.1f on 8 weeks (%d jobs), %.1f on 64 weeks (%d jobs): grew %.2f×, more than %.1f×\n8 weeks:  %+v\n64 weeks: %+v",
						a, len(short.Jobs), b, len(long.Jobs), g, maxWorkGrowth, ws, wl)
				}
			})
		}
	}
}

// knownWorkGrowth are the cells of TestWorkPerJobScales that fail today,
// with the growth of work per job measured from the 8-week to the
// 64-week window (December 2026; docs/traces.md, "Work per job"):
// skipped, named, until their policy is fixed. Each walks or moves its
// whole pending list at every pass, and the log's queue at a pass grows
// from 5–7 requests (684 under bursar) in the first 8 weeks to 19–25
// (3,481) in the first 64.
//
// What the counts leave out, and would change (December 2026): a sort
// counts each element it orders once, not each comparison. The
// backfills of fairshare and budget sort nothing: they pick their
// candidates in queue order and count every comparison
// (baseline.backfillCands, which baseline.Keyed and baseline.Ranked
// share). budget's sorted its candidates, whose number grows with the
// queue, before: counted per comparison budget/fair=0 would have grown
// 1.71× (1.33× as counted then); picked and counted, it grows 1.39×
// (19.8 → 27.4 a job), and budget/fair=1000 1.01× (33.6 → 34.0). The
// preemption passes' sorts of running jobs would add 80–200 per job to
// fifo, priority, fairshare and budget at both ends, and no cell would
// fail by them.
var knownWorkGrowth = map[string]string{
	// New with issue 30's defaults: condo partitions (static) scale their
	// minima on SDSC-SP2, so the partitions' queues run long; static keeps
	// each partition's queue and finds backfill candidates by a tree of
	// widths and estimates (policy/static/queues.go), but its forks tick
	// through their jobs' waits, which grow with the log. Its searches
	// now ask the whole backfill test, and the pass after a grant is
	// skipped (quietAfter): 2.24× (272.4 → 609.4) before. Nearly all of a
	// fork's search steps are in its own job's partition (the others stay
	// quiet), and the exact shortcuts that would spare a fork part of its
	// job's wait spare little: over 64 weeks 147 of the 668 sampled jobs
	// that waited were overtaken by no later job in their partition (no
	// fork needed), but their waits are short, and for the others the
	// first overtaking grant comes early: from it to the job's start is
	// 97.7 % of the sampled jobs' summed waits (94.9 % over 8 weeks), the
	// most a fork started there (or none) could save 2–5 %. Nor would a
	// fork narrowed to its job's partition: the others drain within days
	// of waits that run for weeks (30.7 → 30.6 forks' ticks a job over 64
	// weeks). A fork no longer ticks after its own grants (Settled) nor
	// compacts its queues, but it still grants every job ahead of its
	// own: the backfill candidates found per job double (4.6 → 9.3, at
	// 147 → 1,627 places into the queue), so that a fork that steps
	// through its job's wait grant by grant fails the bound whatever a
	// grant costs.
	"static/fair=1000": "known failure (issue 32): work per job grew 1.71× (156.9 → 268.6 since a fork's backfill search starts where the pass before found its first job when it asks no more, static.searched: the forks' search steps over 64 weeks 12.2 M → 6.3 M; 2.30×, 180.8 → 416.6, since the forks run only their partitions' passes, static.Rule.FirstGrants; 2.22×, 207.9 → 460.9, before; 2.32×, 215.5 → 500.2, before the searches' bands were counted in the queue's unit) with condo partitions: the forks' ticks per job grow with their jobs' waits (9.5 → 15.4), their grants per job double, and each fork pass's backfill search grows with the log of its partition's queue (the queue a fork searches runs from hundreds of jobs to thousands); a fork's copy of the partition queue it writes counts as moved (75.8 → 109.1 a job, all moves)",

	// slurm with the example site's weights (slurmSite, December 2026):
	// every admission (an event, a sched_interval run, a backfill pass)
	// reads the whole pending list to order it (policy/slurm's order: the
	// jobs filed since, and the kept queue merged past the started ones),
	// and every calculation period (5 minutes) gives every waiting job a
	// new priority (age and Fair Tree move), as Slurm does (its _schedule
	// and backfill build and sort the queue from the whole job list at
	// every run); the backfill then tests up to bf_max_job_test jobs. So a
	// pass's work follows the queue, which grows 3.1× from 8 to 64 weeks
	// (6.8 → 21.3 requests a pass; walked 62.5 → 188.3 a job). An
	// admission at which nothing could start or be noticed in any order
	// (policy/slurm's stuck) reads the list once and orders nothing: 68k
	// of the 113k priority generations over 64 weeks, and the growth was
	// 3.01× (63.2 → 190.6) without fair starts and 2.13× (113.5 → 242.3)
	// with them before. A kept queue that files and drops
	// jobs without reading the list (baseline.Waiting) would remove the
	// reads between periods, not the period's new priorities. Not counted
	// at all: Fair Tree's ranking at each period sums every association's
	// usage (fairTree.begin: all the campaigns registered, 500 on the full
	// log) and sorts the accounts, as fairshare's decay of every
	// campaign's usage at each period is not counted either.
	// Measured again at de60d06 (after afd2e45, whose usage books see
	// every holding): 3.10× (59.25 → 183.6) and 2.19× (106.5 → 233.6),
	// the same after the kept queue of Filed and Left, which reads the
	// list less but not the stuck test's and the backfill's walks that
	// the counts hold. Since ff0f6da the stuck test reads no list while
	// no GPUs are reserved (the narrowest width kept): 2.60× (36.66 →
	// 95.47) and 1.78× (66.34 → 118.1). What is left grows with the
	// queue as Slurm's own work does: each period's new priorities for
	// every waiting job, and the backfill's test of each job it reaches
	// (up to bf_max_job_test, the pass ending once no job left could
	// start now: 1.25 million tests over 64 weeks, of 3.70 million
	// requests walked); and each pass's map reads the list for the
	// GPUs reserved for preempting requests (a read skipped while the
	// Core's sum of them is 0 takes the counts to 2.57× and 1.69×,
	// but was not kept: TestKeptFiguresAreTheWalks found a wrong skip
	// only in 1,000 cases).
	"slurm-site/fair=0":    "known failure (issue 32): work per job grew 2.60× (36.66 → 95.47; 3.10×, 59.25 → 183.6, before ff0f6da): each calculation period re-prioritizes every waiting job and each backfill pass tests the queue; the queue a pass reads grows 6.8 → 21.3 requests from 8 to 64 weeks",
	"slurm-site/fair=1000": "known failure (issue 32): work per job grew 1.78× (66.34 → 118.1; 2.19×, 106.5 → 233.6, before ff0f6da): as slurm-site/fair=0, the forks' passes reading the queue as the replay's do",
}

// BenchmarkScaling replays the first 1 to 64 weeks of SDSC-SP2, the
// whole log, and a 300k-job log resampled from it on 93,056 processors
// (resampledLog),
// under every policy (and slurm with the example site's knobs,
// slurmSite), without fair starts and with the default sample:
// ns/op and cpu-ns/op are the replay's time, jobs/s the jobs per second
// of CPU time, and the work counts (policy.Work) per job beside them.
// Run one cell with e.g.
// `go test -run '^$' -bench 'Scaling/fifo/sdsc-64w/fair=0$' -benchtime 1x ./tracestudy/`.
// BURSAR_SCALING_300K=0 leaves the 300k-job log out (it takes minutes
// under some policies).
func BenchmarkScaling(b *testing.B) {
	type log struct {
		name string
		w    func() *trace.Workload
	}
	var logs []log
	for _, wk := range scalingWeeks {
		logs = append(logs, log{fmt.Sprintf("sdsc-%dw", wk), func() *trace.Workload { return sdscWeeks(b, wk) }})
	}
	logs = append(logs, log{"sdsc-full", func() *trace.Workload {
		w, err := Load(BuiltinFull, trace.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return w
	}})
	if os.Getenv("BURSAR_SCALING_300K") != "0" {
		logs = append(logs, log{"resampled-300k", func() *trace.Workload { return resampledLog(b, 300_000, 128*727, 1) }})
	}
	loaded := map[string]*trace.Workload{}
	for _, name := range scalingNames {
		b.Run(name, func(b *testing.B) {
			for _, lg := range logs {
				b.Run(lg.name, func(b *testing.B) {
					for _, fair := range []int{0, trace.DefaultFairSample} {
						b.Run(fmt.Sprintf("fair=%d", fair), func(b *testing.B) {
							w := loaded[lg.name]
							if w == nil {
								w = lg.w()
								loaded[lg.name] = w
							}
							b.ReportAllocs()
							cpu := cpuTime()
							for b.Loop() {
								replayTimed(b, w, name, fair)
							}
							if c := cpuTime(); c > 0 && b.N > 0 {
								per := float64(c-cpu) / float64(b.N)
								b.ReportMetric(per, "cpu-ns/op")
								b.ReportMetric(float64(len(w.Jobs))/(per/1e9), "jobs/s")
							}
							// The counts, from one more replay outside the
							// timing (counting costs a little).
							work, _ := replayWork(b, w, name, fair)
							n := float64(len(w.Jobs))
							b.ReportMetric(n, "jobs")
							b.ReportMetric(float64(work.Total())/n, "work/job")
							b.ReportMetric(float64(work.Walked)/n, "walked/job")
							b.ReportMetric(float64(work.RunsRead)/n, "runsread/job")
							b.ReportMetric(float64(work.Moved)/n, "moved/job")
							b.ReportMetric(float64(work.ForkTicks)/n, "forkticks/job")
							if work.Passes > 0 {
								b.ReportMetric(float64(work.Pending)/float64(work.Passes), "pending/pass")
								b.ReportMetric(float64(work.Runs)/float64(work.Passes), "runs/pass")
							}
						})
					}
				})
			}
		})
	}
}

// TestWorkTable prints the work counts of every policy over the
// scaling windows and the full log as the table of docs/traces.md
// ("Work per job"), with BURSAR_WORK_TABLE=1 (it replays every window
// under every policy twice: minutes).
func TestWorkTable(t *testing.T) {
	if os.Getenv("BURSAR_WORK_TABLE") != "1" {
		t.Skip("set BURSAR_WORK_TABLE=1 to print docs/traces.md's work table")
	}
	type log struct {
		name string
		w    *trace.Workload
	}
	var logs []log
	for _, wk := range []int{1, 8, 64} {
		logs = append(logs, log{fmt.Sprintf("%d weeks", wk), sdscWeeks(t, wk)})
	}
	full, err := Load(BuiltinFull, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	logs = append(logs, log{"full log", full})
	fmt.Println("| policy | fair | log | jobs | passes | pending/pass | runs/pass | walked/job | runs read/job | moved/job | fork ticks/job | work/job |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, name := range scalingNames {
		for _, fair := range []int{0, trace.DefaultFairSample} {
			for _, lg := range logs {
				wk, _ := replayWork(t, lg.w, name, fair)
				n := float64(len(lg.w.Jobs))
				pp, rp := 0.0, 0.0
				if wk.Passes > 0 {
					pp, rp = float64(wk.Pending)/float64(wk.Passes), float64(wk.Runs)/float64(wk.Passes)
				}
				fmt.Printf("| %s | %d | %s | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n",
					name, fair, lg.name, len(lg.w.Jobs), wk.Passes, pp, rp,
					float64(wk.Walked)/n, float64(wk.RunsRead)/n, float64(wk.Moved)/n, float64(wk.ForkTicks)/n, perJob(wk, lg.w))
			}
		}
	}
}

// TestResampledLog: the resampled log is what resampledLog says: n jobs,
// the pool asked for, submits in order, widths within it, and the same
// log from the same seed.
func TestResampledLog(t *testing.T) {
	a, b := resampledLog(t, 2000, 1024, 3), resampledLog(t, 2000, 1024, 3)
	if a.Preemptible() {
		t.Error("the resampled log is preemptible; SDSC-SP2's header says Preemption: No")
	}
	if len(a.Jobs) != 2000 || a.Pool != 1024 {
		t.Fatalf("%d jobs on %d processors, want 2000 on 1024", len(a.Jobs), a.Pool)
	}
	for i := range a.Jobs {
		j := &a.Jobs[i]
		if i > 0 && j.Submit < a.Jobs[i-1].Submit || j.GPUs < 1 || j.GPUs > 1024 || j.GPUs%8 != 0 {
			t.Fatalf("job %d: submit %d, %d GPUs", i, j.Submit, j.GPUs)
		}
		if *j != b.Jobs[i] {
			t.Fatalf("job %d differs between two draws of one seed", i)
		}
	}
}

// TestWorkCountingChangesNothing: counting a policy's work (as the
// scaling test and benchmark do) leaves its replay as it is, fair starts
// included: the same run, record for record, under every policy (and
// slurmSite) on the embedded excerpt; and every policy counts some work,
// its forks' too.
func TestWorkCountingChangesNothing(t *testing.T) {
	w, err := Load(BuiltinExcerpt, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sample := fairSample(w, 50)
	for _, name := range scalingNames {
		t.Run(name, func(t *testing.T) {
			replay := func(work *policy.Work) *trace.Run {
				a, err := Allocator(nil, w, scalingSpec(t, name), nil)
				if err != nil {
					t.Fatal(err)
				}
				run, err := trace.Replay(w, a, trace.ReplayOptions{FairStart: sample, FairSeed: trace.DefaultFairSeed, Work: work})
				if err != nil {
					t.Fatal(err)
				}
				return run
			}
			var work policy.Work
			plain, counted := replay(nil), replay(&work)
			if !reflect.DeepEqual(plain, counted) {
				t.Fatal("the replay counting its work differs from the plain one")
			}
			if work.Passes == 0 || work.Walked == 0 || work.ForkTicks == 0 {
				t.Fatalf("counted %+v: no passes, walks or forks' ticks", work)
			}
		})
	}
}
