package slurmgate

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/bursar-hpc/bursar/client"
)

// Reconciliation (issue 23 item 6, docs/slurm.md): the gate writes each
// accepted job's lease into the job's WcKey ("bursar:LEASE:CAMPAIGN:GPUS:
// EXPIRES", wall-clock unix seconds), which Slurm keeps in its own records
// (jobcomp/filetxt, squeue, sacct where there is accounting). Reading those
// records back lists every job that ran without a lease, past its lease, or
// larger than it, whatever Bursar's own processes did.

// Job is one job as Slurm's records show it.
type Job struct {
	ID, Partition, State, WCKey, Account string
	CPUs                                 int
	Start, End                           time.Time // End zero: still running
}

// LeaseKey is what the gate wrote into a job's WcKey.
type LeaseKey struct {
	Lease    int
	Campaign string
	GPUs     int
	Expires  int64
}

var leaseKeyRE = regexp.MustCompile(`^bursar:([0-9]{1,10}):([A-Za-z0-9][A-Za-z0-9._-]{0,63}):([0-9]{1,6}):([0-9]{1,12})$`)

func ParseLeaseKey(s string) (LeaseKey, bool) {
	m := leaseKeyRE.FindStringSubmatch(s)
	if m == nil {
		return LeaseKey{}, false
	}
	lease, _ := strconv.Atoi(m[1])
	gpus, _ := strconv.Atoi(m[3])
	exp, _ := strconv.ParseInt(m[4], 10, 64)
	return LeaseKey{lease, m[2], gpus, exp}, true
}

// jobcompField finds "Key=" at the start of a line or after a space.
var jobcompField = regexp.MustCompile(`(?:^| )([A-Za-z]+)=`)

// slurmTimeLayout is how Slurm prints times (the controller's local time).
const slurmTimeLayout = "2006-01-02T15:04:05"

// slurmTime parses a time as Slurm prints it; "Unknown" and "None" (a job
// cancelled before it started) are the zero time.
func slurmTime(s string, loc *time.Location) (time.Time, error) {
	if s == "Unknown" || s == "None" {
		return time.Time{}, nil
	}
	return time.ParseInLocation(slurmTimeLayout, s, loc)
}

// ReadJobcomp parses a jobcomp/filetxt file: one finished job a line,
// "Key=value" fields separated by spaces, times in loc (the controller's
// zone).
func ReadJobcomp(r io.Reader, name string, loc *time.Location) ([]Job, error) {
	var jobs []Job
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		f := map[string]string{}
		idx := jobcompField.FindAllStringSubmatchIndex(text, -1)
		for i, m := range idx {
			end := len(text)
			if i+1 < len(idx) {
				end = idx[i+1][0]
			}
			f[text[m[2]:m[3]]] = strings.TrimSpace(text[m[1]:end])
		}
		j := Job{ID: f["JobId"], Partition: f["Partition"], State: f["JobState"], WCKey: f["WcKey"], Account: f["Account"]}
		var err error
		if j.CPUs, err = strconv.Atoi(f["ProcCnt"]); err != nil || j.ID == "" {
			return nil, fmt.Errorf("%s:%d: not a jobcomp/filetxt record (JobId and ProcCnt wanted)", name, line)
		}
		if j.Start, err = slurmTime(f["StartTime"], loc); err != nil {
			return nil, fmt.Errorf("%s:%d: StartTime: %w", name, line, err)
		}
		if j.End, err = slurmTime(f["EndTime"], loc); err != nil {
			return nil, fmt.Errorf("%s:%d: EndTime: %w", name, line, err)
		}
		jobs = append(jobs, j)
	}
	return jobs, sc.Err()
}

// RunningJobs lists the jobs squeue shows running (or completing).
func RunningJobs(c Cluster) ([]Job, error) {
	ctx, cancel := context.WithTimeout(context.Background(), CmdTimeout)
	defer cancel()
	jobs, err := c.Running(ctx)
	if err != nil {
		return nil, fmt.Errorf("squeue: %w", err)
	}
	return jobs, nil
}

// Finding is one job that broke its lease.
type Finding struct {
	Job  Job
	Kind string // "no lease", "past its lease", "larger than its lease", "a second job on its lease"
	Note string
}

// Bindings are the journal's slurm-job records (service/slurmjob.go):
// the job each lease was bound to, by "campaign:lease" (the campaign in
// lower case, as in the WcKey; the campaign's own lease id).
type Bindings map[string]string

