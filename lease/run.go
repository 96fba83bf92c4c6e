//go:build unix

package lease

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/slurmgate"
)

// procEvent is one change of the command's state: stopped, or ended.
type procEvent struct {
	ws  syscall.WaitStatus
	err error
}

// process is the command as the run loop drives it: its process group,
// the changes of its state, signals to all of it, and what of it is left.
// startGroup starts a real one; the tests give a fake.
type process interface {
	group() int
	// signal signals the group and every other process of the command's
	// tree (tree_linux.go).
	signal(sig syscall.Signal)
	events() <-chan procEvent
	// left is the command's processes still alive (not zombies).
	left() []int
	release()
}

// startFunc starts the command args with environment env, in the
// foreground of the terminal tty when tty >= 0; keep are the wrapper's
// own children (its watchdog), never the command's.
type startFunc func(args, env []string, tty int, keep []int) (process, error)

// groupProc is a command in a process group of its own.
type groupProc struct {
	cmd    *exec.Cmd
	ev     chan procEvent
	keep   []int
	reaped atomic.Bool // the main process was reaped: its group id may be reused once empty
	// cg is the command's cgroup (nil: none, the tree is all it is).
	cg *leaseCgroup
}

// startGroup starts the command in its own process group, so that a
// signal reaches every process the command started (a shell's children,
// srun's steps); in the terminal's foreground when the wrapper is, so
// that it can read the terminal (a background group that reads it is
// stopped). Its standard streams are the wrapper's.
//
// The wrapper is made a child subreaper first, so that none of the
// command's processes escapes it by leaving the group or its parent
// (tree_linux.go); where that fails, the group is all it can end.
func startGroup(args, env []string, tty int, keep []int) (process, error) {
	if err := becomeSubreaper(); err != nil {
		fmt.Fprintf(os.Stderr, "bursar lease: cannot become the command's subreaper (%v): only its process group is ended\n", err)
	}
	command := func(cg *leaseCgroup) *exec.Cmd {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if tty >= 0 {
			cmd.SysProcAttr.Foreground, cmd.SysProcAttr.Ctty = true, tty
		}
		if cg != nil {
			intoCgroup(cmd.SysProcAttr, cg)
		}
		return cmd
	}
	// The command's own cgroup where a delegated cgroup v2 allows one
	// (cgroup_linux.go); else the tree, as before.
	cg, _ := commandCgroup()
	cmd := command(cg)
	err := cmd.Start()
	if err != nil && cg != nil {
		// The clone into the cgroup was refused (no write access to an
		// ancestor's cgroup.procs, a parent with controllers on):
		// without it, then.
		_ = cg.remove()
		cg, cmd = nil, command(nil)
		err = cmd.Start()
	}
	if err != nil {
		return nil, err
	}
	if cg != nil {
		cg.closeDir() // the clone is done with it
	}
	p := &groupProc{cmd: cmd, ev: make(chan procEvent, 4), keep: keep, cg: cg}
	go waitProc(cmd.Process.Pid, p.ev, &p.reaped)
	return p, nil
}

// commandCgroup is a new cgroup for the command, nil where there is none.
func commandCgroup() (*leaseCgroup, error) {
	parent, err := cgroupParent()
	if err != nil {
		return nil, err
	}
	return newLeaseCgroup(parent, newMark())
}

func (p *groupProc) group() int               { return p.cmd.Process.Pid }
func (p *groupProc) events() <-chan procEvent { return p.ev }

// release lets the process go and removes the command's cgroup (empty
// by now: the lease is released only once nothing of it runs).
func (p *groupProc) release() {
	_ = p.cmd.Process.Release()
	if p.cg != nil {
		if err := p.cg.remove(); err != nil {
			fmt.Fprintf(os.Stderr, "bursar lease: %v\n", err)
		}
	}
}

// left is the command's tree and, with a cgroup, every process in it.
func (p *groupProc) left() []int {
	left := treeOf(p.cmd.Process.Pid, p.cmd.Process.Pid, p.keep, 0)
	if p.cg != nil {
		for _, q := range p.cg.procs() {
			if !slices.Contains(left, q) {
				left = append(left, q)
			}
		}
	}
	return left
}

// cgroupDir is the command's cgroup ("" without one), for the watchdog.
func (p *groupProc) cgroupDir() string {
	if p.cg == nil {
		return ""
	}
	return p.cg.dir
}

