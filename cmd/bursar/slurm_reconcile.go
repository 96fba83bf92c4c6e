package main

import (
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/bursar-hpc/bursar/slurmgate"
)

// `bursar slurm reconcile` (issue 23 item 6, docs/slurm.md): the rules are
// slurmgate.Reconcile's; this reads the flags and the records.

func slurmReconcileCommand() *cli.Command {
	return &cli.Command{
		Name:  "reconcile",
		Usage: "list the Slurm jobs that ran without a lease, past one, or larger than one",
		Description: "Reads Slurm's records of finished jobs (--jobcomp: a jobcomp/filetxt file) and the jobs\n" +
			"running now (squeue), and compares each with the lease the gate wrote into its WcKey\n" +
			"(bursar:LEASE:CAMPAIGN:GPUS:EXPIRES). Prints one line per finding and a summary; exits 3\n" +
			"when there is any. Slurm counts times in whole seconds: --slack (default 1s) is the\n" +
			"tolerance on a job's end. With --ledger (serve --slurm-ledger's file) it trusts nothing a user\n" +
			"can edit: a job is on the lease the enforcer's ledger binds it to (no line: no lease, whatever\n" +
			"its WcKey), and its end is the later of Slurm's record and the ledger's last sight of it (a job\n" +
			"cancelled by its user runs on for KillWait after the time jobcomp records); it also lists jobs\n" +
			"that ran after their lease's release and the jobs of one lease (an array's tasks) on more CPUs\n" +
			"at once than the lease. See docs/slurm.md.",
		Flags: []cli.Flag{
			&cli.PathFlag{Name: "jobcomp", Usage: "a jobcomp/filetxt file (JobCompLoc)"},
			&cli.PathFlag{Name: "ledger", Usage: "the enforcer's ledger (serve --slurm-ledger): the leases are read from it, not from the jobs' WcKeys"},
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
			var jobs []slurmgate.Job
			if p := c.Path("jobcomp"); p != "" {
				f, err := os.Open(p)
				if err != nil {
					return cli.Exit("bursar slurm reconcile: --jobcomp: "+err.Error(), 1)
				}
				done, err := slurmgate.ReadJobcomp(f, p, time.Local)
				f.Close()
				if err != nil {
					return cli.Exit("bursar slurm reconcile: "+err.Error(), 1)
				}
				jobs = append(jobs, done...)
			}
			if !c.Bool("no-squeue") {
				run, err := slurmgate.RunningJobs(slurmgate.Exec{})
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
			var bound slurmgate.Bindings
			if c.String("server") != "" {
				admin, ctx, cancel, err := adminCall(c)
				if err != nil {
					return cli.Exit("bursar slurm reconcile: "+err.Error(), 1)
				}
				bound, err = slurmgate.ReadBindings(ctx, admin)
				cancel()
				if err != nil {
					return cli.Exit("bursar slurm reconcile: --server: "+err.Error(), 1)
				}
			}
			var found []slurmgate.Finding
			if p := c.Path("ledger"); p != "" {
				f, err := os.Open(p)
				if err != nil {
					return cli.Exit("bursar slurm reconcile: --ledger: "+err.Error(), 1)
				}
				led, err := slurmgate.ReadLedger(f, p)
				f.Close()
				if err != nil {
					return cli.Exit("bursar slurm reconcile: "+err.Error(), 1)
				}
				found = slurmgate.ReconcileLedger(jobs, led, ungated, time.Now(), c.Duration("slack"))
			} else {
				found = slurmgate.Reconcile(jobs, ungated, time.Now(), c.Duration("slack"), bound)
			}
			slurmgate.Report(c.App.Writer, jobs, found, bound)
			if len(found) > 0 {
				return cli.Exit("", 3)
			}
			return nil
		},
	}
}
