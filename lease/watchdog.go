//go:build unix

package lease

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/slurmgate"
)

// The watchdog. A wrapper killed with SIGKILL cannot clean up: its command
// runs on in its own process group past the lease, and the lease (or the
// pending request) is held until it expires. So `bursar lease` starts this
// binary again as `bursar lease-watchdog`, in a process group of its own
// (a signal to the wrapper's group or the command's does not reach it),
// with the read end of a pipe as its standard input. The wrapper writes
// what there is to clean up as it happens (the request, the lease, the
// command's group, the deadline), one JSON note a line, and a goodbye note
// before it exits. End of file without a goodbye means the wrapper died:
// the kernel closes the pipe whatever killed it.
//
// The alternative, PR_SET_PDEATHSIG on the command (the wrapper is its
// child subreaper, tree_linux.go, for another reason), was not taken: the death signal reaches the one process
// it is set on, not its group (a shell's children, srun's steps, live on);
// nothing could release the lease or withdraw the request; it fires when
// the forking thread exits, not the process (Go moves goroutines between
// threads); and it exists on Linux only.

// Note is one line on the pipe from the wrapper to its watchdog. Zero
// fields say nothing; -1 clears.
type Note struct {
	// The first note: where to release, and how.
	Server    string        `json:"server,omitempty"`
	Campaign  string        `json:"campaign,omitempty"`
	Token     string        `json:"token,omitempty"`
	KillAfter time.Duration `json:"kill_after,omitempty"`
	Quiet     bool          `json:"quiet,omitempty"`

	Request int   `json:"request,omitempty"` // filed and pending
	Lease   int   `json:"lease,omitempty"`   // held
	Pgid    int   `json:"pgid,omitempty"`    // the command's process group
	KillAt  int64 `json:"kill_at,omitempty"` // the local deadline, Unix ns
	// SlurmToken is the lease's Slurm token (--slurm): the comment by
	// which the watchdog finds the lease's Slurm jobs to cancel.
	SlurmToken string `json:"slurm_token,omitempty"`
	// Mark is the value of MarkEnv in the command's environment, by which
	// the watchdog finds the command's processes that left its group.
	Mark string `json:"mark,omitempty"`
	// Cgroup is the command's cgroup (cgroup_linux.go), ended with
	// cgroup.kill: every process in it, however it left the group.
	Cgroup  string `json:"cgroup,omitempty"`
	Goodbye bool   `json:"goodbye,omitempty"`
}

// MarkEnv is the variable that marks every process of a lease's command
// (inherited through fork, exec and setsid alike).
const MarkEnv = "BURSAR_LEASE_MARK"

// watchdogSlack is how long after the local deadline the watchdog kills a
// command that a live wrapper has not (a stopped or hung wrapper).
const watchdogSlack = 2 * time.Second

// watchdog is the wrapper's end of the pipe. A nil *watchdog ignores every
// call: the wrapper runs without one when it cannot be started.
type watchdog struct {
	mu     sync.Mutex
	w      *os.File
	cmd    *exec.Cmd
	exited chan struct{}
}

// startWatchdog starts this program again as the watchdog (with
// o.Watchdog, its arguments) and sends it the first note; without
// o.Watchdog there is none (nil, no error).
func startWatchdog(o Options, mark string) (*watchdog, error) {
	if len(o.Watchdog) == 0 {
		return nil, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, o.Watchdog...)
	cmd.Stdin, cmd.Stderr = pr, os.Stderr
	cmd.Env = ChildEnv(os.Environ())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, err
	}
	pr.Close()
	d := &watchdog{w: pw, cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(d.exited)
	}()
	d.tell(Note{Server: o.Server, Campaign: o.Campaign, Token: o.Token, KillAfter: o.KillAfter, Quiet: o.Quiet, Mark: mark})
	return d, nil
}

