package main

import (
	"context"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/bursar-hpc/bursar/internal/slurmtoken"
	"github.com/bursar-hpc/bursar/slurmgate"
)

// `bursar slurm audit` (issue 35, docs/slurm.md "Enabling the gate with
// jobs already queued"): the jobs in the queue that run, or would run,
// without a lease; the rule is slurmgate.Unleased.

func slurmAuditCommand() *cli.Command {
	return &cli.Command{
		Name:  "audit",
		Usage: "list the queued and running Slurm jobs in gated partitions without a lease (queued before the gate)",
		Description: "Reads the queue (squeue) and lists every job, pending or running, in a partition the gate\n" +
			"does not let through (--ungated: its UNGATED) whose comment is not a lease token or, with\n" +
			"--key-file, not one signed with the service's key. Prints one line per job and a summary;\n" +
			"exits 3 when there is any. serve --slurm-enforce --slurm-unleased hold|cancel acts on them.\n" +
			"See docs/slurm.md.",
		Flags: []cli.Flag{
			&cli.PathFlag{Name: "key-file", Usage: "the key the service signs tokens with (serve --slurm-key-file): a token it did not sign is no lease"},
			&cli.StringSliceFlag{Name: "ungated", Usage: "partitions the gate lets through (not checked)"},
		},
		Action: func(c *cli.Context) error {
			var key []byte
			if p := c.Path("key-file"); p != "" {
				k, err := slurmtoken.ReadKey(p)
				if err != nil {
					return cli.Exit("bursar slurm audit: --key-file: "+err.Error(), 1)
				}
				key = k
			}
			ctx, cancel := context.WithTimeout(context.Background(), slurmgate.CmdTimeout)
			queue, err := slurmgate.Exec{}.Queue(ctx)
			cancel()
			if err != nil {
				return cli.Exit("bursar slurm audit: squeue: "+err.Error(), 1)
			}
			ungated := map[string]bool{}
			for _, p := range c.StringSlice("ungated") {
				ungated[p] = true
			}
			found := slurmgate.Audit(queue, key, ungated, time.Now())
			slurmgate.ReportAudit(c.App.Writer, queue, found)
			if len(found) > 0 {
				return cli.Exit("", 3)
			}
			return nil
		},
	}
}
