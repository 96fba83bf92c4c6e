//go:build unix

package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/lease"
	"github.com/bursar-hpc/bursar/service"
	"github.com/bursar-hpc/bursar/slurmgate"
)

// campaignTokenEnv names the environment variable that may carry a
// campaign token (lease.TokenEnv).
const campaignTokenEnv = lease.TokenEnv

const leaseDescription = `Negotiates a lease for a campaign, waits for the grant, runs COMMAND on it, stops COMMAND
when the lease ends and releases the lease. COMMAND gets these variables:

   BURSAR_LEASE_ID        the campaign's lease id (equal to its request id; its n-th is n)
   BURSAR_GPUS            the GPUs granted (at least --min-gpus)
   BURSAR_LEASE_EXPIRES   the broker time the lease expires at (broker seconds)
   BURSAR_LEASE_CLASS     the service class
   BURSAR_CAMPAIGN, BURSAR_SERVER

The campaign and administrator tokens are not passed on.

Waiting. The wrapper holds a long poll on the request, so it sees the grant as soon as the
broker's tick makes it. A grant smaller than --min-gpus (the broker grants part of a large
request when at least 16 GPUs are free) is released at once and the wrapper waits until the
supply shows --min-gpus free GPUs, then asks again; with --no-wait it exits 75 instead.
Ctrl-C, SIGTERM or a --wait that runs out withdraws the request, so that nothing is granted
to nobody later.

The notice. A lease of --duration broker seconds ends at its expiry, and COMMAND gets
SIGTERM --expiry-notice broker seconds (default 30) BEFORE it, then SIGKILL at the expiry:
the notice is the time COMMAND has to checkpoint. So with the defaults '--duration 60' gets
SIGTERM 30 broker seconds in; give '--expiry-notice 0' to run the whole lease (SIGKILL at
expiry, no warning), or a longer --duration. The notice must be shorter than the duration.
A lease put under preemption notice (an opportunistic lease reclaimed for a guarantee) gets
SIGTERM at once and SIGKILL when the broker's grace period runs out. A lease that vanishes
otherwise (released by an administrator) gets SIGTERM, then SIGKILL --kill-after later; so
does COMMAND when the wrapper itself receives SIGTERM.

The deadline is local. At the grant the wrapper turns the lease's broker seconds into a
wall-clock deadline (by the service's tick rate) and keeps it even when the service becomes
unreachable: SIGTERM at deadline - notice, SIGKILL at the deadline. It never moves the
deadline later (a service that was down or slow does not lengthen a lease).

The terminal. When the wrapper runs in the foreground of a terminal, COMMAND's process group
becomes the terminal's foreground group, so it can read the terminal and gets Ctrl-C and
Ctrl-Z itself; when COMMAND stops (Ctrl-Z) the wrapper takes the terminal back and stops too,
and 'fg' hands it back. Other signals the wrapper receives (INT, TERM, HUP, QUIT, USR1, USR2)
are forwarded to COMMAND's process group.

The watchdog. The wrapper starts a small process, 'bursar lease-watchdog' (this binary, in
its own process group), that holds a pipe to the wrapper. If the wrapper dies without saying
goodbye (kill -9, OOM killer), the watchdog sends COMMAND's process group SIGTERM, then SIGKILL
--kill-after later, releases the lease (or withdraws the pending request) and exits. It also
sends SIGKILL itself if the wrapper is alive but has not ended COMMAND 2 s after the deadline
(a stopped or hung wrapper). A watchdog rather than PR_SET_PDEATHSIG: the death signal reaches
one process, not the group, cannot release the lease, and is Linux-only.

The whole tree. On Linux the wrapper is COMMAND's child subreaper: a process of COMMAND that
leaves its group (setsid) or loses its parent is still found, in /proc, and gets every signal
the group gets. What COMMAND leaves running when it ends gets SIGTERM, then SIGKILL
--kill-after later; the lease is released only once none of it runs. A COMMAND that cannot be
run fails at once with 127, before anything is asked for.

Slurm. With --slurm, COMMAND is srun, sbatch or salloc: the wrapper asks the service for the
lease's signed token and submits the job with it as its --comment, which slurmctld's gate
(scripts/slurm/job_submit.lua) checks. The job is signalled through Slurm, at the notice with
'scancel --signal=TERM --full' and at the end with scancel (srun turns a SIGTERM of its own into
an immediate kill), and the lease is held until no job with the token is left, so an sbatch that returns at once keeps
its lease for the batch job's life. A --slurm lease lasts whole minutes, as Slurm's time limits
do (--duration rounded up; under 60 refused), and with a notice over 30 s the job also asks Slurm
itself for it (--signal=TERM@NOTICE-30, B: for sbatch: Slurm may send it up to 30 s early), which
then comes even with no Bursar process left.
See docs/slurm.md.

Exit status: COMMAND's own (128+N when signal N ended it, 137 after SIGKILL), 75 when no grant
came, 127 when COMMAND cannot be run, 1 on any other failure of the wrapper's own.

The campaign token comes from --token-file or $` + campaignTokenEnv + `.

Examples:
   bursar lease --campaign sci --gpus 8 --duration 3600 -- python train.py
   BURSAR_TOKEN=$(cat sci.token) bursar lease --campaign sci --gpus 64 --min-gpus 32 -- srun -n 4 ./md
See docs/workflows.md for Parsl, Snakemake and Slurm.`