// tell sends one note. A watchdog that died cannot be told anything; the
// wrapper goes on without it.
func (d *watchdog) tell(n Note) {
	if d == nil {
		return
	}
	b, _ := json.Marshal(n)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.w != nil {
		_, _ = d.w.Write(append(b, '\n'))
	}
}

// pids is the watchdog's process, which is the wrapper's child but not
// the command's.
func (d *watchdog) pids() []int {
	if d == nil {
		return nil
	}
	return []int{d.cmd.Process.Pid}
}

// goodbye tells the watchdog that the wrapper ends in order, and waits
// (briefly) for it to exit.
func (d *watchdog) goodbye() {
	if d == nil {
		return
	}
	d.tell(Note{Goodbye: true})
	d.mu.Lock()
	d.w.Close()
	d.w = nil
	d.mu.Unlock()
	select {
	case <-d.exited:
	case <-time.After(2 * time.Second):
	}
}

// watchdogState is what the watchdog knows there is to clean up.
type watchdogState struct {
	Note
	backstop *time.Timer
	fire     chan struct{}
	out      io.Writer
	cluster  slurmgate.Cluster
}

func (s *watchdogState) say(format string, args ...any) {
	if !s.Quiet {
		fmt.Fprintf(s.out, "bursar lease-watchdog: "+format+"\n", args...)
	}
}

func (s *watchdogState) apply(n Note) {
	if n.Server != "" {
		s.Server, s.Campaign, s.Token, s.KillAfter, s.Quiet, s.Mark = n.Server, n.Campaign, n.Token, n.KillAfter, n.Quiet, n.Mark
	}
	set := func(dst *int, v int) {
		switch {
		case v < 0:
			*dst = 0
		case v > 0:
			*dst = v
		}
	}
	set(&s.Request, n.Request)
	set(&s.Lease, n.Lease)
	set(&s.Pgid, n.Pgid)
	if n.SlurmToken != "" {
		s.SlurmToken = n.SlurmToken
	}
	if n.Cgroup != "" {
		s.Cgroup = n.Cgroup
	}
	if n.KillAt != 0 {
		s.KillAt = n.KillAt
		if s.backstop != nil {
			s.backstop.Stop()
		}
		at := time.Unix(0, n.KillAt).Add(watchdogSlack)
		s.backstop = time.AfterFunc(time.Until(at), func() { s.fire <- struct{}{} })
	}
}

// RunWatchdog is the watchdog's process (`bursar lease-watchdog`): it
// reads notes from in until the goodbye (exit quietly) or the end of the
// pipe (the wrapper died: clean up), and says what it does on out. A
// lease's Slurm jobs are ended through c.
func RunWatchdog(in io.Reader, out io.Writer, c slurmgate.Cluster) error {
	// The terminal's signals are the wrapper's business.
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTSTP)
	notes := make(chan Note)
	eof := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			var n Note
			if json.Unmarshal(sc.Bytes(), &n) == nil {
				notes <- n
			}
		}
		eof <- sc.Err()
	}()
	s := &watchdogState{fire: make(chan struct{}, 1), out: out, cluster: c}
	for {
		select {
		case n := <-notes:
			if n.Goodbye {
				return nil
			}
			s.apply(n)
		case <-s.fire:
			if s.Pgid > 0 {
				s.say("the lease's deadline passed %v ago and the command still runs: SIGKILL to its process group %d", watchdogSlack, s.Pgid)
				_ = syscall.Kill(-s.Pgid, syscall.SIGKILL)
				s.signalMarked(syscall.SIGKILL)
				s.killCgroup(false)
			}
			if s.SlurmToken != "" {
				what, err := slurmgate.EndLease(s.cluster, s.SlurmToken, false)
				s.say("the lease's deadline passed %v ago: cancelled %s (%v)", watchdogSlack, what, slurmgate.OKOr(err))
			}
		case <-eof:
			s.cleanUp()
			return nil
		}
	}
}

