package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The terminal tests run `bursar lease` as the session leader of a fresh
// pseudo-terminal, the way a login shell's foreground job runs: the test
// holds the master side and types into it.

// openPty opens a new pseudo-terminal pair (Linux: /dev/ptmx).
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err, "a pseudo-terminal")
	t.Cleanup(func() { m.Close() })
	fd := int(m.Fd())
	require.NoError(t, unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	require.NoError(t, err)
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	// Drain what the terminal echoes, so that nothing blocks on it.
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := m.Read(buf); err != nil {
				return
			}
		}
	}()
	return m, s
}

// startLeaseOnTerminal starts `bursar lease args…` with the terminal as
// its standard input and output and as its controlling terminal.
func startLeaseOnTerminal(t *testing.T, slave *os.File, env []string, args ...string) *leaseProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"lease"}, args...)...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout = slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	return startLeaseCmd(t, cmd)
}

// procState is the state letter of process pid (R, S, T, Z, …).
func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// TestLeaseTerminalForeground: a command that reads the terminal gets what
// is typed (it is the foreground group; in the background it would be
// stopped by SIGTTIN and hang), and Ctrl-C typed at the terminal reaches
// it.
func TestLeaseTerminalForeground(t *testing.T) {
	p, _, oppToken := leasePool(t)
	master, slave := openPty(t)
	out := filepath.Join(t.TempDir(), "out")
	lp := startLeaseOnTerminal(t, slave, cleanEnv("BURSAR_TOKEN="+oppToken, "OUT="+out),
		"--server", p.url, "--campaign", "opp", "--gpus", "4", "--",
		"sh", "-c", `echo started > "$OUT"; read line; echo "got:$line" >> "$OUT"; while :; do sleep 0.05; done`)
	waitFile(t, out, "started", lp)
	_, err := master.Write([]byte("hello\n"))
	require.NoError(t, err)
	waitFile(t, out, "got:hello", lp)
	_, err = master.Write([]byte{3}) // Ctrl-C
	require.NoError(t, err)
	assert.Equal(t, 128+int(syscall.SIGINT), lp.wait(t, 20*time.Second), "%s", lp.stderr)
	assert.Contains(t, lp.stderr.String(), "released lease")
}

// TestLeaseTerminalStop: when the command stops (Ctrl-Z), the wrapper
// takes the terminal back and stops too, so that the shell sees its job
// stopped; continued in the foreground, it hands the terminal back to the
// command and continues it.
func TestLeaseTerminalStop(t *testing.T) {
	p, _, oppToken := leasePool(t)
	master, slave := openPty(t)
	out := filepath.Join(t.TempDir(), "out")
	lp := startLeaseOnTerminal(t, slave, cleanEnv("BURSAR_TOKEN="+oppToken, "OUT="+out),
		"--server", p.url, "--campaign", "opp", "--gpus", "4", "--",
		"sh", "-c", `echo started > "$OUT"; kill -TSTP $$; read line; echo "got:$line" >> "$OUT"`)
	waitFile(t, out, "started", lp)
	wrapper := lp.cmd.Process.Pid
	require.Eventually(t, func() bool { return procState(wrapper) == 'T' }, 20*time.Second, 10*time.Millisecond,
		"the wrapper stops with its command: %s", lp.stderr)
	fg, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPGRP)
	require.NoError(t, err)
	assert.Equal(t, wrapper, fg, "the wrapper took the terminal back: %s", lp.stderr)
	// What a shell's fg does: the job's group in the foreground (it is),
	// then SIGCONT to the group.
	require.NoError(t, syscall.Kill(-wrapper, syscall.SIGCONT))
	_, err = master.Write([]byte("again\n"))
	require.NoError(t, err)
	waitFile(t, out, "got:again", lp)
	assert.Equal(t, 0, lp.wait(t, 20*time.Second), "%s", lp.stderr)
}
