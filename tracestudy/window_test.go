package tracestudy

import (
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/budget"
	"github.com/bursar-hpc/bursar/sweep"
	"github.com/bursar-hpc/bursar/swf"
	"github.com/bursar-hpc/bursar/trace"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// Four windows of 14 days over submits from day 0 to day 100: starts
// spread evenly over [0, 86 d], 28 2/3 days apart, each measured less a
// day at either end.
func TestWindowsSpreadEvenly(t *testing.T) {
	ws, err := Windows(0, 100*Day, 4, 14*Day, Day, Day)
	require.NoError(t, err)
	require.Len(t, ws, 4)
	for i, want := range []int64{0, 2476800, 4953600, 7430400} {
		assert.Equal(t, want, ws[i].From, i)
		assert.Equal(t, want+14*Day, ws[i].Until, i)
		assert.Equal(t, want+Day, ws[i].MeasureFrom, i)
		assert.Equal(t, want+13*Day, ws[i].MeasureUntil, i)
	}
	one, err := Windows(5, 100*Day, 1, 14*Day, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(5), one[0].From)

	_, err = Windows(0, 10*Day, 1, 14*Day, Day, Day)
	assert.ErrorContains(t, err, "shorter than one window")
	_, err = Windows(0, 40*Day, 4, 14*Day, Day, Day)
	assert.ErrorContains(t, err, "do not fit disjoint")
	_, err = Windows(0, 40*Day, 1, 2*Day, Day, Day)
	assert.ErrorContains(t, err, "leave nothing to measure")
}

// Over the knobs' whole range: the windows are disjoint, inside the log's
// submits, D long, the first at the first submit and the last ending at
// the last submit (when there are two or more), or an error.
func TestWindowsProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		first := rapid.Int64Range(0, 1e8).Draw(t, "first")
		last := first + rapid.Int64Range(0, 1e8).Draw(t, "span")
		n := rapid.IntRange(1, 50).Draw(t, "n")
		d := rapid.Int64Range(1, 1e7).Draw(t, "d")
		ws, err := Windows(first, last, n, d, 0, 0)
		if err != nil {
			return
		}
		if len(ws) != n || ws[0].From != first {
			t.Fatalf("%d windows from %d", len(ws), ws[0].From)
		}
		if n > 1 && ws[n-1].Until != last {
			t.Fatalf("the last window ends at %d, the last submit is %d", ws[n-1].Until, last)
		}
		for i, w := range ws {
			if w.Until-w.From != d || w.From < first || w.Until > last+d {
				t.Fatalf("window %d: [%d, %d)", i, w.From, w.Until)
			}
			if i > 0 && w.From < ws[i-1].Until {
				t.Fatalf("windows %d and %d overlap", i-1, i)
			}
		}
	})
}

// A t interval worked by hand: 1, 2, 3, 4 have mean 2.5, s = 1.2910, and
// t(0.975, 3) = 3.1824, so the half-width is 3.1824 × 1.2910 ÷ 2 = 2.0543.
func TestTIntervalByHand(t *testing.T) {
	iv := TInterval([]float64{1, 2, 3, math.NaN(), 4})
	assert.Equal(t, 4, iv.N)
	assert.InDelta(t, 2.5, iv.Mean, 1e-12)
	assert.InDelta(t, 2.5-2.0543, iv.Lo, 1e-4)
	assert.InDelta(t, 2.5+2.0543, iv.Hi, 1e-4)
	one := TInterval([]float64{7})
	assert.Equal(t, 7.0, one.Mean)
	assert.True(t, math.IsNaN(one.Lo) && math.IsNaN(one.Hi), "one window gives no interval")
}

// A paired difference is taken window by window: a policy that waits
// exactly one hour longer than the reference in every window differs by
// exactly one hour with a zero-width interval, however much the windows
// themselves differ.
func TestPairedDifferenceWindowByWindow(t *testing.T) {
	st := &Study{Specs: TraceSpecs([]string{"fifo", "quota"}), Windows: make([]Window, 3)}
	rs := make([]Result, 6)
	for k, wait := range []float64{100, 5000, 90000} {
		rs[k].Summary.All.MeanWait = wait
		rs[3+k].Summary.All.MeanWait = wait + 3600
	}
	e := Estimate(st, rs, 0)
	d := e[1].Diffs[metricIndex("mean_wait")]
	assert.Equal(t, "fifo", e[1].Versus)
	assert.InDelta(t, 3600, d.Mean, 1e-9)
	assert.InDelta(t, 3600, d.Lo, 1e-9)
	assert.InDelta(t, 3600, d.Hi, 1e-9)
	assert.Greater(t, e[1].Intervals[metricIndex("mean_wait")].Hi-e[1].Intervals[metricIndex("mean_wait")].Lo, 1e4,
		"the unpaired interval is wide")
}

