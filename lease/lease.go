//go:build unix

package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/slurmgate"
)

// TokenEnv names the environment variable that may carry a campaign
// token; like the administrator token it has no flag, since a command
// line is visible to every user through ps.
const TokenEnv = "BURSAR_TOKEN"

// Exit statuses of `bursar lease` itself (the command's own status is
// passed through otherwise).
const (
	ExitError   = 1  // bad flags, the service refused, or it is unreachable
	ExitNoGrant = 75 // EX_TEMPFAIL: no grant (of MinGPUs) within Wait, or the request expired
	// ExitNotFound is the shell's "command not found": the command cannot
	// be run (nothing was asked for).
	ExitNotFound = 127
)

// leaseWait is how long one long poll on the request asks the service to
// hold its answer; the HTTP client's timeout (HTTPTimeout) must exceed it.
const (
	leaseWait = 10 * time.Second
	// leaseQuickRead: a poll answered later than this after it was sent
	// is read again without waiting before the deadline is counted from it.
	leaseQuickRead = 250 * time.Millisecond
	// HTTPTimeout is the timeout the wrapper's HTTP client should have.
	HTTPTimeout = 20 * time.Second
)

// Client is what the wrapper asks the service, with the campaign's token
// (*client.Client answers).
type Client interface {
	BaseURL() string
	Request(ctx context.Context, campaign string, r client.LeaseRequest) (*client.RequestAccepted, error)
	AwaitRequest(ctx context.Context, campaign string, id int, wait time.Duration) (*client.RequestWait, error)
	WithdrawRequest(ctx context.Context, campaign string, id int) (*client.WithdrawResult, error)
	ReleaseLease(ctx context.Context, campaign string, lease int) (*client.ReleaseResult, error)
	Supply(ctx context.Context, campaign string) (*client.Supply, error)
	Campaign(ctx context.Context, campaign string) (*client.CampaignOut, error)
	Leases(ctx context.Context, campaign string) (*client.Leases, error)
	SlurmToken(ctx context.Context, campaign string, lease int) (*client.SlurmToken, error)
}

// Options are one `bursar lease` (its flags, docs/workflows.md).
type Options struct {
	// Client is the service, with the campaign's token; Server and Token
	// are the same for the watchdog, which makes its own client.
	Client        Client
	Server, Token string
	Campaign      string
	// GPUs are asked for; a grant of fewer than MinGPUs (0: GPUs) is
	// released and asked again once the supply shows MinGPUs free
	// (NoWait: exit 75).
	GPUs, MinGPUs int
	NoWait        bool
	// Duration is the lease's length and ExpiryNotice how long before its
	// expiry the command gets SIGTERM, both in broker seconds.
	Duration     int
	ExpiryNotice int
	Class        string
	// Wait bounds the wait for a grant (0: as long as the request lives).
	Wait time.Duration
	// KillAfter is the time between SIGTERM and SIGKILL when the lease
	// vanished without notice, the wrapper got SIGTERM, or it died.
	KillAfter time.Duration
	// Poll is how often the running lease is read; Progress how often the
	// progress line is printed while waiting (0: never).
	Poll, Progress time.Duration
	// Slurm: the command is srun, sbatch or salloc, submitted with the
	// lease's token as its comment and signalled through Cluster.
	Slurm   bool
	Cluster slurmgate.Cluster
	// Out takes the wrapper's messages (its standard error), nothing
	// with Quiet.
	Out   io.Writer
	Quiet bool
	// Watchdog are the arguments with which this program, started again,
	// runs RunWatchdog on its standard input (`bursar lease-watchdog`);
	// nil: no watchdog.
	Watchdog []string
}

