//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/service"
)

// campaignTokenEnv names the environment variable that may carry a
// campaign token; like the administrator token it has no flag, since a
// command line is visible to every user through ps.
const campaignTokenEnv = "BURSAR_TOKEN"

// Exit statuses of `bursar lease` itself (the command's own status is
// passed through otherwise).
const (
	exitLeaseError = 1  // bad flags, the service refused, or it is unreachable
	exitNoGrant    = 75 // EX_TEMPFAIL: no grant within --wait, or the request expired
)

func leaseCommand() *cli.Command {
	return &cli.Command{
		Name:      "lease",
		Usage:     "run a command on a lease: wait for the grant, run it, stop it when the lease ends, release",
		ArgsUsage: "-- COMMAND [ARG...]",
		Description: "Negotiates a lease for a campaign, waits for the grant (printing a progress line), then\n" +
			"runs COMMAND with these variables added to its environment:\n\n" +
			"   BURSAR_LEASE_ID        the lease id (equal to the request id)\n" +
			"   BURSAR_GPUS            the GPUs granted\n" +
			"   BURSAR_LEASE_EXPIRES   the broker time the lease expires at (broker seconds)\n" +
			"   BURSAR_LEASE_CLASS     the service class\n" +
			"   BURSAR_CAMPAIGN, BURSAR_SERVER\n\n" +
			"The campaign token is not passed on. Signals the wrapper receives (INT, TERM, HUP, QUIT,\n" +
			"USR1, USR2) are forwarded to the command's process group. When the lease is put under\n" +
			"preemption notice the command gets SIGTERM at once and SIGKILL when the notice runs out\n" +
			"(the broker's grace period); when the lease nears its expiry it gets SIGTERM\n" +
			"--expiry-notice broker seconds before it and SIGKILL at it. On exit the lease is released\n" +
			"and `bursar lease` exits with the command's status (128+N when a signal N ended it),\n" +
			"75 when no grant came, 1 on any other failure of its own.\n\n" +
			"The campaign token comes from --token-file or $" + campaignTokenEnv + ".\n\n" +
			"Examples:\n" +
			"   bursar lease --campaign sci --gpus 8 --duration 3600 -- python train.py\n" +
			"   BURSAR_TOKEN=$(cat sci.token) bursar lease --campaign sci --gpus 4 -- srun -n 4 ./md\n" +
			"See docs/workflows.md for Parsl, Snakemake and Slurm.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "server", Value: "http://" + service.DefaultListen, EnvVars: []string{"BURSAR_SERVER"}, Usage: "the service's base URL"},
			&cli.StringFlag{Name: "campaign", Required: true, EnvVars: []string{"BURSAR_CAMPAIGN"}, Usage: "the campaign the lease is for"},
			&cli.PathFlag{Name: "token-file", EnvVars: []string{"BURSAR_TOKEN_FILE"}, Usage: "read the campaign token from this file (default: $" + campaignTokenEnv + ")"},
			&cli.IntFlag{Name: "gpus", Required: true, Usage: "GPUs to lease"},
			&cli.IntFlag{Name: "duration", Value: 3600, Usage: "lease length, broker seconds"},
			&cli.StringFlag{Name: "class", Usage: "service class: deadline, interactive, agent-burst or opportunistic (default: the campaign's)"},
			&cli.DurationFlag{Name: "wait", Usage: "give up (exit 75) when no grant came within this wall-clock time (default: wait as long as the request lives)"},
			&cli.IntFlag{Name: "expiry-notice", Value: 30, Usage: "broker seconds before the lease expires at which the command gets SIGTERM"},
			&cli.DurationFlag{Name: "kill-after", Value: 10 * time.Second, Usage: "when the lease vanished without notice (released elsewhere), wall-clock time between SIGTERM and SIGKILL"},
			&cli.DurationFlag{Name: "poll", Value: time.Second, Usage: "how often the service is asked about the request and the lease"},
			&cli.DurationFlag{Name: "progress", Value: 5 * time.Second, Usage: "how often the progress line is printed while waiting (0: never)"},
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

// leaseRun is one `bursar lease` invocation.
type leaseRun struct {
	c        *cli.Context
	cl       *client.Client
	campaign string
	out      io.Writer // progress and notices; io.Discard with --quiet
	tty      bool
	sigs     chan os.Signal
}

func (r *leaseRun) say(format string, args ...any) {
	fmt.Fprintf(r.out, "bursar lease: "+format+"\n", args...)
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

func runLease(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) == 0 {
		return exitWith(exitLeaseError, errors.New("give the command to run after --, e.g. bursar lease --campaign sci --gpus 4 -- ./job.sh"))
	}
	if c.Int("gpus") < 1 || c.Int("duration") < 1 || c.Int("expiry-notice") < 0 || c.Duration("poll") <= 0 {
		return exitWith(exitLeaseError, errors.New("--gpus and --duration must be at least 1, --expiry-notice at least 0, --poll positive"))
	}
	tok, err := campaignToken(c)
	if err != nil {
		return exitWith(exitLeaseError, err)
	}
	cl, err := client.New(c.String("server"), tok, client.WithHTTPClient(&http.Client{Timeout: 15 * time.Second}))
	if err != nil {
		return exitWith(exitLeaseError, err)
	}
	r := &leaseRun{c: c, cl: cl, campaign: c.String("campaign"), out: c.App.ErrWriter, sigs: make(chan os.Signal, 16)}
	if c.Bool("quiet") {
		r.out = io.Discard
	} else if f, ok := c.App.ErrWriter.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			r.tty = true
		}
	}
	signal.Notify(r.sigs, forwarded...)
	defer signal.Stop(r.sigs)

	lease, code, err := r.acquire()
	if err != nil || code != 0 {
		return exitWith(code, err)
	}
	code, err = r.run(lease, args)
	if rerr := r.release(lease.ID); rerr != nil && err == nil {
		r.say("%v", rerr)
	}
	return exitWith(code, err)
}

