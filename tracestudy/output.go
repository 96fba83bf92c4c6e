package tracestudy

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"text/tabwriter"

	"github.com/bursar-hpc/bursar/figures"
	"github.com/bursar-hpc/bursar/internal/atomicfile"
	"github.com/bursar-hpc/bursar/trace"
)

// TraceInfo describes the workload in summary.json.
type TraceInfo struct {
	Name     string         `json:"name"`
	Pool     int            `json:"pool"`
	Jobs     int            `json:"jobs"`
	Records  int            `json:"records"`
	Skipped  map[string]int `json:"skipped"`
	Users    int            `json:"campaigns"`
	Groups   int            `json:"groups"`
	From     int64          `json:"window_from"`
	Until    int64          `json:"window_until"`
	FirstSub int64          `json:"first_submit"`
}

// Info summarizes w for summary.json.
func Info(w *trace.Workload, name string, from, until int64) TraceInfo {
	ti := TraceInfo{Name: name, Pool: w.Pool, Jobs: len(w.Jobs), Records: w.Records, Skipped: map[string]int{},
		Users: len(w.Campaigns), Groups: len(w.Groups), From: from, Until: until}
	if len(w.Jobs) > 0 {
		ti.FirstSub = w.Jobs[0].Submit
	}
	ti.Skipped["no_run_time"] = w.Skipped.NoRunTime
	ti.Skipped["no_processors"] = w.Skipped.NoProcs
	ti.Skipped["too_wide"] = w.Skipped.TooWide
	return ti
}

// Summary is summary.json.
type Summary struct {
	Experiment string    `json:"experiment"`
	Trace      TraceInfo `json:"trace"`
	Runs       []Result  `json:"runs"`
}

// marshal writes summary.json with NaN as null (a class that ran no job
// has NaN statistics).
func marshal(s Summary) ([]byte, error) {
	runs := make([]any, len(s.Runs))
	for i, r := range s.Runs {
		runs[i] = resultMap(r)
	}
	b, err := json.MarshalIndent(map[string]any{"experiment": s.Experiment, "trace": s.Trace, "runs": runs}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func num(x float64) any {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return x
}

func statsMap(s trace.Stats) map[string]any {
	return map[string]any{"jobs": s.Jobs, "mean_wait": num(s.MeanWait), "p50_wait": num(s.P50Wait), "p95_wait": num(s.P95Wait),
		"mean_bsld": num(s.MeanBSLD), "p95_bsld": num(s.P95BSLD)}
}

func resultMap(r Result) map[string]any {
	m := map[string]any{
		"policy": r.Policy, "jobs": r.Jobs, "unserved": r.Unserved, "unfinished": r.Unfinished, "preemptions": r.Preemptions,
		"lost_gpu_seconds": r.LostGPUSeconds, "all": statsMap(r.All), "utilization": num(r.Utilization),
		"held_utilization": num(r.HeldUtil), "jain": num(r.Jain), "makespan": r.Makespan, "ticks": r.Ticks,
	}
	bc := map[string]any{}
	for k, s := range r.ByClass {
		bc[k] = statsMap(s)
	}
	m["by_class"] = bc
	if r.WindowDays > 0 {
		m["window_days"] = r.WindowDays
		m["min_runtime_s"] = r.MinRuntime
	}
	return m
}

// csvHeader is runs.csv's columns.
var csvHeader = []string{"experiment", "policy", "window_days", "min_runtime_s", "jobs", "unserved", "unfinished", "preemptions", "lost_gpu_seconds",
	"mean_wait", "p50_wait", "p95_wait", "mean_bsld", "p95_bsld", "utilization", "held_utilization", "jain", "makespan", "ticks"}

func cell(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

func writeCSV(path, experiment string, rs []Result) error {
	return atomicfile.WriteFunc(path, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		if err := cw.Write(csvHeader); err != nil {
			return err
		}
		for _, r := range rs {
			wd, mr := "", ""
			if r.WindowDays > 0 {
				wd, mr = strconv.Itoa(r.WindowDays), strconv.Itoa(r.MinRuntime)
			}
			row := []string{experiment, r.Policy, wd, mr, strconv.Itoa(r.Jobs), strconv.Itoa(r.Unserved), strconv.Itoa(r.Unfinished), strconv.Itoa(r.Preemptions),
				strconv.FormatInt(r.LostGPUSeconds, 10), cell(r.All.MeanWait), cell(r.All.P50Wait), cell(r.All.P95Wait),
				cell(r.All.MeanBSLD), cell(r.All.P95BSLD), cell(r.Utilization), cell(r.HeldUtil), cell(r.Jain),
				strconv.FormatInt(r.Makespan, 10), strconv.FormatInt(r.Ticks, 10)}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	})
}

// Write writes summary.json, runs.csv and the experiment's figure into
// out and returns the files written, relative to out.
func Write(out, experiment string, f figures.Format, info TraceInfo, rs []Result) ([]string, error) {
	b, err := marshal(Summary{Experiment: experiment, Trace: info, Runs: rs})
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(filepath.Join(out, "summary.json"), b); err != nil {
		return nil, err
	}
	if err := writeCSV(filepath.Join(out, "runs.csv"), experiment, rs); err != nil {
		return nil, err
	}
	fig := "fig_trace." + string(f)
	if experiment == "budget-knobs" {
		fig = "fig_budget_knobs." + string(f)
		err = WriteBudgetKnobsFigure(filepath.Join(out, fig), f, info.Name, rs)
	} else {
		err = WriteTraceFigure(filepath.Join(out, fig), f, info.Name, rs)
	}
	if err != nil {
		return nil, err
	}
	return []string{"summary.json", "runs.csv", fig}, nil
}

// PrintTable prints one row per run.
func PrintTable(w io.Writer, experiment string, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if experiment == "budget-knobs" {
		fmt.Fprintln(tw, "W (d)\tm\tunfinished\tmean wait (s)\tp95 wait (s)\tmean bsld\tJain\tpreemptions\tlost (GPU-h)\t")
	} else {
		fmt.Fprintln(tw, "policy\tjobs\tunserved\tunfinished\tmean wait (s)\tp95 wait (s)\tmean bsld\tp95 bsld\tutil\tJain\tpreemptions\tlost (GPU-h)\t")
	}
	for _, r := range rs {
		lost := float64(r.LostGPUSeconds) / 3600
		if experiment == "budget-knobs" {
			fmt.Fprintf(tw, "%d\t%s\t%d\t%.0f\t%.0f\t%.1f\t%.3f\t%d\t%.0f\t\n", r.WindowDays, fmtDur(r.MinRuntime), r.Unfinished, r.All.MeanWait, r.All.P95Wait, r.All.MeanBSLD, r.Jain, r.Preemptions, lost)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.0f\t%.0f\t%.1f\t%.1f\t%.3f\t%.3f\t%d\t%.0f\t\n", r.Policy, r.Jobs, r.Unserved, r.Unfinished, r.All.MeanWait, r.All.P95Wait, r.All.MeanBSLD, r.All.P95BSLD, r.Utilization, r.Jain, r.Preemptions, lost)
	}
	return tw.Flush()
}
