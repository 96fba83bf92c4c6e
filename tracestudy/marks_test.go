package tracestudy

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/quota"
	"github.com/bursar-hpc/bursar/policy/static"
	"github.com/bursar-hpc/bursar/swf"
	"github.com/bursar-hpc/bursar/trace"
)

// A run whose condo minima exceed the pool is marked: pool 10, groups 1,
// 2 and 3 whose widest jobs are 8, 6 and 1 GPUs (minima 15 > 10). static
// (condo, the default) marks the run "minima scaled", summary.json's run
// carries the mark and the study warns of it, naming policy and window;
// static-share (partitions by share) makes no mark.
func TestMinimaScaledMarksTheRun(t *testing.T) {
	const log = `; MaxProcs: 10
1 0 -1 600 8 -1 -1 8 600 -1 1 1 1 -1 1 -1 -1 -1
2 10 -1 600 6 -1 -1 6 600 -1 1 2 2 -1 1 -1 -1 -1
3 20 -1 600 1 -1 -1 1 600 -1 1 3 3 -1 1 -1 -1 -1
`
	r, err := swf.NewReader(strings.NewReader(log), "condo.swf")
	require.NoError(t, err)
	w, err := trace.Read(r, trace.Options{})
	require.NoError(t, err)
	win, err := WholeWindow(w, trace.Options{}, 0, 0)
	require.NoError(t, err)
	for _, c := range []struct {
		policy string
		marks  []string
	}{{static.Name, []string{static.MarkMinimaScaled}}, {static.ShareName, nil}} {
		res, _, err := RunWindow(w, win, Spec{Policy: c.policy, Knobs: policies.TraceKnobs()}, RunOptions{})
		require.NoError(t, err)
		require.Equal(t, c.marks, res.Marks, c.policy)
		m := resultMap(&res)
		var b bytes.Buffer
		WarnMarks(&b, []Result{res})
		if c.marks == nil {
			require.NotContains(t, m, "marks")
			require.Empty(t, b.String())
			continue
		}
		require.Equal(t, c.marks, m["marks"])
		require.Equal(t, "warning: static, window 0: minima scaled (the run's marks in summary.json; docs/policies.md)\n", b.String())
	}
}

// A variant runs as its base with the preset's knobs: six days of the
// excerpt under quota-fair and under quota with reclaim_within_cohort
// Any and fair_sharing on give the same summary, preemptions and lost
// work, and so do static-share and static with partitions share; the
// defaults (quota, static) differ from them on the same days.
func TestVariantRunsAsItsPreset(t *testing.T) {
	w, err := Load("", trace.Options{From: 21_772_800, Until: 21_772_800 + 6*Day})
	require.NoError(t, err)
	win := Window{From: 21_772_800, Until: 21_772_800 + 6*Day}
	require.NoError(t, win.Measure(Day/2, Day/2))
	// run is the result as text (a summary holds NaN, which no
	// comparison of values takes as equal to itself), without the name.
	run := func(policy string, k policies.Knobs) string {
		r, _, err := RunWindow(w, win, Spec{Policy: policy, Knobs: k}, RunOptions{})
		require.NoError(t, err)
		r.Policy = ""
		shares := *r.Summary.Shares
		r.Summary.Shares = nil
		return fmt.Sprintf("%+v %+v", r, shares)
	}
	fair, share := policies.TraceKnobs(), policies.TraceKnobs()
	quota.FairPreset(quota.Slot.Edit(&fair))
	static.Slot.Edit(&share).Partitions = static.PartitionsShare
	qf := run(quota.FairName, policies.TraceKnobs())
	require.Equal(t, run(quota.Name, fair), qf)
	require.NotContains(t, qf, "Preemptions:0 ", "quota-fair preempts on these days")
	require.NotEqual(t, run(quota.Name, policies.TraceKnobs()), qf)
	ss := run(static.ShareName, policies.TraceKnobs())
	require.Equal(t, run(static.Name, share), ss)
	require.NotEqual(t, run(static.Name, policies.TraceKnobs()), ss)
}