// forwarded are the signals passed on to the command.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// acquire files the request and waits for its grant, printing progress. A
// signal while waiting ends the wait (128+N).
func (r *leaseRun) acquire() (*client.Lease, int, error) {
	ctx := context.Background()
	acc, err := r.cl.Request(ctx, r.campaign, client.LeaseRequest{GPUs: r.c.Int("gpus"), Duration: r.c.Int("duration"), Class: r.c.String("class")})
	if err != nil {
		return nil, exitLeaseError, fmt.Errorf("request: %w", err)
	}
	r.say("request %d for %d GPUs (%s, %d broker s) filed at t=%d", acc.RequestID, acc.GPUs, acc.Class, acc.Duration, acc.T)
	start := time.Now()
	var deadline <-chan time.Time
	if w := r.c.Duration("wait"); w > 0 {
		deadline = time.After(w)
	}
	poll := time.NewTicker(r.c.Duration("poll"))
	defer poll.Stop()
	var progress <-chan time.Time
	if p := r.c.Duration("progress"); p > 0 {
		tk := time.NewTicker(p)
		defer tk.Stop()
		progress = tk.C
	}
	for {
		st, err := r.cl.RequestStatus(ctx, r.campaign, acc.RequestID)
		switch {
		case errors.Is(err, client.ErrNotFound):
			r.endProgress()
			return nil, exitNoGrant, fmt.Errorf("request %d expired (or was withdrawn) without a grant", acc.RequestID)
		case err != nil:
			r.endProgress()
			return nil, exitLeaseError, err
		case st.State == client.StateGranted && st.Grant != nil:
			r.endProgress()
			g := st.Grant
			ls, err := r.cl.Leases(ctx, r.campaign)
			if err != nil {
				return nil, exitLeaseError, err
			}
			for _, l := range ls.Leases {
				if l.ID == g.Lease {
					r.say("granted lease %d: %d GPUs at t=%d after %d broker s (%s path), expires at t=%d", l.ID, l.GPUs, g.T, g.Latency, g.Path, l.Expires)
					return &l, 0, nil
				}
			}
			return nil, exitNoGrant, fmt.Errorf("lease %d was granted but is already gone (expired, released or reclaimed)", g.Lease)
		}
		select {
		case sig := <-r.sigs:
			r.endProgress()
			r.say("%v while waiting; request %d stays filed until it expires or is granted (the API cannot withdraw one request)", sig, acc.RequestID)
			return nil, 128 + signum(sig), nil
		case <-deadline:
			r.endProgress()
			return nil, exitNoGrant, fmt.Errorf("no grant within --wait %v (request %d stays filed until it expires)", r.c.Duration("wait"), acc.RequestID)
		case <-progress:
			r.progress(acc, start)
		case <-poll.C:
		}
	}
}

// progress prints where the wait stands: one line rewritten in place on a
// terminal, one line each time otherwise (logs of batch jobs).
func (r *leaseRun) progress(acc *client.RequestAccepted, start time.Time) {
	line := fmt.Sprintf("waiting for %d GPUs: request %d, %s", acc.GPUs, acc.RequestID, time.Since(start).Round(time.Second))
	if sp, err := r.cl.Supply(context.Background(), r.campaign); err == nil {
		line += fmt.Sprintf(", t=%d, free %d, reclaimable %d, tokens %.0f, expected path %s", sp.T, sp.Free, sp.Reclaimable, sp.Tokens, sp.ExpectedPath)
	}
	if r.tty {
		fmt.Fprintf(r.out, "\r\033[Kbursar lease: %s", line)
		return
	}
	r.say("%s", line)
}

