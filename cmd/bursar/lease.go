//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
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
	exitNoGrant    = 75 // EX_TEMPFAIL: no grant (of --min-gpus) within --wait, or the request expired
)

// leaseWait is how long one long poll on the request asks the service to
// hold its answer; the HTTP client's timeout must exceed it.
const (
	leaseWait = 10 * time.Second
	// leaseQuickRead: a poll answered later than this after it was sent
	// is read again without waiting before the deadline is counted from it.
	leaseQuickRead   = 250 * time.Millisecond
	leaseHTTPTimeout = 20 * time.Second
)

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

Slurm. With --slurm, COMMAND is srun, sbatch or salloc: the wrapper asks the service for the
lease's signed token and submits the job with it as its --comment, which slurmctld's gate
(scripts/slurm/job_submit.lua) checks. The job is signalled through Slurm, at the notice with
'scancel --signal=TERM --full' and at the end with scancel (srun turns a SIGTERM of its own into
an immediate kill), and the lease is held until no job with the token is left, so an sbatch that returns at once keeps
its lease for the batch job's life. See docs/slurm.md.

Exit status: COMMAND's own (128+N when signal N ended it, 137 after SIGKILL), 75 when no grant
came, 1 on any other failure of the wrapper's own.

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

// leaseRun is one `bursar lease` invocation.
type leaseRun struct {
	c        *cli.Context
	cl       *client.Client
	campaign string
	gpus     int // asked
	minGPUs  int
	out      io.Writer // progress and notices; io.Discard with --quiet
	tty      bool      // out is a terminal: the progress line is rewritten in place
	sigs     chan os.Signal
	dog      *watchdog // nil when it could not be started
	// slurmToken is the lease's Slurm token with --slurm ("" without):
	// the job's comment, by which the wrapper finds and ends the job.
	slurmToken string
	// tokenAhead is the token asked for while the grant is read, when the
	// request's own answer said granted (a service that admits on
	// request): one round trip less between the grant and the job.
	tokenAhead *tokenFetch
}

// tokenFetch is a Slurm token asked for ahead, for one lease.
type tokenFetch struct {
	lease int
	done  chan struct{}
	st    *client.SlurmToken
	err   error
}

// fetchToken asks for lease's Slurm token.
func (r *leaseRun) fetchToken(lease int) *tokenFetch {
	f := &tokenFetch{lease: lease, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		f.st, f.err = r.cl.SlurmToken(ctx, r.campaign, lease)
	}()
	return f
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

// checkLeaseFlags refuses flag values the wrapper cannot honour, naming
// the flag.
func checkLeaseFlags(c *cli.Context) error {
	gpus, dur, notice := c.Int("gpus"), c.Int("duration"), c.Int("expiry-notice")
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

func runLease(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) == 0 {
		return exitWith(exitLeaseError, errors.New("give the command to run after --, e.g. bursar lease --campaign sci --gpus 4 -- ./job.sh"))
	}
	if err := checkLeaseFlags(c); err != nil {
		return exitWith(exitLeaseError, err)
	}
	if c.Bool("slurm") {
		if _, err := withSlurmToken(args, ""); err != nil {
			return exitWith(exitLeaseError, err)
		}
	}
	tok, err := campaignToken(c)
	if err != nil {
		return exitWith(exitLeaseError, err)
	}
	cl, err := client.New(c.String("server"), tok, client.WithHTTPClient(&http.Client{Timeout: leaseHTTPTimeout}))
	if err != nil {
		return exitWith(exitLeaseError, err)
	}
	r := &leaseRun{c: c, cl: cl, campaign: c.String("campaign"), gpus: c.Int("gpus"), minGPUs: c.Int("gpus"),
		out: c.App.ErrWriter, sigs: make(chan os.Signal, 16)}
	if c.IsSet("min-gpus") {
		r.minGPUs = c.Int("min-gpus")
	}
	if c.Bool("quiet") {
		r.out = io.Discard
	} else if f, ok := c.App.ErrWriter.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			r.tty = true
		}
	}
	signal.Notify(r.sigs, forwarded...)
	defer signal.Stop(r.sigs)

	// The watchdog first: from the moment a request is filed, a wrapper
	// killed with SIGKILL leaves nothing behind.
	r.dog, err = startWatchdog(c, tok)
	if err != nil {
		r.say("no watchdog (%v): if this wrapper is killed with SIGKILL, its request or lease stays until it expires", err)
	}
	defer r.dog.goodbye()

	g, code, err := r.acquire()
	if err != nil || code != 0 {
		return exitWith(code, err)
	}
	if c.Bool("slurm") {
		f := r.tokenAhead
		if f == nil || f.lease != g.lease.ID {
			f = r.fetchToken(g.lease.ID)
		}
		<-f.done
		st, err := f.st, f.err
		if err != nil {
			if rerr := r.release(g.lease.ID); rerr != nil {
				r.say("%v", rerr)
			}
			return exitWith(exitLeaseError, fmt.Errorf("slurm token for lease %d: %w", g.lease.ID, err))
		}
		r.slurmToken = st.Token
		// The gate and the service's enforcer count the token's expiry,
		// whole seconds rounded down: end the jobs by it, not after.
		if end := time.Unix(st.ExpiresUnix, 0); !g.deadline.IsZero() && end.Before(g.deadline) {
			g.deadline = end
		}
		r.dog.tell(watchdogNote{SlurmToken: st.Token})
		args, _ = withSlurmToken(args, st.Token)
		r.say("lease %d goes to Slurm as account %s, until %s", g.lease.ID, st.Account, time.Unix(st.ExpiresUnix, 0).UTC().Format(time.TimeOnly))
	}
	code, err = r.run(g, args)
	if rerr := r.release(g.lease.ID); rerr != nil && err == nil {
		r.say("%v", rerr)
	}
	return exitWith(code, err)
}