// Run negotiates the lease, runs args on it and releases it; it returns
// the exit status (args' own, 75 or 1, ExitError and ExitNoGrant) and the
// error to print with it.
func Run(o Options, args []string) (int, error) {
	if len(args) == 0 {
		return ExitError, errors.New("give the command to run after --, e.g. bursar lease --campaign sci --gpus 4 -- ./job.sh")
	}
	if o.Slurm {
		if _, err := slurmgate.WithToken(args, ""); err != nil {
			return ExitError, err
		}
	}
	// A command that cannot start would be granted a lease it never
	// uses (and, waiting, keep others from the GPUs): it is looked for
	// before anything is filed. 127 is the shell's "command not found".
	if _, err := exec.LookPath(args[0]); err != nil {
		return ExitNotFound, fmt.Errorf("cannot run %s (%w): nothing was asked for", args[0], errors.Unwrap(err))
	}
	if o.MinGPUs == 0 {
		o.MinGPUs = o.GPUs
	}
	r := &leaseRun{opts: o, cl: o.Client, campaign: o.Campaign, gpus: o.GPUs, minGPUs: o.MinGPUs,
		out: o.Out, sigs: make(chan os.Signal, 16)}
	if o.Quiet {
		r.out = io.Discard
	} else if f, ok := o.Out.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			r.tty = true
		}
	}
	signal.Notify(r.sigs, forwarded...)
	defer signal.Stop(r.sigs)

	// The watchdog first: from the moment a request is filed, a wrapper
	// killed with SIGKILL leaves nothing behind.
	var err error
	r.mark = newMark()
	r.dog, err = startWatchdog(o, r.mark)
	if err != nil {
		r.say("no watchdog (%v): if this wrapper is killed with SIGKILL, its request or lease stays until it expires", err)
	}
	defer r.dog.goodbye()

	g, code, err := r.acquire()
	if err != nil || code != 0 {
		return code, err
	}
	if o.Slurm {
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
			return ExitError, fmt.Errorf("slurm token for lease %d: %w", g.lease.ID, err)
		}
		r.slurmToken = st.Token
		// The gate and the service's enforcer count the token's expiry,
		// whole seconds rounded down: end the jobs by it, not after.
		if end := time.Unix(st.ExpiresUnix, 0); !g.deadline.IsZero() && end.Before(g.deadline) {
			g.deadline = end
		}
		r.dog.tell(Note{SlurmToken: st.Token})
		args, _ = slurmgate.WithToken(args, st.Token)
		args = withSlurmWarning(args, o.ExpiryNotice)
		r.say("lease %d goes to Slurm as account %s, until %s", g.lease.ID, st.Account, time.Unix(st.ExpiresUnix, 0).UTC().Format(time.TimeOnly))
	}
	code, err = r.run(g, args)
	if rerr := r.release(g.lease.ID); rerr != nil && err == nil {
		r.say("%v", rerr)
	}
	return code, err
}

// leaseRun is one `bursar lease` invocation.
type leaseRun struct {
	opts     Options
	cl       Client
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
	// start starts the command (nil: startGroup, a real process group).
	start startFunc
	// mark is MarkEnv's value in the command's environment.
	mark string
}

