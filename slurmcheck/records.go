package slurmcheck

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ReadReplay reads a finished real replay from its state folder: each
// job's jobcomp/filetxt record (found by its name, v<ID>; it must have
// COMPLETED) and, from slurmctld's log, the millisecond its submission
// was taken, it started and it was done. Times are from the epoch, the
// whole second of the first submission.
func ReadReplay(dir string, jobs []Job) ([]Observed, error) {
	index := make(map[string]int, len(jobs))
	for i, j := range jobs {
		index["v"+strconv.Itoa(j.ID)] = i
	}
	recs, err := readJobcomp(filepath.Join(dir, "jobcomp.txt"), index)
	if err != nil {
		return nil, err
	}
	byID := make(map[int]int, len(recs))
	for i, r := range recs {
		if r.id == 0 {
			return nil, fmt.Errorf("%s: no record of job v%d", filepath.Join(dir, "jobcomp.txt"), jobs[i].ID)
		}
		byID[r.id] = i
	}
	stamps, err := readCtldLog(filepath.Join(dir, "slurmctld.log"), byID, len(jobs))
	if err != nil {
		return nil, err
	}
	first := int64(math.MaxInt64)
	for _, s := range stamps {
		first = min(first, s[0])
	}
	epoch := first / 1000 // the whole second (unix times here are positive)
	at := func(ms int64) float64 { return float64(ms-epoch*1000) / 1000 }
	obs := make([]Observed, len(jobs))
	for i, r := range recs {
		obs[i] = Observed{SlurmID: r.id, Submit: r.submit - epoch, Start: r.start - epoch, End: r.end - epoch,
			SubmitAt: at(stamps[i][0]), StartAt: at(stamps[i][1]), EndAt: at(stamps[i][2])}
	}
	return obs, nil
}

// jobcompRecord is one job's jobcomp/filetxt line: Slurm's job id and its
// times in whole unix seconds.
type jobcompRecord struct {
	id                 int
	submit, start, end int64
}

// readJobcomp reads jobcomp/filetxt's records (one line per finished job,
// KEY=VALUE fields: JobId, Name, JobState, SubmitTime, StartTime, EndTime
// in local time) of the jobs named in index.
func readJobcomp(path string, index map[string]int) ([]jobcompRecord, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	recs := make([]jobcompRecord, len(index))
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		f := map[string]string{}
		for _, kv := range strings.Fields(sc.Text()) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				f[k] = v
			}
		}
		i, ok := index[f["Name"]]
		if !ok {
			continue
		}
		id, err := strconv.Atoi(f["JobId"])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: JobId %q is not a number", path, line, f["JobId"])
		}
		if f["JobState"] != "COMPLETED" {
			return nil, fmt.Errorf("%s:%d: job %s ended %s, not COMPLETED (a sleep that Slurm cut short?)", path, line, f["Name"], f["JobState"])
		}
		r := jobcompRecord{id: id}
		for _, t := range []struct {
			key string
			to  *int64
		}{{"SubmitTime", &r.submit}, {"StartTime", &r.start}, {"EndTime", &r.end}} {
			at, err := time.ParseInLocation("2006-01-02T15:04:05", f[t.key], time.Local)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %s: %v", path, line, t.key, err)
			}
			*t.to = at.Unix()
		}
		recs[i] = r
	}
	return recs, sc.Err()
}

// The slurmctld log lines (22.05, info level) that stamp a job's submit,
// start (by the backfill pass or the main scheduler) and end.
var (
	ctldLine   = regexp.MustCompile(`^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})\] (.*)$`)
	ctldSubmit = regexp.MustCompile(`^_slurm_rpc_submit_batch_job: JobId=(\d+) `)
	ctldStart  = regexp.MustCompile(`^(?:sched/backfill: _start_job: Started JobId=|sched: Allocate JobId=)(\d+) `)
	ctldDone   = regexp.MustCompile(`^_job_complete: JobId=(\d+) done`)
)

// readCtldLog reads each job's submit, start and done times (unix
// milliseconds) from slurmctld's log; byID maps Slurm's job ids to the
// jobs' indices.
func readCtldLog(path string, byID map[int]int, n int) ([][3]int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	stamps := make([][3]int64, n)
	seen := make([][3]bool, n)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := ctldLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		for k, re := range []*regexp.Regexp{ctldSubmit, ctldStart, ctldDone} {
			e := re.FindStringSubmatch(m[2])
			if e == nil {
				continue
			}
			id, _ := strconv.Atoi(e[1])
			i, ok := byID[id]
			if !ok || seen[i][k] {
				continue
			}
			at, err := time.ParseInLocation("2006-01-02T15:04:05.000", m[1], time.Local)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", path, err)
			}
			stamps[i][k], seen[i][k] = at.UnixMilli(), true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for i := range seen {
		for k, what := range []string{"submitted", "started", "done"} {
			if !seen[i][k] {
				return nil, fmt.Errorf("%s: no line saying that job %d of the log %s", path, i+1, what)
			}
		}
	}
	return stamps, nil
}