func (p *groupProc) signal(sig syscall.Signal) {
	pid, skip := p.cmd.Process.Pid, 0
	if !p.reaped.Load() {
		_ = syscall.Kill(-pid, sig)
		skip = pid
	}
	for _, q := range treeOf(pid, pid, p.keep, skip) {
		_ = syscall.Kill(q, sig)
	}
	if p.cg == nil {
		return
	}
	if sig == syscall.SIGKILL {
		// Every process in the cgroup at once, wherever it went in the
		// tree; what forks meanwhile is in the cgroup too.
		_ = p.cg.kill()
		return
	}
	for _, q := range p.cg.procs() {
		if q != skip {
			_ = syscall.Kill(q, sig)
		}
	}
}

// waitProc reports the command's stops and its end. It reaps the process
// itself (exec.Cmd.Wait cannot report stops, which the terminal hand-over
// needs).
func waitProc(pid int, events chan<- procEvent, reaped *atomic.Bool) {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || ws.Exited() || ws.Signaled() {
			reaped.Store(true)
			events <- procEvent{ws, err}
			return
		}
		events <- procEvent{ws, err}
	}
}

// leaseRead is one read of the running lease.
type leaseRead struct {
	ls   *client.Leases
	err  error
	sent time.Time
}

// pollLease reads the campaign's leases every period until ctx ends. A
// read that hangs does not hold up the next; the loop in run never waits
// for the service.
func (r *leaseRun) pollLease(ctx context.Context, period time.Duration, reads chan<- leaseRead) {
	tk := time.NewTicker(period)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		rctx, cancel := context.WithTimeout(ctx, max(period, 2*time.Second))
		sent := time.Now()
		ls, err := r.cl.Leases(rctx, r.campaign)
		cancel()
		select {
		case reads <- leaseRead{ls, err, sent}:
		default: // the loop has an unread one; this one is no newer in effect
		}
	}
}

