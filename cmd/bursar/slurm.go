package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/bursar-hpc/bursar/internal/slurmtoken"
)

// slurmCmdTimeout bounds one squeue or scancel call.
const slurmCmdTimeout = 15 * time.Second

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

   ok LEASE CAMPAIGN GPUS SECONDS_LEFT ACCOUNT EXPIRES

(EXPIRES: the lease's end, unix seconds) or, with exit status 1, 'refuse: REASON'. The small
bursar-slurm-check binary (cmd/bursar-slurm-check) does the same with the same arguments and
starts several times faster, which counts inside slurmctld. See docs/slurm.md.`

func slurmCommand() *cli.Command {
	return &cli.Command{
		Name:  "slurm",
		Usage: "Slurm integration: check a lease token (for the job_submit plugin), reconcile",
		Subcommands: []*cli.Command{{
			Name:        "check",
			Usage:       "check a Slurm lease token and print what it grants",
			ArgsUsage:   "TOKEN",
			Description: slurmCheckDescription,
			Flags: []cli.Flag{
				&cli.PathFlag{Name: "key-file", Required: true, Usage: "the key the service signs with (serve --slurm-key-file)"},
				&cli.PathFlag{Name: "once-dir", Usage: "record each lease that admitted a job in this folder and refuse its token a second time: one token, one job (writable by SlurmUser only)"},
			},
			Action: func(c *cli.Context) error {
				if c.NArg() != 1 {
					fmt.Fprintln(c.App.Writer, "refuse: give exactly one token")
					return cli.Exit("", 1)
				}
				// The same check as the small bursar-slurm-check binary.
				line, ok := slurmtoken.Check(c.Path("key-file"), c.Args().First(), c.Path("once-dir"), time.Now())
				fmt.Fprintln(c.App.Writer, line)
				if !ok {
					return cli.Exit("", 1)
				}
				return nil
			},
		}, slurmReconcileCommand()},
	}
}

// slurmEnforceFlags are serve's --slurm-enforce, --slurm-grace and
// --slurm-ledger.
type slurmEnforceFlags struct {
	enforce bool
	grace   time.Duration
	ledger  string
}

var errSlurmEnforceNoKey = errors.New("--slurm-enforce needs --slurm-key-file (the key the tokens are checked with)")
