package slurm_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/fifo"
	"github.com/bursar-hpc/bursar/policy/slurm"
	"github.com/bursar-hpc/bursar/swf"
	"github.com/bursar-hpc/bursar/trace"
)

// job is one line of a hand-made log: submit time, GPUs, run = estimate.
type job struct{ submit, gpus, run int }

// workload reads jobs as an SWF log on a pool of pool GPUs.
func workload(t *testing.T, pool int, jobs []job) *trace.Workload {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "; MaxProcs: %d\n", pool)
	for i, j := range jobs {
		fmt.Fprintf(&b, "%d %d -1 %d %d -1 -1 %d %d -1 1 1 1 -1 1 -1 -1 -1\n", i+1, j.submit, j.run, j.gpus, j.gpus, j.run)
	}
	r, err := swf.NewReader(strings.NewReader(b.String()), "hand.swf")
	require.NoError(t, err)
	w, err := trace.Read(r, trace.Options{})
	require.NoError(t, err)
	require.Len(t, w.Jobs, len(jobs))
	return w
}

// starts replays w under a and returns each job's start.
func starts(t *testing.T, w *trace.Workload, a policy.Allocator) []int64 {
	t.Helper()
	run, err := trace.Replay(w, a, trace.ReplayOptions{})
	require.NoError(t, err)
	return run.Start
}

func slurmStarts(t *testing.T, w *trace.Workload, knobs slurm.Knobs) []int64 {
	t.Helper()
	a, err := slurm.New(policy.DefaultConfig(w.Pool), knobs)
	require.NoError(t, err)
	return starts(t, w, a)
}

// The four-job log of issue 30 on 10 GPUs: A 6 GPUs at 0, B 8 at 1, C 10
// at 2, each 1,000 s; D 2 GPUs at 3 for 10,000 s. Estimates are exact.
var fourJobs = []job{{0, 6, 1000}, {1, 8, 1000}, {2, 10, 1000}, {3, 2, 10000}}

// Worked by hand, in the log's seconds (trace.Replay's tick t is the log's
// second t − 1 here, so the bf_interval passes fall at seconds 29, 59, …;
// reservation times below are ticks). A starts at 0; the main scheduler stops at B (8 > 4
// free), and C and D wait behind it.
//
// fifo (EASY): the head B's shadow time is A's end, 1,000, with 10 − 8 =
// 2 extra GPUs; D (2 GPUs) fits in them and starts at 3, so it protects
// only B. B starts at 1,000 and ends at 2,000, but C needs all 10 GPUs and
// D holds 2 until 10,003: C starts at 10,003.
//
// slurm: the first backfill pass, at tick 30 (bf_interval), tests B, C, D
// on the map (4 free until A's end, tick 1,001; 10 after). B's earliest
// start is 1,001: reserved over [1,001, 1,980) (the end rounded down to
// bf_resolution 60, backfill.c). C's is
// 1,980, when B's reservation ends: reserved over [1,980, 2,940). D fits
// now, but not for 10,000 s: the map has 0 free in C's reservation, so its
// earliest start is 2,940 and it does not backfill. A ends at 1,000: B
// starts (main scheduler); at 2,000 C; at 3,000 D. C starts at 2,000.
func TestFourJobsEveryTestedJobIsProtected(t *testing.T) {
	w := workload(t, 10, fourJobs)
	f, err := fifo.New(policy.DefaultConfig(w.Pool))
	require.NoError(t, err)
	require.Equal(t, []int64{0, 1000, 10003, 3}, starts(t, w, f), "fifo (EASY)")
	require.Equal(t, []int64{0, 1000, 2000, 3000}, slurmStarts(t, w, slurm.DefaultKnobs()), "slurm")
}

// bf_window: a job whose earliest start lies beyond the window gets no
// reservation, and a later job may take its GPUs.
//
// 10 GPUs. A (6 GPUs, 2 days = 172,800 s) starts at 0. B (8 GPUs, 1,000
// s) at 1: its earliest start is A's end, 172,800 s, beyond now + bf_window
// (86,400 s by default) at every pass before 86,400. C (4 GPUs, 200,000 s)
// at 2 fits in the 4 GPUs free. By default the pass at tick 30 (second
// 29) reserves nothing for B and starts C; B waits for C as well: A ends
// at 172,800 (6 free, not 8) and C at 200,029, when B starts.
//
// With bf_window = 3 days B is reserved from tick 172,801 to 173,760
// (its end rounded down to bf_resolution); C would hold 4 GPUs through it, where only 2 are free, so it waits: B starts at 172,800 and C when
// B ends, 173,800. (fifo's EASY protects its head, B, the same way.)
func TestBfWindowBeyondGetsNoReservation(t *testing.T) {
	w := workload(t, 10, []job{{0, 6, 172800}, {1, 8, 1000}, {2, 4, 200000}})
	require.Equal(t, []int64{0, 200029, 29}, slurmStarts(t, w, slurm.DefaultKnobs()), "bf_window 1 day")
	k := slurm.DefaultKnobs()
	k.BfWindow = 3 * 86400
	require.Equal(t, []int64{0, 172800, 173800}, slurmStarts(t, w, k), "bf_window 3 days")
}

// bf_max_job_test: the pass tests only the first jobs of the queue.
//
// The four-job log and E (2 GPUs, 500 s) at 4. At tick 30 (second 29) the
// queue is B, C, D, E. By default (500) the pass reserves B over [1,001,
// 1,980), C over [1,980, 2,940), D from 2,940, and E fits in the 4 GPUs
// free over [30, 530), before B's reservation: it starts at second 29.
// With bf_max_job_test = 3 the pass stops after D and E waits; at second
// 1,000 A ends and B starts, and the pass at tick 1,020 (second 1,019)
// tests C, D, E: E fits in the 2 GPUs B leaves free over [1,020, 1,520),
// before C's reservation at B's estimated end, 2,001, and starts. The others start as in the
// four-job log.
func TestBfMaxJobTestStopsThePass(t *testing.T) {
	w := workload(t, 10, append(fourJobs[:4:4], job{4, 2, 500}))
	require.Equal(t, []int64{0, 1000, 2000, 3000, 29}, slurmStarts(t, w, slurm.DefaultKnobs()), "bf_max_job_test 500")
	k := slurm.DefaultKnobs()
	k.BfMaxJobTest = 3
	require.Equal(t, []int64{0, 1000, 2000, 3000, 1019}, slurmStarts(t, w, k), "bf_max_job_test 3")
}
