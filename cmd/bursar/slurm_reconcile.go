package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/bursar-hpc/bursar/client"
)

// Reconciliation (issue 23 item 6, docs/slurm.md): the gate writes each
// accepted job's lease into the job's WcKey ("bursar:LEASE:CAMPAIGN:GPUS:
// EXPIRES", wall-clock unix seconds), which Slurm keeps in its own records
// (jobcomp/filetxt, squeue, sacct where there is accounting). Reading those
// records back lists every job that ran without a lease, past its lease, or
// larger than it, whatever Bursar's own processes did.

// slurmJob is one job as Slurm's records show it.
type slurmJob struct {
	ID, Partition, State, WCKey, Account string
	CPUs                                 int
	Start, End                           time.Time // End zero: still running
}

// leaseKey is what the gate wrote into a job's WcKey.
type leaseKey struct {
	Lease    int
	Campaign string
	GPUs     int
	Expires  int64
}

var leaseKeyRE = regexp.MustCompile(`^bursar:([0-9]{1,10}):([A-Za-z0-9][A-Za-z0-9._-]{0,63}):([0-9]{1,6}):([0-9]{1,12})$`)

func parseLeaseKey(s string) (leaseKey, bool) {
	m := leaseKeyRE.FindStringSubmatch(s)
	if m == nil {
		return leaseKey{}, false
	}
	lease, _ := strconv.Atoi(m[1])
	gpus, _ := strconv.Atoi(m[3])
	exp, _ := strconv.ParseInt(m[4], 10, 64)
	return leaseKey{lease, m[2], gpus, exp}, true
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

// readJobcomp parses a jobcomp/filetxt file: one finished job a line,
// "Key=value" fields separated by spaces, times in loc (the controller's
// zone).
func readJobcomp(r io.Reader, name string, loc *time.Location) ([]slurmJob, error) {
	var jobs []slurmJob
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
		j := slurmJob{ID: f["JobId"], Partition: f["Partition"], State: f["JobState"], WCKey: f["WcKey"], Account: f["Account"]}
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

// runningJobs lists the jobs squeue shows running (or completing).
func runningJobs() ([]slurmJob, error) {
	ctx, cancel := context.WithTimeout(context.Background(), slurmCmdTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "squeue", "-h", "-t", "RUNNING,COMPLETING",
		"-O", "JobID:|,Partition:|,State:|,WCKey:|,Account:|,NumCPUs:|,StartTime:").Output()
	if err != nil {
		return nil, fmt.Errorf("squeue: %w", err)
	}
	var jobs []slurmJob
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) < 7 {
			continue
		}
		j := slurmJob{ID: f[0], Partition: f[1], State: f[2], WCKey: f[3], Account: f[4]}
		j.CPUs, _ = strconv.Atoi(f[5])
		j.Start, _ = time.ParseInLocation(slurmTimeLayout, f[6], time.Local)
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// finding is one job that broke its lease.
type finding struct {
	job  slurmJob
	kind string // "no lease", "past its lease", "larger than its lease"
	note string
}

// journalBindings are the journal's slurm-job records (service/slurmjob.go):
// the job each lease was bound to, by "campaign:lease" (the campaign in
// lower case, as in the WcKey; the campaign's own lease id).
type journalBindings map[string]string

func bindingKey(campaign string, lease int) string {
	return strings.ToLower(campaign) + ":" + strconv.Itoa(lease)
}

// readBindings reads every campaign's journal for its slurm-job records
// (as many as the service retains: --campaign-journal-keep).
func readBindings(ctx context.Context, admin *client.Client) (journalBindings, error) {
	list, err := admin.Campaigns(ctx)
	if err != nil {
		return nil, err
	}
	b := journalBindings{}
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

// reconcile checks jobs against the leases in their WcKeys: at now for
// jobs still running. slack is the end-time tolerance (Slurm's records
// count whole seconds). With the journal's bindings (nil: not read), a job
// on a lease the journal binds to another job is a finding too (one token,
// one job).
func reconcile(jobs []slurmJob, ungated map[string]bool, now time.Time, slack time.Duration, bound journalBindings) []finding {
	var out []finding
	for _, j := range jobs {
		if ungated[j.Partition] || j.Start.IsZero() {
			continue // not checked, or never ran
		}
		k, ok := parseLeaseKey(j.WCKey)
		if !ok {
			out = append(out, finding{j, "no lease", "WcKey " + strconv.Quote(j.WCKey)})
			continue
		}
		end := j.End
		if end.IsZero() {
			end = now
		}
		if over := end.Sub(time.Unix(k.Expires, 0)); over > slack {
			out = append(out, finding{j, "past its lease", fmt.Sprintf("lease %d ended %s, the job %v later", k.Lease,
				time.Unix(k.Expires, 0).Format(slurmTimeLayout), over)})
		}
		if j.CPUs > k.GPUs {
			out = append(out, finding{j, "larger than its lease", fmt.Sprintf("%d CPUs on lease %d of %d", j.CPUs, k.Lease, k.GPUs)})
		}
		if first, ok := bound[bindingKey(k.Campaign, k.Lease)]; ok && first != j.ID {
			out = append(out, finding{j, "a second job on its lease", fmt.Sprintf("the journal binds lease %d of %s to job %s", k.Lease, k.Campaign, first)})
		}
	}
	return out
}

func slurmReconcileCommand() *cli.Command {
	return &cli.Command{
		Name:  "reconcile",
		Usage: "list the Slurm jobs that ran without a lease, past one, or larger than one",
		Description: "Reads Slurm's records of finished jobs (--jobcomp: a jobcomp/filetxt file) and the jobs\n" +
			"running now (squeue), and compares each with the lease the gate wrote into its WcKey\n" +
			"(bursar:LEASE:CAMPAIGN:GPUS:EXPIRES). Prints one line per finding and a summary; exits 3\n" +
			"when there is any. Slurm counts times in whole seconds: --slack (default 1s) is the\n" +
			"tolerance on a job's end. See docs/slurm.md.",
		Flags: []cli.Flag{
			&cli.PathFlag{Name: "jobcomp", Usage: "a jobcomp/filetxt file (JobCompLoc)"},
			&cli.BoolFlag{Name: "no-squeue", Usage: "do not read the running jobs"},
			&cli.StringSliceFlag{Name: "ungated", Usage: "partitions the gate lets through (not checked)"},
			&cli.DurationFlag{Name: "slack", Value: time.Second, Usage: "tolerance on a job's end"},
			&cli.StringFlag{Name: "server", EnvVars: []string{"BURSAR_SERVER"}, Usage: "also read the service's journal (its slurm-job records, with the administrator token): a job on a lease the journal binds to another job is a finding"},
			adminTokenFlag(),
		},
		Action: func(c *cli.Context) error {
			if c.Duration("slack") < 0 {
				return cli.Exit(fmt.Sprintf("bursar slurm reconcile: --slack must not be negative, got %v", c.Duration("slack")), 1)
			}
			var jobs []slurmJob
			if p := c.Path("jobcomp"); p != "" {
				f, err := os.Open(p)
				if err != nil {
					return cli.Exit("bursar slurm reconcile: --jobcomp: "+err.Error(), 1)
				}
				done, err := readJobcomp(f, p, time.Local)
				f.Close()
				if err != nil {
					return cli.Exit("bursar slurm reconcile: "+err.Error(), 1)
				}
				jobs = append(jobs, done...)
			}
			if !c.Bool("no-squeue") {
				run, err := runningJobs()
				if err != nil {
					return cli.Exit("bursar slurm reconcile: "+err.Error(), 1)
				}
				jobs = append(jobs, run...)
			}
			if len(jobs) == 0 && c.Path("jobcomp") == "" && c.Bool("no-squeue") {
				return cli.Exit("bursar slurm reconcile: nothing to read: give --jobcomp, or drop --no-squeue", 1)
			}
			ungated := map[string]bool{}
			for _, p := range c.StringSlice("ungated") {
				ungated[p] = true
			}
			var bound journalBindings
			if c.String("server") != "" {
				admin, ctx, cancel, err := adminCall(c)
				if err != nil {
					return cli.Exit("bursar slurm reconcile: "+err.Error(), 1)
				}
				bound, err = readBindings(ctx, admin)
				cancel()
				if err != nil {
					return cli.Exit("bursar slurm reconcile: --server: "+err.Error(), 1)
				}
			}
			found := reconcile(jobs, ungated, time.Now(), c.Duration("slack"), bound)
			w := c.App.Writer
			counts := map[string]int{}
			for _, f := range found {
				counts[f.kind]++
				fmt.Fprintf(w, "job %s (%s, %s, %d CPUs): %s: %s\n", f.job.ID, f.job.Partition, f.job.State, f.job.CPUs, f.kind, f.note)
			}
			fmt.Fprintf(w, "%d jobs checked: %d without a lease, %d past their lease, %d larger than their lease",
				len(jobs), counts["no lease"], counts["past its lease"], counts["larger than its lease"])
			if bound != nil {
				n := 0
				for _, j := range jobs {
					if k, ok := parseLeaseKey(j.WCKey); ok && bound[bindingKey(k.Campaign, k.Lease)] == j.ID {
						n++
					}
				}
				fmt.Fprintf(w, "; the journal binds %d of them to their lease, %d are a second job on a lease", n, counts["a second job on its lease"])
			}
			fmt.Fprintln(w)
			if len(found) > 0 {
				return cli.Exit("", 3)
			}
			return nil
		},
	}
}