// run runs the command on the lease and stops it when the lease ends:
// SIGTERM at the notice, SIGKILL at the local deadline (or --kill-after
// after a SIGTERM of the wrapper's own choosing), whether or not the
// service answers.
func (r *leaseRun) run(g *grant, args []string) (int, error) {
	l := g.lease
	env := append(ChildEnv(os.Environ()),
		"BURSAR_LEASE_ID="+strconv.Itoa(l.ID), "BURSAR_GPUS="+strconv.Itoa(l.GPUs),
		"BURSAR_LEASE_EXPIRES="+strconv.Itoa(l.Expires), "BURSAR_LEASE_CLASS="+l.Class,
		"BURSAR_CAMPAIGN="+r.campaign, "BURSAR_SERVER="+r.cl.BaseURL())
	if r.mark != "" {
		env = append(env, MarkEnv+"="+r.mark)
	}
	if r.slurmToken != "" {
		env = append(env, "BURSAR_SLURM_TOKEN="+r.slurmToken)
	}
	tty := foregroundTerminal()
	start := r.start
	if start == nil {
		start = startGroup
	}
	p, err := start(args, env, tty, r.dog.pids())
	if err != nil {
		return ExitNotFound, fmt.Errorf("start %s: %w", args[0], err)
	}
	pgid := p.group()
	defer p.release()
	events := p.events()
	group := p.signal

	notice := r.opts.ExpiryNotice
	killAfter := r.opts.KillAfter
	var termAt, killAt time.Time // zero: none scheduled
	killWhy := ""
	if !g.deadline.IsZero() {
		killAt, killWhy = g.deadline, fmt.Sprintf("lease %d is over (its local deadline)", l.ID)
		if notice > 0 { // --expiry-notice 0: no warning, SIGKILL at the expiry
			termAt = g.deadline.Add(-brokerToWall(notice, g.speed))
		}
	}
	cgroup := ""
	if c, ok := p.(interface{ cgroupDir() string }); ok {
		cgroup = c.cgroupDir()
	}
	r.dog.tell(Note{Pgid: pgid, KillAt: unixNano(killAt), Cgroup: cgroup})
	if !killAt.IsZero() {
		// Said once the watchdog holds the group and the deadline: from
		// here on the command ends by then whatever becomes of this wrapper.
		in := ""
		if cgroup != "" {
			in = " in cgroup " + cgroup
		}
		r.say("command started as process group %d%s; it is killed at %s (the lease's end) even if this wrapper dies", pgid, in, killAt.Format(time.TimeOnly))
	}
	// moveKill brings the SIGKILL forward (never later) and tells the
	// watchdog.
	moveKill := func(at time.Time, why string) {
		if killAt.IsZero() || at.Before(killAt) {
			killAt, killWhy = at, why
			r.dog.tell(Note{KillAt: unixNano(killAt)})
		}
	}
	var termSent, killSent, unreachable, recancelled bool
	// With --slurm the command is (or was) a Slurm client and the lease's
	// jobs are what runs: they are signalled through Slurm, and the lease
	// is held until none is left (tracked below).
	slurm := r.slurmToken != ""
	var procDone bool // the command ended (with --slurm, its jobs may not have)
	var procCode int
	// With --slurm the notice and the end go to Slurm off this loop, by
	// the lease's WcKey (no squeue first): the loop keeps its deadlines
	// while a loaded slurmctld answers.
	var hand *slurmHand
	var cmdGone atomic.Bool // the command was reaped: its group id may be reused
	if slurm {
		hand = newSlurmHand(r.opts.Cluster, r.slurmToken, r.say)
		defer hand.close()
	}
	term := func(why string) {
		// After the SIGKILL a SIGTERM says nothing new: the command is
		// gone or going (the lease's end may be seen after the local
		// deadline fired).
		if !termSent && !killSent {
			termSent = true
			if slurm {
				hand.send(slurmAct{term: true, why: why})
				return
			}
			r.say("%s: sending SIGTERM to the command", why)
			group(syscall.SIGTERM)
			group(syscall.SIGCONT) // a stopped command could not act on it
		}
	}
	kill := func(why string) {
		if !killSent {
			killSent = true
			if slurm {
				// The Slurm client (srun, salloc) gets its SIGKILL once
				// its jobs are cancelled, so that it reports their end.
				hand.send(slurmAct{why: why, after: func() {
					// srun ends by itself once its tasks are killed; one
					// killed first never reports their end, and Slurm
					// keeps the job "running" until it is cancelled.
					for i := 0; i < 10 && !cmdGone.Load(); i++ {
						time.Sleep(100 * time.Millisecond)
					}
					if !cmdGone.Load() {
						group(syscall.SIGKILL)
					}
				}})
				return
			}
			r.say("%s: sending SIGKILL to the command", why)
			group(syscall.SIGKILL)
		}
	}
	var track <-chan time.Time // with --slurm, after the command ended: look for its jobs
	trackTicker := time.NewTicker(slurmTrackEvery)
	defer trackTicker.Stop()
	var drain <-chan time.Time // after the command ended: look for what is left of it
	drainTicker := time.NewTicker(reapEvery)
	defer drainTicker.Stop()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reads := make(chan leaseRead, 1)
	go r.pollLease(ctx, r.opts.Poll, reads)

	tm := time.NewTimer(time.Hour)
	defer tm.Stop()
	for {
		now := time.Now()
		if !termSent && !termAt.IsZero() && !now.Before(termAt) {
			term(fmt.Sprintf("lease %d expires at t=%d (in %d broker s)", l.ID, l.Expires, notice))
		}
		if !killSent && !killAt.IsZero() && !now.Before(killAt) {
			kill(killWhy)
		}
		var timer <-chan time.Time // the next of SIGTERM and SIGKILL still to send
		next := time.Time{}
		if !termSent && termAt.After(now) {
			next = termAt
		}
		if !killSent && killAt.After(now) && (next.IsZero() || killAt.Before(next)) {
			next = killAt
		}
		tm.Stop()
		if !next.IsZero() {
			tm.Reset(next.Sub(now))
			timer = tm.C
		}
		select {
		case <-drain:
			left := p.left()
			switch {
			case len(left) == 0:
				return procCode, nil
			case killSent && time.Since(killAt) > reapGiveUp:
				return procCode, fmt.Errorf("processes %v of the command are still alive %v after SIGKILL; lease %d is released without them", left, reapGiveUp, l.ID)
			case killSent:
				// Forked since the last SIGKILL.
				group(syscall.SIGKILL)
			}
		case <-track:
			ids, err := slurmgate.JobsOf(r.opts.Cluster, r.slurmToken)
			switch {
			case err == nil && len(ids) == 0:
				return procCode, nil
			case err == nil && killSent && !recancelled && time.Since(killAt) > slurmgate.Recancel:
				// Still listed after their steps were killed: a job whose
				// srun was killed before it reported its tasks' end stays
				// "running" with nothing in it, until it is cancelled
				// (which, with nothing left to ignore its SIGTERM, costs
				// no KillWait).
				recancelled = true
				hand.send(slurmAct{why: "the lease's jobs are still listed after the kill", cancel: ids})
			case killSent && time.Since(killAt) > slurmGiveUp:
				return procCode, fmt.Errorf("the Slurm jobs %v of lease %d are still listed %v after they were cancelled (%v)", ids, l.ID, slurmGiveUp, slurmgate.OKOr(err))
			}
		case ev := <-events:
			switch {
			case ev.err != nil:
				return ExitError, fmt.Errorf("waiting for the command: %w", ev.err)
			case ev.ws.Stopped():
				if tty >= 0 {
					r.suspend(tty, pgid)
				}
				continue
			}
			cmdGone.Store(true)
			r.dog.tell(Note{Pgid: -1})
			if tty >= 0 {
				takeTerminal(tty, pgid)
			}
			code := ev.ws.ExitStatus()
			if ev.ws.Signaled() {
				code = 128 + int(ev.ws.Signal())
			}
			if !slurm {
				// The command's leftovers (a daemon it started, a child
				// that ignored the notice's SIGTERM) end with it: the
				// lease is released only once none of them runs.
				procDone, procCode = true, code
				left := p.left()
				if len(left) == 0 {
					return code, nil
				}
				if !killSent {
					r.say("the command ended, but %d of its processes %v still run", len(left), left)
				}
				term("the command ended")
				moveKill(time.Now().Add(killAfter), fmt.Sprintf("--kill-after %v since the command ended", killAfter))
				drain = drainTicker.C
				continue
			}
			// sbatch returns once the job is queued: the lease is held
			// until the job has ended.
			procDone, procCode, track = true, code, trackTicker.C
			continue
		case sig := <-r.sigs:
			s, ok := sig.(syscall.Signal)
			if !ok {
				continue
			}
			if slurm && s == syscall.SIGTERM {
				term("the wrapper got SIGTERM")
			} else if !procDone {
				group(s)
			}
			if s == syscall.SIGTERM && !killSent {
				termSent = true
				moveKill(time.Now().Add(killAfter), fmt.Sprintf("--kill-after %v since the SIGTERM", killAfter))
			}
		case <-timer:
		case rd := <-reads:
			if rd.err != nil {
				if !unreachable {
					unreachable = true
					if killAt.IsZero() {
						r.say("cannot read the lease (%v); the command keeps running (the service's clock is driven by hand: no local deadline)", rd.err)
					} else {
						r.say("cannot read the lease (%v); the local deadline stands: SIGTERM at %s, SIGKILL at %s",
							rd.err, termAt.Format(time.TimeOnly), killAt.Format(time.TimeOnly))
					}
				}
				continue
			}
			unreachable = false
			r.watch(g, rd, term, kill, moveKill, killAfter)
		}
	}
}