func leaseCommand() *cli.Command {
	return &cli.Command{
		Name:        "lease",
		Usage:       "run a command on a lease: wait for the grant, run it, stop it when the lease ends, release",
		ArgsUsage:   "-- COMMAND [ARG...]",
		Description: leaseDescription,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "server", Value: "http://" + service.DefaultListen, EnvVars: []string{"BURSAR_SERVER"}, Usage: "the service's base URL"},
			&cli.StringFlag{Name: "campaign", Required: true, EnvVars: []string{"BURSAR_CAMPAIGN"}, Usage: "the campaign the lease is for (required)", DefaultText: "none"},
			&cli.PathFlag{Name: "token-file", EnvVars: []string{"BURSAR_TOKEN_FILE"}, Usage: "read the campaign token from this file", DefaultText: "$" + campaignTokenEnv},
			&cli.IntFlag{Name: "gpus", Required: true, Usage: "GPUs to ask for (required)", DefaultText: "none"},
			&cli.IntFlag{Name: "min-gpus", Usage: "the fewest GPUs COMMAND may run on: a smaller grant is released and the wrapper waits (or exits 75 with --no-wait)", DefaultText: "--gpus, all that was asked"},
			&cli.BoolFlag{Name: "no-wait", Usage: "exit 75 instead of waiting again when a grant is smaller than --min-gpus"},
			&cli.IntFlag{Name: "duration", Value: 3600, Usage: "lease length, broker seconds"},
			&cli.StringFlag{Name: "class", Usage: "service class: deadline, interactive, agent-burst or opportunistic", DefaultText: "the campaign's"},
			&cli.DurationFlag{Name: "wait", Usage: "give up (withdraw the request, exit 75) when no grant came within this wall-clock time", DefaultText: "as long as the request lives, 900 broker s"},
			&cli.IntFlag{Name: "expiry-notice", Value: 30, Usage: "broker seconds before the lease's expiry at which COMMAND gets SIGTERM (SIGKILL comes at the expiry); below --duration"},
			&cli.DurationFlag{Name: "kill-after", Value: 10 * time.Second, Usage: "wall-clock time between SIGTERM and SIGKILL when the lease vanished without notice, the wrapper got SIGTERM, or the wrapper died (watchdog)"},
			&cli.DurationFlag{Name: "poll", Value: time.Second, Usage: "how often the running lease is read (for a preemption notice or a release elsewhere)"},
			&cli.DurationFlag{Name: "progress", Value: 5 * time.Second, Usage: "how often the progress line is printed while waiting (0: never)"},
			&cli.BoolFlag{Name: "slurm", Usage: "COMMAND is srun, sbatch or salloc: submit the job with the lease's signed token as its --comment (for the job_submit gate), " +
				"signal it through scancel, and hold the lease until the job ends (docs/slurm.md)"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing but errors"},
		},
		Action: runLease,
	}
}

// campaignToken reads the campaign token from --token-file or the
// environment.
func campaignToken(c *cli.Context) (string, error) {
	path := c.Path("token-file")
	env, envSet := os.LookupEnv(campaignTokenEnv)
	var tok string
	switch {
	case path != "" && envSet:
		return "", fmt.Errorf("the campaign token is given twice (--token-file and $%s): give it one way", campaignTokenEnv)
	case path != "":
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		tok = strings.TrimSpace(string(b))
	case envSet:
		tok = strings.TrimSpace(env)
	}
	if tok == "" {
		return "", errors.New("no campaign token: give --token-file or $" + campaignTokenEnv)
	}
	return tok, nil
}

// exitWith makes urfave/cli exit with code after printing err (if any).
func exitWith(code int, err error) error {
	if code == 0 {
		return nil
	}
	msg := ""
	if err != nil {
		msg = "bursar lease: " + err.Error()
	}
	return cli.Exit(msg, code)
}