// newMark is a value of MarkEnv that no other lease's command has.
func newMark() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
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
	if w := r.opts.Wait; w > 0 {
		tm := time.NewTimer(w)
		defer tm.Stop()
		deadline = tm.C
	}
	if err := r.reachable(); err != nil {
		return nil, ExitError, err
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
		if r.opts.NoWait {
			return nil, ExitNoGrant, fmt.Errorf("granted %d GPUs, fewer than --min-gpus %d, and --no-wait was given", g.lease.GPUs, r.minGPUs)
		}
		if code, err := r.awaitSupply(deadline, backoff); err != nil || code != 0 {
			return nil, code, err
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// reachable refuses at once a lease the campaign can never be granted:
// more GPUs than its burst ceiling, the most it may ever hold. Without
// it the wrapper would take each smaller grant, give it back and ask
// again for ever. When the envelope cannot be read, the request itself
// says why.
func (r *leaseRun) reachable() error {
	ctx, cancel := context.WithTimeout(context.Background(), HTTPTimeout)
	defer cancel()
	c, err := r.cl.Campaign(ctx, r.campaign)
	if err != nil {
		return nil
	}
	ceiling := c.Campaign.Envelope.BurstCeiling
	if r.minGPUs <= ceiling {
		return nil
	}
	flag := fmt.Sprintf("--min-gpus %d", r.minGPUs)
	if r.minGPUs == r.gpus {
		flag = fmt.Sprintf("--gpus %d", r.gpus)
	}
	return fmt.Errorf("%s can never be granted: campaign %s may hold at most %d GPUs (its burst ceiling); ask for at most %d", flag, r.campaign, ceiling, ceiling)
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
			return ExitNoGrant, fmt.Errorf("no grant of --min-gpus %d within --wait %v", r.minGPUs, r.opts.Wait)
		case <-tm.C:
		}
		sp, err := r.cl.Supply(context.Background(), r.campaign)
		if err != nil {
			return ExitError, fmt.Errorf("supply: %w", err)
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
	acc, err := r.cl.Request(ctx, r.campaign, client.LeaseRequest{GPUs: r.gpus, Duration: r.opts.Duration, Class: r.opts.Class})
	if err != nil {
		return nil, ExitError, fmt.Errorf("request: %w", err)
	}
	r.dog.tell(Note{Request: acc.RequestID})
	if acc.State == client.StateGranted && r.opts.Slurm {
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
	if p := r.opts.Progress; p > 0 {
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
				return nil, ExitNoGrant, fmt.Errorf("request %d expired (or was withdrawn) without a grant", acc.RequestID)
			case p.err != nil:
				r.withdraw(acc.RequestID)
				return nil, ExitError, p.err
			case p.w.Lease == nil:
				return nil, ExitNoGrant, fmt.Errorf("lease %d was granted but is already gone (expired, released or reclaimed)", acc.RequestID)
			}
			g := &grant{lease: *p.w.Lease, speed: p.w.Speed}
			if p.w.Speed > 0 {
				g.deadline = p.sent.Add(brokerToWall(g.lease.Expires-p.w.T, p.w.Speed))
			}
			r.dog.tell(Note{Lease: g.lease.ID})
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
			return nil, ExitNoGrant, fmt.Errorf("no grant within --wait %v", r.opts.Wait)
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
	r.dog.tell(Note{Request: -1})
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

// ChildEnv is the wrapper's environment without the tokens (TokenEnv,
// BURSAR_ADMIN_TOKEN and their _FILE forms): the command gets a lease, not
// the campaign's keys.
func ChildEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case TokenEnv, TokenEnv + "_FILE", "BURSAR_ADMIN_TOKEN", "BURSAR_ADMIN_TOKEN_FILE":
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
	case res.HeldGPUs > 0:
		// Slurm still lists a job of it: the service holds the lease
		// until nothing of it runs (docs/slurm.md).
		r.say("released lease %d (%d GPUs) at t=%d; the broker holds its GPUs until its Slurm job has ended", id, res.ReleasedGPUs, res.T)
	default:
		r.say("released lease %d (%d GPUs) at t=%d", id, res.ReleasedGPUs, res.T)
	}
	r.dog.tell(Note{Lease: -1})
	return nil
}

// slurmLimitCheck is how often slurmctld 22.05 looks at running jobs'
// time limits (PERIODIC_TIMEOUT); it sends a warning signal at the first
// look less than this before the warning is due, so up to this early.
const slurmLimitCheck = 30

// withSlurmWarning asks Slurm itself to send the job SIGTERM before its
// time limit (--signal, put after the token's --comment), so that the
// notice still comes when no Bursar process is left (issue 35). Slurm
// 22.05's job_submit/lua cannot set a job's warn_signal itself. Slurm
// sends it up to slurmLimitCheck seconds early, so the wrapper asks for
// it that much after its own notice (notice − 30 s before the limit,
// which ends no earlier than the lease): Slurm's warning never comes
// before the wrapper's, and with no Bursar process left it comes
// between notice and notice − 30 s before the limit. A notice of 30 s
// or less gets no warning from Slurm. A batch job's warning goes to its
// batch shell (B:), where a job script's trap is; srun's and salloc's to
// the steps.
func withSlurmWarning(args []string, notice int) []string {
	warn := notice - slurmLimitCheck
	if warn <= 0 || len(args) < 2 {
		return args
	}
	warn = min(warn, 65535) // warn_time is 16 bits
	sig := fmt.Sprintf("--signal=TERM@%d", warn)
	if filepath.Base(args[0]) == "sbatch" {
		sig = fmt.Sprintf("--signal=B:TERM@%d", warn)
	}
	return append([]string{args[0], args[1], sig}, args[2:]...)
}