func bindingKey(campaign string, lease int) string {
	return strings.ToLower(campaign) + ":" + strconv.Itoa(lease)
}

// JournalReader is what ReadBindings asks the service, with the
// administrator's token (*client.Client answers).
type JournalReader interface {
	Campaigns(ctx context.Context) (*client.CampaignList, error)
	Journal(ctx context.Context, campaign string, p client.Page) (*client.Journal, error)
}

// ReadBindings reads every campaign's journal for its slurm-job records
// (as many as the service retains: --campaign-journal-keep).
func ReadBindings(ctx context.Context, admin JournalReader) (Bindings, error) {
	list, err := admin.Campaigns(ctx)
	if err != nil {
		return nil, err
	}
	b := Bindings{}
	for _, cp := range list.Campaigns {
		for after := int64(0); ; {
			j, err := admin.Journal(ctx, cp.Name, client.Page{After: after, Limit: 1000})
			if err != nil {
				return nil, fmt.Errorf("the journal of %s: %w", cp.Name, err)
			}
			for _, r := range j.Records {
				var rec struct {
					Event, Campaign, Job string
					Lease                int
				}
				if json.Unmarshal(r.Record, &rec) == nil && rec.Event == "slurm-job" {
					b[bindingKey(rec.Campaign, rec.Lease)] = rec.Job
				}
			}
			if len(j.Records) == 0 || j.Next <= after {
				break
			}
			after = j.Next
		}
	}
	return b, nil
}

// Reconcile checks jobs against the leases in their WcKeys: at now for
// jobs still running. slack is the end-time tolerance (Slurm's records
// count whole seconds). With the journal's bindings (nil: not read), a job
// on a lease the journal binds to another job is a Finding too (one token,
// one job).
func Reconcile(jobs []Job, ungated map[string]bool, now time.Time, slack time.Duration, bound Bindings) []Finding {
	var out []Finding
	for _, j := range jobs {
		if ungated[j.Partition] || j.Start.IsZero() {
			continue // not checked, or never ran
		}
		k, ok := ParseLeaseKey(j.WCKey)
		if !ok {
			out = append(out, Finding{j, "no lease", "WcKey " + strconv.Quote(j.WCKey)})
			continue
		}
		end := j.End
		if end.IsZero() {
			end = now
		}
		if over := end.Sub(time.Unix(k.Expires, 0)); over > slack {
			out = append(out, Finding{j, "past its lease", fmt.Sprintf("lease %d ended %s, the job %v later", k.Lease,
				time.Unix(k.Expires, 0).Format(slurmTimeLayout), over)})
		}
		if j.CPUs > k.GPUs {
			out = append(out, Finding{j, "larger than its lease", fmt.Sprintf("%d CPUs on lease %d of %d", j.CPUs, k.Lease, k.GPUs)})
		}
		if first, ok := bound[bindingKey(k.Campaign, k.Lease)]; ok && first != j.ID {
			out = append(out, Finding{j, "a second job on its lease", fmt.Sprintf("the journal binds lease %d of %s to job %s", k.Lease, k.Campaign, first)})
		}
	}
	return out
}

// Report writes one line per finding and the summary line of `bursar slurm
// reconcile`: how many jobs were checked, how many broke their lease in
// each way and, with the journal's bindings, how many the journal binds.
func Report(w io.Writer, jobs []Job, found []Finding, bound Bindings) {
	counts := map[string]int{}
	for _, f := range found {
		counts[f.Kind]++
		fmt.Fprintf(w, "job %s (%s, %s, %d CPUs): %s: %s\n", f.Job.ID, f.Job.Partition, f.Job.State, f.Job.CPUs, f.Kind, f.Note)
	}
	fmt.Fprintf(w, "%d jobs checked: %d without a lease, %d past their lease, %d larger than their lease",
		len(jobs), counts["no lease"], counts["past its lease"], counts["larger than its lease"])
	if n := counts["after its lease's release"]; n > 0 {
		fmt.Fprintf(w, ", %d after their lease's release", n)
	}
	if bound != nil {
		n := 0
		for _, j := range jobs {
			if k, ok := ParseLeaseKey(j.WCKey); ok && bound[bindingKey(k.Campaign, k.Lease)] == j.ID {
				n++
			}
		}
		fmt.Fprintf(w, "; the journal binds %d of them to their lease, %d are a second job on a lease", n, counts["a second job on its lease"])
	}
	fmt.Fprintln(w)
}
