//go:build unix

package lease

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// The terminal hand-over. A terminal reads for one process group, its
// foreground group, and stops any other group that reads it (SIGTTIN).
// The command runs in its own group (so that signals reach all of it), so
// when the wrapper runs in the foreground of a terminal the command's
// group is made the foreground group, and the wrapper takes the terminal
// back when the command stops or ends. This is what a shell does for its
// jobs.

// foregroundTerminal is the descriptor of the wrapper's terminal (its
// standard input) when the wrapper runs in that terminal's foreground, or
// -1. A wrapper in the background must not take the terminal from the
// shell.
func foregroundTerminal() int {
	const fd = 0
	if !term.IsTerminal(fd) {
		return -1
	}
	pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || pg != syscall.Getpgrp() {
		return -1
	}
	return fd
}

// takeTerminal makes the wrapper's group the foreground group again if the
// command's group pgid still is (and only then: a terminal that the shell
// has taken back stays the shell's). The wrapper is in the background
// while it does so, so SIGTTOU, which would stop it, is ignored for the
// call.
func takeTerminal(fd, pgid int) {
	if pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err != nil || pg != pgid {
		return
	}
	signal.Ignore(syscall.SIGTTOU)
	_ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, syscall.Getpgrp())
	signal.Reset(syscall.SIGTTOU)
}

// suspend follows a stop of the command (Ctrl-Z, or a read from the
// background): the wrapper takes the terminal back and stops its own
// group, so that the shell sees the job stopped. When the shell continues
// it, the command is continued too, in the foreground again when the job
// is (fg), in the background otherwise (bg).
func (r *leaseRun) suspend(fd, pgid int) {
	takeTerminal(fd, pgid)
	r.say("the command stopped; stopping (fg continues it)")
	// kill returns before the stop takes effect (another thread of this
	// process may take the signal), so wait for the SIGCONT that ends it.
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	defer signal.Stop(cont)
	_ = syscall.Kill(0, syscall.SIGSTOP)
	<-cont
	if pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil && pg == syscall.Getpgrp() {
		_ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, pgid)
	}
	_ = syscall.Kill(-pgid, syscall.SIGCONT)
}
