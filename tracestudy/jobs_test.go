package tracestudy

import (
	"bytes"
	"testing"

	"github.com/bursar-hpc/bursar/trace"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/require"
)

// jobs.parquet, read back into JobRows by parquet-go (an independent
// reader, through JobRow's tags), holds every field of every row: a
// quota-fair replay of six days of the excerpt has preempted jobs (several
// starts), served ones and, at its horizon, unfinished ones.
func TestJobsParquetReadsBackIntoJobRows(t *testing.T) {
	w, err := Load("", trace.Options{From: 21_772_800, Until: 21_772_800 + 6*Day})
	require.NoError(t, err)
	win := Window{From: 21_772_800, Until: 21_772_800 + 6*Day}
	require.NoError(t, win.Measure(Day/2, Day/2))
	st := &Study{Specs: TraceSpecs([]string{"quota-fair", "static"}), Windows: []Window{win}, Loads: []*trace.Workload{w}}
	var many, denied bool
	for _, sp := range st.Specs {
		_, run, err := RunWindow(w, win, sp, RunOptions{Exact: true})
		require.NoError(t, err)
		rows := JobRows(w, run.Records, win, run.Stop)
		for _, r := range rows {
			many = many || len(r.Starts) > 1
			denied = denied || r.Wait == nil
		}
		data, err := jobsParquet(rows)
		require.NoError(t, err)
		got, err := parquet.Read[JobRow](bytes.NewReader(data), int64(len(data)))
		require.NoError(t, err)
		require.Len(t, got, len(rows))
		for i := range rows {
			if len(rows[i].Starts) == 0 {
				rows[i].Starts = nil
			}
			if len(got[i].Starts) == 0 {
				got[i].Starts = nil
			}
		}
		require.Equal(t, rows, got, sp.Policy)
	}
	require.True(t, many, "a job with several starts (the list column)")
	require.True(t, denied, "a denied job (the null cells)")
}