func (r *leaseRun) endProgress() {
	if r.tty {
		fmt.Fprint(r.out, "\r\033[K")
	}
}

func signum(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return int(n)
	}
	return 1
}

// run runs the command on the lease and watches the lease: SIGTERM on a
// preemption notice or near the expiry, SIGKILL when the notice or the
// lease runs out.
func (r *leaseRun) run(l *client.Lease, args []string) (int, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(childEnv(os.Environ()),
		"BURSAR_LEASE_ID="+strconv.Itoa(l.ID), "BURSAR_GPUS="+strconv.Itoa(l.GPUs),
		"BURSAR_LEASE_EXPIRES="+strconv.Itoa(l.Expires), "BURSAR_LEASE_CLASS="+l.Class,
		"BURSAR_CAMPAIGN="+r.campaign, "BURSAR_SERVER="+r.cl.BaseURL())
	// Its own process group, so that a signal reaches every process the
	// command started (a shell's children, srun's steps).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return 127, fmt.Errorf("start %s: %w", args[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	group := func(sig syscall.Signal) { _ = syscall.Kill(-cmd.Process.Pid, sig) }

	poll := time.NewTicker(r.c.Duration("poll"))
	defer poll.Stop()
	notice := r.c.Int("expiry-notice")
	var termSent, killSent, unreachable bool
	var killAt <-chan time.Time // wall-clock SIGKILL after a lease vanished without notice
	term := func(why string) {
		if !termSent {
			termSent = true
			r.say("%s: sending SIGTERM to the command", why)
			group(syscall.SIGTERM)
		}
	}
	kill := func(why string) {
		if !killSent {
			killSent = true
			r.say("%s: sending SIGKILL to the command", why)
			group(syscall.SIGKILL)
		}
	}
	for {
		select {
		case err := <-done:
			return exitStatus(cmd, err)
		case sig := <-r.sigs:
			if s, ok := sig.(syscall.Signal); ok {
				group(s)
			}
		case <-killAt:
			kill("the command outlived its lease")
		case <-poll.C:
			ls, err := r.cl.Leases(context.Background(), r.campaign)
			if err != nil {
				if !unreachable {
					unreachable = true
					r.say("cannot read the lease (%v); the command keeps running", err)
				}
				continue
			}
			unreachable = false
			var cur *client.Lease
			for i := range ls.Leases {
				if ls.Leases[i].ID == l.ID {
					cur = &ls.Leases[i]
				}
			}
			switch {
			case cur == nil:
				if termSent {
					kill(fmt.Sprintf("lease %d is gone at t=%d", l.ID, ls.T))
				} else {
					term(fmt.Sprintf("lease %d is gone at t=%d", l.ID, ls.T))
					killAt = time.After(r.c.Duration("kill-after"))
				}
			case cur.UnderNotice && ls.T >= cur.PreemptAt:
				kill(fmt.Sprintf("the preemption notice of lease %d ran out at t=%d", l.ID, cur.PreemptAt))
			case cur.UnderNotice:
				term(fmt.Sprintf("lease %d is being preempted (notice until t=%d)", l.ID, cur.PreemptAt))
			case ls.T >= cur.Expires:
				kill(fmt.Sprintf("lease %d expired at t=%d", l.ID, cur.Expires))
			case ls.T >= cur.Expires-notice:
				term(fmt.Sprintf("lease %d expires at t=%d", l.ID, cur.Expires))
			}
		}
	}
}

// childEnv is the wrapper's environment without the tokens: the command
// gets a lease, not the campaign's keys.
func childEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case campaignTokenEnv, "BURSAR_TOKEN_FILE", adminTokenEnv, "BURSAR_ADMIN_TOKEN_FILE":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// exitStatus turns the command's end into the wrapper's exit status.
func exitStatus(cmd *exec.Cmd, err error) (int, error) {
	if err == nil {
		return 0, nil
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return exitLeaseError, err
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return ee.ExitCode(), nil
}

// release gives the lease back (a lease already gone is fine).
func (r *leaseRun) release(id int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	res, err := r.cl.ReleaseLease(ctx, r.campaign, id)
	switch {
	case errors.Is(err, client.ErrNotFound):
		r.say("lease %d was already gone", id)
		return nil
	case err != nil:
		return fmt.Errorf("release lease %d: %w (it ends at its expiry)", id, err)
	}
	r.say("released lease %d (%d GPUs) at t=%d", id, res.ReleasedGPUs, res.T)
	return nil
}
