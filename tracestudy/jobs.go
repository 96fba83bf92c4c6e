package tracestudy

import (
	"encoding/csv"
	"fmt"
	"io"

	"path/filepath"
	"strconv"
	"strings"

	"github.com/bursar-hpc/bursar/internal/atomicfile"
	"github.com/bursar-hpc/bursar/internal/parquetfile"
	"github.com/bursar-hpc/bursar/trace"
)

// JobRow is one row of jobs.parquet and jobs.csv (docs/studies.md §4.6):
// one job of one replay, as trace.JobRecord keeps it, with the wait and
// bounded slowdown the summary counts (censored at the replay's stop for
// an unfinished job, none for a denied one) and whether the job is in the
// measured interval. Times are seconds of the log (SWF field 2's clock).
type JobRow struct {
	Job            int64    `parquet:"job"`
	User           int64    `parquet:"user"`
	Group          int64    `parquet:"group"`
	Queue          int64    `parquet:"queue"`
	Class          string   `parquet:"class"`
	GPUs           int64    `parquet:"gpus"`
	Submit         int64    `parquet:"submit"`
	Estimate       int64    `parquet:"estimate"`
	Run            int64    `parquet:"run"`
	Starts         []int64  `parquet:"starts,list"`
	End            int64    `parquet:"end"`
	Preemptions    int64    `parquet:"preemptions"`
	LostGPUSeconds int64    `parquet:"lost_gpu_seconds"`
	State          string   `parquet:"state"`
	LogWait        int64    `parquet:"log_wait"`
	Measured       bool     `parquet:"measured"`
	Wait           *int64   `parquet:"wait,optional"`
	BSLD           *float64 `parquet:"bsld,optional"`
}

// JobColumns are jobs.csv's columns, in JobRow's order.
var JobColumns = []string{"job", "user", "group", "queue", "class", "gpus", "submit", "estimate", "run", "starts", "end",
	"preemptions", "lost_gpu_seconds", "state", "log_wait", "measured", "wait", "bsld"}

// jobsParquetColumns are jobs.parquet's columns: JobColumns with JobRow's
// types (its parquet tags say the same, for readers of the file into a
// JobRow).
func jobsParquetColumns() []parquetfile.Column {
	cols := make([]parquetfile.Column, len(JobColumns))
	for i, name := range JobColumns {
		cols[i] = parquetfile.Column{Name: name, Kind: parquetfile.Int64}
		switch name {
		case "class", "state":
			cols[i].Kind = parquetfile.String
		case "starts":
			cols[i].Kind = parquetfile.Int64List
		case "measured":
			cols[i].Kind = parquetfile.Boolean
		case "wait":
			cols[i].Optional = true
		case "bsld":
			cols[i].Kind, cols[i].Optional = parquetfile.Double, true
		}
	}
	return cols
}

// jobsParquet encodes rows as jobs.parquet.
func jobsParquet(rows []JobRow) ([]byte, error) {
	w, err := parquetfile.NewWriter(jobsParquetColumns())
	if err != nil {
		return nil, err
	}
	for i := range rows {
		r := &rows[i]
		w.Int64(r.Job)
		w.Int64(r.User)
		w.Int64(r.Group)
		w.Int64(r.Queue)
		w.String(r.Class)
		w.Int64(r.GPUs)
		w.Int64(r.Submit)
		w.Int64(r.Estimate)
		w.Int64(r.Run)
		w.Int64List(r.Starts)
		w.Int64(r.End)
		w.Int64(r.Preemptions)
		w.Int64(r.LostGPUSeconds)
		w.String(r.State)
		w.Int64(r.LogWait)
		w.Bool(r.Measured)
		if r.Wait != nil {
			w.Int64(*r.Wait)
		} else {
			w.Null()
		}
		if r.BSLD != nil {
			w.Double(*r.BSLD)
		} else {
			w.Null()
		}
		if err := w.EndRow(); err != nil {
			return nil, err
		}
	}
	return w.Bytes()
}

// JobRows turns the records of a replay of w into rows; win says which
// are measured, stop is the replay's stop (trace.Run.Stop).
func JobRows(w *trace.Workload, recs []trace.JobRecord, win Window, stop int64) []JobRow {
	rows := make([]JobRow, len(recs))
	for i := range recs {
		r, j := &recs[i], &w.Jobs[i]
		row := JobRow{Job: j.Number, User: int64(j.User), Group: int64(j.Group), Queue: int64(j.Queue), Class: j.Class.String(),
			GPUs: int64(j.GPUs), Submit: r.Submit, Estimate: j.Estimate, Run: r.Run, Starts: append([]int64{}, r.Starts...),
			End: r.End, Preemptions: int64(r.Preemptions), LostGPUSeconds: r.LostGPUSeconds, State: r.State.String(),
			LogWait: j.LogWait, Measured: win.MeasureFrom <= r.Submit && r.Submit < win.MeasureUntil}
		if r.State != trace.Denied {
			wt, b := r.Wait(stop), r.BSLD(stop)
			row.Wait, row.BSLD = &wt, &b
		}
		rows[i] = row
	}
	return rows
}

// RunFileLabel names a replay's folder under jobs/: the spec's label as a
// file name, and the window ("fifo-w0", "budget-W7d-m3600s-w1").
func RunFileLabel(s Spec, win Window) string {
	l := s.Policy
	if s.WindowDays > 0 {
		l = fmt.Sprintf("%s-W%dd-m%ds", s.Policy, s.WindowDays, s.MinRuntime)
	}
	return fmt.Sprintf("%s-w%d", l, win.Index)
}

// WriteJobs writes dir/label/jobs.parquet and jobs.csv, atomically.
func WriteJobs(dir, label string, rows []JobRow) error {
	b, err := jobsParquet(rows)
	if err != nil {
		return fmt.Errorf("jobs.parquet: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, label, "jobs.parquet"), b); err != nil {
		return err
	}
	return atomicfile.WriteFunc(filepath.Join(dir, label, "jobs.csv"), func(w io.Writer) error {
		cw := csv.NewWriter(w)
		if err := cw.Write(JobColumns); err != nil {
			return err
		}
		for i := range rows {
			r := &rows[i]
			starts := make([]string, len(r.Starts))
			for k, s := range r.Starts {
				starts[k] = strconv.FormatInt(s, 10)
			}
			wait, bsld := "", ""
			if r.Wait != nil {
				wait = strconv.FormatInt(*r.Wait, 10)
				bsld = strconv.FormatFloat(*r.BSLD, 'g', -1, 64)
			}
			i64 := func(x int64) string { return strconv.FormatInt(x, 10) }
			if err := cw.Write([]string{i64(r.Job), i64(r.User), i64(r.Group), i64(r.Queue), r.Class, i64(r.GPUs), i64(r.Submit),
				i64(r.Estimate), i64(r.Run), strings.Join(starts, ";"), i64(r.End), i64(r.Preemptions), i64(r.LostGPUSeconds),
				r.State, i64(r.LogWait), strconv.FormatBool(r.Measured), wait, bsld}); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	})
}
