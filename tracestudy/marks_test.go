package tracestudy

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/static"
	"github.com/bursar-hpc/bursar/swf"
	"github.com/bursar-hpc/bursar/trace"
)

// A run whose condo minima exceed the pool is marked: pool 10, groups 1,
// 2 and 3 whose widest jobs are 8, 6 and 1 GPUs (minima 15 > 10). static
// with partitions condo marks the run "minima scaled", summary.json's run
// carries the mark and the study warns of it, naming policy and window;
// with partitions share it makes no mark.
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
		partitions string
		marks      []string
	}{{static.PartitionsCondo, []string{static.MarkMinimaScaled}}, {static.PartitionsShare, nil}} {
		k := policies.TraceKnobs()
		static.Slot.Edit(&k).Partitions = c.partitions
		res, _, err := RunWindow(w, win, Spec{Policy: static.Name, Knobs: k}, RunOptions{})
		require.NoError(t, err)
		require.Equal(t, c.marks, res.Marks, c.partitions)
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
