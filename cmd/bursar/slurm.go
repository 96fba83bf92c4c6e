package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/bursar-hpc/bursar/internal/slurmtoken"
)

// readSlurmKey reads the key that signs Slurm lease tokens ("" path: none).
// Surrounding white space is not part of the key, so that a key file
// written with echo works in both places.
func readSlurmKey(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := slurmtoken.ReadKey(path)
	if err != nil {
		return nil, fmt.Errorf("--slurm-key-file: %w", err)
	}
	return b, nil
}

const slurmCheckDescription = `Checks a Slurm lease token (what 'bursar lease --slurm' puts in the job's --comment) with the
key the service signs with, and prints one line for the job_submit plugin (scripts/slurm/job_submit.lua):

   ok LEASE CAMPAIGN GPUS SECONDS_LEFT ACCOUNT EXPIRES MINUTES

(EXPIRES: the lease's end, unix seconds; MINUTES: the time limit the gate gives the job) or, with exit status 1, 'refuse: REASON'.

--key-file: the key the service signs with (serve --slurm-key-file). --once-dir: record each lease
that admitted a job in this folder (writable by SlurmUser only) and refuse its token a second time:
one token, one job; --verify: leave a verifier that unspends the token a few seconds later if no
job carries it (slurmctld refused the submission after the plugin). The job's own flags, which the
plugin reads from the job description: --cpus (its size in CPUs), --account, --user (whose job it
is), the GPU requests as Slurm writes them (--tres-per-job, -node, -task, -socket: 'gres:gpu:2'),
-N as --min-nodes/--max-nodes, -n as --tasks, --array, and --unit (what a lease's size counts: cpu,
where CPUs stand in for GPUs, or gpu). With any of them the job must fit the lease (no more CPUs or
GPUs, the token's account and user), checked before the token is spent, so that a job refused for
its size, account or user leaves the token for a corrected one. The small
bursar-slurm-check binary (cmd/bursar-slurm-check) does the same with the same arguments and
starts several times faster, which counts inside slurmctld. See docs/slurm.md.`

func slurmCommand() *cli.Command {
	return &cli.Command{
		Name:  "slurm",
		Usage: "Slurm integration: check a lease token (for the job_submit plugin), reconcile",
		Subcommands: []*cli.Command{{
			Name:        "check",
			Usage:       "check a Slurm lease token (and the job it would admit) and print what it grants",
			ArgsUsage:   strings.TrimPrefix(slurmtoken.CheckUsage, "[slurm check] "),
			Description: slurmCheckDescription,
			// The arguments are read by the same code as the small
			// bursar-slurm-check binary's (slurmtoken.RunCheck), so that
			// the plugin may run either with the same line.
			SkipFlagParsing: true,
			Action: func(c *cli.Context) error {
				if a := c.Args().Slice(); len(a) == 1 && (a[0] == "--help" || a[0] == "-h") {
					return cli.ShowSubcommandHelp(c)
				}
				line, ok := slurmtoken.RunCheck(c.Args().Slice(), time.Now())
				fmt.Fprintln(c.App.Writer, line)
				if !ok {
					return cli.Exit("", 1)
				}
				return nil
			},
		}, slurmReconcileCommand(), slurmAuditCommand()},
	}
}

// slurmEnforceFlags are serve's --slurm-enforce, --slurm-grace,
// --slurm-ledger, --slurm-unit (or the unit --pool-from-slurm read),
// --slurm-unleased and --slurm-ungated.
type slurmEnforceFlags struct {
	enforce  bool
	grace    time.Duration
	ledger   string
	unit     string
	unleased string
	ungated  []string
}

var errSlurmEnforceNoKey = errors.New("--slurm-enforce needs --slurm-key-file (the key the tokens are checked with)")