// killCgroup ends every process in the command's cgroup (and, with
// remove, removes it once empty).
func (s *watchdogState) killCgroup(remove bool) {
	if s.Cgroup == "" {
		return
	}
	if !remove {
		_ = cgroupKillDir(s.Cgroup)
		return
	}
	if err := killCgroupDir(s.Cgroup); err != nil {
		s.say("%v", err)
	}
}

// signalMarked signals the command's processes found by their mark.
func (s *watchdogState) signalMarked(sig syscall.Signal) {
	for _, pid := range markedProcs(s.Mark) {
		_ = syscall.Kill(pid, sig)
	}
}

// cleanUp ends the command's group and gives back what the wrapper held.
func (s *watchdogState) cleanUp() {
	if s.SlurmToken != "" {
		// The jobs get their notice through Slurm (a TERM to srun would
		// kill the step at once), then are cancelled.
		what, err := slurmgate.EndLease(s.cluster, s.SlurmToken, true)
		s.say("the wrapper died: SIGTERM through Slurm to %s (%v), cancelled %v later", what, slurmgate.OKOr(err), s.KillAfter)
		end := time.Now().Add(s.KillAfter)
		for time.Now().Before(end) {
			time.Sleep(200 * time.Millisecond)
			if ids, err := slurmgate.JobsOf(s.cluster, s.SlurmToken); err != nil || len(ids) == 0 {
				break
			}
		}
		if what, err := slurmgate.EndLease(s.cluster, s.SlurmToken, false); err != nil {
			s.say("cancelling %s: %v", what, err)
		}
	}
	if s.Pgid > 0 {
		// The group, and the command's processes that left it (found by
		// their mark: with the wrapper gone they were reparented away).
		s.say("the wrapper died: SIGTERM to the command's process group %d and its other processes, SIGKILL %v later", s.Pgid, s.KillAfter)
		_ = syscall.Kill(-s.Pgid, syscall.SIGTERM)
		_ = syscall.Kill(-s.Pgid, syscall.SIGCONT)
		s.signalMarked(syscall.SIGTERM)
		s.signalMarked(syscall.SIGCONT)
		running := func() bool {
			return syscall.Kill(-s.Pgid, 0) == nil || len(markedProcs(s.Mark)) > 0 || s.Cgroup != "" && cgroupPopulated(s.Cgroup)
		}
		end := time.Now().Add(s.KillAfter)
		for time.Now().Before(end) && running() {
			time.Sleep(20 * time.Millisecond)
		}
		// Again until none is left (one may fork between the search and
		// the kill), for reapGiveUp at most.
		for end := time.Now().Add(reapGiveUp); running() && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			_ = syscall.Kill(-s.Pgid, syscall.SIGKILL)
			s.signalMarked(syscall.SIGKILL)
			s.killCgroup(false)
		}
		s.killCgroup(true)
	}
	if s.Lease == 0 && s.Request == 0 || s.Server == "" {
		return
	}
	cl, err := client.New(s.Server, s.Token, client.WithHTTPClient(&http.Client{Timeout: 10 * time.Second}))
	if err != nil {
		return
	}
	ctx := context.Background()
	lease := s.Lease
	if lease == 0 {
		_, err := cl.WithdrawRequest(ctx, s.Campaign, s.Request)
		switch {
		case err == nil:
			s.say("the wrapper died: withdrew request %d", s.Request)
			return
		case errors.Is(err, client.ErrConflict):
			lease = s.Request // granted meanwhile: the lease has its id
		case errors.Is(err, client.ErrNotFound):
			return
		default:
			s.say("the wrapper died; could not withdraw request %d (%v): it stays filed until it expires", s.Request, err)
			return
		}
	}
	switch _, err := cl.ReleaseLease(ctx, s.Campaign, lease); {
	case err == nil:
		s.say("the wrapper died: released lease %d", lease)
	case !errors.Is(err, client.ErrNotFound):
		s.say("the wrapper died; could not release lease %d (%v): it ends at its expiry", lease, err)
	}
}