// watch acts on one read of the running lease.
func (r *leaseRun) watch(g *grant, rd leaseRead, term, kill func(string), moveKill func(time.Time, string), killAfter time.Duration) {
	l, ls := g.lease, rd.ls
	var cur *client.Lease
	for i := range ls.Leases {
		if ls.Leases[i].ID == l.ID {
			cur = &ls.Leases[i]
		}
	}
	notice := r.opts.ExpiryNotice
	switch {
	case cur == nil:
		term(fmt.Sprintf("lease %d is gone at t=%d", l.ID, ls.T))
		moveKill(time.Now().Add(killAfter), fmt.Sprintf("--kill-after %v since the SIGTERM", killAfter))
	case cur.UnderNotice && g.speed > 0:
		term(fmt.Sprintf("lease %d is being preempted (notice until t=%d)", l.ID, cur.PreemptAt))
		moveKill(rd.sent.Add(brokerToWall(cur.PreemptAt-ls.T, g.speed)), fmt.Sprintf("the preemption notice of lease %d ran out at t=%d", l.ID, cur.PreemptAt))
	case cur.UnderNotice && ls.T >= cur.PreemptAt:
		kill(fmt.Sprintf("the preemption notice of lease %d ran out at t=%d", l.ID, cur.PreemptAt))
	case cur.UnderNotice:
		term(fmt.Sprintf("lease %d is being preempted (notice until t=%d)", l.ID, cur.PreemptAt))
	case g.speed > 0:
		// The local deadline rules; the broker's clock can only be
		// slower than it.
	case ls.T >= cur.Expires:
		kill(fmt.Sprintf("lease %d expired at t=%d", l.ID, cur.Expires))
	case ls.T >= cur.Expires-notice:
		term(fmt.Sprintf("lease %d expires at t=%d", l.ID, cur.Expires))
	}
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// slurmTrackEvery is how often the wrapper looks for a --slurm lease's
// jobs after the submitting command ended; slurmGiveUp is how long after
// cancelling them it stops looking.
const (
	slurmTrackEvery = 500 * time.Millisecond
	slurmGiveUp     = 60 * time.Second
)

// reapEvery is how often the wrapper looks for the command's processes
// left after it ended (and kills again, after the SIGKILL, any forked
// since); reapGiveUp is how long after the SIGKILL it stops waiting for
// them (a process in uninterruptible sleep on a dead file server).
const (
	reapEvery  = 20 * time.Millisecond
	reapGiveUp = 5 * time.Second
)