// forwarded are the signals passed on to the command.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// grant is a lease as the wrapper holds it: the lease and the wall-clock
// deadline worked out from it.
type grant struct {
	lease client.Lease
	// deadline is the wall-clock time the lease ends at, no later than
	// the broker's expiry (zero when the service's clock is driven by
	// hand: no local deadline).
	deadline time.Time
	speed    float64
}

// acquire files requests until one is granted at least --min-gpus GPUs,
// printing progress. A signal while waiting withdraws the request and ends
// the wait (128+N); so does --wait running out (75).
func (r *leaseRun) acquire() (*grant, int, error) {
	var deadline <-chan time.Time
	if w := r.c.Duration("wait"); w > 0 {
		tm := time.NewTimer(w)
		defer tm.Stop()
		deadline = tm.C
	}
	backoff := time.Second
	for {
		g, code, err := r.acquireOnce(deadline)
		if err != nil || code != 0 {
			return nil, code, err
		}
		if g.lease.GPUs >= r.minGPUs {
			return g, 0, nil
		}
		// Running on less than asked is what --min-gpus refuses.
		rerr := r.release(g.lease.ID)
		if rerr != nil {
			r.say("%v", rerr)
		}
		r.say("lease %d has %d GPUs, fewer than --min-gpus %d: released it", g.lease.ID, g.lease.GPUs, r.minGPUs)
		if r.c.Bool("no-wait") {
			return nil, exitNoGrant, fmt.Errorf("granted %d GPUs, fewer than --min-gpus %d, and --no-wait was given", g.lease.GPUs, r.minGPUs)
		}
		if code, err := r.awaitSupply(deadline, backoff); err != nil || code != 0 {
			return nil, code, err
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// awaitSupply waits, at least backoff, until the supply shows --min-gpus
// free GPUs, so that the next request has a chance of a whole grant.
func (r *leaseRun) awaitSupply(deadline <-chan time.Time, backoff time.Duration) (int, error) {
	start := time.Now()
	for {
		tm := time.NewTimer(backoff)
		select {
		case sig := <-r.sigs:
			tm.Stop()
			r.say("%v while waiting for %d free GPUs; nothing is filed", sig, r.minGPUs)
			return 128 + signum(sig), nil
		case <-deadline:
			tm.Stop()
			return exitNoGrant, fmt.Errorf("no grant of --min-gpus %d within --wait %v", r.minGPUs, r.c.Duration("wait"))
		case <-tm.C:
		}
		sp, err := r.cl.Supply(context.Background(), r.campaign)
		if err != nil {
			return exitLeaseError, fmt.Errorf("supply: %w", err)
		}
		if sp.Free >= r.minGPUs {
			return 0, nil
		}
		r.say("waiting for %d free GPUs (free %d, reclaimable %d, t=%d, %s)", r.minGPUs, sp.Free, sp.Reclaimable, sp.T, time.Since(start).Round(time.Second))
		backoff = min(2*backoff, 30*time.Second)
	}
}

// polled is one long-poll answer.
type polled struct {
	w    *client.RequestWait
	err  error
	sent time.Time // when the poll was sent: the answer describes a moment after it
}

// acquireOnce files one request and waits for its outcome.
func (r *leaseRun) acquireOnce(deadline <-chan time.Time) (*grant, int, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	acc, err := r.cl.Request(ctx, r.campaign, client.LeaseRequest{GPUs: r.gpus, Duration: r.c.Int("duration"), Class: r.c.String("class")})
	if err != nil {
		return nil, exitLeaseError, fmt.Errorf("request: %w", err)
	}
	r.dog.tell(watchdogNote{Request: acc.RequestID})
	if acc.State == client.StateGranted && r.c.Bool("slurm") {
		// Granted in its own answer: the token and the lease are read
		// side by side.
		r.tokenAhead = r.fetchToken(acc.RequestID)
	}
	r.say("request %d for %d GPUs (%s, %d broker s) filed at t=%d", acc.RequestID, acc.GPUs, acc.Class, acc.Duration, acc.T)
	start := time.Now()

	polls := make(chan polled, 1)
	go func() {
		failures := 0
		for ctx.Err() == nil {
			sent := time.Now()
			w, err := r.cl.AwaitRequest(ctx, r.campaign, acc.RequestID, leaseWait)
			switch {
			case err == nil && w.State == client.StatePending:
				failures = 0
				continue
			case err != nil && !errors.Is(err, client.ErrNotFound) && ctx.Err() == nil && failures < 5:
				// A blip (a restart, a full connection table): ask again.
				failures++
				select {
				case <-ctx.Done():
				case <-time.After(time.Duration(failures) * 200 * time.Millisecond):
				}
				continue
			}
			if err == nil && w.State == client.StateGranted && w.Speed > 0 && time.Since(sent) > leaseQuickRead {
				// The long poll waited for the grant: its answer describes
				// a moment up to leaseWait after it was sent, so a
				// deadline counted from the sending would come early by
				// the wait (a reclaim-path grant after 9 s ended its job
				// before it started). A read that does not wait bounds
				// the moment again.
				again := time.Now()
				if w2, err2 := r.cl.AwaitRequest(ctx, r.campaign, acc.RequestID, 0); err2 == nil && w2.State == client.StateGranted {
					w, sent = w2, again
				}
			}
			polls <- polled{w, err, sent}
			return
		}
	}()
	var progress <-chan time.Time
	if p := r.c.Duration("progress"); p > 0 {
		tk := time.NewTicker(p)
		defer tk.Stop()
		progress = tk.C
	}
	for {
		select {
		case p := <-polls:
			r.endProgress()
			switch {
			case errors.Is(p.err, client.ErrNotFound):
				return nil, exitNoGrant, fmt.Errorf("request %d expired (or was withdrawn) without a grant", acc.RequestID)
			case p.err != nil:
				r.withdraw(acc.RequestID)
				return nil, exitLeaseError, p.err
			case p.w.Lease == nil:
				return nil, exitNoGrant, fmt.Errorf("lease %d was granted but is already gone (expired, released or reclaimed)", acc.RequestID)
			}
			g := &grant{lease: *p.w.Lease, speed: p.w.Speed}
			if p.w.Speed > 0 {
				g.deadline = p.sent.Add(brokerToWall(g.lease.Expires-p.w.T, p.w.Speed))
			}
			r.dog.tell(watchdogNote{Lease: g.lease.ID})
			r.say("granted lease %d: %d GPUs at t=%d after %d broker s (%s path), expires at t=%d", g.lease.ID, g.lease.GPUs,
				p.w.Grant.T, p.w.Grant.Latency, p.w.Grant.Path, g.lease.Expires)
			return g, 0, nil
		case sig := <-r.sigs:
			r.endProgress()
			cancel()
			r.say("%v while waiting", sig)
			r.withdraw(acc.RequestID)
			return nil, 128 + signum(sig), nil
		case <-deadline:
			r.endProgress()
			cancel()
			r.withdraw(acc.RequestID)
			return nil, exitNoGrant, fmt.Errorf("no grant within --wait %v", r.c.Duration("wait"))
		case <-progress:
			r.progress(acc, start)
		}
	}
}

// brokerToWall is how long n broker seconds last at speed.
func brokerToWall(n int, speed float64) time.Duration {
	return time.Duration(float64(n) / speed * float64(time.Second))
}

// withdraw takes the request back; when the grant won the race, the lease
// is released instead.
func (r *leaseRun) withdraw(id int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := r.cl.WithdrawRequest(ctx, r.campaign, id)
	switch {
	case err == nil:
		r.say("withdrew request %d", id)
	case errors.Is(err, client.ErrConflict):
		r.say("request %d was granted meanwhile", id)
		if rerr := r.release(id); rerr != nil {
			r.say("%v", rerr)
			return
		}
	case errors.Is(err, client.ErrNotFound):
		r.say("request %d is gone already", id)
	default:
		r.say("could not withdraw request %d (%v): it stays filed until it expires", id, err)
		return
	}
	r.dog.tell(watchdogNote{Request: -1})
}

// progress prints where the wait stands: one line rewritten in place on a
// terminal, one line each time otherwise (logs of batch jobs).
func (r *leaseRun) progress(acc *client.RequestAccepted, start time.Time) {
	line := fmt.Sprintf("waiting for %d GPUs: request %d, %s", acc.GPUs, acc.RequestID, time.Since(start).Round(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if sp, err := r.cl.Supply(ctx, r.campaign); err == nil {
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

// release gives the lease back (a lease already gone is fine).
func (r *leaseRun) release(id int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := r.cl.ReleaseLease(ctx, r.campaign, id)
	switch {
	case errors.Is(err, client.ErrNotFound):
		r.say("lease %d was already gone", id)
	case err != nil:
		return fmt.Errorf("release lease %d: %w (it ends at its expiry)", id, err)
	default:
		r.say("released lease %d (%d GPUs) at t=%d", id, res.ReleasedGPUs, res.T)
	}
	r.dog.tell(watchdogNote{Lease: -1})
	return nil
}