// The log's record before a window, worked by hand: the window's first
// submit is at 1000 s, so tick t is second t + 999. A job recorded from
// 900 to 1100 s counts ticks −99 … 0 (from 900 − 999 to the window's
// start); one from 100 to 200 s is beyond a 500 s lookback; one of an
// owner with no campaign in the window is left out; one from 600 to 700 s
// counts ticks −399 … −300.
func TestHistoryByHand(t *testing.T) {
	w, err := trace.Read(mustReader(t, "; MaxProcs: 8\n1 1000 0 50 4 -1 -1 4 60 -1 1 7 3 -1 1 -1 -1 -1\n"), trace.Options{})
	require.NoError(t, err)
	recs := []Recorded{
		{User: 7, Group: 3, GPUs: 2, Start: 900, End: 1100},
		{User: 7, Group: 3, GPUs: 2, Start: 100, End: 200},
		{User: 8, Group: 3, GPUs: 1, Start: 950, End: 980},
		{User: 7, Group: 3, GPUs: 1, Start: 600, End: 700},
	}
	h := History(recs, w, trace.Options{}, 500)
	name := w.Campaigns[0].Name
	assert.Equal(t, []baseline.Usage{
		{Campaign: name, Start: -99, End: 1, GPUs: 2},
		{Campaign: name, Start: -399, End: -299, GPUs: 1},
	}, h)
	assert.Nil(t, History(recs, w, trace.Options{}, 0))
}

// --jobs: each replay's jobs.csv and jobs.parquet hold the same rows, and
// they add up to the summary: the counts by state, the preemptions and
// lost work, and the mean wait of the measured jobs.
func TestJobsAddUpToTheSummary(t *testing.T) {
	w, err := Load("", trace.Options{From: 21_772_800, Until: 21_772_800 + 3*Day})
	require.NoError(t, err)
	win := Window{From: 21_772_800, Until: 21_772_800 + 3*Day}
	require.NoError(t, win.Measure(Day/2, Day/2))
	dir := t.TempDir()
	st := &Study{Specs: TraceSpecs([]string{"fifo", "static", "quota"}), Windows: []Window{win}, Loads: []*trace.Workload{w}, JobsDir: dir}
	rs, err := ExecutePlan(context.Background(), st, NewPlan("trace", "", st), sweep.Options{Workers: 2})
	require.NoError(t, err)
	for i, r := range rs {
		label := RunFileLabel(st.Specs[i], win)
		f, err := os.Open(filepath.Join(dir, label, "jobs.csv"))
		require.NoError(t, err)
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		require.NoError(t, err)
		require.Equal(t, JobColumns, rows[0])
		col := map[string]int{}
		for k, c := range rows[0] {
			col[c] = k
		}
		pq, err := parquet.ReadFile[JobRow](filepath.Join(dir, label, "jobs.parquet"))
		require.NoError(t, err)
		require.Len(t, pq, len(rows)-1)
		counts := map[string]int{}
		var preempt, lost int64
		var waits float64
		var measuredNotDenied int
		for k, row := range rows[1:] {
			atoi := func(c string) int64 {
				x, err := strconv.ParseInt(row[col[c]], 10, 64)
				require.NoError(t, err, c)
				return x
			}
			require.Equal(t, atoi("job"), pq[k].Job)
			require.Equal(t, row[col["state"]], pq[k].State)
			preempt += atoi("preemptions")
			lost += atoi("lost_gpu_seconds")
			if row[col["measured"]] != "true" {
				continue
			}
			counts[row[col["state"]]]++
			if row[col["state"]] != "denied" {
				waits += float64(atoi("wait"))
				measuredNotDenied++
			}
		}
		s := r.Summary
		assert.Equal(t, s.Served, counts["served"], r.Policy)
		assert.Equal(t, s.Denied, counts["denied"], r.Policy)
		assert.Equal(t, s.Unfinished, counts["unfinished"], r.Policy)
		assert.Equal(t, s.Jobs, counts["served"]+counts["denied"]+counts["unfinished"], r.Policy)
		assert.Equal(t, int64(r.Preemptions), preempt, r.Policy)
		assert.Equal(t, r.LostGPUSeconds, lost, r.Policy)
		assert.InDelta(t, s.All.MeanWait, waits/float64(measuredNotDenied), 1e-6, r.Policy)
		if r.Policy == "static" {
			assert.Positive(t, s.Denied, "static denies wide jobs: the denied path is exercised")
		}
	}
}

