package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/bursar-hpc/bursar/service"
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
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--slurm-key-file: %w", err)
	}
	b = bytes.TrimSpace(b)
	if len(b) < service.MinSlurmKeyBytes {
		return nil, fmt.Errorf("--slurm-key-file %s: the key must be at least %d bytes long, got %d", path, service.MinSlurmKeyBytes, len(b))
	}
	return b, nil
}

const slurmCheckDescription = `Checks a Slurm lease token (what 'bursar lease --slurm' puts in the job's --comment) with the
key the service signs with, and prints one line for the job_submit plugin (scripts/slurm/job_submit.lua):

   ok LEASE CAMPAIGN GPUS SECONDS_LEFT ACCOUNT

or, with exit status 1, 'refuse: REASON'. See docs/slurm.md.`

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
			},
			Action: func(c *cli.Context) error {
				refuse := func(format string, args ...any) error {
					fmt.Fprintf(c.App.Writer, "refuse: "+format+"\n", args...)
					return cli.Exit("", 1)
				}
				if c.NArg() != 1 {
					return refuse("give exactly one token")
				}
				key, err := readSlurmKey(c.Path("key-file"))
				if err != nil {
					return refuse("%v", err)
				}
				now := time.Now()
				l, err := service.VerifySlurmToken(key, c.Args().First(), now)
				if err != nil {
					if l.Lease > 0 {
						return refuse("lease %d of campaign %s: %v", l.Lease, l.Campaign, err)
					}
					return refuse("%v", err)
				}
				left := l.Expires - now.Unix()
				fmt.Fprintf(c.App.Writer, "ok %d %s %d %d %s\n", l.Lease, l.Campaign, l.GPUs, left, strings.ToLower(l.Campaign))
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