// checkLeaseFlags refuses flag values the wrapper cannot honour, naming
// the flag.
func checkLeaseFlags(c *cli.Context) error {
	gpus, dur, notice := c.Int("gpus"), c.Int("duration"), c.Int("expiry-notice")
	if c.Bool("slurm") {
		whole, err := slurmDuration(dur)
		if err != nil {
			return err
		}
		dur = whole
	}
	switch {
	case gpus < 1:
		return fmt.Errorf("--gpus must be at least 1, got %d", gpus)
	case c.IsSet("min-gpus") && (c.Int("min-gpus") < 1 || c.Int("min-gpus") > gpus):
		return fmt.Errorf("--min-gpus must be between 1 and --gpus (%d), got %d", gpus, c.Int("min-gpus"))
	case dur < 1:
		return fmt.Errorf("--duration must be at least 1 broker second, got %d", dur)
	case notice < 0:
		return fmt.Errorf("--expiry-notice must not be negative, got %d", notice)
	case notice >= dur:
		return fmt.Errorf("--expiry-notice %d is not below --duration %d: COMMAND would get SIGTERM as it starts; "+
			"give a shorter --expiry-notice (0: no notice, SIGKILL at the expiry) or a longer --duration", notice, dur)
	case c.Duration("kill-after") < 0:
		return fmt.Errorf("--kill-after must not be negative, got %v", c.Duration("kill-after"))
	case c.Duration("poll") <= 0:
		return fmt.Errorf("--poll must be positive, got %v", c.Duration("poll"))
	case c.Duration("wait") < 0:
		return fmt.Errorf("--wait must not be negative, got %v", c.Duration("wait"))
	}
	return nil
}

// slurmDuration is a --slurm lease's length: whole minutes, dur rounded
// up. Slurm limits a job in whole minutes, and the gate gives a job the
// lease's whole minutes left (slurmtoken.LimitMinutes): a lease of 20 s
// would get no limit Slurm can count, and 90 s would get one minute, so
// that with no Bursar process left Slurm's limit is the lease's (issue
// 35: a job ran 86 s past a 20 s lease). Under a minute is refused.
func slurmDuration(dur int) (int, error) {
	if dur < 60 {
		return 0, fmt.Errorf("--duration %d is under a minute: a --slurm lease lasts whole minutes (Slurm's time limits count minutes), "+
			"give --duration 60 or more", dur)
	}
	return (dur + 59) / 60 * 60, nil
}

func runLease(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) == 0 {
		return exitWith(lease.ExitError, errors.New("give the command to run after --, e.g. bursar lease --campaign sci --gpus 4 -- ./job.sh"))
	}
	if err := checkLeaseFlags(c); err != nil {
		return exitWith(lease.ExitError, err)
	}
	dur := c.Int("duration")
	if c.Bool("slurm") {
		if _, err := slurmgate.WithToken(args, ""); err != nil {
			return exitWith(lease.ExitError, err)
		}
		whole, _ := slurmDuration(dur) // checked above
		if whole != dur && !c.Bool("quiet") {
			fmt.Fprintf(c.App.ErrWriter, "bursar lease: --duration %d rounded up to %d s: a --slurm lease lasts whole minutes, as Slurm's time limits do\n", dur, whole)
		}
		dur = whole
	}
	tok, err := campaignToken(c)
	if err != nil {
		return exitWith(lease.ExitError, err)
	}
	cl, err := client.New(c.String("server"), tok, client.WithHTTPClient(&http.Client{Timeout: lease.HTTPTimeout}))
	if err != nil {
		return exitWith(lease.ExitError, err)
	}
	o := lease.Options{Client: cl, Server: c.String("server"), Token: tok, Campaign: c.String("campaign"),
		GPUs: c.Int("gpus"), MinGPUs: c.Int("gpus"), NoWait: c.Bool("no-wait"), Duration: dur,
		ExpiryNotice: c.Int("expiry-notice"), Class: c.String("class"), Wait: c.Duration("wait"),
		KillAfter: c.Duration("kill-after"), Poll: c.Duration("poll"), Progress: c.Duration("progress"),
		Slurm: c.Bool("slurm"), Cluster: slurmgate.Exec{}, Out: c.App.ErrWriter, Quiet: c.Bool("quiet"),
		Watchdog: []string{"lease-watchdog"}}
	if c.IsSet("min-gpus") {
		o.MinGPUs = c.Int("min-gpus")
	}
	return exitWith(lease.Run(o, args))
}

func leaseWatchdogCommand() *cli.Command {
	return &cli.Command{
		Name:   "lease-watchdog",
		Usage:  "(internal) started by `bursar lease`: cleans up when the wrapper dies",
		Hidden: true,
		Action: func(c *cli.Context) error { return lease.RunWatchdog(os.Stdin, c.App.ErrWriter, slurmgate.Exec{}) },
	}
}