func mustReader(t *testing.T, log string) *swf.Reader {
	t.Helper()
	r, err := swf.NewReader(strings.NewReader(log), "test.swf")
	require.NoError(t, err)
	return r
}

// The mapping knobs reach the options and every spec's knobs: restart
// is budget's, the rest the trace's.
func TestApplyMapping(t *testing.T) {
	specs := append(TraceSpecs([]string{"fifo"}), bkSpecs(t, []int{1, 7}, []int{0})...)
	var opt trace.Options
	m := configs.TraceMapping{By: "group", Shares: "window", Bucket: "hours:12", Restart: "zero",
		Classes: map[string]policy.Class{"standby": policy.Interactive}}
	require.NoError(t, ApplyMapping(m, &opt, specs))
	assert.True(t, opt.ByGroup)
	assert.Equal(t, trace.ShareWindow, opt.Shares)
	assert.Equal(t, "hours:12", opt.Bucket)
	assert.Equal(t, policy.Interactive, opt.Classes["standby"])
	for _, s := range specs {
		assert.Equal(t, baseline.Restart{}, budget.Slot.Get(s.Knobs).Restart, s.Label())
	}
	require.NoError(t, ApplyMapping(configs.TraceMapping{Restart: "checkpoint:600"}, &opt, specs))
	assert.Equal(t, baseline.Restart{Checkpoint: 600}, budget.Slot.Get(specs[2].Knobs).Restart)
	assert.Error(t, ApplyMapping(configs.TraceMapping{By: "users"}, &opt, specs))
	assert.Error(t, ApplyMapping(configs.TraceMapping{Bucket: "hours:x"}, &opt, specs))
}

// A window late in the excerpt starts fairshare and budget from the usage
// the log records before it (§6.16): the study hands it over, and it
// changes what fairshare does.
func TestStudyPreloadsTheLogsRecord(t *testing.T) {
	from := int64(262 * Day)
	opt := trace.Options{From: from, Until: from + 3*Day}
	w, err := Load("", opt)
	require.NoError(t, err)
	recs, err := ReadRecorded("", w.Pool)
	require.NoError(t, err)
	win := Window{From: from, Until: from + 3*Day}
	require.NoError(t, win.Measure(Day/2, Day/2))
	st := &Study{Specs: TraceSpecs([]string{"fifo", "fairshare", "budget"}), Windows: []Window{win}, Loads: []*trace.Workload{w},
		Recorded: recs, Options: opt}
	rs, err := ExecutePlan(context.Background(), st, NewPlan("trace", "", st), sweep.Options{Workers: 1})
	require.NoError(t, err)
	assert.Zero(t, rs[0].PreloadedUsage, "fifo has no usage memory")
	assert.Positive(t, rs[1].PreloadedUsage)
	assert.Positive(t, rs[2].PreloadedUsage)
	empty, _, err := RunWindow(w, win, st.Specs[1], RunOptions{Exact: true})
	require.NoError(t, err)
	assert.NotEqual(t, empty.Summary.All.MeanWait, rs[1].Summary.All.MeanWait, "the preloaded usage changes fairshare's order")
}

// The default window count (docs/studies.md §5.1): min(12, ⌊span ÷ D⌋),
// worked by hand. 100 days of submits hold ⌊100 ÷ 14⌋ = 7 windows of 14
// days; 400 days would hold 28, capped at 12; 13 days hold none of 14;
// and Windows with n 0 lays out that many, disjoint.
func TestDefaultWindowCount(t *testing.T) {
	assert.Equal(t, 7, DefaultWindowCount(0, 100*Day, 14*Day))
	assert.Equal(t, 12, DefaultWindowCount(0, 400*Day, 14*Day))
	assert.Equal(t, 0, DefaultWindowCount(0, 13*Day, 14*Day))
	ws, err := Windows(0, 100*Day, 0, 14*Day, Day, Day)
	require.NoError(t, err)
	assert.Len(t, ws, 7)
	for i := 1; i < len(ws); i++ {
		assert.GreaterOrEqual(t, ws[i].From, ws[i-1].Until, "disjoint")
	}
	_, err = Windows(0, 13*Day, 0, 14*Day, Day, Day)
	assert.ErrorContains(t, err, "shorter than one window")
}
